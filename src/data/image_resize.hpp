// Fitting a decoded image to the network's input (inputType's height x width): `centerCrop`
// scales the image so that its shorter side fits, then takes the centre, with torchvision's
// Resize(side) + CenterCrop's whole-pixel sizes and offsets (Keras's crop_to_aspect_ratio does
// the same in spirit); `stretch` scales each axis on its own to the input (Keras's default).
// Resampling is a triangle (linear) filter widened by the reduction factor, so a reduction
// averages every source pixel it covers (Pillow's antialiased bilinear, which torchvision
// resizes PIL images with: the same pixels within one level, tests/cli/image_decode_reference.sh);
// an image already of the input's size is copied unchanged.
#pragma once

#include <cstdint>

#include "config/config.hpp"
#include "data/image_decode.hpp"

namespace dl {

// Writes `image` (HWC) as channels x height x width bytes (CHW, the layers' order) to `out`;
// image.channels is the output's channel count.
void fit_image(const DecodedImage& image, int height, int width, ImageResize mode,
               std::uint8_t* out);

}  // namespace dl
