// PNG and JPEG decoding from memory, for image folders (data.format: imagefolder) and
// `predict --input IMAGE`. PNG through libspng (small, fuzzed, one buffer call; the Debian
// package libspng0), JPEG through libjpeg-turbo's TurboJPEG API (SIMD decoding and, for images
// larger than the network's input, decoding at a scale of n/8 inside the codec, which skips much
// of the inverse DCT work).
//
// The format is recognised by the file's first bytes, not its name. A header declaring more than
// kMaxImagePixels pixels or a side above kMaxImageSide is refused before anything is allocated
// (a decompression bomb); a corrupt or truncated stream, and a JPEG whose decoder warns (a
// premature end), is refused. Each refusal is an ImageDecodeError whose message says what is
// wrong; the caller adds the file name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace dl {

// 8192 x 8192: far above the photos people train on, and 192 MiB decoded as RGB.
inline constexpr std::uint64_t kMaxImagePixels = std::uint64_t{1} << 26;
inline constexpr std::uint32_t kMaxImageSide = 1u << 16;

class ImageDecodeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Decoded pixels, row-major, channels interleaved (HWC): 1 channel (gray) or 3 (RGB).
struct DecodedImage {
  int width = 0, height = 0, channels = 0;
  int declared_width = 0, declared_height = 0;  // the header's size (JPEG: before scaling)
  std::vector<std::uint8_t> pixels;
};

enum class ImageKind { kPng, kJpeg, kUnknown };
ImageKind image_kind(const std::uint8_t* bytes, std::size_t size);

// Decodes `bytes` to `channels` (1: gray, 3: RGB; alpha dropped). A JPEG is decoded at the
// smallest of TurboJPEG's scales (n/8) whose result is at least min_width x min_height (0, 0: full
// size).
DecodedImage decode_image(const std::uint8_t* bytes, std::size_t size, int channels,
                          int min_width = 0, int min_height = 0);

}  // namespace dl
