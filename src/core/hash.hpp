// The one hash of dl-train: FNV-1a, 64 bits. Simple and stable across platforms, processes and
// releases (std::hash promises none of that), so equal inputs hash equal in every rank of a job
// and in every version: config hashes in checkpoints, `dl-train inspect`'s parameter hash, GPU
// keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dl {

inline constexpr std::uint64_t kFnv1aOffsetBasis = 0xcbf29ce484222325ull;
inline constexpr std::uint64_t kFnv1aPrime = 0x100000001b3ull;

// Hashes `size` bytes at `data`, continuing from `hash` (chain calls to hash several pieces).
inline std::uint64_t fnv1a(const void* data, std::size_t size,
                           std::uint64_t hash = kFnv1aOffsetBasis) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= kFnv1aPrime;
  }
  return hash;
}

inline std::uint64_t fnv1a(std::string_view text, std::uint64_t hash = kFnv1aOffsetBasis) {
  return fnv1a(text.data(), text.size(), hash);
}

}  // namespace dl
