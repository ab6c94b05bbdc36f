// The binary CIFAR-10 and CIFAR-100 layouts (https://www.cs.toronto.edu/~kriz/cifar.html), as
// facts shared by the reader (cifar_reader.hpp) and the config checks: every record is its label
// byte(s) followed by a 32x32 colour image as three 1,024-byte planes (red, green, blue), each
// row-major. That is one NCHW sample, so a record's pixels are used as they lie.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace dl::cifar {

inline constexpr int kChannels = 3;
inline constexpr int kSide = 32;
inline constexpr std::size_t kImageBytes = std::size_t{kChannels} * kSide * kSide;  // 3,072

// CIFAR-10: one label byte, 10 classes; 5 training batches of 10,000 and one test batch.
inline constexpr std::size_t kCifar10LabelBytes = 1;
inline constexpr int kCifar10Classes = 10;
inline constexpr std::array<std::string_view, 5> kCifar10TrainFiles{
    "data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
    "data_batch_5.bin"};
inline constexpr std::string_view kCifar10TestFile = "test_batch.bin";
// The folder the official archive unpacks to (scripts/fetch_cifar10.sh).
inline constexpr std::string_view kCifar10Folder = "cifar-10-batches-bin";

// CIFAR-100: a coarse label byte (20 superclasses), then a fine one (100 classes); one training
// file of 50,000 records and one test file of 10,000.
inline constexpr std::size_t kCifar100LabelBytes = 2;
inline constexpr int kCifar100CoarseClasses = 20;
inline constexpr int kCifar100FineClasses = 100;
inline constexpr std::string_view kCifar100TrainFile = "train.bin";
inline constexpr std::string_view kCifar100TestFile = "test.bin";
inline constexpr std::string_view kCifar100Folder = "cifar-100-binary";

}  // namespace dl::cifar
