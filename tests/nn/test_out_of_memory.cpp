// An allocation that fails names what it was for and its size (exit 7), from whichever backend:
// the CPU's own allocator, and a model bound on a backend whose memory runs out.
#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "core/out_of_memory.hpp"
#include "nn/model.hpp"

namespace {

// The CPU backend with `capacity` bytes: beyond it, its allocator fails as a full memory would.
class SmallMemoryBackend final : public dl::CpuBackend {
 public:
  explicit SmallMemoryBackend(std::size_t capacity) : capacity_(capacity) {}
  void* allocate_bytes(std::size_t bytes) override {
    if (bytes > capacity_ - used_) throw dl::OutOfMemoryError(bytes, "test memory");
    used_ += bytes;
    return dl::CpuBackend::allocate_bytes(bytes);
  }

 private:
  std::size_t capacity_, used_ = 0;
};

const char* kNet = R"(
inputType: {convolutionalFlat: {height: 8, width: 8, channels: 1}}
layers:
  - convolution: {kernelSize: [3, 3], stride: [1, 1], nOut: 4, activation: relu}
  - output: {nOut: 3, activation: softmax, lossFunction: negativeloglikelihood}
)";

std::string failure_of(dl::Backend& backend, int batch) {
  const dl::Config config = dl::load_config_string(kNet, "net.yaml");
  try {
    dl::Model model(config, backend, batch);
  } catch (const dl::OutOfMemoryError& e) {
    CHECK(e.code() == dl::ExitCode::kOutOfMemory);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the CPU allocator's failure names the purpose, the size and the keys to lower",
          "[out_of_memory]") {
  dl::CpuBackend backend;
  const dl::AllocationPurpose outer("the outer buffer");
  try {
    const dl::AllocationPurpose purpose("the test's buffer");
    backend.allocate_bytes(std::size_t{1} << 62);  // more than any address space
    FAIL("an allocation of 4 EiB succeeded");
  } catch (const dl::OutOfMemoryError& e) {
    CHECK(std::string(e.what()) ==
          "out of memory allocating the test's buffer: 4.0 EiB of host memory; " +
              dl::out_of_memory_advice());
  }
  CHECK(dl::AllocationPurpose::current() == "the outer buffer");
}

TEST_CASE("binding a model names the layer whose activations did not fit", "[out_of_memory]") {
  // Parameters (4*9+4 + 4*36*3+3 floats) and the input fit; layer 0's 144 outputs per sample
  // for a batch of 1000 (576000 bytes) do not.
  SmallMemoryBackend backend(300000);
  CHECK(
      failure_of(backend, 1000)
          .rfind("out of memory allocating the activations of layer 0 (convolution, 144 values per "
                 "sample) for batch 1000: 562.5 KiB of test memory; lower batchSize",
                 0) == 0);
  SmallMemoryBackend tiny(1000);
  CHECK(failure_of(tiny, 1).rfind(
            "out of memory allocating the model's parameters and their gradients (475 values "
            "each): 1.9 KiB",
            0) == 0);
}
