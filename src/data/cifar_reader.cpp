#include "data/cifar_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "core/error.hpp"
#include "data/cifar_format.hpp"
#include "data/gz_input.hpp"

namespace dl {
namespace {

namespace fs = std::filesystem;

// Records read per call: about 0.8 MB, so memory follows the bytes that actually arrive.
constexpr std::size_t kRecordsPerRead = 256;

struct Variant {
  const char* name;
  const char* format_key;  // its data.format value
  std::size_t label_bytes;
  std::string_view folder;  // the folder its archive unpacks to
  const char* fetch;        // the command that downloads it
};

const Variant kCifar10{"CIFAR-10", "cifar10", cifar::kCifar10LabelBytes, cifar::kCifar10Folder,
                       "scripts/fetch_cifar10.sh"};
const Variant kCifar100{"CIFAR-100", "cifar100", cifar::kCifar100LabelBytes, cifar::kCifar100Folder,
                        "scripts/fetch_cifar10.sh cifar100"};

const Variant& variant(bool cifar100) {
  return cifar100 ? kCifar100 : kCifar10;
}
std::size_t record_bytes(const Variant& v) {
  return v.label_bytes + cifar::kImageBytes;
}

std::vector<std::string> file_names(bool cifar100, CifarSplit split) {
  if (cifar100) {
    return {std::string(split == CifarSplit::kTrain ? cifar::kCifar100TrainFile
                                                    : cifar::kCifar100TestFile)};
  }
  if (split == CifarSplit::kTest) return {std::string(cifar::kCifar10TestFile)};
  return {cifar::kCifar10TrainFiles.begin(), cifar::kCifar10TrainFiles.end()};
}

std::string expected_files(bool cifar100) {
  return cifar100 ? fmt::format("{} and {}", cifar::kCifar100TrainFile, cifar::kCifar100TestFile)
                  : fmt::format("{} to {} and {}", cifar::kCifar10TrainFiles.front(),
                                cifar::kCifar10TrainFiles.back(), cifar::kCifar10TestFile);
}

std::string refetch_hint(const Variant& v) {
  return fmt::format("download it again ({})", v.fetch);
}

// What to do about a missing file: the folder the archive unpacked to, the other variant's
// files, or fetching the data.
std::string missing_file_fix(const CifarSource& source, const std::string& file) {
  const Variant& v = variant(source.cifar100);
  const Variant& other = variant(!source.cifar100);
  std::error_code ignored;
  const fs::path nested = fs::path(source.directory) / v.folder;
  if (fs::exists(nested / file, ignored)) {
    return fmt::format("the unpacked archive's folder is inside it: set data.directory: {}",
                       nested.string());
  }
  // The file compressed, or the archive itself not unpacked: fetched by hand, say.
  const fs::path gzipped = fs::path(source.directory) / (file + ".gz");
  if (fs::exists(gzipped, ignored))
    return fmt::format("the folder holds {} compressed: unpack it (gunzip {})", file,
                       gzipped.string());
  for (fs::directory_iterator it(source.directory, ignored), end; !ignored && it != end;
       it.increment(ignored)) {
    const std::string name = it->path().filename().string();
    const bool archive = name.size() > 7 && (name.rfind(".tar.gz") == name.size() - 7 ||
                                             name.rfind(".tgz") == name.size() - 4);
    if (archive && name.rfind("cifar", 0) == 0)
      return fmt::format(
          "the folder holds the archive {}: unpack it (tar xzf {} -C {}) and set "
          "data.directory: {}",
          name, it->path().string(), source.directory, nested.string());
  }
  const std::string other_first = file_names(!source.cifar100, CifarSplit::kTrain).front();
  if (fs::exists(fs::path(source.directory) / other_first, ignored)) {
    return fmt::format("this folder holds {} batches ({}): set data.format: {}", other.name,
                       other_first, other.format_key);
  }
  return fmt::format(
      "run {} (it downloads and checks the official archive), or set "
      "data.directory to the folder that holds the files",
      v.fetch);
}

// Every file of the split must exist before any is read: a missing data_batch_5.bin is then
// reported at once, not after four files were decoded.
void check_files_exist(const CifarSource& source, CifarSplit split) {
  const Variant& v = variant(source.cifar100);
  std::error_code error;
  if (!fs::is_directory(source.directory, error)) {
    throw DataError(fmt::format(
        "{}: data.directory {}; data.format {} reads {} from it: run {}, or set data.directory "
        "to the folder that holds them",
        source.directory, fs::exists(source.directory, error) ? "is not a directory" : "is missing",
        v.format_key, expected_files(source.cifar100), v.fetch));
  }
  for (const std::string& name : file_names(source.cifar100, split)) {
    const std::string path = (fs::path(source.directory) / name).string();
    if (fs::is_regular_file(path, error)) continue;
    const bool exists = fs::exists(path, error);
    throw DataError(fmt::format("{}: {}; data.format {} reads {} from data.directory ({}): {}",
                                path, exists ? "is not a regular file" : "missing", v.format_key,
                                expected_files(source.cifar100), source.directory,
                                missing_file_fix(source, name)));
  }
}

[[noreturn]] void throw_cut(const GzInput& in, const Variant& v, std::int64_t record,
                            std::size_t bytes_in_record, std::uint64_t file_bytes) {
  const Variant& other = &v == &kCifar10 ? kCifar100 : kCifar10;
  const std::string other_fits =
      file_bytes % record_bytes(other) == 0
          ? fmt::format(
                " ({} bytes is a whole number of {}-byte {} records: if it is {}, set "
                "data.format: {})",
                file_bytes, record_bytes(other), other.name, other.name, other.format_key)
          : std::string();
  const std::string cut_note =
      in.stream_cut_off() ? " (the gzip stream itself is cut off before its end)" : "";
  throw DataError(fmt::format(
      "{}: truncated: {} bytes is not a whole number of {}-byte {} records ({} label byte(s) and "
      "{} pixels); the data ends inside record {} (counting from 0) after {} of its {} bytes{}{}; "
      "{}",
      in.path(), file_bytes, record_bytes(v), v.name, v.label_bytes, cifar::kImageBytes, record,
      bytes_in_record, record_bytes(v), cut_note, other_fits, refetch_hint(v)));
}

[[noreturn]] void throw_bad_label(const std::string& path, const Variant& v, std::int64_t record,
                                  const char* which, int value, int classes) {
  const std::uint64_t offset = static_cast<std::uint64_t>(record) * record_bytes(v);
  throw DataError(fmt::format(
      "{}: record {} (counting from 0, at byte {}) has the {}label {}, but {} {}labels are 0 to "
      "{}; the file is damaged or not a {} batch{}: {}",
      path, record, offset, which, value, v.name, which, classes - 1, v.name,
      &v == &kCifar10 ? " (CIFAR-100 records have two label bytes: data.format: cifar100)" : "",
      refetch_hint(v)));
}

// The class of one record, after checking its label byte(s).
std::int32_t record_label(const std::string& path, const CifarSource& source,
                          const std::uint8_t* record, std::int64_t index) {
  if (!source.cifar100) {
    if (record[0] >= cifar::kCifar10Classes)
      throw_bad_label(path, kCifar10, index, "", record[0], cifar::kCifar10Classes);
    return record[0];
  }
  if (record[0] >= cifar::kCifar100CoarseClasses)
    throw_bad_label(path, kCifar100, index, "coarse ", record[0], cifar::kCifar100CoarseClasses);
  if (record[1] >= cifar::kCifar100FineClasses)
    throw_bad_label(path, kCifar100, index, "fine ", record[1], cifar::kCifar100FineClasses);
  return source.coarse_labels ? record[0] : record[1];
}

// Appends the records of one file to `out`, at most `max_records` of them (0: all).
void read_file(const std::string& path, const CifarSource& source, std::int64_t max_records,
               CifarRecords& out) {
  const Variant& v = variant(source.cifar100);
  const std::size_t bytes_per_record = record_bytes(v);
  GzInput in(path, ExpectedFile{fmt::format("a {} batch file", v.name),
                                v.label_bytes == cifar::kCifar10LabelBytes ? "test_batch.bin"
                                                                            : "test.bin"});
  std::vector<std::uint8_t> chunk(kRecordsPerRead * bytes_per_record);
  std::int64_t records = 0;
  std::uint64_t file_bytes = 0;
  while (max_records == 0 || records < max_records) {
    const std::size_t want_records =
        max_records == 0 ? kRecordsPerRead
                         : static_cast<std::size_t>(std::min<std::int64_t>(
                               max_records - records, static_cast<std::int64_t>(kRecordsPerRead)));
    const std::size_t want = want_records * bytes_per_record;
    const std::size_t got = in.read(chunk.data(), want);
    file_bytes += got;
    const std::size_t whole = got / bytes_per_record;
    for (std::size_t r = 0; r < whole; ++r) {
      const std::uint8_t* record = chunk.data() + r * bytes_per_record;
      out.labels.push_back(record_label(path, source, record, records));
      out.pixels.insert(out.pixels.end(), record + v.label_bytes, record + bytes_per_record);
      ++records;
    }
    if (got == want) continue;
    if (file_bytes == 0) {
      throw DataError(fmt::format(
          "{}: the file is empty (0 bytes); a {} batch holds records of {} bytes ({} label "
          "byte(s) and {} pixels): {}",
          path, v.name, bytes_per_record, v.label_bytes, cifar::kImageBytes, refetch_hint(v)));
    }
    if (got % bytes_per_record != 0) throw_cut(in, v, records, got % bytes_per_record, file_bytes);
    break;
  }
}

}  // namespace

const char* cifar_name(const CifarSource& source) {
  return variant(source.cifar100).name;
}

std::vector<std::string> cifar_split_files(const CifarSource& source, CifarSplit split) {
  std::vector<std::string> paths;
  for (const std::string& name : file_names(source.cifar100, split))
    paths.push_back((fs::path(source.directory) / name).string());
  return paths;
}

CifarRecords read_cifar_file(const std::string& path, const CifarSource& source) {
  CifarRecords out;
  read_file(path, source, 0, out);
  out.count = static_cast<std::int64_t>(out.labels.size());
  return out;
}

CifarRecords read_cifar_split(const CifarSource& source, CifarSplit split, std::int64_t limit) {
  DL_CHECK(limit >= 0, "a CIFAR read limit must be >= 0 (0 = all records)");
  check_files_exist(source, split);
  CifarRecords out;
  for (const std::string& path : cifar_split_files(source, split)) {
    const std::int64_t have = static_cast<std::int64_t>(out.labels.size());
    if (limit > 0 && have >= limit) break;
    read_file(path, source, limit > 0 ? limit - have : 0, out);
  }
  out.count = static_cast<std::int64_t>(out.labels.size());
  return out;
}

}  // namespace dl
