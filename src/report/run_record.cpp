#include "report/run_record.hpp"

#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "config/config_loader.hpp"
#include "core/error.hpp"
#include "core/message_text.hpp"
#include "io/file_access.hpp"
#include "io/run_files.hpp"
#include "nn/model.hpp"
#include "report/metric_names.hpp"

namespace dl {

namespace {

using run_files::kEvaluationJson;
using run_files::kMetrics;
using run_files::kResolvedConfig;
using run_files::kScores;
using run_files::kSummary;
using run_files::kTiming;
// The logs the report reads: read_run_record's files and run_record_files.
constexpr const char* kRunFiles[] = {kScores,         kTiming,  kMetrics,
                                     kResolvedConfig, kSummary, kEvaluationJson};
// A log far past what any run writes (scores.csv of a million logged rows is about 50 MiB) is
// not a log; reading it whole would only exhaust memory.
constexpr std::uint64_t kMaxRunFileBytes = std::uint64_t{1} << 30;

// A missing log is empty (a run in its first epoch, an older run); one that is there is read as
// every input is, so a FIFO or a device in its place is refused instead of blocking or flooding.
std::string read_text(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return {};
  return read_input_text(path.string(), InputRole::kRunFile, kMaxRunFileBytes);
}

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (std::getline(stream, field, separator)) fields.push_back(field);
  return fields;
}

// The rows of a CSV log after its header, each split into fields; a short or unreadable row (a
// line a killed run left half-written) is skipped.
std::vector<std::vector<std::string>> read_csv(const std::filesystem::path& path,
                                               std::size_t columns) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(read_text(path));
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) {
      header = false;
      continue;
    }
    std::vector<std::string> fields = split(line, ',');
    if (fields.size() == columns) rows.push_back(std::move(fields));
  }
  return rows;
}

bool to_double(const std::string& text, double& value) {
  try {
    std::size_t used = 0;
    value = std::stod(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

// scores.csv: epoch,iteration,worker,score,learning_rate. The "all" rows when there are any (one
// score of all workers), else worker 0's.
void read_scores(const std::filesystem::path& dir, RunRecord& run,
                 std::map<int, std::pair<double, int>>& epoch_loss) {
  const auto rows = read_csv(dir / kScores, 5);
  bool any_all = false;
  for (const auto& row : rows) any_all = any_all || row[2] == "all";
  for (const auto& row : rows) {
    if (row[2] != (any_all ? "all" : "0")) continue;
    double epoch = 0, iteration = 0, score = 0, rate = 0;
    if (!to_double(row[0], epoch) || !to_double(row[1], iteration) || !to_double(row[3], score) ||
        !to_double(row[4], rate))
      continue;
    run.loss.push_back({iteration, score});
    run.learning_rate.push_back({iteration, rate});
    auto& [sum, count] = epoch_loss[static_cast<int>(epoch)];
    sum += score;
    ++count;
  }
}

void read_metrics(const std::filesystem::path& path, RunRecord& run,
                  const std::map<int, std::pair<double, int>>& epoch_loss) {
  std::istringstream in(read_text(path));
  std::string line;
  run.final_test_accuracy = std::nan("");
  while (std::getline(in, line)) {
    Json record;
    if (!parse_json(line, record) || !record.is_object()) continue;
    // Non-finite numbers are written as null: read as NaN so the chart leaves a gap.
    auto number = [&](const std::string& key) {
      const auto it = record.find(key);
      return it != record.end() && it->is_number() ? it->get<double>() : std::nan("");
    };
    // The last record of a run with a validation set ("final", no "epoch") is the test set's.
    if (!record.contains("epoch")) {
      if (record.value("final", false))
        run.final_test_accuracy = number(kTestMetricPrefix + "accuracy");
      continue;
    }
    EpochRecord e;
    e.epoch = record.value("epoch", 0);
    e.iteration = record.value("iteration", std::int64_t{0});
    e.validation = record.contains(kValidationMetricPrefix + "accuracy");
    run.validation = run.validation || e.validation;
    const std::string& evaluated = e.validation ? kValidationMetricPrefix : kTestMetricPrefix;
    e.accuracy = number(evaluated + "accuracy");
    e.f1 = number(evaluated + "f1");
    e.loss = number(evaluated + "loss");
    e.seconds = number("epoch_seconds");
    e.images_per_second = number("train_images_per_second");
    e.train_accuracy = number("train_accuracy");
    const auto loss = epoch_loss.find(e.epoch);
    e.train_loss = record.contains("train_loss") ? number("train_loss")
                   : loss != epoch_loss.end() && loss->second.second > 0
                       ? loss->second.first / loss->second.second
                       : std::nan("");
    run.epochs.push_back(e);
  }
}

Json read_json_file(const std::filesystem::path& path) {
  Json value;
  const std::string text = read_text(path);
  if (text.empty() || !parse_json(text, value)) return Json();
  return value;
}

// A directory that holds none of the logs is not a run (a run writes its resolved config first):
// a report of it would be an empty page written into someone else's folder.
void check_is_run(const std::filesystem::path& dir, const std::string& directory) {
  std::error_code ec;
  for (const char* name : kRunFiles)
    if (std::filesystem::exists(std::filesystem::symlink_status(dir / name, ec))) return;
  throw Error(ExitCode::kConfigError,
              fmt::format("{}: not a run directory: it holds none of the files a training run "
                          "writes ({}, {}, {}, ...); give the run's output.directory",
                          quoted_path(directory), kResolvedConfig, kScores, kMetrics));
}

}  // namespace

std::vector<std::string> run_record_files(const std::string& directory) {
  std::vector<std::string> paths;
  for (const char* name : kRunFiles) paths.push_back((std::filesystem::path(directory) / name));
  return paths;
}

RunRecord read_run_record(const std::string& directory) {
  const std::filesystem::path dir(directory);
  if (!std::filesystem::is_directory(dir))
    throw IoError("report: " + directory + " is not a run directory");
  check_is_run(dir, directory);
  RunRecord run;
  run.directory = directory;
  run.name = std::filesystem::absolute(dir).lexically_normal().filename().string();
  if (run.name.empty()) run.name = std::filesystem::absolute(dir).parent_path().filename().string();
  std::map<int, std::pair<double, int>> epoch_loss;
  read_scores(dir, run, epoch_loss);
  for (const auto& row : read_csv(dir / kTiming, 4)) {
    double iteration = 0, rate = 0;
    if (to_double(row[1], iteration) && to_double(row[2], rate))
      run.images_per_second.push_back({iteration, rate});
  }
  read_metrics(dir / kMetrics, run, epoch_loss);
  run.config_yaml = read_text(dir / kResolvedConfig);
  if (!run.config_yaml.empty()) {
    try {
      run.layer_table = layer_table(load_config_file((dir / kResolvedConfig).string()));
    } catch (const std::exception& e) {
      run.layer_table = std::string("(the resolved config does not load: ") + e.what() + ")";
    }
  }
  run.summary = read_json_file(dir / kSummary);
  run.evaluation = read_json_file(dir / kEvaluationJson);
  return run;
}

}  // namespace dl
