#include "train/listeners/progress_bar.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/figure_text.hpp"

namespace dl {

std::string format_duration(double seconds) {
  const std::int64_t s = std::isfinite(seconds) && seconds > 0 ? std::llround(seconds) : 0;
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

std::string format_progress_line(const ProgressLine& line, int bar_width) {
  const std::int64_t total = std::max<std::int64_t>(line.total, 1);
  const std::int64_t done = std::clamp<std::int64_t>(line.done, 0, total);
  const int filled = static_cast<int>(done * bar_width / total);
  std::string bar(static_cast<std::size_t>(bar_width), '.');
  std::fill_n(bar.begin(), filled, '=');
  if (done < total) bar[static_cast<std::size_t>(filled)] = '>';
  // The counter is padded to the total's width so the bar does not move while it fills.
  const int digits = static_cast<int>(std::to_string(total).size());
  std::string text = fmt::format("{:>{}}/{} [{}]", done, digits, total, bar);
  if (done == total) {
    text += fmt::format(" - {:.1f}s", line.seconds);
  } else {
    text +=
        " - ETA " + (line.eta_seconds < 0 ? std::string("?") : format_duration(line.eta_seconds));
  }
  text += fmt::format(" - loss {:.4f} - {:.0f} img/s", figure(line.loss), line.images_per_second);
  return text;
}

}  // namespace dl
