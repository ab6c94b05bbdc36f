#include "image_test_files.hpp"

#include <spng.h>
#include <turbojpeg.h>
#include <catch2/catch.hpp>

#include <cstdlib>

namespace dl::test {

std::vector<std::uint8_t> encode_png(int width, int height, int channels,
                                     const std::vector<std::uint8_t>& pixels) {
  spng_ctx* ctx = spng_ctx_new(SPNG_CTX_ENCODER);
  spng_set_option(ctx, SPNG_ENCODE_TO_BUFFER, 1);
  spng_ihdr header{};
  header.width = static_cast<std::uint32_t>(width);
  header.height = static_cast<std::uint32_t>(height);
  header.bit_depth = 8;
  header.color_type = channels == 1 ? SPNG_COLOR_TYPE_GRAYSCALE : SPNG_COLOR_TYPE_TRUECOLOR;
  spng_set_ihdr(ctx, &header);
  REQUIRE(spng_encode_image(ctx, pixels.data(), pixels.size(), SPNG_FMT_PNG,
                            SPNG_ENCODE_FINALIZE) == 0);
  std::size_t size = 0;
  int error = 0;
  auto* bytes = static_cast<std::uint8_t*>(spng_get_png_buffer(ctx, &size, &error));
  REQUIRE(bytes != nullptr);
  std::vector<std::uint8_t> png(bytes, bytes + size);
  free(bytes);  // NOLINT: spng hands out malloc'd memory
  spng_ctx_free(ctx);
  return png;
}

namespace {

std::vector<std::uint8_t> compress(int width, int height, int pixel_format, int subsampling,
                                   int quality, const std::vector<std::uint8_t>& pixels) {
  tjhandle handle = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  REQUIRE(tjCompress2(handle, pixels.data(), width, 0, height, pixel_format, &jpeg, &size,
                      subsampling, quality, 0) == 0);
  std::vector<std::uint8_t> bytes(jpeg, jpeg + size);
  tjFree(jpeg);
  tjDestroy(handle);
  return bytes;
}

}  // namespace

std::vector<std::uint8_t> encode_gray_jpeg(int width, int height) {
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(width) * height);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i * 7);
  return compress(width, height, TJPF_GRAY, TJSAMP_GRAY, 90, pixels);
}

std::vector<std::uint8_t> encode_jpeg(int width, int height, int pixel_format,
                                      const std::vector<std::uint8_t>& pixels, int subsampling,
                                      int quality) {
  REQUIRE(pixels.size() == static_cast<std::size_t>(width) * height * tjPixelSize[pixel_format]);
  return compress(width, height, pixel_format, subsampling, quality, pixels);
}

}  // namespace dl::test
