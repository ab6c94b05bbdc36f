// TFRecord framing, the container of TensorBoard event files: each record is
//   u64 length (little-endian) | u32 masked CRC32C of the length | payload | u32 masked CRC32C
// of the payload. CRC32C is the Castagnoli polynomial (reflected 0x82F63B78); the mask rotates
// the CRC right by 15 bits and adds 0xa282ead8, so a CRC of data holding CRCs stays useful.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dl {

std::uint32_t crc32c(const void* data, std::size_t size);
std::uint32_t masked_crc32c(const void* data, std::size_t size);

// `payload` framed as one record.
std::string tfrecord_frame(std::string_view payload);

}  // namespace dl
