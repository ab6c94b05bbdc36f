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

// One leading + before what from_chars reads (a digit or a point, never a second sign).
std::string_view without_plus(std::string_view text) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+') text.remove_prefix(1);
  return text;
}

// The power of ten of the first nonzero digit of a number's text that from_chars read whole
// ("123.4" 2, "0.001" -3, "5e-50" -50), the exponent saturated; nothing for a zero.
std::optional<long long> decimal_order(std::string_view text) {
  constexpr long long kSaturated = 1'000'000'000;
  std::size_t i = text.empty() || text[0] != '-' ? 0 : 1;
  long long digits = 0, before_point = -1, first_nonzero = -1;
  for (; i < text.size() && text[i] != 'e' && text[i] != 'E'; ++i) {
    if (text[i] == '.') {
      before_point = digits;
      continue;
    }
    if (text[i] != '0' && first_nonzero < 0) first_nonzero = digits;
    ++digits;
  }
  if (first_nonzero < 0) return std::nullopt;
  if (before_point < 0) before_point = digits;
  long long exponent = 0;
  const bool negative = i + 1 < text.size() && text[i + 1] == '-';
  for (std::size_t e = i + 1; e < text.size(); ++e)
    if (text[e] >= '0' && text[e] <= '9')
      exponent = std::min(kSaturated, exponent * 10 + (text[e] - '0'));
  return before_point - first_nonzero - 1 + (negative ? -exponent : exponent);
}

// A number from_chars found out of float's range: as a double where that holds it, else nearer
// zero than any double, or nothing for one too large.
std::optional<float> out_of_float_range(std::string_view text) {
  double wide = 0.0;
  const auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), wide);
  if (error == std::errc() && rest == text.data() + text.size()) {
    const float narrow = static_cast<float>(wide);
    if (std::isfinite(narrow)) return narrow;
    return std::nullopt;
  }
  const std::optional<long long> order = decimal_order(text);
  if (error != std::errc::result_out_of_range || !order || *order >= 0) return std::nullopt;
  return text[0] == '-' ? -0.0f : 0.0f;
}

}  // namespace

std::optional<float> csv_number(std::string_view text) {
  text = without_plus(text);
  float value = 0.0f;
  const auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || rest != text.data() + text.size()) return std::nullopt;
  // Underflow is no error: 1e-50 is a number, float's nearest (Python, pandas and NumPy read it).
  if (error == std::errc::result_out_of_range) return out_of_float_range(text);
  if (error != std::errc() || !std::isfinite(value)) return std::nullopt;
  return value;
}

bool csv_number_too_large(std::string_view text) {
  text = without_plus(text);
  float value = 0.0f;
  const auto [rest, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return !text.empty() && rest == text.data() + text.size() &&
         error == std::errc::result_out_of_range && !out_of_float_range(text);
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
  // Each distinct label read once.
  std::size_t index_labels = 0;
  std::unordered_set<std::string_view> indices;
  for (const std::string& n : names)
    if (label_as_index(n)) indices.insert(n);
  for (std::string_view label : labels) index_labels += indices.count(label);
  return {std::move(names), static_cast<std::size_t>(name - labels.begin()), index_labels};
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
