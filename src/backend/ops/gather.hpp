// The batch gather's pixel scale, shared by the host loader, the CPU backend and the CUDA
// kernel (see README.md in this folder): a pixel byte b becomes float(b) / kLargestPixel, one
// IEEE division rounded to nearest on every device.
#pragma once

namespace dl::ops {

inline constexpr float kLargestPixel = 255.0f;

}  // namespace dl::ops
