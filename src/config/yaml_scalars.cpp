#include "config/yaml_scalars.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "config/byte_size.hpp"
#include "config/foreign_words.hpp"
#include "core/message_text.hpp"

namespace dl {

namespace {

// yaml-cpp tags a plain (unquoted) scalar "?" and a quoted one "!".
constexpr const char* kQuotedScalarTag = "!";

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Advances `pos` over digits; returns how many there were.
std::size_t skip_digits(const std::string& text, std::size_t& pos) {
  const std::size_t start = pos;
  while (pos < text.size() && is_digit(text[pos])) ++pos;
  return pos - start;
}

std::size_t skip_sign(const std::string& text) {
  return !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
}

// [-+]?[0-9]+
bool is_integer_text(const std::string& text) {
  std::size_t pos = skip_sign(text);
  return skip_digits(text, pos) > 0 && pos == text.size();
}

// YAML 1.2's core-schema float without .inf and .nan (no key accepts them):
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool is_real_text(const std::string& text) {
  std::size_t pos = skip_sign(text);
  std::size_t mantissa_digits = skip_digits(text, pos);
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    mantissa_digits += skip_digits(text, pos);
  }
  if (mantissa_digits == 0) return false;
  if (pos < text.size() && (text[pos] == 'e' || text[pos] == 'E')) {
    ++pos;
    if (pos < text.size() && (text[pos] == '-' || text[pos] == '+')) ++pos;
    if (skip_digits(text, pos) == 0) return false;
  }
  return pos == text.size();
}

std::string format_real(double v) {
  return fmt::format("{}", v);
}

// Checks that `node` holds a plain scalar, the only form numbers and booleans take in YAML.
std::string plain_scalar_text(const ReadContext& ctx, const std::string& path,
                              const YAML::Node& node, const std::string& expected) {
  const std::string text = scalar_text(ctx, path, node, expected);
  if (node.Tag() == kQuotedScalarTag)
    ctx.fail(path, node,
             fmt::format("{} must be {}, got the quoted string \"{}\"", path, expected,
                         quoted_value(text)),
             "remove the quotes");
  return text;
}

std::string describe_int_range(IntRange range) {
  constexpr auto kLargest = std::numeric_limits<std::int64_t>::max();
  constexpr auto kSmallest = std::numeric_limits<std::int64_t>::min();
  if (range.min == kSmallest && range.max == kLargest) return "any integer";
  if (range.max == kLargest) return fmt::format(">= {}", range.min);
  if (range.max == std::numeric_limits<int>::max() && range.min != kSmallest)
    return fmt::format(">= {} (at most {})", range.min, range.max);
  return fmt::format("{} to {}", range.min, range.max);
}

}  // namespace

bool RealRange::contains(double v) const {
  const bool above_min = min_inclusive ? v >= min : v > min;
  const bool below_max = max_inclusive ? v <= max : v < max;
  return above_min && below_max;
}

std::string RealRange::str() const {
  const bool bounded_below = std::isfinite(min);
  const bool bounded_above = std::isfinite(max);
  if (bounded_below && bounded_above)
    return fmt::format("{}{}, {}{}", min_inclusive ? "[" : "(", format_real(min), format_real(max),
                       max_inclusive ? "]" : ")");
  if (bounded_below) return fmt::format("{} {}", min_inclusive ? ">=" : ">", format_real(min));
  if (bounded_above) return fmt::format("{} {}", max_inclusive ? "<=" : "<", format_real(max));
  return "any finite number";
}

std::string describe_node(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "no value";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  return "'" + quoted_value(node.Scalar()) + "'";
}

std::string scalar_text(const ReadContext& ctx, const std::string& path, const YAML::Node& node,
                        const std::string& expected) {
  if (!node.IsDefined() || node.IsNull()) {
    // A value from --set has no line: it was written after the '='.
    const bool from_set = ctx.location(path, node).line == 0;
    ctx.fail(path, node, fmt::format("{} has no value", path),
             fmt::format("write {} after the {}, or remove the key to use the default", expected,
                         from_set ? "'='" : "colon"));
  }
  if (!node.IsScalar())
    ctx.fail(path, node, fmt::format("{} must be {}, got {}", path, expected, describe_node(node)),
             "write a single value, not a map or a list");
  return node.Scalar();
}

std::int64_t read_integer(const ReadContext& ctx, const std::string& path, const YAML::Node& node,
                          IntRange range) {
  const std::string text = plain_scalar_text(ctx, path, node, "an integer");
  if (!is_integer_text(text))
    ctx.fail(path, node, fmt::format("{} must be an integer, got '{}'", path, quoted_value(text)),
             "write a whole number, without a decimal point or quotes");
  errno = 0;
  const long long value = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE || value < range.min || value > range.max)
    ctx.fail(path, node, fmt::format("{} = {} is out of range", path, quoted_value(text)),
             "allowed: " + describe_int_range(range));
  return value;
}

std::uint64_t read_unsigned(const ReadContext& ctx, const std::string& path,
                            const YAML::Node& node) {
  const std::string text = plain_scalar_text(ctx, path, node, "an integer");
  if (!is_integer_text(text))
    ctx.fail(path, node, fmt::format("{} must be an integer, got '{}'", path, quoted_value(text)),
             "write a whole number, without a decimal point or quotes");
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), nullptr, 10);
  if (text.front() == '-' || errno == ERANGE)
    ctx.fail(path, node, fmt::format("{} = {} is out of range", path, quoted_value(text)),
             fmt::format("allowed: 0 to {}", std::numeric_limits<std::uint64_t>::max()));
  return value;
}

double read_real(const ReadContext& ctx, const std::string& path, const YAML::Node& node,
                 const RealRange& range) {
  const std::string text = plain_scalar_text(ctx, path, node, "a number");
  if (!is_real_text(text))
    ctx.fail(path, node,
             fmt::format("{} must be a finite number, got '{}'", path, quoted_value(text)),
             "write a decimal number such as 0.01 or 1e-4");
  errno = 0;
  const double value = std::strtod(text.c_str(), nullptr);
  // A number below double's normal range (1e-320) underflows; it is judged as float32 below.
  const bool underflow = errno == ERANGE && !std::isinf(value);
  if ((errno == ERANGE && !underflow) || !range.contains(value))
    ctx.fail(path, node, fmt::format("{} = {} is out of range", path, quoted_value(text)),
             "allowed: " + range.str());
  // Training computes in float32: a value must still be in range there, and a non-zero one must
  // not become 0, a subnormal (flushed to 0 on GPUs) or infinity.
  const float as_float = static_cast<float>(value);
  const bool normal_or_zero =
      !underflow && (value == 0.0 || (std::isfinite(as_float) &&
                                      std::fabs(as_float) >= std::numeric_limits<float>::min()));
  if (!normal_or_zero || !range.contains(static_cast<double>(as_float)))
    ctx.fail(
        path, node,
        fmt::format("{} = {} is out of range in float32, the precision training uses "
                    "(it becomes {})",
                    path, quoted_value(text), as_float),
        fmt::format("allowed: {}, as a float32 normal number (magnitude {:g} to {:g})", range.str(),
                    std::numeric_limits<float>::min(), std::numeric_limits<float>::max()));
  return value;
}

bool read_bool(const ReadContext& ctx, const std::string& path, const YAML::Node& node) {
  const std::string text = plain_scalar_text(ctx, path, node, "true or false");
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  ctx.fail(path, node, fmt::format("{} must be true or false, got '{}'", path, quoted_value(text)),
           "write true or false (YAML 1.2: yes, no, on, off are not booleans)");
}

std::string read_text(const ReadContext& ctx, const std::string& path, const YAML::Node& node) {
  const std::string text = scalar_text(ctx, path, node, "a string");
  if (text.empty())
    ctx.fail(path, node, fmt::format("{} is empty", path),
             "write a value, or remove the key to use the default");
  // A path is cut at a NUL byte and a name with a line break breaks the lines it is printed in.
  const std::size_t control = message_text::find_control(text);
  if (control != std::string::npos)
    ctx.fail(
        path, node,
        fmt::format("{} = '{}' holds the control character {} (byte {})", path, quoted_value(text),
                    message_text::escaped_character_at(text, control), control),
        "remove it; a path or a name is printable text");
  // The resolved dump is YAML, which is UTF-8: other bytes would not read back as they were.
  const std::size_t non_utf8 = message_text::find_non_utf8(text);
  if (non_utf8 != std::string::npos)
    ctx.fail(path, node,
             fmt::format("{} = '{}' is not UTF-8 (byte {} is {}), so config.resolved.yaml could "
                         "not hold it",
                         path, quoted_value(text), non_utf8,
                         message_text::escaped_character_at(text, non_utf8)),
             "rename the file or folder to a UTF-8 name, or give the path of a symbolic link "
             "with a UTF-8 name");
  return text;
}

std::uint64_t read_byte_size(const ReadContext& ctx, const std::string& path,
                             const YAML::Node& node, bool accepts_auto) {
  const std::string text = scalar_text(ctx, path, node, "a byte size");
  const ParsedByteSize size = parse_byte_size(text);
  if (!size.ok())
    ctx.fail(path, node, fmt::format("{} = '{}' {}", path, quoted_value(text), size.error),
             fmt::format("write a byte count or a size with a unit, such as 4096, 512MiB or "
                         "1.5GB{}",
                         accepts_auto ? ", or auto" : ""));
  return size.bytes;
}

void fail_unknown_name(const ReadContext& ctx, const std::string& path, const YAML::Node& node,
                       const std::string& kind, const std::string& text,
                       const std::string& where_text, const std::vector<std::string>& valid) {
  const std::string what = fmt::format("unknown {} '{}' {}", kind, quoted_value(text), where_text);
  // 'epochs:2' or 'dense:{nOut: 3}': YAML needs a space after a key's ':', else the whole is one
  // word. Said so when the word before the ':' is one of the names.
  const std::size_t colon = text.find(':');
  if (colon != std::string::npos && colon + 1 < text.size() &&
      std::find(valid.begin(), valid.end(), text.substr(0, colon)) != valid.end())
    ctx.fail(path, node,
             fmt::format("{}: it has no space after ':', so YAML reads it as one word", what),
             fmt::format("put a space after '{}:'", quoted_value(text.substr(0, colon))));
  // Another library's word: what it is here, before a near typo that may mean something else.
  if (const auto fix = foreign_name_fix(kind, text)) ctx.fail(path, node, what, std::string(*fix));
  if (const auto suggestion = closest_match(text, valid))
    ctx.fail(path, node, what, fmt::format("did you mean '{}'?", *suggestion));
  ctx.fail(path, node, what, "use one of: " + join_words(valid));
}

}  // namespace dl
