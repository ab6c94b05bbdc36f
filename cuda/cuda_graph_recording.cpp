// CudaBackend's recorded work: the ops of a training step captured from the worker's stream into
// a CUDA graph and replayed as one launch. A step of a small network is dozens of short kernels;
// launched one by one, the host's launch cost (microseconds each) is what bounds the step, and a
// graph launch removes it. Nothing in a step may wait for the host or allocate from the driver
// while it is recorded: the ops of the Backend interface allocate nothing (their buffers are bound
// with the model), and the first step of each shape runs unrecorded, so the libraries' own lazy
// set-up (cuBLAS's workspace, cuDNN's kernels) has happened before anything is captured.
#include <cuda_runtime.h>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"

namespace dl::gpu {

namespace {

class CudaGraphWork final : public RecordedWork {
 public:
  CudaGraphWork(int device, cudaStream_t stream, cudaGraphExec_t exec)
      : device_(device), stream_(stream), exec_(exec) {}
  ~CudaGraphWork() override {
    if (cudaSetDevice(device_) == cudaSuccess) (void)cudaGraphExecDestroy(exec_);
  }
  CudaGraphWork(const CudaGraphWork&) = delete;
  CudaGraphWork& operator=(const CudaGraphWork&) = delete;

  void replay() override {
    DL_CUDA_CALL(cudaSetDevice(device_));
    DL_CUDA_CALL(cudaGraphLaunch(exec_, stream_));
  }

 private:
  int device_;
  cudaStream_t stream_;
  cudaGraphExec_t exec_;
};

}  // namespace

bool CudaBackend::begin_recording() {
  activate();
  // Thread-local: another worker's thread may legitimately synchronize its own stream meanwhile;
  // only this thread's calls are checked for what would break the capture.
  DL_CUDA_CALL(cudaStreamBeginCapture(stream_.get(), cudaStreamCaptureModeThreadLocal));
  return true;
}

std::unique_ptr<RecordedWork> CudaBackend::end_recording() {
  activate();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream_.get(), &graph);
  cudaGraphExec_t exec = nullptr;
  cudaError_t instantiated = cudaErrorStreamCaptureInvalidated;
  if (ended == cudaSuccess && graph != nullptr) {
    instantiated = cudaGraphInstantiate(&exec, graph, 0);
  }
  if (graph != nullptr) (void)cudaGraphDestroy(graph);
  if (ended != cudaSuccess || instantiated != cudaSuccess) {
    // A failed capture leaves its error as the last error; the ops were not run, so the caller
    // runs them and nothing of this attempt may surface in the next launch check.
    (void)cudaGetLastError();
    return nullptr;
  }
  return std::make_unique<CudaGraphWork>(device_, stream_.get(), exec);
}

}  // namespace dl::gpu
