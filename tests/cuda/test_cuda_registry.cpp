// The registry of a CUDA build (cuda/backend_registry_cuda.cpp): what `dl-train info` reports,
// which backend `auto` and `cuda` resolve to, with and without a visible GPU, and the
// BACKEND_PRIORITY_* overrides. Runs on any machine; the expectations follow what it finds.
#include <cstdlib>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "backend/backend_registry.hpp"
#include "backend_selection.hpp"
#include "core/error.hpp"
#include "cublas_library.hpp"
#include "device_query.hpp"

namespace {

// Sets (or unsets, with nullptr) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

dl::Config config_for(dl::BackendKind kind) {
  dl::Config c;
  c.sourcePath = "run.yaml";
  c.backend = kind;
  return c;
}

}  // namespace

TEST_CASE("availability lists the libraries, and why no device is visible", "[cuda_registry]") {
  const dl::BackendAvailability a = dl::backend_availability();
  CHECK(a.cuda_built);
  std::string all;
  for (const std::string& line : a.library_versions) all += line + "\n";
  INFO(all);
  for (const char* library : {"CUDA runtime", "cuDNN", "cuBLAS", "cuBLASLt", "NCCL"})
    CHECK(contains(all, library));
  if (a.devices.empty()) {
    REQUIRE_FALSE(a.library_versions.empty());
    CHECK(a.library_versions.front().rfind("no device visible: ", 0) == 0);
  } else {
    for (const dl::DeviceInfo& d : a.devices) {
      CHECK_FALSE(d.name.empty());
      CHECK(d.memory_bytes > 0);
      CHECK(d.compute_major > 0);
    }
  }
}

// cuBLAS is loaded, not linked (cuda/cublas_library.hpp): every function the backend calls must
// be found in the library of the version the headers name. Needs no GPU: cuBLAS loads and
// answers version queries without one.
TEST_CASE("cuBLAS loads on demand with every function the backend calls", "[cuda_registry]") {
  CHECK(dl::gpu::cublas_file_name() == "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
  const dl::gpu::CublasLibrary& api = dl::gpu::cublas();
  CHECK(&api == &dl::gpu::cublas());  // loaded once
  CHECK(api.create != nullptr);
  CHECK(api.destroy != nullptr);
  CHECK(api.set_stream != nullptr);
  CHECK(api.set_math_mode != nullptr);
  CHECK(api.set_workspace != nullptr);
  CHECK(api.sgemm != nullptr);
  CHECK(api.gemm_ex != nullptr);
  CHECK(api.status_name != nullptr);
  CHECK(api.status_string != nullptr);
  REQUIRE(api.get_property != nullptr);
  int major = 0;
  CHECK(api.get_property(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS);
  CHECK(major == CUBLAS_VER_MAJOR);
  REQUIRE(api.lt_version != nullptr);
  constexpr std::size_t kLtMajorScale = 10000;  // cuBLASLt: 10000 * major + 100 * minor + patch
  CHECK(api.lt_version() / kLtMajorScale == static_cast<std::size_t>(CUBLAS_VER_MAJOR));
  CHECK(std::string(api.status_name(CUBLAS_STATUS_NOT_INITIALIZED)) ==
        "CUBLAS_STATUS_NOT_INITIALIZED");
}

TEST_CASE("backend: cpu always resolves to the CPU backend", "[cuda_registry]") {
  const ScopedEnv gpu_priority(dl::gpu::kGpuPriorityVariable, "1000");
  CHECK(dl::resolve_backend(config_for(dl::BackendKind::kCpu)) == dl::BackendKind::kCpu);
  const auto backend =
      dl::make_backend(dl::BackendKind::kCpu, config_for(dl::BackendKind::kCpu), 3);
  CHECK(backend->name() == "cpu");
}

TEST_CASE("backend: auto and cuda follow the visible devices", "[cuda_registry]") {
  const ScopedEnv cpu_priority(dl::gpu::kCpuPriorityVariable, nullptr);
  const ScopedEnv gpu_priority(dl::gpu::kGpuPriorityVariable, nullptr);
  const bool visible = !dl::gpu::scan_devices().devices.empty();
  const dl::BackendKind resolved = dl::resolve_backend(config_for(dl::BackendKind::kAuto));
  CHECK(resolved == (visible ? dl::BackendKind::kCuda : dl::BackendKind::kCpu));
  if (visible) {
    CHECK(dl::resolve_backend(config_for(dl::BackendKind::kCuda)) == dl::BackendKind::kCuda);
  } else {
    try {
      dl::resolve_backend(config_for(dl::BackendKind::kCuda));
      FAIL("backend: cuda resolved without a visible device");
    } catch (const dl::ConfigError& e) {
      CHECK(std::string(e.what()).rfind("run.yaml: ", 0) == 0);
      CHECK(contains(e.what(), "no CUDA device is visible"));
    }
  }
}

TEST_CASE("BACKEND_PRIORITY_CPU above the GPU's keeps backend: auto on the CPU",
          "[cuda_registry]") {
  const ScopedEnv cpu_priority(dl::gpu::kCpuPriorityVariable, "200");
  const ScopedEnv gpu_priority(dl::gpu::kGpuPriorityVariable, "100");
  CHECK(dl::resolve_backend(config_for(dl::BackendKind::kAuto)) == dl::BackendKind::kCpu);
}

TEST_CASE("a priority that is not a number is reported, naming the variable", "[cuda_registry]") {
  const ScopedEnv gpu_priority(dl::gpu::kGpuPriorityVariable, "fast");
  try {
    dl::resolve_backend(config_for(dl::BackendKind::kAuto));
    FAIL("BACKEND_PRIORITY_GPU=fast accepted");
  } catch (const dl::ConfigError& e) {
    CHECK(contains(e.what(), "BACKEND_PRIORITY_GPU"));
    CHECK(contains(e.what(), "fast"));
  }
}

TEST_CASE("workers map onto the listed devices in turn", "[cuda_registry]") {
  if (dl::gpu::scan_devices().devices.empty()) {
    // Without a GPU, asking for one fails clearly instead of crashing.
    CHECK_THROWS_AS(dl::make_backend(dl::BackendKind::kCuda, config_for(dl::BackendKind::kCuda), 0),
                    dl::ConfigError);
    return;
  }
  dl::Config c = config_for(dl::BackendKind::kCuda);
  c.cuda.devices = {0};
  const auto backend = dl::make_backend(dl::BackendKind::kCuda, c, 5);
  CHECK(backend->name() == "cuda:0");
  CHECK(backend->kind() == dl::BackendKind::kCuda);
}

TEST_CASE("backend: auto that falls back to the CPU refuses HALF and BFLOAT16", "[cuda_registry]") {
  const ScopedEnv cpu_priority(dl::gpu::kCpuPriorityVariable, "200");
  const ScopedEnv gpu_priority(dl::gpu::kGpuPriorityVariable, "100");
  for (const dl::DType dtype : {dl::DType::kHalf, dl::DType::kBFloat16}) {
    dl::Config c = config_for(dl::BackendKind::kAuto);
    c.dtype = dtype;
    try {
      dl::resolve_backend(c);
      FAIL("a 16-bit dtype resolved to the CPU");
    } catch (const dl::ConfigError& e) {
      CHECK(std::string(e.what()).rfind("run.yaml: ", 0) == 0);
      CHECK(contains(e.what(), "BACKEND_PRIORITY_CPU"));
      CHECK(contains(e.what(), "set dtype: FLOAT"));
    }
  }
  dl::Config c = config_for(dl::BackendKind::kAuto);
  CHECK(dl::resolve_backend(c) == dl::BackendKind::kCpu);
}
