// Each rank's summary (RankSummary, training_listener.hpp) at the end of a run: made by every
// rank from what it set up and used, gathered to rank 0 for summary.json's `ranks`.
#pragma once

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

// As summary.json writes it, and back (the form gathered between ranks).
Json rank_summary_json(const RankSummary& rank);
RankSummary rank_summary_from_json(const Json& json);

}  // namespace dl
