#include "train/listeners/listeners.hpp"

namespace dl {

Listeners make_listeners(const ListenerContext& context) {
  Listeners listeners;
  for (auto make :
       {make_config_resolved_yaml, make_scores_csv, make_timing_csv, make_evaluation_txt,
        make_metrics_jsonl, make_model_dlm, make_early_stopping_json, make_checkpoints,
        make_summary_json, make_tensorboard_events, make_report_html, make_console_log}) {
    if (auto listener = make(context)) listeners.push_back(std::move(listener));
  }
  return listeners;
}

}  // namespace dl
