#include "nn/convolution_layer.hpp"

#include "nn/layer_keys.hpp"
#include "nn/layer_registry.hpp"
#include "nn/spatial_geometry.hpp"
#include "nn/weight_init.hpp"

namespace dl {

namespace {

// nOut channels of the window's output size.
void convolution_shape(const LayerShaping& shaping, PlannedLayer& planned) {
  const int n_out = shaping.checked_nout();
  const LayerShaping::Window w = shaping.window();
  planned.output = SampleShape::image(n_out, w.height.out, w.width.out);
  planned.padTop = w.height.pad_before;
  planned.padLeft = w.width.pad_before;
}

}  // namespace

LayerKind convolution_layer_kind() {
  return {LayerType::kConvolution,
          "convolution",
          layer_keys({"name", "nIn", "nOut", "kernelSize", "stride", "padding", "convolutionMode",
                      "activation", "weightInit", "hasBias"},
                     {{"nOut", "add nOut: <number of output channels>"}}),
          {},
          Activation::kIdentity,
          convolution_shape,
          make_layer<ConvolutionLayer>};
}

ConvolutionLayer::ConvolutionLayer(PlannedLayer plan) : Layer(std::move(plan)) {}

Conv2dGeometry ConvolutionLayer::geometry(int batch) const {
  return conv2d_geometry(plan_, batch);
}

std::size_t ConvolutionLayer::weight_count() const {
  const LayerConfig& c = plan_.config;
  return static_cast<std::size_t>(plan_.output.channels) * plan_.input.channels * c.kernelSize[0] *
         c.kernelSize[1];
}

std::vector<ParameterSegment> ConvolutionLayer::parameter_segments() const {
  return weight_and_bias_segments(weight_count());
}

void ConvolutionLayer::initialize(float* host_params, RandomStream& rng) const {
  const LayerConfig& c = plan_.config;
  const double kernel = static_cast<double>(c.kernelSize[0]) * c.kernelSize[1];
  initialize_weights(plan_.weightInit, plan_.input.channels * kernel,
                     plan_.output.channels * kernel, host_params, weight_count(), rng);
  if (plan_.config.hasBias)
    for (int i = 0; i < plan_.output.channels; ++i) host_params[weight_count() + i] = 0.0f;
}

void ConvolutionLayer::bind(Backend& backend, float* params, float* grads, int max_batch) {
  Layer::bind(backend, params, grads, max_batch);
  workspace_floats_ = backend.conv2d_workspace_floats(geometry(max_batch));
}

void ConvolutionLayer::pool_with(SubsamplingLayer& pool, const float* pooled_gradient) {
  pool.run_by_previous_layer();
  pool_ = &pool;
  pooled_gradient_ = pooled_gradient;
}

ConvPool ConvolutionLayer::conv_pool(int batch) const {
  return {geometry(batch), plan_.activation, pool_->geometry(batch), pool_->pooling()};
}

void ConvolutionLayer::forward(const float* x, int batch, const StepContext& /*ctx*/) {
  if (pool_ != nullptr) {
    backend().conv2d_pool_forward(conv_pool(batch), x, params_, bias(weight_count()),
                                  output_data_, pool_->mutable_output(), pool_->argmax(),
                                  workspace_);
    return;
  }
  const Conv2dGeometry g = geometry(batch);
  backend().conv2d_forward(g, x, params_, bias(weight_count()), activation_input(), workspace_);
  activate_output(batch);
}

void ConvolutionLayer::backward(const float* x, const float* dy, float* dx, int batch) {
  if (pool_ != nullptr) {
    // dy, the model's gradient buffer for this layer's output, is made here from the pooling's.
    backend().conv2d_pool_backward(conv_pool(batch), x, params_, output_data_, pool_->output(),
                                   pooled_gradient_, pool_->argmax(), const_cast<float*>(dy), dx,
                                   grads_, bias_gradient(weight_count()), workspace_);
    return;
  }
  // dy lives in the model's gradient buffer for this layer's output and is not read again.
  activation_gradient_in_place(dy, batch);
  backend().conv2d_backward(geometry(batch), x, params_, dy, dx, grads_,
                            bias_gradient(weight_count()), workspace_);
}

}  // namespace dl
