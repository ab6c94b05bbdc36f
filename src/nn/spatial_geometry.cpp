#include "nn/spatial_geometry.hpp"

#include <algorithm>
#include <cstdint>

#include "nn/layer_plan.hpp"

namespace dl {

Conv2dGeometry conv2d_geometry(const PlannedLayer& plan, int batch) {
  const LayerConfig& c = plan.config;
  Conv2dGeometry g;
  g.batch = batch;
  g.in_channels = plan.input.channels;
  g.in_height = plan.input.height;
  g.in_width = plan.input.width;
  g.out_channels = plan.output.channels;
  g.out_height = plan.output.height;
  g.out_width = plan.output.width;
  g.kernel_height = c.kernelSize[0];
  g.kernel_width = c.kernelSize[1];
  g.stride_height = c.stride[0];
  g.stride_width = c.stride[1];
  g.pad_top = plan.padTop;
  g.pad_left = plan.padLeft;
  return g;
}

}  // namespace dl
