// The listeners of a run, one per output; each file is named after what it writes:
//   config_resolved_yaml.cpp  config.resolved.yaml
//   scores_csv.cpp            scores.csv
//   timing_csv.cpp            timing.csv
//   evaluation_txt.cpp        evaluation.txt and evaluation.json
//   metrics_jsonl.cpp         metrics.jsonl
//   model_dlm.cpp             model.dlm
//   early_stopping_json.cpp   early_stopping.json and best_model.dlm; stops the run
//   checkpoints.cpp           checkpoints/checkpoint-e<epoch>-i<iteration>.dlck
//   summary_json.cpp          summary.json
//   tensorboard_events.cpp    tensorboard/events.out.tfevents.* (output.tensorboard)
//   report_html.cpp           report.html, from the files above (output.report)
//   console_log.cpp           the console (standard output)
// make_listeners puts them in that order (training_listener.hpp says why order matters: the
// console, last, reports what the others did).
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "train/run_directory.hpp"
#include "train/training_listener.hpp"
#include "train/training_state.hpp"

namespace dl {

// What listeners are made with. All references outlive the listeners.
struct ListenerContext {
  const Config& config;
  const RunDirectory& run;
  TrainingState& state;  // writes checkpoints and model files
  std::ostream& console;
  bool console_is_terminal = false;  // output.console: auto draws a bar only on a terminal
};

Listeners make_listeners(const ListenerContext& context);

std::unique_ptr<TrainingListener> make_config_resolved_yaml(const ListenerContext& context);
std::unique_ptr<TrainingListener> make_scores_csv(const ListenerContext& context);
std::unique_ptr<TrainingListener> make_timing_csv(const ListenerContext& context);
std::unique_ptr<TrainingListener> make_evaluation_txt(const ListenerContext& context);
std::unique_ptr<TrainingListener> make_metrics_jsonl(const ListenerContext& context);
std::unique_ptr<TrainingListener> make_model_dlm(const ListenerContext& context);
// Null when early stopping is off.
std::unique_ptr<TrainingListener> make_early_stopping_json(const ListenerContext& context);
std::unique_ptr<TrainingListener> make_checkpoints(const ListenerContext& context);
std::unique_ptr<TrainingListener> make_summary_json(const ListenerContext& context);
// Null when output.tensorboard is off.
std::unique_ptr<TrainingListener> make_tensorboard_events(const ListenerContext& context);
// Null when output.report is off.
std::unique_ptr<TrainingListener> make_report_html(const ListenerContext& context);
std::unique_ptr<TrainingListener> make_console_log(const ListenerContext& context);

}  // namespace dl
