// The epoch-end check that every rank's replica holds the same parameters, seen from rank 0 of a
// two-rank job whose other rank is scripted: what it sends is what a rank with the same or with
// drifted parameters would send.
#include <catch2/catch.hpp>

#include <exception>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.hpp"
#include "config/config_loader.hpp"
#include "core/error.hpp"
#include "nn/model.hpp"
#include "parallel/process_group.hpp"
#include "train/rank_agreement.hpp"

namespace {

// Rank 0 of two; gather answers with this rank's bytes and `other`, the scripted rank 1's.
class RankZeroOfTwo final : public dl::ProcessGroup {
 public:
  std::string other;  // empty: rank 1 sends what rank 0 sends
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string name() const override { return "rank 0 of a scripted pair"; }
  void all_reduce_sum(float*, std::size_t) override {}
  void all_reduce_sum(double*, std::size_t) override {}
  void broadcast(void*, std::size_t, int) override {}
  std::vector<std::uint64_t> all_gather(std::uint64_t value) override { return {value, value}; }
  std::vector<std::string> gather(const std::string& bytes, int) override {
    return {bytes, other.empty() ? bytes : other};
  }
  void barrier() override {}
  [[noreturn]] void abort_job(int) override { std::terminate(); }
};

constexpr const char* kNet = R"(
seed: 3
inputType: {feedForward: {size: 4}}
layers:
  - dense: {nOut: 3, activation: tanh}
  - output: {nOut: 2, activation: softmax, lossFunction: mcxent}
)";

}  // namespace

TEST_CASE("replicas: ranks holding the same parameters pass the epoch-end check",
          "[train][ranks]") {
  const dl::Config config = dl::load_config_string(kNet, "net.yaml");
  dl::CpuBackend backend;
  dl::Model model(config, backend, 2);
  model.initialize(config.seed);
  RankZeroOfTwo processes;
  CHECK_NOTHROW(dl::check_replicas_agree(processes, model, 0));
}

TEST_CASE("replicas: a rank whose parameters drifted ends the job naming it", "[train][ranks]") {
  const dl::Config config = dl::load_config_string(kNet, "net.yaml");
  dl::CpuBackend backend;
  dl::Model model(config, backend, 2);
  model.initialize(config.seed);
  RankZeroOfTwo processes;
  processes.other = "node7\nhash 00000000deadbeef";
  try {
    dl::check_replicas_agree(processes, model, 2);
    FAIL("a drifted rank was not noticed");
  } catch (const dl::Error& e) {
    const std::string message = e.what();
    CHECK(e.code() == dl::ExitCode::kFailure);
    CHECK_THAT(message, Catch::Contains("rank 1 of 2 (host node7)"));
    CHECK_THAT(message, Catch::Contains("parameters after epoch 3: hash 00000000deadbeef"));
    CHECK_THAT(message, Catch::Contains("give every node the same CPU kernels"));
  }
}
