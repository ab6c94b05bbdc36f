#include "train/listeners/console_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/enum_names.hpp"
#include "core/figure_text.hpp"
#include "report/metric_names.hpp"

namespace dl {

namespace {

void print_model(std::ostream& out, const RunInfo& info, const Config& config) {
  const ParallelConfig& parallel = config.parallel;
  const bool averaging = parallel.mode == ParallelMode::kAveraging;
  out << fmt::format("model: {} parameters; {} mode, {} worker(s) x batch {}{}\n", info.parameters,
                     averaging ? "averaging" : "synchronous", parallel.workers, config.batchSize,
                     averaging && parallel.workers > 1
                         ? fmt::format(", averaging every {} round(s)", parallel.averagingFrequency)
                         : std::string());
  if (info.loss_scaling == LossScalingMode::kNone) return;
  const LossScalingConfig& s = config.lossScaling;
  out << fmt::format("loss scaling: {}, initial scale {}{}\n", enum_name(info.loss_scaling),
                     info.initial_loss_scale,
                     info.loss_scaling == LossScalingMode::kDynamic
                         ? fmt::format(" (x{} after {} good steps, x{} on overflow)",
                                       s.growthFactor, s.growthInterval, s.backoffFactor)
                         : std::string());
}

void print_loss_scaling(std::ostream& out, const RunEnd::LossScaling& scaling) {
  std::string scales;
  for (std::size_t w = 0; w < scaling.final_scales.size(); ++w)
    scales += fmt::format("{}{}", w == 0 ? "" : ", ", scaling.final_scales[w]);
  out << fmt::format("loss scaling ({}): final scale {}{}; {} step(s) skipped for overflow\n",
                     enum_name(scaling.mode), scales,
                     scaling.final_scales.size() > 1 ? " (per worker)" : "", scaling.skipped_steps);
}

Json event_record(const char* event) {
  Json record = versioned_json_object();
  record["event"] = event;
  return record;
}

}  // namespace

bool is_warning(const std::string& line) {
  return line.rfind("warning: ", 0) == 0;
}

void print_setup(std::ostream& out, const RunInfo& info, const Config& config) {
  if (info.processes > 1)
    out << fmt::format("processes: {}; global workers: {}\n", info.process_group,
                       info.global_workers);
  out << fmt::format("data: {} training and {} test examples ({}), {} classes\n",
                     info.train_examples, info.test_examples, info.sample_shape,
                     config.data.numClasses);
  for (const std::string& line : info.data_notes) out << "data: " << line << "\n";
  if (info.validation_examples > 0)
    out << fmt::format("validation: {} examples from {}; the test set is evaluated at the end\n",
                       info.validation_examples, info.validation_source);
  if (!info.input_pipeline.empty()) out << "input: " << info.input_pipeline << "\n";
  out << info.blas << "\n" << info.threads << "\n";
  out << "backend: " << info.backend << "\n";
  if (!info.placement.empty()) out << "placement: " << info.placement << "\n";
  out << "collective: " << info.collective << "\n"
      << info.optimizer << "\n"
      << info.data_placement << "\n";
  print_model(out, info, config);
  for (const std::string& line : info.resume_log)
    if (!is_warning(line)) out << line << "\n";
}

void print_finish(std::ostream& out, const RunEnd& end) {
  for (std::size_t w = 0; w < end.memory_reports.size(); ++w) {
    if (!end.memory_reports[w].empty())
      out << fmt::format("memory, worker {}:\n{}\n", w, end.memory_reports[w]);
  }
  if (end.early_stopping) out << end.early_stopping->summary() << "\n";
  if (end.loss_scaling) print_loss_scaling(out, *end.loss_scaling);
  if (end.non_finite_skips > 0)
    out << fmt::format(
        "skipped: {} step(s), their loss or gradient not finite (onNonFiniteLoss: "
        "skip)\n",
        end.non_finite_skips);
  if (end.test != nullptr)
    out << fmt::format("test set (final model): accuracy {:.4f}, loss {:.4f}\n",
                       figure(end.test->evaluation.accuracy()), figure(end.test->mean_loss));
  const TrainOutcome& o = end.outcome;
  // The last line a person sees says what the network learned, not only that the run ended;
  // and a run a signal stopped says so and how to go on, rather than "done".
  const std::string accuracy =
      o.test_accuracy ? fmt::format(", test accuracy {:.4f}", figure(*o.test_accuracy)) : "";
  const std::string how = end.diverged ? std::string("diverged")
                          : end.stop_signal != 0
                              ? fmt::format("stopped by signal {}", end.stop_signal)
                              : std::string("done");
  out << fmt::format(
      "{}: {} epoch(s), {} iterations, {:.1f}s, {:.0f} images/s{}; run directory {}{}\n", how,
      o.epochs_completed, o.iterations, o.train_seconds, o.images_per_second, accuracy,
      o.run_directory, end.stop_signal != 0 && !end.diverged ? " (continue with --resume)" : "");
}

Json start_record(const RunInfo& info) {
  Json record = event_record("start");
  record["run_directory"] = info.run_directory;
  record["train_examples"] = info.train_examples;
  record["test_examples"] = info.test_examples;
  record["rounds_per_epoch"] = info.rounds_per_epoch;
  record["max_epochs"] = info.max_epochs;
  record["parameters"] = info.parameters;
  record["backend"] = info.backend;
  record["start_epoch"] = info.start.epoch;
  record["start_iteration"] = info.start.iteration;
  record["log"] = info.resume_log;
  return record;
}

Json score_record(const SyncEvent& event) {
  const SyncPoint& p = event.point;
  Json record = event_record("score");
  record["epoch"] = p.epoch;
  record["iteration"] = p.iteration;
  record["round"] = p.round + 1;
  record["rounds"] = p.rounds;
  record["score"] = event.score;
  record["learning_rate"] = p.learning_rate;
  record["images_per_second"] = event.images_per_second;
  return record;
}

// PREFIXaccuracy, PREFIXf1 and PREFIXloss of an evaluation, when there is one: the prefixes of
// report/metric_names.hpp, the one spelling metrics.jsonl, TensorBoard and the console share (the
// jsonl console wrote validation_accuracy where they write val_accuracy).
void add_evaluation(Json& record, const std::string& prefix, const EvaluationResult* result) {
  if (result == nullptr) return;
  record[prefix + "accuracy"] = result->evaluation.accuracy();
  record[prefix + "f1"] = result->evaluation.f1();
  record[prefix + "loss"] = result->mean_loss;
}

Json epoch_record(const EpochEnd& event) {
  Json record = event_record("epoch");
  record["epoch"] = event.epoch;
  record["iteration"] = event.iteration;
  record["seconds"] = event.epoch_seconds;
  record["images_per_second"] = event.images_per_second;
  record["train_loss"] = event.train_loss;
  record["train_accuracy"] = event.train_accuracy;
  add_evaluation(record, kTestMetricPrefix, event.test);
  add_evaluation(record, kValidationMetricPrefix, event.validation);
  return record;
}

Json finish_record(const RunEnd& end) {
  const TrainOutcome& o = end.outcome;
  Json record = event_record("finish");
  record["stopped_by"] = end.stopped_by;
  record["epochs"] = o.epochs_completed;
  record["iterations"] = o.iterations;
  record["train_seconds"] = o.train_seconds;
  record["images_per_second"] = o.images_per_second;
  record[kTestMetricPrefix + "accuracy"] = number_or_null(o.test_accuracy);
  record["run_directory"] = o.run_directory;
  if (end.early_stopping) record["early_stopping"] = end.early_stopping->to_json();
  return record;
}

}  // namespace dl
