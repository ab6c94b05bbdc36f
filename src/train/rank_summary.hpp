// Each rank's summary (RankSummary, training_listener.hpp) at the end of a run: made by every
// rank from what it set up and used, gathered to rank 0 for summary.json's `ranks`.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "io/json_writer.hpp"
#include "parallel/process_group.hpp"
#include "train/training_listener.hpp"

namespace dl {

// This process's place, machine and set-up; the caller adds what the run used (memory, loss
// scaling).
RankSummary describe_this_rank(const RunInfo& info, const ProcessGroup& processes, int workers);

// On rank 0: every rank's summary, in rank order; on the others: empty. A collective: every rank
// calls it.
std::vector<RankSummary> gather_rank_summaries(ProcessGroup& processes, const RankSummary& mine);

// The steps replicas (a process's workers, or the ranks) skipped for overflow together:
// synchronous replicas share every decision, so the first one's count is theirs; averaging
// replicas skip on their own, so their counts add up (replica-steps lost).
std::int64_t replicas_skipped_steps(const std::vector<std::int64_t>& counts, ParallelMode mode);

// The job's loss scaling, as summary.json and the log's last lines state it: the first rank's
// scales (rank 0's, where `ranks` holds every rank's), and the steps the whole job skipped for
// overflow (replicas_skipped_steps over the ranks). Nothing without loss scaling.
// The job's steps skipped for a non-finite loss or gradient, from every rank's count.
std::int64_t job_non_finite_skips(const std::vector<RankSummary>& ranks, ParallelMode mode);
std::optional<LossScalingSummary> job_loss_scaling(const std::vector<RankSummary>& ranks,
                                                   ParallelMode mode);

// As summary.json writes it, and back (the form gathered between ranks).
Json rank_summary_json(const RankSummary& rank);
RankSummary rank_summary_from_json(const Json& json);

}  // namespace dl
