// summary.json: the outcome of the run (accuracy, final score, throughput, training seconds, peak
// memory, why it stopped, steps skipped) and its provenance (version, commit, build options,
// host, CPU, backend, threads, command line, config hash, start and end times), written last,
// through the one JSON writer.
#include <chrono>
#include <ctime>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/config_loader.hpp"
#include "config/enum_names.hpp"
#include "io/atomic_file.hpp"
#include "io/json_writer.hpp"
#include "io/run_files.hpp"
#include "report/build_info.hpp"
#include "report/metric_names.hpp"
#include "train/listeners/listeners.hpp"
#include "train/rank_summary.hpp"

namespace dl {

namespace {

// ISO 8601 in UTC, e.g. "2026-11-26T01:52:48Z".
std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

class SummaryJson final : public TrainingListener {
 public:
  explicit SummaryJson(const ListenerContext& context)
      : workers_(context.config.parallel.workers),
        config_hash_(config_hash(context.config)),
        path_(context.run.file(run_files::kSummary)) {}

  void on_start(const RunInfo& info) override {
    provenance_ = build_and_host_json();
    provenance_["backend"] = info.backend;
    if (!info.placement.empty()) provenance_["placement"] = info.placement;
    provenance_["collective"] = info.collective;
    provenance_["blas"] = info.blas;
    provenance_["threads"] = info.threads;
    provenance_["processes"] = info.processes;
    provenance_["global_workers"] = info.global_workers;
    provenance_["config_hash"] = fmt::format("{:016x}", config_hash_);
    provenance_["resumed_from"] = info.resumed_from;
    provenance_["start_epoch"] = info.start.epoch;
    provenance_["start_time"] = utc_now();
    skipped_files_ = info.skipped_files;
  }

  void on_finish(RunEnd& end) override {
    const TrainOutcome& outcome = end.outcome;
    Json summary = versioned_json_object();
    summary[kTestMetricPrefix + "accuracy"] = number_or_null(outcome.test_accuracy);
    summary["final_score"] = number_or_null(outcome.final_score);
    summary["epochs"] = outcome.epochs_completed;
    summary["iterations"] = outcome.iterations;
    summary["train_seconds"] = outcome.train_seconds;
    summary["train_images_per_second"] = outcome.images_per_second;
    summary["peak_rss_bytes"] = end.peak_rss_bytes;
    summary["workers"] = workers_;
    summary["stopped_by"] = end.stopped_by;
    summary["skipped_steps"] = end.loss_scaling ? end.loss_scaling->skipped_steps : 0;
    summary["skipped_non_finite_steps"] = end.non_finite_skips;
    if (!skipped_files_.empty()) summary["skipped_files"] = skipped_files_;
    if (end.early_stopping) summary["early_stopping"] = end.early_stopping->to_json();
    if (end.loss_scaling) {
      Json scaling = Json::object();
      scaling["mode"] = enum_name(end.loss_scaling->mode);
      scaling["final_scale"] = end.loss_scaling->final_scales.front();
      scaling["skipped_steps"] = end.loss_scaling->skipped_steps;
      summary["loss_scaling"] = std::move(scaling);
    }
    // Every process's own figures (summary.json's others are rank 0's): one entry for a single
    // process too, so that a reader needs no second case.
    Json ranks = Json::array();
    for (const RankSummary& rank : end.ranks) ranks.push_back(rank_summary_json(rank));
    summary["ranks"] = std::move(ranks);
    Json provenance = provenance_;
    provenance["end_time"] = utc_now();
    summary["provenance"] = std::move(provenance);
    write_file_atomically(path_, json_document(summary));
  }

 private:
  int workers_;
  std::uint64_t config_hash_;
  std::string path_;
  Json provenance_ = Json::object();
  std::vector<std::string> skipped_files_;  // data.onBadFile: skip's, from the start
};

}  // namespace

std::unique_ptr<TrainingListener> make_summary_json(const ListenerContext& context) {
  return std::make_unique<SummaryJson>(context);
}

}  // namespace dl
