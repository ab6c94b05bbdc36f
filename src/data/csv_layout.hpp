// What a CSV file's layout says of the config (csv_reader.hpp): the config mistake that likelier
// made a file's first data row bad, and the skipped header lines that read as data rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/csv_reader.hpp"
#include "data/csv_text.hpp"

namespace dl::csv {

// The config mistake that likelier made the file's first data row (`row`, on `line`) bad than
// the row itself, as the fix to write instead of "fix the row", or nothing.
std::optional<std::string> layout_cause(std::string_view row, std::int64_t line,
                                        const CsvRequest& r);

// The note naming the `skipped` rows (their offsets in `text`) just before the data that read as
// data rows of the file, whose classes are `names` (indices when empty), and the fix; or nothing.
std::optional<std::string> skipped_data_note(const Text& text,
                                             const std::vector<std::uint64_t>& skipped,
                                             const CsvRequest& r,
                                             const std::vector<std::string>& names);

}  // namespace dl::csv
