#include "data/csv_labels.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_set>
#include <utility>

#include "core/message_text.hpp"

namespace dl {
namespace {

// A message lists this many class names at most; a label column of numbers read as text (a
// wrong labelIndex) could name thousands.
constexpr std::size_t kListedClasses = 8;

}  // namespace

std::optional<float> csv_number(std::string_view text) {
  // One leading + before what from_chars reads (a digit or a point, never a second sign).
  if (text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+') text.remove_prefix(1);
  float value = 0.0f;
  const auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || rest != text.data() + text.size() ||
      !std::isfinite(value))
    return std::nullopt;
  return value;
}

std::optional<float> label_as_index(std::string_view text) {
  const std::optional<float> value = csv_number(text);
  if (!value || *value != std::floor(*value) || *value < 0) return std::nullopt;
  return value;
}

CsvClasses csv_classes(const std::vector<std::string_view>& labels) {
  const auto name = std::find_if(labels.begin(), labels.end(), [](std::string_view label) {
    return !label_as_index(label).has_value();
  });
  if (name == labels.end()) return {};
  // Distinct first: a file has many rows and few classes.
  const std::unordered_set<std::string_view> distinct(labels.begin(), labels.end());
  std::vector<std::string> names(distinct.begin(), distinct.end());
  std::sort(names.begin(), names.end());
  return {std::move(names), static_cast<std::size_t>(name - labels.begin())};
}

std::optional<int> find_class(const std::vector<std::string>& names, std::string_view label) {
  const auto it = std::lower_bound(names.begin(), names.end(), label,
                                   [](const std::string& a, std::string_view b) { return a < b; });
  if (it == names.end() || *it != label) return std::nullopt;
  return static_cast<int>(it - names.begin());
}

std::string quoted_class_list(const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (std::size_t i = 0; i < names.size() && i < kListedClasses; ++i)
    quoted.push_back("'" + quoted_value(names[i]) + "'");
  std::string text = fmt::format("{}", fmt::join(quoted, ", "));
  if (names.size() > kListedClasses) text += fmt::format(", ... ({} classes)", names.size());
  return text;
}

}  // namespace dl
