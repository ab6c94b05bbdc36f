// Typed reads of single YAML values, strict about YAML's types: a quoted "3" is a string, not a
// number; 2.5 is not an integer; only true/false are booleans. Each read that fails throws
// ConfigError at the value's location, naming the key path and the allowed values.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "config/enum_names.hpp"
#include "config/read_context.hpp"
#include "config/text_match.hpp"

namespace dl {

struct IntRange {
  std::int64_t min = std::numeric_limits<std::int64_t>::min();
  std::int64_t max = std::numeric_limits<std::int64_t>::max();
};

struct RealRange {
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  bool min_inclusive = true;
  bool max_inclusive = true;

  static RealRange any() { return {}; }
  static RealRange at_least(double lo) { return {lo, any().max, true, true}; }
  static RealRange above(double lo) { return {lo, any().max, false, true}; }
  // [lo, hi)
  static RealRange from_below(double lo, double hi) { return {lo, hi, true, false}; }
  // (lo, hi]
  static RealRange above_up_to(double lo, double hi) { return {lo, hi, false, true}; }

  bool contains(double v) const;
  std::string str() const;  // "[0, 1)", "> 0", ">= 0", "any finite number"
};

// "a map", "a list", "a string", "no value": what a node holds, for type errors.
std::string describe_node(const YAML::Node& node);

std::int64_t read_integer(const ReadContext& ctx, const std::string& path, const YAML::Node& node,
                          IntRange range);
std::uint64_t read_unsigned(const ReadContext& ctx, const std::string& path,
                            const YAML::Node& node);
double read_real(const ReadContext& ctx, const std::string& path, const YAML::Node& node,
                 const RealRange& range);
bool read_bool(const ReadContext& ctx, const std::string& path, const YAML::Node& node);
// Any non-empty scalar, quoted or not.
std::string read_text(const ReadContext& ctx, const std::string& path, const YAML::Node& node);
// A byte count or a size with a unit (see byte_size.hpp); `accepts_auto`: the key also takes
// the word auto, which the fix then names.
std::uint64_t read_byte_size(const ReadContext& ctx, const std::string& path,
                             const YAML::Node& node, bool accepts_auto = false);

// The scalar's text, after checking that `node` is a scalar (quoted or not); `expected` names
// what was wanted in the error ("an activation").
std::string scalar_text(const ReadContext& ctx, const std::string& path, const YAML::Node& node,
                        const std::string& expected);

// "unknown <kind> '<text>' for <path>; did you mean '<x>'?" or "...; use one of a, b, c".
[[noreturn]] void fail_unknown_name(const ReadContext& ctx, const std::string& path,
                                    const YAML::Node& node, const std::string& kind,
                                    const std::string& text, const std::string& where_text,
                                    const std::vector<std::string>& valid);

template <class E>
E read_enum(const ReadContext& ctx, const std::string& path, const YAML::Node& node) {
  const std::string kind(enum_kind_name<E>());
  const std::string text = scalar_text(ctx, path, node, "a " + kind);
  if (const auto value = enum_from_name<E>(text)) return *value;
  fail_unknown_name(ctx, path, node, kind, text, "for " + path, enum_names<E>());
}

}  // namespace dl
