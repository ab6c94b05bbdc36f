#include "report/run_record.hpp"

#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
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

// A missing log is empty (a run in its first epoch, an older run); one that is there is read as
// every input is, so a FIFO or a device in its place is refused instead of blocking or flooding,
// with the error of `role`: `report`'s (a wrong run directory) or training's own (exit 6).
std::string read_text(const std::filesystem::path& path, InputRole role) {
  return read_optional_text(path.string(), role, run_files::kMaxLogBytes).value_or(std::string());
}

std::vector<std::string> split(const std::string& line, char separator) {
  std::vector<std::string> fields;
  std::stringstream stream(line);
  std::string field;
  while (std::getline(stream, field, separator)) fields.push_back(field);
  return fields;
}

// Lines of one log that were not read, counted and named by the first, for RunRecord::left_out.
class LeftOut {
 public:
  explicit LeftOut(const char* file) : file_(file) {}
  void add(std::size_t line) {
    if (count_++ == 0) first_ = line;
  }
  // `one` and `many`: what the lines should have been ("a JSON record", "JSON records").
  void report_into(RunRecord& run, const std::string& one, const std::string& many) const {
    if (count_ == 0) return;
    run.left_out.push_back(count_ == 1 ? fmt::format("{}: line {} is not {}", file_, first_, one)
                                       : fmt::format("{}: {} lines, the first line {}, are not {}",
                                                     file_, count_, first_, many));
  }
  void report_rows_into(RunRecord& run, const std::string& header) const {
    report_into(run, "a row of the form of its header, '" + header + "'",
                "rows of the form of its header, '" + header + "'");
  }

 private:
  const char* file_;
  std::size_t count_ = 0, first_ = 0;
};

// A log's lines to `take(line)`, which says whether it read the line; those it did not go to
// `left_out`. The header (`skip_header`: returned) is not offered, nor a last line without its
// newline: the one a killed run was writing.
template <typename Take>
std::string read_lines(const std::filesystem::path& path, InputRole role, bool skip_header,
                       LeftOut& left_out, const Take& take) {
  const std::string text = read_text(path, role);
  std::string header;
  std::size_t number = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;
    std::string line = text.substr(at, end - at);
    at = end + 1;
    if (++number == 1 && skip_header) {
      header = std::move(line);
      continue;
    }
    if (!line.empty() && !take(line)) left_out.add(number);
  }
  return header;
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

// The fields of a CSV row when it has `columns` of them and those at `numbers` are numbers.
std::optional<std::vector<std::string>> csv_row(const std::string& line, std::size_t columns,
                                                std::initializer_list<std::size_t> numbers) {
  std::vector<std::string> fields = split(line, ',');
  double unused = 0;
  if (fields.size() != columns) return std::nullopt;
  for (const std::size_t i : numbers)
    if (!to_double(fields[i], unused)) return std::nullopt;
  return fields;
}

double number_in(const std::string& field) {
  double value = 0;
  to_double(field, value);
  return value;
}

// scores.csv: epoch,iteration,worker,score,learning_rate. The "all" rows when there are any (one
// score of all workers), else worker 0's.
void read_scores(const std::filesystem::path& dir, RunRecord& run,
                 std::map<int, std::pair<double, int>>& epoch_loss) {
  std::vector<std::vector<std::string>> rows;
  LeftOut left_out(kScores);
  const std::string header =
      read_lines(dir / kScores, run.reading, true, left_out, [&](const std::string& line) {
        auto row = csv_row(line, 5, {0, 1, 3, 4});
        if (row) rows.push_back(std::move(*row));
        return row.has_value();
      });
  left_out.report_rows_into(run, header);
  bool any_all = false;
  for (const auto& row : rows) any_all = any_all || row[2] == "all";
  for (const auto& row : rows) {
    if (row[2] != (any_all ? "all" : "0")) continue;
    const double iteration = number_in(row[1]), score = number_in(row[3]);
    run.loss.push_back({iteration, score});
    run.learning_rate.push_back({iteration, number_in(row[4])});
    auto& [sum, count] = epoch_loss[static_cast<int>(number_in(row[0]))];
    sum += score;
    ++count;
  }
}

// timing.csv: its second and third fields are the iteration and the images per second.
void read_timing(const std::filesystem::path& dir, RunRecord& run) {
  LeftOut left_out(kTiming);
  const std::string header =
      read_lines(dir / kTiming, run.reading, true, left_out, [&](const std::string& line) {
        const auto row = csv_row(line, 4, {1, 2});
        if (row) run.images_per_second.push_back({number_in((*row)[1]), number_in((*row)[2])});
        return row.has_value();
      });
  left_out.report_rows_into(run, header);
}

// One record of metrics.jsonl: an epoch's evaluation, or the final model's on the test set.
// Whether `record[key]`, when present, is an integer from 0 to `most`.
bool absent_or_count(const Json& record, const char* key, std::int64_t most) {
  const auto it = record.find(key);
  if (it == record.end()) return true;
  return it->is_number_integer() && it->get<std::int64_t>() >= 0 && it->get<std::int64_t>() <= most;
}

// Returns false for a record whose keys do not have the types training writes ("epoch": "a"),
// which is left out like a line that is not JSON.
bool read_metrics_record(const Json& record, RunRecord& run,
                         const std::map<int, std::pair<double, int>>& epoch_loss) {
  const auto final_flag = record.find("final");
  if (!absent_or_count(record, "epoch", std::numeric_limits<int>::max()) ||
      !absent_or_count(record, "iteration", std::numeric_limits<std::int64_t>::max()) ||
      (final_flag != record.end() && !final_flag->is_boolean()))
    return false;
  // Non-finite numbers are written as null: read as NaN so the chart leaves a gap.
  auto number = [&](const std::string& key) {
    const auto it = record.find(key);
    return it != record.end() && it->is_number() ? it->get<double>() : std::nan("");
  };
  // The last record of a run with a validation set ("final", no "epoch") is the test set's.
  if (!record.contains("epoch")) {
    if (record.value("final", false))
      run.final_test_accuracy = number(kTestMetricPrefix + "accuracy");
    return true;
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
  return true;
}

void read_metrics(const std::filesystem::path& path, RunRecord& run,
                  const std::map<int, std::pair<double, int>>& epoch_loss) {
  run.final_test_accuracy = std::nan("");
  LeftOut left_out(kMetrics);
  read_lines(path, run.reading, false, left_out, [&](const std::string& line) {
    Json record;
    return parse_json(line, record) && record.is_object() &&
           read_metrics_record(record, run, epoch_loss);
  });
  left_out.report_into(run, "a JSON record", "JSON records");
}

// A JSON file of the run; one that does not parse is left out, and said so in `run`.
Json read_json_file(const std::filesystem::path& dir, const char* name, RunRecord& run) {
  Json value;
  const std::string text = read_text(dir / name, run.reading);
  if (text.empty()) return Json();
  if (parse_json(text, value)) return value;
  run.left_out.push_back(fmt::format("{} is not valid JSON", name));
  return Json();
}

// Why evaluation.json does not have the shape training writes, "" when it does: "confusion" a
// square table of counts, one row per class, and each per-class list and class_names as long.
// A damaged one (an empty row, a count that is text) crashed the report.
std::string evaluation_problem(const Json& evaluation) {
  if (evaluation.is_null()) return "";
  if (!evaluation.is_object()) return "it is not a JSON object";
  const auto confusion = evaluation.find("confusion");
  if (confusion == evaluation.end()) return "";
  if (!confusion->is_array() || confusion->empty()) return "its \"confusion\" is not a table";
  const std::size_t classes = confusion->size();
  for (std::size_t r = 0; r < classes; ++r) {
    const Json& row = (*confusion)[r];
    if (!row.is_array() || row.size() != classes)
      return fmt::format("row {} of its \"confusion\" does not hold {} counts", r, classes);
    for (const Json& count : row)
      if (!count.is_number_integer() || count.get<std::int64_t>() < 0)
        return fmt::format("row {} of its \"confusion\" holds {}, not a count", r,
                           quoted_value(count.dump()));
  }
  for (const char* key : {"class_names", "true_count_per_class", "predicted_count_per_class",
                          "precision_per_class", "recall_per_class", "f1_per_class"}) {
    const auto list = evaluation.find(key);
    if (list != evaluation.end() && (!list->is_array() || list->size() != classes))
      return fmt::format("its \"{}\" is not a list of {} (the classes of \"confusion\")", key,
                         classes);
  }
  return "";
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

RunRecord read_run_record(const std::string& directory, InputRole role) {
  const std::filesystem::path dir(directory);
  if (!std::filesystem::is_directory(dir))
    throw IoError("report: " + directory + " is not a run directory");
  check_is_run(dir, directory);
  RunRecord run;
  run.reading = role;
  run.directory = directory;
  run.name = std::filesystem::absolute(dir).lexically_normal().filename().string();
  if (run.name.empty()) run.name = std::filesystem::absolute(dir).parent_path().filename().string();
  std::map<int, std::pair<double, int>> epoch_loss;
  read_scores(dir, run, epoch_loss);
  read_timing(dir, run);
  read_metrics(dir / kMetrics, run, epoch_loss);
  run.config_yaml = read_text(dir / kResolvedConfig, role);
  if (!run.config_yaml.empty()) {
    try {
      run.layer_table = layer_table(load_config_file((dir / kResolvedConfig).string()));
    } catch (const std::exception& e) {
      run.layer_table = std::string("(the resolved config does not load: ") + e.what() + ")";
    }
  }
  run.summary = read_json_file(dir, kSummary, run);
  run.evaluation = read_json_file(dir, kEvaluationJson, run);
  if (const std::string why = evaluation_problem(run.evaluation); !why.empty()) {
    run.left_out.push_back(fmt::format("{}: {}", kEvaluationJson, why));
    run.evaluation = Json();
  }
  return run;
}

}  // namespace dl
