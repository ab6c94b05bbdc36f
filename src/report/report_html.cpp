#include "report/report_html.hpp"

#include <algorithm>
#include <cmath>
#include <ctime>

#include <fmt/format.h>

#include "core/class_names.hpp"
#include "core/epoch_number.hpp"
#include "io/atomic_file.hpp"
#include "io/run_files.hpp"
#include "report/metric_names.hpp"
#include "report/svg_chart.hpp"

namespace dl {

namespace {

constexpr const char* kStyle = R"(<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: left; }
th { background: #f2f4f7; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f6f8fa; border: 1px solid #ddd; padding: 8px; overflow-x: auto; font-size: 12px; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
svg.chart { border: 1px solid #ddd; background: #fff; }
svg .title { font-size: 14px; font-weight: 600; } svg .label { font-size: 12px; fill: #444; }
svg .tick { font-size: 11px; fill: #555; } svg .grid { stroke: #e8e8e8; }
svg .frame { fill: none; stroke: #999; } svg .line { fill: none; stroke-width: 2; }
svg .cell { font-size: 11px; fill: #222; } svg .cell.dark { fill: #fff; }
.muted { color: #666; }
</style>)";

std::string number(const Json& value, const char* format = "{:.4g}") {
  if (value.is_number_integer()) return std::to_string(value.get<std::int64_t>());
  if (value.is_number()) return fmt::format(fmt::runtime(format), value.get<double>());
  if (value.is_string()) return value.get<std::string>();
  return value.is_null() ? "" : value.dump();
}

template <class Pick>
ChartSeries epoch_series(const RunRecord& run, const std::string& name, Pick pick) {
  ChartSeries series{name, {}, true};
  for (const EpochRecord& e : run.epochs)
    series.points.push_back({double(epoch_number(e.epoch)), pick(e)});
  return series;
}

// The set each epoch evaluated: "validation" or "test" (run by run).
std::string evaluated_set(const RunRecord& run) {
  return run.validation ? "validation" : "test";
}

// The accuracy chart's title: the set every run evaluated each epoch, or both named.
std::string accuracy_title(const std::vector<RunRecord>& runs) {
  bool validation = false, test = false;
  for (const RunRecord& run : runs) (run.validation ? validation : test) = true;
  if (validation && test) return "Accuracy and F1 per epoch (validation or test set)";
  return validation ? "Validation accuracy and F1 per epoch" : "Test accuracy and F1 per epoch";
}

// One chart per quantity; several runs are several lines on it.
std::string charts(const std::vector<RunRecord>& runs) {
  const bool one = runs.size() == 1;
  auto label = [&](const RunRecord& run, const std::string& what) {
    return one ? what : run.name + (what.empty() ? "" : " " + what);
  };
  LineChart loss{"Training loss per iteration", "iteration", "loss", {}};
  LineChart epoch_loss{"Loss per epoch", "epoch", "loss", {}};
  LineChart accuracy{accuracy_title(runs), "epoch", "", {}};
  LineChart rate{"Learning rate", "iteration", "learning rate", {}};
  LineChart speed{"Throughput", "iteration", "images/s", {}};
  // Epochs and iterations are counted: a run of few of them had ticks at 1.95 and 2.05.
  loss.whole_x = epoch_loss.whole_x = accuracy.whole_x = rate.whole_x = speed.whole_x = true;
  for (const RunRecord& run : runs) {
    const std::string set = evaluated_set(run);
    loss.series.push_back({label(run, ""), run.loss, false});
    epoch_loss.series.push_back(
        epoch_series(run, label(run, "train"), [](const EpochRecord& e) { return e.train_loss; }));
    epoch_loss.series.push_back(
        epoch_series(run, label(run, set), [](const EpochRecord& e) { return e.loss; }));
    const bool train_accuracy =
        std::any_of(run.epochs.begin(), run.epochs.end(),
                    [](const EpochRecord& e) { return std::isfinite(e.train_accuracy); });
    if (train_accuracy) {
      accuracy.series.push_back(
          epoch_series(run, label(run, "train accuracy"),
                       [](const EpochRecord& e) { return e.train_accuracy; }));
    }
    accuracy.series.push_back(epoch_series(run, label(run, set + " accuracy"),
                                           [](const EpochRecord& e) { return e.accuracy; }));
    accuracy.series.push_back(
        epoch_series(run, label(run, set + " F1"), [](const EpochRecord& e) { return e.f1; }));
    rate.series.push_back({label(run, ""), run.learning_rate, false});
    speed.series.push_back({label(run, ""), run.images_per_second, false});
  }
  std::string html = "<h2>Curves</h2>\n<div class=\"charts\">\n";
  for (const LineChart* chart : {&loss, &epoch_loss, &accuracy, &rate, &speed})
    html += svg_line_chart(*chart);
  return html + "</div>\n";
}

std::string accuracy_cell(double value) {
  return std::isfinite(value) ? fmt::format("{:.4f}", value) : "";
}

// The test set's accuracy by the final model: metrics.jsonl's final record with a validation
// set; without one the last epoch's evaluation is the test set's, and summary.json holds it.
std::string final_test_cell(const RunRecord& run) {
  if (run.validation) return accuracy_cell(run.final_test_accuracy);
  if (!run.summary.is_object()) return "";
  return number(run.summary.value(kTestMetricPrefix + "accuracy", Json()), "{:.4f}");
}

std::string overview(const std::vector<RunRecord>& runs) {
  std::string html =
      "<h2>Runs</h2>\n<table><tr><th>run</th><th>epochs</th><th>evaluated each epoch</th>"
      "<th>last accuracy</th><th>best accuracy</th><th>final test accuracy</th>"
      "<th>train seconds</th><th>images/s</th><th>state</th></tr>\n";
  for (const RunRecord& run : runs) {
    double best = std::nan(""), last = std::nan("");
    for (const EpochRecord& e : run.epochs) {
      last = e.accuracy;
      if (!(best >= e.accuracy)) best = e.accuracy;
    }
    const Json& s = run.summary;
    const bool ended = s.is_object();
    html += fmt::format(
        "<tr><td>{}<div class=\"muted\">{}</div></td><td class=\"num\">{}</td><td>{} set</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
        escape_html(run.name), escape_html(run.directory), run.epochs.size(), evaluated_set(run),
        accuracy_cell(last), accuracy_cell(best), final_test_cell(run),
        ended ? number(s.value("train_seconds", Json()), "{:.1f}") : "",
        ended ? number(s.value("train_images_per_second", Json()), "{:.0f}") : "",
        ended ? escape_html(number(s.value("stopped_by", Json()))) : "running");
  }
  return html + "</table>\n";
}

// evaluation.json's class_names (a run on named classes), else none.
std::vector<std::string> class_names(const Json& evaluation) {
  std::vector<std::string> names;
  const auto it = evaluation.find("class_names");
  if (it == evaluation.end() || !it->is_array()) return names;
  for (const Json& name : *it) names.push_back(name.is_string() ? name.get<std::string>() : "");
  return names;
}

// One row per class: its label and name, examples, predictions, precision, recall and F1 (from
// evaluation.json's per-class arrays, which every run writes).
std::string per_class_table(const Json& evaluation, const std::vector<std::string>& names) {
  const char* keys[] = {"true_count_per_class", "predicted_count_per_class", "precision_per_class",
                        "recall_per_class", "f1_per_class"};
  std::vector<const Json*> columns;
  for (const char* key : keys) {
    const auto it = evaluation.find(key);
    if (it == evaluation.end() || !it->is_array()) return "";
    columns.push_back(&*it);
  }
  std::string html =
      "<table><tr><th>class</th><th>examples</th><th>predicted</th><th>precision</th>"
      "<th>recall</th><th>F1</th></tr>\n";
  for (std::size_t c = 0; c < columns.front()->size(); ++c) {
    html +=
        fmt::format("<tr><td>{}</td>", escape_html(class_text(static_cast<long long>(c), names)));
    for (std::size_t k = 0; k < columns.size(); ++k) {  // two counts, then three ratios
      const Json& value = c < columns[k]->size() ? (*columns[k])[c] : Json();
      const bool ratio = k >= 2 && value.is_number();  // a ratio of 1 reads back as an integer
      html += fmt::format("<td class=\"num\">{}</td>",
                          ratio ? fmt::format("{:.4f}", value.get<double>()) : number(value));
    }
    html += "</tr>\n";
  }
  return html + "</table>\n";
}

std::string confusion(const RunRecord& run) {
  const auto it =
      run.evaluation.is_object() ? run.evaluation.find("confusion") : run.evaluation.end();
  if (!run.evaluation.is_object() || it == run.evaluation.end() || !it->is_array()) {
    // A damaged evaluation.json is not "no evaluation yet": the note at the page's end says why.
    for (const std::string& why : run.left_out)
      if (why.rfind(run_files::kEvaluationJson, 0) == 0)
        return fmt::format("<p class=\"muted\">Not shown: {}.</p>\n", escape_html(why));
    return run.validation ? "<p class=\"muted\">The test set is evaluated once, by the final "
                            "model, when the run ends.</p>\n"
                          : "<p class=\"muted\">No evaluation yet.</p>\n";
  }
  std::vector<std::vector<std::int64_t>> rows;
  for (const Json& row : *it) {
    std::vector<std::int64_t> cells;
    for (const Json& v : row) cells.push_back(v.is_number() ? v.get<std::int64_t>() : 0);
    rows.push_back(std::move(cells));
  }
  const std::vector<std::string> names = class_names(run.evaluation);
  // The heatmap's cells grow with the square of the classes (1,000 classes made a 118 MB page,
  // rewritten at every epoch); past this many the table alone is shown.
  constexpr std::size_t kMostHeatmapClasses = 100;
  const std::string heatmap =
      rows.size() <= kMostHeatmapClasses
          ? svg_confusion_heatmap(rows, names)
          : fmt::format(
                "<p class=\"muted\">{} classes: the confusion matrix is drawn for at most "
                "{}; it is in evaluation.json.</p>\n",
                rows.size(), kMostHeatmapClasses);
  return heatmap + per_class_table(run.evaluation, names);
}

// summary.json's provenance object (and the run's outcome beside it), one row per key.
std::string provenance(const RunRecord& run) {
  if (!run.summary.is_object()) return "<p class=\"muted\">Written when the run ends.</p>\n";
  std::string html = "<table>\n";
  auto row = [&](const std::string& key, const Json& value) {
    std::string text;
    if (value.is_array()) {  // the command line: its words, as a shell shows them
      for (const Json& word : value) text += (text.empty() ? "" : " ") + number(word);
    } else if (value.is_object()) {
      for (const auto& [k, v] : value.items())
        text += (text.empty() ? "" : ", ") + k + ": " + number(v);
    } else {
      text = number(value);
    }
    html += fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", escape_html(key), escape_html(text));
  };
  const auto prov = run.summary.find("provenance");
  if (prov != run.summary.end() && prov->is_object())
    for (const auto& [key, value] : prov->items()) row(key, value);
  for (const auto& [key, value] : run.summary.items()) {
    if (key == "provenance" || key == "format_version") continue;
    if (key != "ranks" || !value.is_array()) {
      row(key, value);
      continue;
    }
    // Each process's own figures, one row each ("rank 1": host, memory, threads, ...).
    for (const Json& rank : value)
      if (rank.is_object()) row("rank " + number(rank.value("rank", Json())), rank);
  }
  return html + "</table>\n";
}

std::string run_details(const RunRecord& run, bool heading) {
  std::string html;
  if (heading) html += fmt::format("<h2>{}</h2>\n", escape_html(run.name));
  // evaluation.json is the test set's: each epoch's, or with a validation set the final model's.
  html += fmt::format("<h2>Confusion matrix (test set, {})</h2>\n",
                      run.validation ? "final model" : "last epoch") +
          confusion(run);
  html += "<h2>Provenance and outcome</h2>\n" + provenance(run);
  for (const std::string& what : run.left_out)
    html += "<p class=\"muted\">Left out of this page: " + escape_html(what) + "</p>\n";
  html += "<h2>Layers</h2>\n<pre>" + escape_html(run.layer_table) + "</pre>\n";
  html += "<h2>Resolved config</h2>\n<pre>" + escape_html(run.config_yaml) + "</pre>\n";
  return html;
}

std::string now_text() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &utc);
  return text;
}

}  // namespace

std::string render_report(const std::vector<RunRecord>& runs) {
  std::string names;
  for (const RunRecord& run : runs) names += (names.empty() ? "" : ", ") + run.name;
  std::string html = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>dl-train report: {0}</title>\n{1}\n</head>\n<body>\n<h1>dl-train report: {0}</h1>\n"
      "<p class=\"muted\">written {2}</p>\n",
      escape_html(names), kStyle, now_text());
  html += overview(runs) + charts(runs);
  for (const RunRecord& run : runs) html += run_details(run, runs.size() > 1);
  return html + "</body>\n</html>\n";
}

std::string run_report_path(const std::string& run_directory) {
  return run_directory + "/" + run_files::kReport;
}

std::string write_run_report(const std::string& run_directory) {
  const std::string path = run_report_path(run_directory);
  write_file_atomically(path, render_report({read_run_record(run_directory, InputRole::kRunOutput)}));
  return path;
}

}  // namespace dl
