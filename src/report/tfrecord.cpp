#include "report/tfrecord.hpp"

#include <array>

namespace dl {

namespace {

constexpr std::uint32_t kCastagnoliReflected = 0x82F63B78u;
constexpr std::uint32_t kMaskDelta = 0xa282ead8u;

std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) != 0 ? (c >> 1) ^ kCastagnoliReflected : c >> 1;
    table[i] = c;
  }
  return table;
}

void append_le(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xffu));
}

}  // namespace

std::uint32_t crc32c(const void* data, std::size_t size) {
  static const std::array<std::uint32_t, 256> table = make_table();
  const auto* bytes = static_cast<const unsigned char*>(data);
  std::uint32_t crc = 0xffffffffu;
  for (std::size_t i = 0; i < size; ++i) crc = table[(crc ^ bytes[i]) & 0xffu] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

std::uint32_t masked_crc32c(const void* data, std::size_t size) {
  const std::uint32_t crc = crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

std::string tfrecord_frame(std::string_view payload) {
  std::string record;
  record.reserve(payload.size() + 16);
  append_le(record, payload.size(), 8);
  append_le(record, masked_crc32c(record.data(), 8), 4);
  record.append(payload);
  append_le(record, masked_crc32c(payload.data(), payload.size()), 4);
  return record;
}

}  // namespace dl
