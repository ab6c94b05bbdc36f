#include "io/json_writer.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dl {

namespace {

constexpr int kNoIndent = -1;
constexpr char kIndentCharacter = ' ';

struct Separators {
  const char* item;   // between the items of an object or array
  const char* value;  // between a key and its value
};

constexpr Separators kCompact{",", ":"};
constexpr Separators kSpaced{", ", ": "};

std::string scalar(const Json& value) {
  if (value.is_number_float()) {
    const double v = value.get<double>();
    return std::isfinite(v) ? fmt::format("{}", v) : std::string("null");
  }
  return value.dump(kNoIndent, kIndentCharacter, false, Json::error_handler_t::replace);
}

std::string inline_text(const Json& value, const Separators& separators) {
  if (value.is_object()) {
    std::string text = "{";
    const char* separator = "";
    for (const auto& [key, item] : value.items()) {
      text += separator + scalar(Json(key)) + separators.value + inline_text(item, separators);
      separator = separators.item;
    }
    return text + "}";
  }
  if (value.is_array()) {
    std::string text = "[";
    const char* separator = "";
    for (const Json& item : value) {
      text += separator + inline_text(item, separators);
      separator = separators.item;
    }
    return text + "]";
  }
  return scalar(value);
}

}  // namespace

Json number_or_null(const std::optional<double>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json versioned_json_object() {
  Json object = Json::object();
  object[kJsonFormatVersionKey] = kJsonFormatVersion;
  return object;
}

std::string json_line(const Json& value) {
  return inline_text(value, kCompact);
}

std::string json_document(const Json& value) {
  if (!value.is_object() || value.empty()) return inline_text(value, kSpaced) + "\n";
  std::string text = "{\n";
  const char* separator = "";
  for (const auto& [key, item] : value.items()) {
    text += separator;
    text += "  " + scalar(Json(key)) + kSpaced.value + inline_text(item, kSpaced);
    separator = ",\n";
  }
  return text + "\n}\n";
}

bool parse_json(std::string_view text, Json& value) {
  value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return !value.is_discarded();
}

}  // namespace dl
