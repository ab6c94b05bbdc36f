// PNG and JPEG decoding (image_decode.hpp), fitting to the input (image_resize.hpp) and file
// names (utf8_names.hpp), on images encoded here with the same libraries.
#include <turbojpeg.h>
#include <catch2/catch.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/image_decode.hpp"
#include "data/image_resize.hpp"
#include "data/utf8_names.hpp"
#include "image_test_files.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

using dl::test::encode_gray_jpeg;
using dl::test::encode_jpeg;
using dl::test::encode_png;

namespace {

std::string decode_error(const std::vector<std::uint8_t>& bytes) {
  try {
    dl::decode_image(bytes.data(), bytes.size(), 1);
  } catch (const dl::ImageDecodeError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("PNG: gray and RGB decoded exactly, converted between them", "[image]") {
  const std::vector<std::uint8_t> gray{0, 10, 20, 30, 40, 50};  // 3 x 2
  const std::vector<std::uint8_t> png = encode_png(3, 2, 1, gray);
  CHECK(dl::image_kind(png.data(), png.size()) == dl::ImageKind::kPng);
  const dl::DecodedImage one = dl::decode_image(png.data(), png.size(), 1);
  CHECK(one.width == 3);
  CHECK(one.height == 2);
  CHECK(one.pixels == gray);
  const dl::DecodedImage three = dl::decode_image(png.data(), png.size(), 3);
  CHECK(three.pixels.size() == 18);
  CHECK(three.pixels[3 * 4 + 0] == 40);
  CHECK(three.pixels[3 * 4 + 2] == 40);
  // Pure red, green and blue: BT.601 luma 76, 150, 29.
  const std::vector<std::uint8_t> rgb{255, 0, 0, 0, 255, 0, 0, 0, 255};
  const std::vector<std::uint8_t> colour = encode_png(3, 1, 3, rgb);
  CHECK(dl::decode_image(colour.data(), colour.size(), 1).pixels ==
        std::vector<std::uint8_t>{76, 150, 29});
}

TEST_CASE("JPEG: scaled decoding to the smallest scale that covers the input", "[image]") {
  const std::vector<std::uint8_t> jpeg = encode_gray_jpeg(64, 64);
  CHECK(dl::image_kind(jpeg.data(), jpeg.size()) == dl::ImageKind::kJpeg);
  const dl::DecodedImage full = dl::decode_image(jpeg.data(), jpeg.size(), 1);
  CHECK(full.width == 64);
  const dl::DecodedImage quarter = dl::decode_image(jpeg.data(), jpeg.size(), 3, 16, 16);
  CHECK(quarter.width == 16);
  CHECK(quarter.height == 16);
  CHECK(quarter.declared_width == 64);
  CHECK(quarter.channels == 3);
  CHECK(quarter.pixels.size() == 16u * 16u * 3u);
  // Never below the input: 17 wide needs 3/8 (24), not 1/4.
  CHECK(dl::decode_image(jpeg.data(), jpeg.size(), 1, 17, 8).width == 24);
  // 5/8 covers 40 exactly; 41 needs 6/8 (48); 57 finds no scale below 1 (7/8 gives 56).
  CHECK(dl::decode_image(jpeg.data(), jpeg.size(), 1, 40, 40).width == 40);
  CHECK(dl::decode_image(jpeg.data(), jpeg.size(), 1, 41, 8).width == 48);
  CHECK(dl::decode_image(jpeg.data(), jpeg.size(), 1, 57, 8).width == 64);
}

TEST_CASE("JPEG: gray from colour is the decoded RGB's luma, as for PNG", "[image]") {
  // Saturated noise with subsampled chroma (the common 4:2:0): where decoding clips RGB, the
  // file's own Y channel is no longer its luma (by 2 levels at pixel 57 of this pattern, by up
  // to 14 on other noise).
  constexpr int kWidth = 10, kHeight = 12;
  std::vector<std::uint8_t> rgb(kWidth * kHeight * 3);
  std::uint32_t state = 12345;  // an LCG's high bytes: noise
  for (std::uint8_t& v : rgb) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<std::uint8_t>(state >> 24);
  }
  const std::vector<std::uint8_t> jpeg =
      encode_jpeg(kWidth, kHeight, TJPF_RGB, rgb, TJSAMP_420, 90);
  const std::vector<std::uint8_t> colour = dl::decode_image(jpeg.data(), jpeg.size(), 3).pixels;
  const std::vector<std::uint8_t> gray = dl::decode_image(jpeg.data(), jpeg.size(), 1).pixels;
  REQUIRE(gray.size() == colour.size() / 3);
  for (std::size_t i = 0; i < gray.size(); ++i) {
    const double luma =
        0.299 * colour[3 * i] + 0.587 * colour[3 * i + 1] + 0.114 * colour[3 * i + 2];
    INFO("pixel " << i << ": " << int(gray[i]) << ", luma " << luma);
    CHECK(std::fabs(gray[i] - luma) <= 0.51);
  }
}

TEST_CASE("JPEG: CMYK (YCCK) read by Adobe's inverted convention, as Pillow reads it", "[image]") {
  // Stored bytes c', m', y', k' = 255 - ink: R = c' k' / 255, G = m' k' / 255, B = y' k' / 255.
  // No cyan, full magenta, no yellow, no black: magenta. Then half of each ink: a quarter.
  const std::vector<std::pair<std::array<int, 4>, std::array<int, 3>>> cases{
      {{255, 0, 255, 255}, {255, 0, 255}}, {{128, 128, 128, 128}, {64, 64, 64}}};
  for (const auto& [stored, want] : cases) {
    std::vector<std::uint8_t> cmyk;
    for (int i = 0; i < 8 * 8; ++i) cmyk.insert(cmyk.end(), stored.begin(), stored.end());
    const std::vector<std::uint8_t> jpeg = encode_jpeg(8, 8, TJPF_CMYK, cmyk, TJSAMP_444, 100);
    const dl::DecodedImage image = dl::decode_image(jpeg.data(), jpeg.size(), 3);
    REQUIRE(image.pixels.size() == 8u * 8u * 3u);
    for (int c = 0; c < 3; ++c) {
      INFO("channel " << c);
      CHECK(std::abs(image.pixels[c] - want[c]) <= 2);
    }
    const double luma = 0.299 * want[0] + 0.587 * want[1] + 0.114 * want[2];
    CHECK(std::fabs(dl::decode_image(jpeg.data(), jpeg.size(), 1).pixels[0] - luma) <= 2.5);
  }
}

TEST_CASE("bad images: refused with what is wrong", "[image]") {
  const std::vector<std::uint8_t> text{'h', 'e', 'l', 'l', 'o'};
  CHECK_THAT(decode_error(text), Contains("is not an image"));
  CHECK(decode_error({}) == "is empty (0 bytes), not an image");
  // Formats other readers take, named by their first bytes.
  const auto bytes = [](std::string_view s) {
    return std::vector<std::uint8_t>(s.begin(), s.end());
  };
  CHECK(decode_error(bytes("GIF89a\x01\x00")) ==
        "is a GIF image, which dl-train does not decode (PNG and JPEG only): convert it to PNG or "
        "JPEG (e.g. ImageMagick's mogrify -format png)");
  CHECK_THAT(decode_error(bytes("BM\x36\x00")), StartsWith("is a BMP image"));
  CHECK_THAT(decode_error(bytes(std::string_view("RIFF\x24\0\0\0"
                                                 "WEBPVP8 ",
                                                 16))),
             StartsWith("is a WebP image"));
  CHECK_THAT(decode_error(bytes(std::string_view("II*\0\x08\0", 6))),
             StartsWith("is a TIFF image"));
  CHECK_THAT(decode_error(bytes(std::string_view("\0\0\0\x18"
                                                 "ftypheic",
                                                 12))),
             StartsWith("is a HEIF (HEIC) image"));
  CHECK_THAT(decode_error(bytes(std::string_view("RIFF\x24\0\0\0"
                                                 "WAVEfmt ",
                                                 16))),
             Contains("is not an image"));
  std::vector<std::uint8_t> png = encode_png(3, 2, 1, {1, 2, 3, 4, 5, 6});
  png.resize(png.size() - 20);
  CHECK_THAT(decode_error(png), Contains("is not a valid PNG"));
  std::vector<std::uint8_t> jpeg = encode_gray_jpeg(64, 64);
  jpeg.resize(jpeg.size() / 2);
  CHECK_THAT(decode_error(jpeg), Contains("is not a valid JPEG"));
  // A header declaring 60000 x 60000: refused before any pixel is allocated.
  std::vector<std::uint8_t> bomb = encode_gray_jpeg(8, 8);
  for (std::size_t i = 0; i + 1 < bomb.size(); ++i) {
    if (bomb[i] != 0xff || bomb[i + 1] != 0xc0) continue;
    for (std::size_t k : {i + 5, i + 7}) {
      bomb[k] = 60000 >> 8;
      bomb[k + 1] = 60000 & 0xff;
    }
    break;
  }
  CHECK_THAT(decode_error(bomb), Contains("declares 60000 x 60000 pixels"));
}

TEST_CASE("fitting: same size copied, centre crop keeps the middle, stretch keeps all", "[image]") {
  dl::DecodedImage image;
  image.width = 4;
  image.height = 2;
  image.channels = 1;
  image.pixels = {0, 100, 200, 250, 0, 100, 200, 250};
  std::vector<std::uint8_t> out(4);
  dl::fit_image(image, 2, 2, dl::ImageResize::kCenterCrop, out.data());
  CHECK(out == std::vector<std::uint8_t>{100, 200, 100, 200});
  dl::fit_image(image, 2, 2, dl::ImageResize::kStretch, out.data());
  // A triangle filter two source pixels wide: (0*3 + 100*3 + 200*1) / 7 and (100*1 + 200*3 + 250*3)
  // / 7.
  CHECK(out == std::vector<std::uint8_t>{71, 207, 71, 207});
  // torchvision's CenterCrop offsets, whole pixels rounded half to even: 5 wide to 2 starts 1.5
  // -> 2 pixels in, 3 wide to 2 starts 0.5 -> 0 in (no half-pixel blend of two columns).
  dl::DecodedImage row;
  row.width = 5;
  row.height = 1;
  row.channels = 1;
  row.pixels = {0, 50, 100, 150, 200};
  std::vector<std::uint8_t> two(2);
  dl::fit_image(row, 1, 2, dl::ImageResize::kCenterCrop, two.data());
  CHECK(two == std::vector<std::uint8_t>{100, 150});
  row.width = 3;
  row.pixels = {0, 50, 100};
  dl::fit_image(row, 1, 2, dl::ImageResize::kCenterCrop, two.data());
  CHECK(two == std::vector<std::uint8_t>{0, 50});
  // HWC in, CHW out.
  dl::DecodedImage rgb;
  rgb.width = 2;
  rgb.height = 1;
  rgb.channels = 3;
  rgb.pixels = {1, 2, 3, 4, 5, 6};
  std::vector<std::uint8_t> planes(6);
  dl::fit_image(rgb, 1, 2, dl::ImageResize::kStretch, planes.data());
  CHECK(planes == std::vector<std::uint8_t>{1, 4, 2, 5, 3, 6});
}

TEST_CASE("file names: UTF-8 checked, bad bytes shown as \\xNN", "[image]") {
  CHECK(dl::is_valid_utf8("caf\xc3\xa9/\xe2\x82\xac.png"));
  CHECK_FALSE(dl::is_valid_utf8("a\xff.png"));
  CHECK_FALSE(dl::is_valid_utf8("\xc0\xaf"));      // overlong '/'
  CHECK_FALSE(dl::is_valid_utf8("\xed\xa0\x80"));  // a surrogate
  CHECK_FALSE(dl::is_valid_utf8("\xc3"));          // cut short
  CHECK(dl::printable_path("dir/a\xff.png") == "dir/a\\xff.png");
  CHECK(dl::has_control_character("a\nb"));
  CHECK_FALSE(dl::has_control_character("T-shirt top"));
}
