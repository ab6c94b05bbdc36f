#include "train/rank_summary.hpp"

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "config/enum_names.hpp"
#include "core/error.hpp"
#include "core/node_identity.hpp"

namespace dl {

RankSummary describe_this_rank(const RunInfo& info, const ProcessGroup& processes, int workers) {
  RankSummary rank;
  rank.rank = processes.rank();
  rank.host = host_name();
  rank.node = node_identity();
  const LocalRank local = processes.local_rank();
  rank.local_rank = local.rank;
  rank.local_ranks = local.size;
  rank.workers = workers;
  rank.backend = info.backend;
  rank.placement = info.placement;
  rank.threads = info.threads;
  return rank;
}

std::int64_t replicas_skipped_steps(const std::vector<std::int64_t>& counts, ParallelMode mode) {
  if (counts.empty()) return 0;
  if (mode == ParallelMode::kSynchronous) return counts.front();
  std::int64_t total = 0;
  for (std::int64_t count : counts) total += count;
  return total;
}

std::int64_t job_non_finite_skips(const std::vector<RankSummary>& ranks, ParallelMode mode) {
  std::vector<std::int64_t> counts;
  for (const RankSummary& rank : ranks) counts.push_back(rank.non_finite_skips);
  return replicas_skipped_steps(counts, mode);
}

std::optional<LossScalingSummary> job_loss_scaling(const std::vector<RankSummary>& ranks,
                                                   ParallelMode mode) {
  if (ranks.empty()) return std::nullopt;
  std::optional<LossScalingSummary> scaling = ranks.front().loss_scaling;
  if (!scaling) return scaling;
  std::vector<std::int64_t> counts;
  for (const RankSummary& rank : ranks)
    if (rank.loss_scaling) counts.push_back(rank.loss_scaling->skipped_steps);
  scaling->skipped_steps = replicas_skipped_steps(counts, mode);
  return scaling;
}

Json rank_summary_json(const RankSummary& rank) {
  Json json = Json::object();
  json["rank"] = rank.rank;
  json["host"] = rank.host;
  json["node"] = rank.node;
  json["local_rank"] = rank.local_rank;
  json["local_ranks"] = rank.local_ranks;
  json["workers"] = rank.workers;
  json["backend"] = rank.backend;
  if (!rank.placement.empty()) json["placement"] = rank.placement;
  json["threads"] = rank.threads;
  json["peak_rss_bytes"] = rank.peak_rss_bytes;
  bool any_report = false;
  for (const std::string& report : rank.memory_reports) any_report |= !report.empty();
  if (any_report) json["memory_reports"] = rank.memory_reports;
  json["skipped_non_finite_steps"] = rank.non_finite_skips;
  if (rank.loss_scaling) {
    Json scaling = Json::object();
    scaling["mode"] = std::string(enum_name(rank.loss_scaling->mode));
    scaling["final_scales"] = rank.loss_scaling->final_scales;
    scaling["skipped_steps"] = rank.loss_scaling->skipped_steps;
    json["loss_scaling"] = std::move(scaling);
  }
  return json;
}

RankSummary rank_summary_from_json(const Json& json) {
  RankSummary rank;
  rank.rank = json.at("rank").get<int>();
  rank.host = json.at("host").get<std::string>();
  rank.node = json.at("node").get<std::string>();
  rank.local_rank = json.at("local_rank").get<int>();
  rank.local_ranks = json.at("local_ranks").get<int>();
  rank.workers = json.at("workers").get<int>();
  rank.backend = json.at("backend").get<std::string>();
  rank.placement = json.value("placement", std::string());
  rank.threads = json.at("threads").get<std::string>();
  rank.peak_rss_bytes = json.at("peak_rss_bytes").get<std::int64_t>();
  rank.memory_reports = json.value("memory_reports", std::vector<std::string>());
  rank.non_finite_skips = json.value("skipped_non_finite_steps", std::int64_t{0});
  if (json.contains("loss_scaling")) {
    const Json& scaling = json.at("loss_scaling");
    LossScalingSummary summary;
    summary.mode = enum_from_name<LossScalingMode>(scaling.at("mode").get<std::string>())
                       .value_or(LossScalingMode::kNone);
    summary.final_scales = scaling.at("final_scales").get<std::vector<double>>();
    summary.skipped_steps = scaling.at("skipped_steps").get<std::int64_t>();
    rank.loss_scaling = std::move(summary);
  }
  return rank;
}

std::vector<RankSummary> gather_rank_summaries(ProcessGroup& processes, const RankSummary& mine) {
  const std::vector<std::string> texts = processes.gather(json_line(rank_summary_json(mine)), 0);
  std::vector<RankSummary> ranks;
  for (std::size_t r = 0; r < texts.size(); ++r) {
    Json json;
    // Every rank runs this binary (checked at start), so a text that does not read back is a bug.
    DL_CHECK(parse_json(texts[r], json), fmt::format("rank {}'s summary is not JSON", r));
    ranks.push_back(rank_summary_from_json(json));
  }
  return ranks;
}

}  // namespace dl
