// libFuzzer target for the CSV reader (csv_reader.hpp). A DataError is the expected outcome for
// bad input; any other exception, a crash or a sanitizer report is a bug, and so is a successful
// read whose rows do not have the declared width, whose labels are not class indices, or whose
// class names (text labels) are not sorted, distinct and covering every label.
//
// Input layout:
//   byte 0   bits 0-1: skip lines (0-3); bit 2: onBadFile skip; bits 3-4: delimiter (, ; tab space)
//   byte 1   features per row, 1-8 (bits 0-2, plus 1); bits 3-5: label index - 1 (-1 to 6)
//   then     the file content
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "data/csv_reader.hpp"
#include "fuzz_support.hpp"

namespace {

constexpr const char* kTarget = "fuzz_csv";
constexpr std::size_t kControlBytes = 2;
constexpr int kNumClasses = 10;
constexpr char kDelimiters[] = {',', ';', '\t', ' '};
constexpr std::uint8_t kSkipLinesMask = 0x3;
constexpr std::uint8_t kSkipRowsFlag = 0x4;
constexpr int kDelimiterShift = 3;
constexpr std::uint8_t kDelimiterMask = 0x3;
constexpr std::uint8_t kFeaturesMask = 0x7;
constexpr int kLabelShift = 3;
constexpr std::uint8_t kLabelMask = 0x7;

const dl::fuzz::TempFile& csv_file() {
  static const dl::fuzz::TempFile file("fuzz-csv");
  return file;
}

[[noreturn]] void fail_result(const char* what) {
  std::fprintf(stderr, "%s: a successful read returned a wrong result: %s\n", kTarget, what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < kControlBytes) return 0;
  dl::CsvRequest request;
  request.path = csv_file().path();
  request.skip_lines = data[0] & kSkipLinesMask;
  request.on_bad_row =
      (data[0] & kSkipRowsFlag) != 0 ? dl::BadFileAction::kSkip : dl::BadFileAction::kStop;
  request.delimiter = kDelimiters[(data[0] >> kDelimiterShift) & kDelimiterMask];
  request.features = (data[1] & kFeaturesMask) + 1;
  request.label_index = ((data[1] >> kLabelShift) & kLabelMask) - 1;
  if (request.label_index > request.features) request.label_index = -1;
  request.num_classes = kNumClasses;
  csv_file().write(data + kControlBytes, size - kControlBytes);
  try {
    const dl::Dataset set = dl::read_csv(request);
    if (set.size() < 1) fail_result("no rows");
    if (set.features().size() != static_cast<std::size_t>(set.size()) * request.features)
      fail_result("feature count differs from rows x features");
    for (const std::int32_t label : set.labels())
      if (label < 0 || label >= kNumClasses) fail_result("a label outside [0, numClasses)");
    // Text labels: the classes are distinct names in byte order, one per label value at most.
    const std::vector<std::string>& names = set.origin().class_names;
    for (std::size_t i = 1; i < names.size(); ++i)
      if (!(names[i - 1] < names[i])) fail_result("class names not sorted and distinct");
    for (const std::int32_t label : set.labels())
      if (!names.empty() && static_cast<std::size_t>(label) >= names.size())
        fail_result("a label past the class names");
  } catch (const dl::DataError&) {
    return 0;
  } catch (const std::exception& e) {
    dl::fuzz::fail_unexpected(kTarget, e.what());
  }
  return 0;
}
