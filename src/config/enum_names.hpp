// How each enumeration of the config is spelled in YAML. The loader matches these spellings
// case-insensitively; the dump and log messages write the canonical spelling listed here.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"
#include "config/text_match.hpp"
#include "core/kinds.hpp"

namespace dl {

template <class E>
struct EnumSpelling {
  E value;
  std::string_view name;
};

// The spellings of E in the order they are documented. Specialized with DL_ENUM_SPELLINGS for
// every enum the config holds (enum_names.cpp) and for enums written to files (e.g. early
// stopping's termination reasons); using another E fails to link.
template <class E>
const std::vector<EnumSpelling<E>>& enum_spellings();

// What the enum is called in messages, e.g. "activation", "updater type".
template <class E>
std::string_view enum_kind_name();

template <class E>
std::string_view enum_name(E value) {
  for (const auto& s : enum_spellings<E>())
    if (s.value == value) return s.name;
  return "?";
}

// The value spelled `text` (any letter case), or nothing.
template <class E>
std::optional<E> enum_from_name(std::string_view text) {
  for (const auto& s : enum_spellings<E>())
    if (equals_ignoring_case(s.name, text)) return s.value;
  return std::nullopt;
}

template <class E>
std::vector<std::string> enum_names() {
  std::vector<std::string> names;
  for (const auto& s : enum_spellings<E>()) names.emplace_back(s.name);
  return names;
}

}  // namespace dl

// Defines enum_spellings<Enum>() and enum_kind_name<Enum>(), in namespace dl:
//   DL_ENUM_SPELLINGS(Activation, "activation", {Activation::kIdentity, "identity"}, ...)
#define DL_ENUM_SPELLINGS(Enum, kind, ...)                               \
  template <>                                                            \
  const std::vector<EnumSpelling<Enum>>& enum_spellings<Enum>() {        \
    static const std::vector<EnumSpelling<Enum>> spellings{__VA_ARGS__}; \
    return spellings;                                                    \
  }                                                                      \
  template <>                                                            \
  std::string_view enum_kind_name<Enum>() {                              \
    return kind;                                                         \
  }
