#include "report/svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/class_names.hpp"

namespace dl {

namespace {

// Distinct on white and for the common kinds of colour blindness.
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#17becf", "#8c564b", "#e377c2"};
constexpr int kLeft = 64, kRight = 16, kTop = 28, kBottom = 40;

struct Range {
  double low = std::numeric_limits<double>::infinity();
  double high = -std::numeric_limits<double>::infinity();
  void add(double v) {
    if (!std::isfinite(v)) return;
    low = std::min(low, v);
    high = std::max(high, v);
  }
  bool empty() const { return low > high; }
  // A range with room: a flat series gets a band around its value.
  void widen() {
    if (empty()) low = 0, high = 1;
    if (high - low < 1e-12) {
      const double pad = std::max(std::abs(low) * 0.05, 1e-6);
      low -= pad, high += pad;
    }
  }
};

std::string tick_label(double v) {
  return fmt::format("{:.6g}", v);
}

// At most kMaxPoints points of a long series (a run scoring every iteration for days): every
// k-th point and the last, so the page stays small and quick to draw.
constexpr std::size_t kMaxPoints = 2000;

std::vector<SeriesPoint> thinned(const std::vector<SeriesPoint>& points) {
  if (points.size() <= kMaxPoints) return points;
  const std::size_t stride = (points.size() + kMaxPoints - 1) / kMaxPoints;
  std::vector<SeriesPoint> kept;
  for (std::size_t i = 0; i < points.size(); i += stride) kept.push_back(points[i]);
  if ((points.size() - 1) % stride != 0) kept.push_back(points.back());
  return kept;
}

}  // namespace

std::string escape_html(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double low, double high, int count) {
  const double raw = (high - low) / std::max(count, 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::ceil(low / step) * step; t <= high + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
  return ticks;
}

// The legend sits in the plot's right-hand corner that the lines leave free: the top, unless
// most points of the right third lie in the upper half (rising accuracy curves).
bool legend_at_bottom(const LineChart& chart, const Range& xs, const Range& ys) {
  const double right = xs.high - (xs.high - xs.low) / 3, middle = (ys.low + ys.high) / 2;
  int upper = 0, lower = 0;
  for (const ChartSeries& s : chart.series)
    for (const SeriesPoint& p : s.points) {
      if (!std::isfinite(p.y) || p.x < right) continue;
      (p.y > middle ? upper : lower) += 1;
    }
  return upper > lower;
}

std::string svg_line_chart(const LineChart& chart) {
  Range xs, ys;
  for (const ChartSeries& s : chart.series)
    for (const SeriesPoint& p : s.points) {
      if (!std::isfinite(p.y)) continue;
      xs.add(p.x);
      ys.add(p.y);
    }
  const bool no_data = xs.empty();
  xs.widen();
  ys.widen();
  const double plot_w = chart.width - kLeft - kRight, plot_h = chart.height - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - xs.low) / (xs.high - xs.low) * plot_w; };
  auto py = [&](double y) { return kTop + (ys.high - y) / (ys.high - ys.low) * plot_h; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\">\n"
      "<text x=\"{3}\" y=\"18\" class=\"title\">{2}</text>\n",
      chart.width, chart.height, escape_html(chart.title), kLeft);
  for (double t : nice_ticks(ys.low, ys.high, 5)) {
    svg += fmt::format(
        "<line x1=\"{0}\" x2=\"{1:.1f}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" class=\"grid\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" class=\"tick\" text-anchor=\"end\">{5}</text>\n",
        kLeft, kLeft + plot_w, py(t), kLeft - 6, py(t) + 4, tick_label(t));
  }
  for (double t : nice_ticks(xs.low, xs.high, 6)) {
    // Ticks are sums of a step (0.2 five times is not 1.0 exactly): whole within rounding.
    if (chart.whole_x && std::abs(t - std::round(t)) > 1e-9 * std::max(1.0, std::abs(t))) continue;
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\" text-anchor=\"middle\">{}"
        "</text>\n",
        px(t), kTop + plot_h + 16, tick_label(t));
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{:.1f}\" class=\"frame\"/>\n"
      "<text x=\"{:.1f}\" y=\"{}\" class=\"label\" text-anchor=\"middle\">{}</text>\n"
      "<text x=\"14\" y=\"{:.1f}\" class=\"label\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 14 {:.1f})\">{}</text>\n",
      kLeft, kTop, plot_w, plot_h, kLeft + plot_w / 2, chart.height - 6, escape_html(chart.x_label),
      kTop + plot_h / 2, kTop + plot_h / 2, escape_html(chart.y_label));
  if (no_data) {
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"label\" text-anchor=\"middle\">"
        "no data yet</text>\n",
        kLeft + plot_w / 2, kTop + plot_h / 2);
  }
  const bool bottom_legend = legend_at_bottom(chart, xs, ys);
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const ChartSeries& s = chart.series[i];
    const char* color = kColors[i % std::size(kColors)];
    std::string path;
    bool pen_down = false;
    const std::vector<SeriesPoint> points = thinned(s.points);
    const auto finite_at = [&](std::size_t k) {
      return k < points.size() && std::isfinite(points[k].y);
    };
    for (std::size_t k = 0; k < points.size(); ++k) {
      const SeriesPoint& p = points[k];
      if (!std::isfinite(p.y)) {
        pen_down = false;
        continue;
      }
      path += fmt::format("{}{:.1f},{:.1f} ", pen_down ? "L" : "M", px(p.x), py(p.y));
      // A point with no finite neighbour draws no line: a marker shows it (a run of one report
      // had empty charts).
      const bool alone = !pen_down && !finite_at(k + 1);
      pen_down = true;
      if (s.markers || alone)
        svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>", px(p.x),
                           py(p.y), color);
    }
    svg += fmt::format("<path d=\"{}\" stroke=\"{}\" class=\"line\"><title>{}</title></path>\n",
                       path, color, escape_html(s.name));
    if (chart.series.size() > 1) {
      const double row = static_cast<double>(bottom_legend ? chart.series.size() - 1 - i : i);
      const double ly = bottom_legend ? kTop + plot_h - 6 - 14 * row : kTop + 14 + 14 * row;
      svg += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
          "<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"tick\">{}</text>\n",
          kLeft + plot_w - 150, ly - 9, color, kLeft + plot_w - 136, ly, escape_html(s.name));
    }
  }
  return svg + "</svg>\n";
}

namespace {

// A heat map's tick: the class name cut to a few characters (whole UTF-8 characters, "..."
// after), else the label; the cells' tooltips give the whole name.
constexpr std::size_t kTickNameBytes = 14;
constexpr int kTickCharWidth = 7;  // px per character of the tick font, roughly

std::string heatmap_tick(int label, const std::vector<std::string>& names) {
  const std::string* name = class_name(names, label);
  if (name == nullptr) return std::to_string(label);
  const std::string text = message_text::escaped(*name);
  if (text.size() <= kTickNameBytes) return text;
  return text.substr(0, message_text::character_start(text, kTickNameBytes - 3)) + "...";
}

}  // namespace

std::string svg_confusion_heatmap(const std::vector<std::vector<std::int64_t>>& confusion,
                                  const std::vector<std::string>& class_names) {
  const int n = static_cast<int>(confusion.size());
  std::vector<std::string> ticks;
  std::size_t widest_tick = 0;
  for (int r = 0; r < n; ++r) {
    ticks.push_back(heatmap_tick(r, class_names));
    widest_tick = std::max(widest_tick, ticks.back().size());
  }
  const int cell = n <= 10 ? 36 : std::max(6, 360 / std::max(n, 1));
  // Index ticks fit the plain margin; names get room for the widest (columns: written upwards).
  const int margin = class_names.empty() ? 44 : 28 + kTickCharWidth * static_cast<int>(widest_tick);
  const int size = margin + n * cell + 8;
  const bool numbers = cell >= 28;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" width=\"{0}\" height=\"{0}\" "
      "viewBox=\"0 0 {0} {0}\" role=\"img\" aria-label=\"confusion matrix\">\n"
      "<text x=\"{1}\" y=\"12\" class=\"label\">predicted &#8594;</text>\n"
      "<text x=\"12\" y=\"{1}\" class=\"label\" transform=\"rotate(90 12 {1})\">actual &#8594;"
      "</text>\n",
      size, margin);
  for (int r = 0; r < n; ++r) {
    std::int64_t row_total = 0;
    for (std::int64_t v : confusion[static_cast<std::size_t>(r)]) row_total += v;
    for (int c = 0; c < n; ++c) {
      const std::int64_t v = confusion[static_cast<std::size_t>(r)][static_cast<std::size_t>(c)];
      const double share = row_total > 0 ? static_cast<double>(v) / row_total : 0.0;
      // White to dark blue; the diagonal (correct) in blue, mistakes in red.
      const int fade = static_cast<int>(std::lround(255 * (1 - share)));
      const std::string fill =
          r == c ? fmt::format("rgb({0},{0},255)", fade) : fmt::format("rgb(255,{0},{0})", fade);
      const int x = margin + c * cell, y = margin + r * cell;
      svg += fmt::format(
          "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\">"
          "<title>actual {} predicted {}: {}</title></rect>",
          x, y, cell, cell, fill, escape_html(class_text(r, class_names)),
          escape_html(class_text(c, class_names)), v);
      if (numbers) {
        svg += fmt::format(
            "<text x=\"{}\" y=\"{}\" class=\"cell{}\" text-anchor=\"middle\">{}"
            "</text>",
            x + cell / 2, y + cell / 2 + 4, share > 0.5 ? " dark" : "", v);
      }
    }
    const std::string tick = escape_html(ticks[static_cast<std::size_t>(r)]);
    const int middle = margin + r * cell + cell / 2;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"end\">{}</text>",
                       margin - 4, middle + 4, tick);
    // Names run upwards from above their column; a number sits centred above it.
    svg += class_names.empty()
               ? fmt::format("<text x=\"{}\" y=\"{}\" class=\"tick\" text-anchor=\"middle\">{}"
                             "</text>\n",
                             middle, margin - 4, tick)
               : fmt::format("<text x=\"{0}\" y=\"{1}\" class=\"tick\" transform=\"rotate(-90 {0} "
                             "{1})\">{2}</text>\n",
                             middle + 4, margin - 4, tick);
  }
  return svg + "</svg>\n";
}

}  // namespace dl
