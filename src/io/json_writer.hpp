// The one JSON writer of dl-train, on nlohmann/json (Debian's nlohmann-json3-dev): every JSON
// text a run writes goes through here (summary.json, early_stopping.json, the records of
// metrics.jsonl, the early-stopping state in checkpoints). Each is valid JSON: strings escaped by
// the library (invalid UTF-8 replaced), non-finite numbers as null, floating-point numbers in the
// shortest form that reads back to the same double; and each top-level object starts with
// "format_version" (kJsonFormatVersion), so a reader can tell what it holds.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace dl {

using Json = nlohmann::ordered_json;  // keys keep the order they were added in

inline constexpr int kJsonFormatVersion = 1;
inline constexpr const char* kJsonFormatVersionKey = "format_version";

// An object holding only "format_version": the start of every JSON document dl-train writes.
Json versioned_json_object();

// A figure that may not have been measured (a run that evaluated nothing has no test accuracy):
// the number, or null, never a 0 that reads as a result.
Json number_or_null(const std::optional<double>& value);

// One line without spaces: a JSONL record, or a value kept in checkpoint metadata.
std::string json_line(const Json& value);
// A document for people and scripts: a top-level object's keys one per line, each value on its
// key's line ({"a": 1, "b": [2, 3]}); ends with a newline.
std::string json_document(const Json& value);

// Parses `text` into `value`; false when it is not JSON.
bool parse_json(std::string_view text, Json& value);

}  // namespace dl
