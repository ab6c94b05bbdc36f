// Reader for the binary CIFAR-10 and CIFAR-100 batches (layout: cifar_format.hpp). A split is a
// fixed list of files in one directory (CIFAR-10's training split: data_batch_1.bin to
// data_batch_5.bin, read in that order); its records are concatenated.
//
// Every defect is a DataError "path: what is wrong; what to do", as for IDX files: a missing
// directory or batch file (all files of a split are checked before any is read, and a folder
// that holds the other CIFAR variant or the unpacked archive's folder is named in the fix), an
// empty file, a file that is not a whole number of records (where the data ends: the record and
// its byte, and whether the size fits the other variant's records), and a label outside the
// variant's range (the record and its byte offset). With a limit the reader stops after the
// records it needs and does not look further.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dl {

enum class CifarSplit { kTrain, kTest };

struct CifarSource {
  std::string directory;
  bool cifar100 = false;
  bool coarse_labels = false;  // CIFAR-100: the 20 coarse classes instead of the 100 fine ones
};

struct CifarRecords {
  std::int64_t count = 0;
  std::vector<std::uint8_t> pixels;  // count x 3,072 bytes, each record 3 x 32 x 32 (NCHW)
  std::vector<std::int32_t> labels;
};

// The paths of a split's files, in reading order.
std::vector<std::string> cifar_split_files(const CifarSource& source, CifarSplit split);

// limit > 0 reads only the first min(limit, records in the split) records; 0 reads all.
CifarRecords read_cifar_split(const CifarSource& source, CifarSplit split, std::int64_t limit = 0);

// All records of one batch file, whatever its name (`predict --input`).
CifarRecords read_cifar_file(const std::string& path, const CifarSource& source);

// "CIFAR-10" or "CIFAR-100", for messages.
const char* cifar_name(const CifarSource& source);

}  // namespace dl
