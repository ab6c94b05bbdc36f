// Charts as inline SVG text for the HTML report: no script, no network, drawn by any browser.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "report/run_record.hpp"

namespace dl {

struct ChartSeries {
  std::string name;
  std::vector<SeriesPoint> points;  // NaN or infinite values leave a gap in the line
  bool markers = false;             // a dot on each point (few points, e.g. per epoch)
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<ChartSeries> series;
  int width = 560, height = 260;
  bool whole_x = false;  // x ticks only at whole numbers (epochs, iterations)
};

std::string svg_line_chart(const LineChart& chart);

// Rows actual, columns predicted; each cell shaded by its share of the row. Rows and columns are
// labelled by class name where `class_names` (by label) has one, else by label.
std::string svg_confusion_heatmap(const std::vector<std::vector<std::int64_t>>& confusion,
                                  const std::vector<std::string>& class_names = {});

// `text` with &, <, >, " and ' replaced, for HTML and SVG.
std::string escape_html(const std::string& text);

// Up to about `count` round tick values covering [low, high] (steps of 1, 2 or 5 x 10^k).
std::vector<double> nice_ticks(double low, double high, int count);

}  // namespace dl
