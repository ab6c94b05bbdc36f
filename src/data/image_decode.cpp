#include "data/image_decode.hpp"

#include <fmt/format.h>
#include <spng.h>
#include <turbojpeg.h>

#include <array>
#include <cstring>
#include <memory>
#include <string_view>

namespace dl {
namespace {

constexpr std::array<std::uint8_t, 8> kPngSignature{0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
constexpr std::array<std::uint8_t, 3> kJpegSignature{0xff, 0xd8, 0xff};
constexpr int kGray = 1;
constexpr int kRgb = 3;
// PNG chunks other than the image data (text, ICC profiles) are at most this big each and in
// all: metadata, not pixels, so a file claiming more is refused rather than buffered.
constexpr std::size_t kMaxPngChunkBytes = std::size_t{1} << 24;
// ITU-R BT.601 luma in 16-bit fixed point (the weights 0.299, 0.587, 0.114).
constexpr std::uint32_t kLumaRed = 19595, kLumaGreen = 38470, kLumaBlue = 7471;
constexpr std::uint32_t kLumaShift = 16, kLumaRound = 1u << (kLumaShift - 1);

void check_declared_size(std::uint64_t width, std::uint64_t height) {
  if (width == 0 || height == 0)
    throw ImageDecodeError(fmt::format("declares an empty image ({} x {})", width, height));
  if (width > kMaxImageSide || height > kMaxImageSide || width * height > kMaxImagePixels)
    throw ImageDecodeError(fmt::format(
        "declares {} x {} pixels, more than the {} (8192 x 8192) an image may have; refused "
        "before decoding (a damaged header or a decompression bomb)",
        width, height, kMaxImagePixels));
}

std::vector<std::uint8_t> rgb_to_gray(const std::vector<std::uint8_t>& rgb) {
  std::vector<std::uint8_t> gray(rgb.size() / kRgb);
  for (std::size_t i = 0; i < gray.size(); ++i) {
    const std::uint8_t* p = &rgb[i * kRgb];
    gray[i] = static_cast<std::uint8_t>(
        (kLumaRed * p[0] + kLumaGreen * p[1] + kLumaBlue * p[2] + kLumaRound) >> kLumaShift);
  }
  return gray;
}

std::vector<std::uint8_t> gray_to_rgb(const std::vector<std::uint8_t>& gray) {
  std::vector<std::uint8_t> rgb(gray.size() * kRgb);
  for (std::size_t i = 0; i < gray.size(); ++i) std::memset(&rgb[i * kRgb], gray[i], kRgb);
  return rgb;
}

struct SpngFree {
  void operator()(spng_ctx* ctx) const { spng_ctx_free(ctx); }
};

void check_spng(int status, const char* what) {
  if (status != 0)
    throw ImageDecodeError(fmt::format("is not a valid PNG ({}: {})", what, spng_strerror(status)));
}

DecodedImage decode_png(const std::uint8_t* bytes, std::size_t size, int channels) {
  std::unique_ptr<spng_ctx, SpngFree> ctx(spng_ctx_new(0));
  if (!ctx) throw std::bad_alloc();
  check_spng(spng_set_image_limits(ctx.get(), kMaxImageSide, kMaxImageSide), "limits");
  check_spng(spng_set_chunk_limits(ctx.get(), kMaxPngChunkBytes, kMaxPngChunkBytes), "limits");
  check_spng(spng_set_png_buffer(ctx.get(), bytes, size), "buffer");
  spng_ihdr header{};
  check_spng(spng_get_ihdr(ctx.get(), &header), "header");
  check_declared_size(header.width, header.height);
  const bool gray_source = header.color_type == SPNG_COLOR_TYPE_GRAYSCALE && header.bit_depth <= 8;
  const int format = gray_source ? SPNG_FMT_G8 : SPNG_FMT_RGB8;
  std::size_t decoded_bytes = 0;
  check_spng(spng_decoded_image_size(ctx.get(), format, &decoded_bytes), "size");
  DecodedImage image;
  image.width = image.declared_width = static_cast<int>(header.width);
  image.height = image.declared_height = static_cast<int>(header.height);
  image.pixels.resize(decoded_bytes);
  check_spng(spng_decode_image(ctx.get(), image.pixels.data(), decoded_bytes, format, 0),
             "image data");
  const int decoded_channels = gray_source ? kGray : kRgb;
  if (decoded_channels != channels)
    image.pixels = channels == kGray ? rgb_to_gray(image.pixels) : gray_to_rgb(image.pixels);
  image.channels = channels;
  return image;
}

struct TurboJpegFree {
  void operator()(void* handle) const { tjDestroy(handle); }
};

// The smallest scale whose output covers min_width x min_height; full size when none is smaller.
// Every scale below 1 counts: a 256x256 JPEG for a 224x224 input decodes at 7/8 straight to the
// input's size, and a 500x375 photo at 5/8, the decoder's work falling with the pixels. The
// inverse DCT's reduction then does part of the resize's filtering, so such images differ a
// little from what torchvision reads (full size, then Pillow's resize), by up to 126 levels at
// sharp synthetic edges, about one on average; images decoded at full size match it within one.
tjscalingfactor jpeg_scale(int width, int height, int min_width, int min_height) {
  int count = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&count);
  tjscalingfactor best{1, 1};
  if (min_width <= 0 && min_height <= 0) return best;
  for (int i = 0; i < count; ++i) {
    const tjscalingfactor f = factors[i];
    if (f.num > f.denom) continue;  // enlarging: never wanted
    const bool covers = TJSCALED(width, f) >= min_width && TJSCALED(height, f) >= min_height;
    if (covers && TJSCALED(width, f) < TJSCALED(width, best)) best = f;
  }
  return best;
}

// a * b / 255, rounded, in integers (Pillow's MULDIV255, so CMYK converts to its bytes).
std::uint8_t times_over_255(std::uint32_t a, std::uint32_t b) {
  const std::uint32_t t = a * b + 128;
  return static_cast<std::uint8_t>(((t >> 8) + t) >> 8);
}

// Pixels decoded as CMYK (TJPF_CMYK: 4 bytes a pixel, as the file stores them) to RGB. CMYK and
// YCCK JPEGs come from print workflows (Photoshop); Adobe's convention, which every common writer
// follows, stores the inks inverted (255 - ink), so the stored bytes are c' = 255 - C and
// k' = 255 - K, and R = (255 - C)(255 - K) / 255 = k' - (255 - c') k' / 255: Pillow's conversion
// (it assumes the same convention), so a folder of such files reads as torchvision reads it.
std::vector<std::uint8_t> inverted_cmyk_to_rgb(const std::vector<std::uint8_t>& cmyk) {
  constexpr int kInks = 4;
  std::vector<std::uint8_t> rgb(cmyk.size() / kInks * kRgb);
  for (std::size_t i = 0; i < cmyk.size() / kInks; ++i) {
    const std::uint8_t* p = &cmyk[i * kInks];
    const std::uint32_t k = p[3];
    for (int c = 0; c < kRgb; ++c)
      rgb[i * kRgb + c] = static_cast<std::uint8_t>(k - times_over_255(255u - p[c], k));
  }
  return rgb;
}

// The TurboJPEG pixel format a JPEG of `colorspace` is decoded to for `channels`: gray JPEGs to
// gray or RGB directly; colour ones to RGB (gray is then the RGB's luma, as for PNG and as Pillow
// computes it: the file's own Y channel differs from it where decoding clipped RGB); CMYK and
// YCCK ones to CMYK (converted above).
int jpeg_pixel_format(int colorspace, int channels) {
  if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) return TJPF_CMYK;
  if (colorspace == TJCS_GRAY && channels == kGray) return TJPF_GRAY;
  return TJPF_RGB;
}

DecodedImage decode_jpeg(const std::uint8_t* bytes, std::size_t size, int channels, int min_width,
                         int min_height) {
  std::unique_ptr<void, TurboJpegFree> handle(tjInitDecompress());
  if (!handle) throw std::bad_alloc();
  // TurboJPEG's API takes a non-const buffer but does not write it.
  auto* buffer = const_cast<unsigned char*>(bytes);
  const auto length = static_cast<unsigned long>(size);
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), buffer, length, &width, &height, &subsampling,
                          &colorspace) != 0)
    throw ImageDecodeError(
        fmt::format("is not a valid JPEG (header: {})", tjGetErrorStr2(handle.get())));
  check_declared_size(static_cast<std::uint64_t>(width), static_cast<std::uint64_t>(height));
  const tjscalingfactor scale = jpeg_scale(width, height, min_width, min_height);
  DecodedImage image;
  image.declared_width = width;
  image.declared_height = height;
  image.width = TJSCALED(width, scale);
  image.height = TJSCALED(height, scale);
  image.channels = channels;
  const int format = jpeg_pixel_format(colorspace, channels);
  image.pixels.resize(static_cast<std::size_t>(image.width) * image.height * tjPixelSize[format]);
  // Stop at the first warning: a truncated file ends in one ("premature end of data"), and its
  // missing rows would otherwise be filled with grey.
  const int flags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;
  if (tjDecompress2(handle.get(), buffer, length, image.pixels.data(), image.width, 0, image.height,
                    format, flags) != 0)
    throw ImageDecodeError(fmt::format("is not a valid JPEG ({})", tjGetErrorStr2(handle.get())));
  if (format == TJPF_CMYK) image.pixels = inverted_cmyk_to_rgb(image.pixels);
  if (format != TJPF_GRAY && channels == kGray) image.pixels = rgb_to_gray(image.pixels);
  return image;
}

template <std::size_t N>
bool starts_with(const std::uint8_t* bytes, std::size_t size,
                 const std::array<std::uint8_t, N>& s) {
  return size >= N && std::memcmp(bytes, s.data(), N) == 0;
}

// Image formats dl-train does not decode, told by their first bytes, so that a refusal names
// the format rather than "not an image" (torchvision's ImageFolder and Keras read some of them).
struct ForeignFormat {
  const char* name;
  std::size_t offset;  // where `magic` starts
  std::string_view magic;
};
constexpr std::array<ForeignFormat, 8> kForeignFormats{{
    {"GIF", 0, "GIF8"},
    {"BMP", 0, "BM"},
    {"WebP", 8, "WEBP"},
    {"TIFF", 0, std::string_view("II*\0", 4)},
    {"TIFF", 0, std::string_view("MM\0*", 4)},
    {"HEIF (HEIC)", 4, "ftypheic"},
    {"HEIF", 4, "ftypmif1"},
    {"AVIF", 4, "ftypavif"},
}};

const char* foreign_format(const std::uint8_t* bytes, std::size_t size) {
  for (const ForeignFormat& f : kForeignFormats) {
    if (size >= f.offset + f.magic.size() &&
        std::memcmp(bytes + f.offset, f.magic.data(), f.magic.size()) == 0)
      return f.name;
  }
  return nullptr;
}

}  // namespace

ImageKind image_kind(const std::uint8_t* bytes, std::size_t size) {
  if (starts_with(bytes, size, kPngSignature)) return ImageKind::kPng;
  if (starts_with(bytes, size, kJpegSignature)) return ImageKind::kJpeg;
  return ImageKind::kUnknown;
}

DecodedImage decode_image(const std::uint8_t* bytes, std::size_t size, int channels, int min_width,
                          int min_height) {
  switch (image_kind(bytes, size)) {
    case ImageKind::kPng:
      return decode_png(bytes, size, channels);
    case ImageKind::kJpeg:
      return decode_jpeg(bytes, size, channels, min_width, min_height);
    case ImageKind::kUnknown:
      break;
  }
  if (const char* format = foreign_format(bytes, size))
    throw ImageDecodeError(fmt::format(
        "is a {} image, which dl-train does not decode (PNG and JPEG only): convert it to PNG or "
        "JPEG (e.g. ImageMagick's mogrify -format png)",
        format));
  if (size == 0) throw ImageDecodeError("is empty (0 bytes), not an image");
  throw ImageDecodeError("is not an image: it starts with neither PNG's nor JPEG's signature");
}

}  // namespace dl
