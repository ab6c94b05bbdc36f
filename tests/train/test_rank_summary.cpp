// Each rank's summary at the end of a run (rank_summary.hpp): the JSON summary.json's `ranks`
// holds and the ranks send each other, read back as written. Two real ranks:
// tests/cli/mpi_train.sh.
#include "train/rank_summary.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "parallel/process_group.hpp"

namespace {

dl::RankSummary example() {
  dl::RankSummary rank;
  rank.rank = 3;
  rank.host = "node-2";
  rank.node = "node-2 boot b-1";
  rank.local_rank = 1;
  rank.local_ranks = 2;
  rank.workers = 2;
  rank.backend = "cuda";
  rank.placement = "worker 0: GPU 2, worker 1: GPU 3";
  rank.threads = "threads: 2 worker(s) x 4 thread(s) on 8 core(s)";
  rank.peak_rss_bytes = 123456789;
  rank.memory_reports = {"peak 1 GiB", "peak 2 GiB"};
  dl::LossScalingSummary scaling;
  scaling.mode = dl::LossScalingMode::kDynamic;
  scaling.final_scales = {1024.0, 512.0};
  scaling.skipped_steps = 4;
  rank.loss_scaling = scaling;
  return rank;
}

}  // namespace

TEST_CASE("a rank's summary reads back as written; what a rank lacks is left out") {
  const dl::Json json = dl::rank_summary_json(example());
  CHECK(json.at("rank") == 3);
  CHECK(json.at("peak_rss_bytes") == 123456789);
  CHECK(json.at("loss_scaling").at("mode") == "dynamic");
  CHECK(json.at("loss_scaling").at("final_scales") == dl::Json::array({1024.0, 512.0}));
  const dl::RankSummary back = dl::rank_summary_from_json(json);
  CHECK(dl::rank_summary_json(back) == json);
  CHECK(back.loss_scaling->mode == dl::LossScalingMode::kDynamic);
  CHECK(back.loss_scaling->skipped_steps == 4);

  dl::RankSummary plain = example();
  plain.placement.clear();
  plain.memory_reports = {"", ""};  // the CPU backend reports none
  plain.loss_scaling.reset();
  const dl::Json lean = dl::rank_summary_json(plain);
  CHECK_FALSE(lean.contains("placement"));
  CHECK_FALSE(lean.contains("memory_reports"));
  CHECK_FALSE(lean.contains("loss_scaling"));
  CHECK_FALSE(dl::rank_summary_from_json(lean).loss_scaling);
}

TEST_CASE("a single process gathers its own summary") {
  const auto processes = dl::make_single_process_group();
  const std::vector<dl::RankSummary> ranks = dl::gather_rank_summaries(*processes, example());
  REQUIRE(ranks.size() == 1);
  CHECK(dl::rank_summary_json(ranks.front()) == dl::rank_summary_json(example()));
}

TEST_CASE("the job's skipped steps: rank 0's when synchronous, every rank's added when averaging") {
  std::vector<dl::RankSummary> ranks{example(), example(), example()};
  ranks[0].loss_scaling->skipped_steps = 4;
  ranks[1].loss_scaling->skipped_steps = 7;
  ranks[2].loss_scaling->skipped_steps = 0;
  ranks[1].loss_scaling->final_scales = {8.0};

  const auto averaging = dl::job_loss_scaling(ranks, dl::ParallelMode::kAveraging);
  REQUIRE(averaging.has_value());
  CHECK(averaging->skipped_steps == 11);
  CHECK(averaging->final_scales == std::vector<double>{1024.0, 512.0});  // rank 0's
  CHECK(averaging->mode == dl::LossScalingMode::kDynamic);

  const auto synchronous = dl::job_loss_scaling(ranks, dl::ParallelMode::kSynchronous);
  REQUIRE(synchronous.has_value());
  CHECK(synchronous->skipped_steps == 4);

  // One process: its own count, whatever the mode.
  CHECK(dl::job_loss_scaling({ranks[1]}, dl::ParallelMode::kAveraging)->skipped_steps == 7);
  // Without loss scaling there is nothing to state.
  for (dl::RankSummary& rank : ranks) rank.loss_scaling.reset();
  CHECK_FALSE(dl::job_loss_scaling(ranks, dl::ParallelMode::kAveraging).has_value());
  CHECK_FALSE(dl::job_loss_scaling({}, dl::ParallelMode::kAveraging).has_value());
}
