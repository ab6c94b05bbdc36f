// Images encoded by the libraries the readers decode with, for the image tests (decoding,
// fitting, folders and their streaming).
#pragma once

#include <cstdint>
#include <vector>

namespace dl::test {

// A PNG of width x height pixels of 1 (gray) or 3 (RGB) channels, interleaved as given.
std::vector<std::uint8_t> encode_png(int width, int height, int channels,
                                     const std::vector<std::uint8_t>& pixels);
// A gray JPEG of a fixed pattern, quality 90.
std::vector<std::uint8_t> encode_gray_jpeg(int width, int height);
// A JPEG of `pixels` in TurboJPEG's pixel_format (TJPF_RGB; TJPF_CMYK writes a YCCK JPEG, the
// bytes stored as given), with TurboJPEG's chroma subsampling and quality.
std::vector<std::uint8_t> encode_jpeg(int width, int height, int pixel_format,
                                      const std::vector<std::uint8_t>& pixels, int subsampling,
                                      int quality);

}  // namespace dl::test
