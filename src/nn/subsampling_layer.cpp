#include "nn/subsampling_layer.hpp"

#include "nn/layer_keys.hpp"
#include "nn/layer_registry.hpp"
#include "nn/spatial_geometry.hpp"

namespace dl {

namespace {

// The input's channels, each of the window's output size.
void subsampling_shape(const LayerShaping& shaping, PlannedLayer& planned) {
  const LayerShaping::Window w = shaping.window();
  const int channels = shaping.input().channels;
  planned.output = SampleShape::image(channels, w.height.out, w.width.out);
  planned.padTop = w.height.pad_before;
  planned.padLeft = w.width.pad_before;
  planned.config.nOut = channels;
}

}  // namespace

// No default window: DL4J's SubsamplingLayer defaults to a 1x1 kernel with stride 2, Keras's
// MaxPooling2D to a stride equal to its pool size, and dl-train once defaulted to 5x5 with stride
// 1, so any default would surprise someone (docs/CONFIG.md).
LayerKind subsampling_layer_kind() {
  return {LayerType::kSubsampling,
          "subsampling",
          layer_keys({"name", "poolingType", "kernelSize", "stride", "padding", "convolutionMode"},
                     {{"kernelSize",
                       "add kernelSize: the pooling window, e.g. kernelSize: 2 (Keras's "
                       "MaxPooling2D(2))"},
                      {"stride",
                       "add stride: the window step, e.g. stride: 2 for kernelSize: 2 (Keras's "
                       "default stride is the pool size, DL4J's is 2); subsampling has no default "
                       "stride"}}),
          {},
          std::nullopt,
          subsampling_shape,
          make_layer<SubsamplingLayer>};
}

Pool2dGeometry SubsamplingLayer::geometry(int batch) const {
  return conv2d_geometry(plan_, batch);
}

void SubsamplingLayer::bind(Backend& backend, float* params, float* grads, int max_batch) {
  Layer::bind(backend, params, grads, max_batch);
  argmax_ = IndexBuffer(backend, static_cast<std::size_t>(max_batch) * output_size());
}

void SubsamplingLayer::forward(const float* x, int batch, const StepContext& /*ctx*/) {
  if (run_by_previous_layer_) return;
  backend().pool2d_forward(geometry(batch), plan_.config.poolingType, x, output_data_,
                           argmax_.data());
}

void SubsamplingLayer::backward(const float* x, const float* dy, float* dx, int batch) {
  if (dx == nullptr || run_by_previous_layer_) return;
  backend().pool2d_backward(geometry(batch), plan_.config.poolingType, x, output_data_, dy, dx,
                            argmax_.data());
}

}  // namespace dl
