// Decodes one image file as dl-train's image folders do (src/data/image_decode.hpp), at full
// size, and writes its pixels (row-major, channels interleaved) to stdout after a header line
// "WIDTH HEIGHT CHANNELS\n": for tests/cli/image_decode_reference.sh, which compares them with
// Pillow's decoding.
//   decode_image FILE CHANNELS     (CHANNELS: 1 gray, 3 RGB)
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "data/image_decode.hpp"

int main(int argc, char** argv) {
  const int channels = argc == 3 ? std::atoi(argv[2]) : 0;
  if (channels != 1 && channels != 3) {
    std::fprintf(stderr, "usage: decode_image FILE CHANNELS (1 or 3)\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "decode_image: cannot open %s\n", argv[1]);
    return 2;
  }
  const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                                        std::istreambuf_iterator<char>());
  try {
    const dl::DecodedImage image = dl::decode_image(bytes.data(), bytes.size(), channels);
    std::printf("%d %d %d\n", image.width, image.height, image.channels);
    std::fwrite(image.pixels.data(), 1, image.pixels.size(), stdout);
  } catch (const dl::ImageDecodeError& e) {
    std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
    return 3;
  }
  return 0;
}
