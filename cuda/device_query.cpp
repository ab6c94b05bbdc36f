#include "device_query.hpp"

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <library_types.h>
#include <nccl.h>

#include <utility>

#include "core/error.hpp"
#include "cublas_library.hpp"

namespace dl::gpu {

namespace {

// CUDA encodes its versions as 1000 * major + 10 * minor.
constexpr int kCudaMajorScale = 1000;
constexpr int kCudaMinorScale = 10;
// cuDNN 9, cuBLASLt and NCCL from 2.9 encode 10000 * major + 100 * minor + patch; NCCL up to 2.8
// used 1000 * major + 100 * minor + patch.
constexpr int kMajorScale = 10000;
constexpr int kMinorScale = 100;
constexpr int kOldNcclMajorScale = 1000;

std::string cuda_version(int v) {
  return std::to_string(v / kCudaMajorScale) + "." +
         std::to_string(v % kCudaMajorScale / kCudaMinorScale);
}

std::string three_part(long v, long major_scale) {
  return std::to_string(v / major_scale) + "." + std::to_string(v % major_scale / kMinorScale) +
         "." + std::to_string(v % kMinorScale);
}

std::string with_build(const std::string& name, const std::string& loaded,
                       const std::string& built) {
  return name + " " + loaded + (loaded == built ? "" : " (built against " + built + ")");
}

std::string cuda_problem(const char* call, cudaError_t status) {
  (void)cudaGetLastError();  // not sticky; clear it so later checks do not report it again
  return std::string(call) + ": " + cudaGetErrorName(status) + ", " + cudaGetErrorString(status);
}

// cuBLAS's and cuBLASLt's lines, loading cuBLAS (cublas_library.hpp); where it cannot be
// loaded, the one line that says why.
std::vector<std::string> cublas_versions() {
  const CublasLibrary* api = nullptr;
  try {
    api = &cublas();
  } catch (const Error& e) {
    return {std::string("cuBLAS: ") + e.what()};
  }
  std::vector<std::string> v;
  int major = 0, minor = 0, patch = 0;
  if (api->get_property(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
      api->get_property(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
      api->get_property(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
    v.push_back(with_build(
        "cuBLAS", std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch),
        three_part(CUBLAS_VERSION, kMajorScale)));
  }
  v.push_back("cuBLASLt " + three_part(static_cast<long>(api->lt_version()), kMajorScale));
  return v;
}

}  // namespace

DeviceScan scan_devices() {
  DeviceScan scan;
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    scan.problem = cuda_problem("cudaGetDeviceCount", status);
    scan.summary = cudaGetErrorName(status);
    int driver = 0;
    // Without any driver the runtime reports an "insufficient" one; say what is really wrong.
    if (cudaDriverGetVersion(&driver) == cudaSuccess && driver == 0) {
      scan.problem = "no NVIDIA driver is installed (" + scan.problem + ")";
      scan.summary = "no NVIDIA driver";
    } else if (status == cudaErrorInsufficientDriver) {
      scan.summary = "the NVIDIA driver is older than CUDA " + cuda_version(CUDART_VERSION);
    }
    return scan;
  }
  if (count == 0) {
    scan.problem = "cudaGetDeviceCount reports no device";
    scan.summary = "no GPU found";
    return scan;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    const cudaError_t s = cudaGetDeviceProperties(&prop, i);
    if (s != cudaSuccess) {
      scan.problem = cuda_problem("cudaGetDeviceProperties", s);
      scan.summary = cudaGetErrorName(s);
      continue;
    }
    DeviceInfo info;
    info.index = i;
    info.name = prop.name;
    info.memory_bytes = prop.totalGlobalMem;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    scan.devices.push_back(info);
  }
  return scan;
}

std::vector<std::string> library_versions() {
  std::vector<std::string> v;
  int runtime = 0;
  if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
    v.push_back(with_build("CUDA runtime", cuda_version(runtime), cuda_version(CUDART_VERSION)));
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess) {
    // 0 means no driver is installed; otherwise the newest CUDA version the driver supports.
    v.push_back(driver == 0 ? std::string("CUDA driver: not installed")
                            : "CUDA driver (supports CUDA " + cuda_version(driver) + ")");
  }
  v.push_back(with_build("cuDNN", three_part(static_cast<long>(cudnnGetVersion()), kMajorScale),
                         three_part(CUDNN_VERSION, kMajorScale)));
  for (std::string& line : cublas_versions()) v.push_back(std::move(line));
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    const long scale = nccl < kMajorScale ? kOldNcclMajorScale : kMajorScale;
    v.push_back(with_build("NCCL", three_part(nccl, scale), three_part(NCCL_VERSION_CODE, scale)));
  }
  return v;
}

}  // namespace dl::gpu
