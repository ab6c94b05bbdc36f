// What the console writes besides progress (console_log.cpp): the set-up at the start and the
// outcome at the end as text, and the JSON records of output.console: jsonl (one object per line,
// each with "event": start, score, epoch, message or finish).
#pragma once

#include <ostream>

#include "config/config.hpp"
#include "io/json_writer.hpp"
#include "train/training_listener.hpp"

namespace dl {

// auto: a progress bar on a terminal, plain lines otherwise.
ConsoleMode resolve_console_mode(ConsoleMode configured, bool terminal);

// The set-up, and what resuming said except warnings (is_warning), which go to standard error.
void print_setup(std::ostream& out, const RunInfo& info, const Config& config);
bool is_warning(const std::string& line);
void print_finish(std::ostream& out, const RunEnd& end);

Json start_record(const RunInfo& info);
Json score_record(const SyncEvent& event);
Json epoch_record(const EpochEnd& event);
Json finish_record(const RunEnd& end);

}  // namespace dl
