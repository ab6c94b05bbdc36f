// Streams as host task queues with one progress thread, events as counters, devices as a
// thread's current ordinal, device memory as host memory (see host_streams.hpp).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "host_grid.hpp"

namespace dl::emu {

namespace {

// How long the progress thread sleeps when no queued task could move: tasks waiting for peers in
// other processes are polled, and a longer sleep would only slow the collectives down.
constexpr auto kProgressPoll = std::chrono::microseconds(100);
// Device memory is aligned as cudaMalloc's is (at least 256 bytes).
constexpr std::size_t kDeviceAlignment = 256;

struct Engine {
  // Held while a task runs, so tasks of one stream never overlap and run in queue order whoever
  // runs them (the enqueuing thread or the progress thread).
  std::mutex mutex;
  std::condition_variable changed;  // a task was queued, or a queue became shorter
  std::map<cudaStream_t, std::deque<StreamTask>> queues;
  std::set<cudaStream_t> host_queues;  // queues with no device work (enqueue's device_work)
  bool progress_started = false;
};

// Never destroyed: the detached progress thread may still use it while the process exits.
Engine& engine() {
  static Engine* e = new Engine;
  return *e;
}

// Runs the front task of every stream, and the ones after it while they finish, until no queue
// moves; then sleeps a little (peers in other processes are polled) or, with nothing queued,
// until something is.
[[noreturn]] void progress_loop() {
  Engine& e = engine();
  std::unique_lock<std::mutex> lock(e.mutex);
  for (;;) {
    bool pending = false, moved = false;
    for (auto& entry : e.queues) {
      std::deque<StreamTask>& queue = entry.second;
      while (!queue.empty() && queue.front()()) {
        queue.pop_front();
        moved = true;
      }
      pending = pending || !queue.empty();
    }
    if (moved) e.changed.notify_all();
    if (!pending) {
      e.changed.wait(lock);
    } else if (!moved) {
      e.changed.wait_for(lock, kProgressPoll);
    }
  }
}

struct Event {
  std::atomic<std::uint64_t> recorded{0};   // records made so far
  std::atomic<std::uint64_t> completed{0};  // the latest record whose preceding work has run
};

std::mutex events_mutex;
std::map<cudaEvent_t, std::shared_ptr<Event>> events;  // a queued task keeps its event alive

std::shared_ptr<Event> find_event(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(events_mutex);
  const auto found = events.find(event);
  return found == events.end() ? nullptr : found->second;
}

thread_local int current_device = 0;

}  // namespace

void enqueue(cudaStream_t stream, StreamTask task, bool device_work) {
  Engine& e = engine();
  std::lock_guard<std::mutex> lock(e.mutex);
  std::deque<StreamTask>& queue = e.queues[stream];
  if (!device_work) e.host_queues.insert(stream);
  if (queue.empty() && task()) return;
  queue.push_back(std::move(task));
  if (!e.progress_started) {
    e.progress_started = true;
    std::thread(progress_loop).detach();
  }
  e.changed.notify_all();
}

bool stream_idle(cudaStream_t stream) {
  Engine& e = engine();
  std::lock_guard<std::mutex> lock(e.mutex);
  const auto found = e.queues.find(stream);
  return found == e.queues.end() || found->second.empty();
}

void wait_stream_idle(cudaStream_t stream) {
  Engine& e = engine();
  std::unique_lock<std::mutex> lock(e.mutex);
  e.changed.wait(lock, [&] {
    const auto found = e.queues.find(stream);
    return found == e.queues.end() || found->second.empty();
  });
}

void wait_device_idle() {
  Engine& e = engine();
  std::unique_lock<std::mutex> lock(e.mutex);
  e.changed.wait(lock, [&] {
    for (const auto& entry : e.queues) {
      if (!entry.second.empty() && e.host_queues.count(entry.first) == 0) return false;
    }
    return true;
  });
}

}  // namespace dl::emu

// ---- runtime API -------------------------------------------------------------------------------

cudaError_t cudaGetDeviceCount(int* count) {
  *count = dl::emu::kHostDevices;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = dl::emu::current_device;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= dl::emu::kHostDevices) return cudaErrorInvalidDevice;
  dl::emu::current_device = device;
  return cudaSuccess;
}

// One made-up bus per device, so that device keys (gpu_collective_layout.hpp) tell them apart.
cudaError_t cudaDeviceGetPCIBusId(char* id, int length, int device) {
  if (device < 0 || device >= dl::emu::kHostDevices) return cudaErrorInvalidDevice;
  const int written = std::snprintf(id, static_cast<std::size_t>(std::max(length, 0)),
                                    "0000:%02x:00.0", device + 1);
  return written < length ? cudaSuccess : cudaErrorInvalidValue;
}

cudaError_t cudaMalloc(void** p, std::size_t bytes) {
  const std::size_t k = dl::emu::kDeviceAlignment;
  *p = std::aligned_alloc(k, std::max<std::size_t>((bytes + k - 1) / k * k, k));
  return *p == nullptr ? cudaErrorMemoryAllocation : cudaSuccess;
}

cudaError_t cudaFree(void* p) {
  if (p != nullptr) dl::emu::wait_device_idle();
  std::free(p);
  return cudaSuccess;
}

// Synchronous as on a GPU with the legacy default stream; other streams are not waited for.
cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind) {
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind,
                            cudaStream_t stream) {
  dl::emu::enqueue(stream, [=] {
    if (bytes > 0) std::memmove(dst, src, bytes);
    return true;
  });
  return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void* dst, int value, std::size_t bytes, cudaStream_t stream) {
  dl::emu::enqueue(stream, [=] {
    if (bytes > 0) std::memset(dst, value, bytes);
    return true;
  });
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  // A distinct address is all a stream needs to be; the queue is made on first use.
  *stream = reinterpret_cast<cudaStream_t>(new char);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  return cudaStreamCreate(stream);
}

// As in CUDA, work still queued runs to its end; its queue then stays (a new stream must not get
// the address of one that still has work).
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (dl::emu::stream_idle(stream)) delete reinterpret_cast<char*>(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  dl::emu::wait_stream_idle(stream);
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  const std::shared_ptr<dl::emu::Event> e = dl::emu::find_event(event);
  if (e == nullptr) return cudaErrorInvalidResourceHandle;
  const std::uint64_t target = e->recorded.load();
  dl::emu::enqueue(stream, [e, target] { return e->completed.load() >= target; });
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  auto e = std::make_shared<dl::emu::Event>();
  *event = reinterpret_cast<cudaEvent_t>(e.get());
  std::lock_guard<std::mutex> lock(dl::emu::events_mutex);
  dl::emu::events[*event] = std::move(e);
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) {
  return cudaEventCreate(event);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  std::lock_guard<std::mutex> lock(dl::emu::events_mutex);
  return dl::emu::events.erase(event) == 1 ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  const std::shared_ptr<dl::emu::Event> e = dl::emu::find_event(event);
  if (e == nullptr) return cudaErrorInvalidResourceHandle;
  const std::uint64_t record = ++e->recorded;
  dl::emu::enqueue(stream, [e, record] {
    std::uint64_t seen = e->completed.load();
    while (seen < record && !e->completed.compare_exchange_weak(seen, record)) {
    }
    return true;
  });
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  const std::shared_ptr<dl::emu::Event> e = dl::emu::find_event(event);
  if (e == nullptr) return cudaErrorInvalidResourceHandle;
  return e->completed.load() >= e->recorded.load() ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  for (;;) {
    const cudaError_t state = cudaEventQuery(event);
    if (state != cudaErrorNotReady) return state;
    std::this_thread::sleep_for(dl::emu::kProgressPoll);
  }
}
