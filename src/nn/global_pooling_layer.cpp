#include "nn/global_pooling_layer.hpp"

#include "nn/layer_keys.hpp"
#include "nn/layer_registry.hpp"
#include "nn/spatial_geometry.hpp"

namespace dl {

namespace {

// One value per channel. The plan's window is the whole plane with stride 1 and no padding, so
// the layer runs on the backend's pooling op (pool2d_forward/backward) with a single window per
// channel: the same kernels, on the CPU and on a GPU, as subsampling.
void global_pooling_shape(const LayerShaping& shaping, PlannedLayer& planned) {
  const SampleShape& in = shaping.input();
  if (!in.spatial)
    shaping.fail("globalPooling needs an image input (after a convolution or subsampling layer)",
                 "put globalPooling after the convolution layers, before the dense layers");
  LayerConfig& c = planned.config;
  c.kernelSize[0] = in.height;
  c.kernelSize[1] = in.width;
  c.stride[0] = c.stride[1] = 1;
  c.padding[0] = c.padding[1] = 0;
  c.convolutionMode = ConvolutionMode::kTruncate;
  planned.padTop = 0;
  planned.padLeft = 0;
  planned.output = SampleShape::image(in.channels, 1, 1);
  c.nOut = in.channels;
}

}  // namespace

LayerKind global_pooling_layer_kind() {
  return {LayerType::kGlobalPooling,
          "globalPooling",
          layer_keys({"name", "poolingType"}),
          {},
          std::nullopt,
          global_pooling_shape,
          make_layer<GlobalPoolingLayer>};
}

void GlobalPoolingLayer::bind(Backend& backend, float* params, float* grads, int max_batch) {
  Layer::bind(backend, params, grads, max_batch);
  argmax_ = IndexBuffer(backend, static_cast<std::size_t>(max_batch) * output_size());
}

void GlobalPoolingLayer::forward(const float* x, int batch, const StepContext& /*ctx*/) {
  backend().pool2d_forward(conv2d_geometry(plan_, batch), plan_.config.poolingType, x,
                           output_data_, argmax_.data());
}

void GlobalPoolingLayer::backward(const float* x, const float* dy, float* dx, int batch) {
  if (dx == nullptr) return;
  backend().pool2d_backward(conv2d_geometry(plan_, batch), plan_.config.poolingType, x,
                            output_data_, dy, dx, argmax_.data());
}

}  // namespace dl
