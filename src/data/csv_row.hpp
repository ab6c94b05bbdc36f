// A CSV row read as a request (csv_reader.hpp) asks: its fields checked, its features parsed, its
// label found; what the reader and its diagnoses of a file's layout (csv_layout.hpp) share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "data/csv_reader.hpp"

namespace dl::csv {

// The label's field in a row, from 0.
int label_field(const CsvRequest& r);

// Parses `row` into features (`out`, unless null: the labels alone are wanted) and its label's
// text, which views the row or, when its quotes had to be unescaped, `unescaped`; the error says
// what is wrong with the row.
std::optional<std::string> parse_row(std::string_view row, const CsvRequest& r, float* out,
                                     std::string_view& label, std::string& unescaped);

// The text of a good row's label; `scratch` holds it when its quotes had to be unescaped.
std::string_view label_text(std::string_view row, const CsvRequest& r, std::string& scratch);

// What the reader's parse finds of a row's label (one int32 a row, which become the labels) before
// the file's classes are known: a class index (>= 0; one past int32 is kept as its largest, no
// class either way), or one of these. With class names a row's code becomes its class, or
// kNoClass.
inline constexpr std::int32_t kTextLabel = -1;  // not a class index: a class name, or no class
inline constexpr std::int32_t kBadRow = -2;  // parse_row found it bad (asked again for the message)
inline constexpr std::int32_t kUnparsed = -3;  // after the first bad row under onBadFile: stop
inline constexpr std::int32_t kNoClass = -4;   // its label is none of the class names

// A label's code as parsing finds it: its class index, or kTextLabel.
std::int32_t label_code(std::string_view label);

}  // namespace dl::csv
