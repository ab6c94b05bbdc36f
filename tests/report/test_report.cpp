// The pieces behind what a person sees of a run: TFRecord framing and CRC32C, the progress bar's
// text, chart ticks, HTML escaping, and the report rendered from a run directory's files.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "io/json_writer.hpp"
#include "io/temp_directory.hpp"
#include "report/report_html.hpp"
#include "report/svg_chart.hpp"
#include "report/tfrecord.hpp"
#include "train/listeners/console_text.hpp"
#include "train/listeners/progress_bar.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("CRC32C matches the Castagnoli check value", "[report]") {
  const std::string text = "123456789";
  CHECK(dl::crc32c(text.data(), text.size()) == 0xE3069283u);
  CHECK(dl::crc32c("", 0) == 0u);
}

TEST_CASE("a TFRecord frame holds the length, the payload and masked CRCs", "[report]") {
  const std::string payload = "hello";
  const std::string frame = dl::tfrecord_frame(payload);
  REQUIRE(frame.size() == payload.size() + 16);
  CHECK(static_cast<unsigned char>(frame[0]) == 5);
  for (int i = 1; i < 8; ++i) CHECK(frame[static_cast<std::size_t>(i)] == 0);
  CHECK(frame.substr(12, 5) == payload);
  const std::uint32_t crc = dl::crc32c(payload.data(), payload.size());
  const std::uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
  std::uint32_t stored = 0;
  for (int i = 3; i >= 0; --i)
    stored = (stored << 8) | static_cast<unsigned char>(frame[17 + static_cast<std::size_t>(i)]);
  CHECK(stored == masked);
  CHECK(dl::masked_crc32c(payload.data(), payload.size()) == masked);
}

TEST_CASE("the progress bar shows rounds, ETA, loss and throughput", "[report]") {
  dl::ProgressLine line;
  line.done = 3;
  line.total = 10;
  line.seconds = 3.0;
  line.eta_seconds = 7.0;
  line.loss = 0.123456;
  line.images_per_second = 1234.4;
  const std::string text = dl::format_progress_line(line, 10);
  CHECK(text == " 3/10 [===>......] - ETA 0:07 - loss 0.1235 - 1234 img/s");
  line.done = 10;
  CHECK(dl::format_progress_line(line, 10) ==
        "10/10 [==========] - 3.0s - loss 0.1235 - 1234 img/s");
  CHECK(dl::format_duration(3725) == "1:02:05");
  CHECK(dl::format_duration(65) == "1:05");
}

TEST_CASE("output.console: auto is a bar on a terminal and lines elsewhere", "[report]") {
  CHECK(dl::resolve_console_mode(dl::ConsoleMode::kAuto, true) == dl::ConsoleMode::kBar);
  CHECK(dl::resolve_console_mode(dl::ConsoleMode::kAuto, false) == dl::ConsoleMode::kLines);
  CHECK(dl::resolve_console_mode(dl::ConsoleMode::kJsonl, true) == dl::ConsoleMode::kJsonl);
}

TEST_CASE("chart ticks are round numbers covering the range", "[report]") {
  const std::vector<double> ticks = dl::nice_ticks(0.03, 0.97, 5);
  REQUIRE(ticks.size() >= 4);
  CHECK(ticks.front() == Approx(0.2));
  CHECK(ticks.back() == Approx(0.8));
  CHECK(dl::escape_html("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}

TEST_CASE("the report is one page with charts from the run directory's files", "[report]") {
  dl::test::TempDirectory dir;
  std::ofstream(dir.path() + "/scores.csv")
      << "epoch,iteration,worker,score,learning_rate\n0,10,all,2.0,0.1\n0,20,all,1.5,0.1\n"
         "1,30,all,1.0,0.05\n1,40,all,0.5,0.05\n";
  std::ofstream(dir.path() + "/timing.csv")
      << "epoch,iteration,images_per_second,elapsed_seconds\n0,10,100.0,1\n1,40,120.0,2\n";
  std::ofstream(dir.path() + "/metrics.jsonl")
      << "{\"format_version\":1,\"epoch\":0,\"iteration\":20,\"test_accuracy\":0.5,"
         "\"test_f1\":0.4,\"test_loss\":null}\n{\"format_version\":1,\"epoch\":1,\"iteration\":40,"
         "\"test_accuracy\":0.75,\"test_f1\":0.7,\"test_loss\":0.6}\n";
  std::ofstream(dir.path() + "/evaluation.json") << "{\"confusion\": [[3, 1], [0, 4]]}\n";
  const dl::RunRecord run = dl::read_run_record(dir.path());
  CHECK(run.loss.size() == 4);
  REQUIRE(run.epochs.size() == 2);
  CHECK(run.epochs[0].train_loss == Approx(1.75));
  CHECK(std::isnan(run.epochs[0].loss));  // null: an infinite loss leaves a gap
  CHECK_FALSE(run.validation);
  const std::string html = dl::render_report({run});
  CHECK_THAT(html, Contains("<!DOCTYPE html>"));
  CHECK_THAT(html, Contains("Training loss per iteration"));
  CHECK_THAT(html, Contains("confusion matrix"));
  CHECK_THAT(html, Contains("actual 1 predicted 1: 4"));
  CHECK_THAT(html, Contains("Test accuracy and F1 per epoch"));
  CHECK_THAT(html, Contains("Confusion matrix (test set, last epoch)"));
  CHECK_THAT(html, !Contains("validation"));
  CHECK_THAT(html, !Contains("<script"));
  CHECK_THAT(html, !Contains("http://") || Contains("xmlns=\"http://www.w3.org/2000/svg\""));
}

TEST_CASE("damaged log lines are left out and said so; a killed run's cut last line is not",
          "[report]") {
  dl::test::TempDirectory dir;
  std::ofstream(dir.path() + "/scores.csv")
      << "epoch,iteration,worker,score,learning_rate\n0,10,all,2.0,0.1\nedited by hand\n"
         "0,20,all,x,0.1\n1,30,all,1.0,0.05\n1,40,al";  // the last row cut by a kill
  std::ofstream(dir.path() + "/metrics.jsonl")
      << "{\"epoch\":0,\"iteration\":20,\"test_accuracy\":0.5}\n{\"epoch\":1,\n";
  std::ofstream(dir.path() + "/summary.json") << "{\"final_score\":";
  const dl::RunRecord run = dl::read_run_record(dir.path());
  CHECK(run.loss.size() == 2);
  CHECK(run.epochs.size() == 1);
  REQUIRE(run.left_out.size() == 3);
  CHECK(run.left_out[0] ==
        "scores.csv: 2 lines, the first line 3, are not rows of the form of its header, "
        "'epoch,iteration,worker,score,learning_rate'");
  CHECK(run.left_out[1] == "metrics.jsonl: line 2 is not a JSON record");
  CHECK(run.left_out[2] == "summary.json is not valid JSON");
  CHECK_THAT(dl::render_report({run}),
             Contains("Left out of this page: metrics.jsonl: line 2 is not a JSON record"));

  dl::test::TempDirectory whole;
  std::ofstream(whole.path() + "/scores.csv")
      << "epoch,iteration,worker,score,learning_rate\n0,10,all,2.0,0.1\n0,20,all,1.";
  CHECK(dl::read_run_record(whole.path()).left_out.empty());
}

TEST_CASE("evaluation.json and metrics.jsonl of other shapes than training writes are left out",
          "[report]") {
  const std::pair<const char*, const char*> damaged[] = {
      {"{\"confusion\": [[]]}", "row 0 of its \"confusion\" does not hold 1 counts"},
      {"{\"confusion\": [[1, 0], null]}", "row 1 of its \"confusion\" does not hold 2 counts"},
      {"{\"confusion\": [[1, \"2\"], [0, 1]]}",
       "row 0 of its \"confusion\" holds \"2\", not a count"},
      {"{\"confusion\": [[1, -2], [0, 1]]}", "row 0 of its \"confusion\" holds -2, not a count"},
      {"{\"confusion\": [[1, 2], [0, 1]], \"f1_per_class\": [1]}",
       "its \"f1_per_class\" is not a list of 2"},
      {"[1]", "it is not a JSON object"}};
  for (const auto& [text, why] : damaged) {
    INFO(text);
    dl::test::TempDirectory dir;
    std::ofstream(dir.path() + "/scores.csv") << "epoch,iteration,worker,score,learning_rate\n";
    std::ofstream(dir.path() + "/evaluation.json") << text;
    const dl::RunRecord run = dl::read_run_record(dir.path());
    REQUIRE(run.left_out.size() == 1);
    CHECK_THAT(run.left_out[0], StartsWith(std::string("evaluation.json: ") + why));
    CHECK_THAT(dl::render_report({run}), Contains("Not shown: evaluation.json: "));
  }
  // A record whose epoch or iteration is not a count: left out, like a line that is not JSON
  // (it ended the report with the JSON library's type error, exit 1).
  dl::test::TempDirectory dir;
  std::ofstream(dir.path() + "/metrics.jsonl")
      << "{\"epoch\":\"a\",\"iteration\":20}\n{\"epoch\":true}\n{\"epoch\":1,\"iteration\":[]}\n"
         "{\"final\":\"yes\"}\n{\"epoch\":2,\"iteration\":60,\"test_accuracy\":0.5}\n";
  const dl::RunRecord run = dl::read_run_record(dir.path());
  CHECK(run.epochs.size() == 1);
  REQUIRE(run.left_out.size() == 1);
  CHECK_THAT(run.left_out[0], StartsWith("metrics.jsonl: 4 lines, the first line 1,"));
}

TEST_CASE("many classes: the per-class table without a heatmap of their square", "[report]") {
  constexpr int kClasses = 300;
  dl::Json evaluation = dl::Json::object();
  evaluation["confusion"] = dl::Json::array();
  for (int r = 0; r < kClasses; ++r)
    evaluation["confusion"].push_back(std::vector<int>(kClasses, 1));
  dl::test::TempDirectory dir;
  std::ofstream(dir.path() + "/scores.csv") << "epoch,iteration,worker,score,learning_rate\n";
  std::ofstream(dir.path() + "/evaluation.json") << evaluation.dump();
  const std::string html = dl::render_report({dl::read_run_record(dir.path())});
  CHECK_THAT(html, Contains("300 classes: the confusion matrix is drawn for at most 100"));
  CHECK(html.size() < 1000000);
}

TEST_CASE("a run with a validation set: its figures are labelled validation, the test set's final",
          "[report]") {
  dl::test::TempDirectory dir;
  std::ofstream(dir.path() + "/scores.csv")
      << "epoch,iteration,worker,score,learning_rate\n0,10,all,2.0,0.1\n1,20,all,1.0,0.1\n";
  std::ofstream(dir.path() + "/metrics.jsonl")
      << "{\"format_version\":1,\"epoch\":0,\"iteration\":10,\"train_loss\":2.5,"
         "\"train_accuracy\":0.25,\"val_accuracy\":0.5,\"val_f1\":0.4,\"val_loss\":1.5}\n"
         "{\"format_version\":1,\"epoch\":1,\"iteration\":20,\"train_loss\":1.25,"
         "\"train_accuracy\":0.5,\"val_accuracy\":0.75,\"val_f1\":0.7,\"val_loss\":0.8}\n"
         "{\"format_version\":1,\"final\":true,\"iteration\":20,\"test_accuracy\":0.625,"
         "\"test_loss\":0.9}\n";
  const dl::RunRecord run = dl::read_run_record(dir.path());
  REQUIRE(run.epochs.size() == 2);
  CHECK(run.validation);
  CHECK(run.epochs[1].train_loss == 1.25);  // metrics.jsonl's (with L2), not the score rows'
  CHECK(run.epochs[1].train_accuracy == 0.5);
  CHECK(run.epochs[1].accuracy == 0.75);
  CHECK(run.final_test_accuracy == 0.625);
  const std::string html = dl::render_report({run});
  CHECK_THAT(html, Contains("Validation accuracy and F1 per epoch"));
  CHECK_THAT(html, Contains(">validation accuracy<"));
  CHECK_THAT(html, Contains(">validation F1<"));
  CHECK_THAT(html, Contains(">train accuracy<"));
  CHECK_THAT(html, Contains("<td>validation set</td>"));
  CHECK_THAT(html, Contains("0.6250"));  // the final test accuracy
  CHECK_THAT(html, Contains("Confusion matrix (test set, final model)"));
  CHECK_THAT(html, Contains("evaluated once, by the final model"));
  CHECK_THAT(html, !Contains(">test accuracy<"));
  CHECK_THAT(html, !Contains(">test<"));
}

TEST_CASE("a long series is thinned to a few thousand points, its last one kept", "[report]") {
  dl::LineChart chart{"loss", "iteration", "loss", {}};
  dl::ChartSeries series{"loss", {}, false};
  for (int i = 1; i <= 100001; ++i) series.points.push_back({double(i), 1.0 / i});
  chart.series.push_back(series);
  const std::string svg = dl::svg_line_chart(chart);
  const auto segments = std::count(svg.begin(), svg.end(), 'L');
  CHECK(segments > 1000);
  CHECK(segments < 2100);
  CHECK_THAT(svg, Contains("100000"));  // the x axis reaches the last iteration
}

TEST_CASE("a point with no neighbour is drawn, on whole-numbered ticks", "[report]") {
  // One report (a run of two iterations), and one point between gaps: a line of one point was
  // not drawn, and its iteration axis had ticks at 1.95 and 2.05.
  dl::LineChart chart{"loss", "iteration", "loss", {}};
  chart.whole_x = true;
  chart.series.push_back({"loss", {{2.0, 0.5}}, false});
  std::string svg = dl::svg_line_chart(chart);
  CHECK(std::count(svg.begin(), svg.end(), 'L') == 0);
  CHECK_THAT(svg, Contains("<circle"));
  CHECK_THAT(svg, !Contains(">1.95<") && !Contains(">2.05<"));
  chart.series.front().points = {{1.0, 0.5}, {2.0, std::nan("")}, {3.0, 0.4}, {4.0, 0.3}};
  svg = dl::svg_line_chart(chart);
  const auto circles = [](const std::string& text) {
    std::size_t count = 0;
    for (std::size_t at = text.find("<circle"); at != std::string::npos;
         at = text.find("<circle", at + 1))
      ++count;
    return count;
  };
  CHECK(circles(svg) == 1);  // the first point alone; the last two are joined by a line
  // Two epochs: both whole ticks shown (the second was summed to 2.0000000000000004 and left
  // out, so a 2-epoch chart labelled epoch 1 alone).
  chart.series.front().points = {{1.0, 0.5}, {2.0, 0.4}};
  svg = dl::svg_line_chart(chart);
  CHECK_THAT(svg, Contains("text-anchor=\"middle\">1</text>") &&
                      Contains("text-anchor=\"middle\">2</text>"));
}

TEST_CASE("the report names the classes where evaluation.json does", "[report]") {
  dl::test::TempDirectory dir;
  std::ofstream(dir.path() + "/evaluation.json")
      << "{\"confusion\": [[3, 1], [0, 4]], \"true_count_per_class\": [4, 4], "
         "\"predicted_count_per_class\": [3, 5], \"precision_per_class\": [1, 0.8], "
         "\"recall_per_class\": [0.75, 1], \"f1_per_class\": [0.857142, 0.888888], "
         "\"class_names\": [\"cat <small>\", \"a very long class name\"]}\n";
  const std::string html = dl::render_report({dl::read_run_record(dir.path())});
  CHECK_THAT(html, Contains(">cat &lt;small&gt;</text>"));
  CHECK_THAT(html, Contains(">a very long...</text>"));  // the tick is cut, the tooltip is whole
  CHECK_THAT(html, Contains("actual 0 &#39;cat &lt;small&gt;&#39; predicted 1 &#39;a very long "
                            "class name&#39;: 1"));
  CHECK_THAT(html, Contains("<tr><td>1 &#39;a very long class name&#39;</td><td class=\"num\">4"
                            "</td><td class=\"num\">5</td><td class=\"num\">0.8000</td>"
                            "<td class=\"num\">1.0000</td><td class=\"num\">0.8889</td></tr>"));

  std::ofstream(dir.path() + "/evaluation.json") << "{\"confusion\": [[3, 1], [0, 4]]}\n";
  const std::string numbers = dl::render_report({dl::read_run_record(dir.path())});
  CHECK_THAT(numbers, Contains("actual 0 predicted 1: 1"));
  CHECK_THAT(numbers, Contains("class=\"tick\" text-anchor=\"middle\">1</text>"));
  CHECK_THAT(numbers, !Contains("<th>recall</th>"));  // no per-class arrays, no table
}
