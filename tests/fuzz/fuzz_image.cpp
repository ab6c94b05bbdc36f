// libFuzzer target for the image decoders (PNG by libspng, JPEG by TurboJPEG: image_decode.hpp)
// and the fitting to the input (image_resize.hpp). An ImageDecodeError is the expected outcome for
// bad input; any other exception, a crash or a sanitizer report is a bug, and so is a decoded
// image whose size does not match what it says.
//
// Input layout:
//   byte 0   bit 0: channels (0 gray, 1 RGB); bit 1: resize (0 centerCrop, 1 stretch)
//   byte 1   the input's side, 1-32 (bits 0-4, plus 1): also the size a JPEG is decoded to cover
//   then     the file content
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "data/image_decode.hpp"
#include "data/image_resize.hpp"
#include "fuzz_support.hpp"

namespace {

constexpr const char* kTarget = "fuzz_image";
constexpr std::size_t kControlBytes = 2;
constexpr std::uint8_t kRgbFlag = 0x1;
constexpr std::uint8_t kStretchFlag = 0x2;
constexpr std::uint8_t kSideMask = 0x1f;

[[noreturn]] void fail_result(const char* what) {
  std::fprintf(stderr, "%s: a successful decode returned a wrong result: %s\n", kTarget, what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < kControlBytes) return 0;
  const int channels = (data[0] & kRgbFlag) != 0 ? 3 : 1;
  const dl::ImageResize resize =
      (data[0] & kStretchFlag) != 0 ? dl::ImageResize::kStretch : dl::ImageResize::kCenterCrop;
  const int side = (data[1] & kSideMask) + 1;
  data += kControlBytes;
  size -= kControlBytes;
  try {
    const dl::DecodedImage image = dl::decode_image(data, size, channels, side, side);
    if (image.width < 1 || image.height < 1 || image.channels != channels)
      fail_result("an empty image or other channels");
    if (image.pixels.size() != static_cast<std::size_t>(image.width) * image.height * channels)
      fail_result("pixel count differs from width x height x channels");
    std::vector<std::uint8_t> out(static_cast<std::size_t>(channels) * side * side);
    dl::fit_image(image, side, side, resize, out.data());
  } catch (const dl::ImageDecodeError&) {
    return 0;
  } catch (const std::exception& e) {
    dl::fuzz::fail_unexpected(kTarget, e.what());
  }
  return 0;
}
