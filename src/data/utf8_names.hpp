// File names in messages and run files: class folder and file names must be UTF-8 (they are
// written to JSON, CSV and HTML); one that is not is shown with its bad bytes as \xNN.
#pragma once

#include <string>

namespace dl {

bool is_valid_utf8(const std::string& text);
// A byte below 0x20 or 0x7f (a newline, a tab, an escape).
bool has_control_character(const std::string& text);
// `path` with every byte that is not part of valid UTF-8 written as \xNN.
std::string printable_path(const std::string& path);
// Whether `text` holds a combining accent (U+0300 to U+036F): a name written decomposed
// (Unicode NFD, as macOS writes file names), which prints as the composed name (NFC) it is not.
bool has_combining_accent(const std::string& text);

}  // namespace dl
