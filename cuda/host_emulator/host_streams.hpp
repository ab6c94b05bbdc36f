// The host emulator's devices, memory, streams and events: what the GPU collective
// (gpu_collective.cpp, nccl_collective.cpp) needs from the CUDA runtime to run on the host
// against the stand-in NCCL (nccl_standin/).
//
// A stream is a queue of host tasks. Work queued on an idle stream runs at once, on the calling
// thread, as the kernels' launchers always did here; work queued behind a task that cannot
// finish yet (an NCCL collective waiting for its peers) waits in the queue, and one progress
// thread per process runs every stream's queue in order, as a GPU runs its streams whatever the
// host threads do. An event completes when the work queued before its record has run.
//
// Kernel launches do not queue: a launch on a busy stream waits on the host until the stream is
// idle, then runs the grid on the calling thread (the grid's fibers and launch errors are that
// thread's). That is the one place where the host blocks and a GPU would not; docs/CUDA.md
// ("The GPU collective on the host") says what follows from it.
#pragma once

#include <cstddef>
#include <functional>

struct CUstream_st;
using cudaStream_t = CUstream_st*;
struct CUevent_st;
using cudaEvent_t = CUevent_st*;

// CUDA's per-thread default stream handle; here simply one more stream.
#define cudaStreamPerThread (reinterpret_cast<cudaStream_t>(0x2))
#define cudaEventDefault 0x00u
#define cudaEventDisableTiming 0x02u
#define cudaStreamNonBlocking 0x01u

namespace dl::emu {

// The number of devices the emulator pretends to have: enough for every layout the tests build.
constexpr int kHostDevices = 8;

// One step of queued work: returns true once it is done, false to be called again later (from
// the progress thread). A step must not block and must not queue work itself.
using StreamTask = std::function<bool()>;

// Runs `task` now when `stream` is idle and the task finishes at its first step; otherwise it
// waits in the stream's queue behind the work before it. `device_work` false: a queue of the
// host library's own (the stand-in NCCL's background finalize), which cudaFree does not wait for.
void enqueue(cudaStream_t stream, StreamTask task, bool device_work = true);
bool stream_idle(cudaStream_t stream);
// Blocks the calling thread until `stream`'s queue is empty.
void wait_stream_idle(cudaStream_t stream);
// Blocks until every stream's device work has run: cudaFree does, as CUDA's synchronizes the
// device, so that no queued work writes memory after it is freed.
void wait_device_idle();

}  // namespace dl::emu
