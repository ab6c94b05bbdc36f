#include "nn/batch_normalization_layer.hpp"

#include <fmt/format.h>

#include "nn/layer_graph.hpp"
#include "nn/layer_keys.hpp"
#include "nn/layer_registry.hpp"

namespace dl {

namespace {

// A training batch of one sample of 1x1 planes (features after a dense layer) gives each channel
// one value to take its mean and variance over: every output is then beta, no gradient passes,
// and the running variance learns 0, so that the trained model's inference is wrong too. It used
// to train silently (test accuracy below chance); PyTorch refuses it as well.
void batch_normalization_shape(const LayerShaping& shaping, PlannedLayer& planned) {
  keep_shape(shaping, planned);
  const SampleShape& in = shaping.input();
  if (shaping.batch_size() == 1 && in.height * in.width == 1)
    shaping.fail(
        fmt::format("batchSize is 1 and its input ({}) holds one value per channel, so its "
                    "batch statistics are that value: it would output beta and pass no "
                    "gradient",
                    in.str()),
        "set batchSize to 2 or more (per worker), or remove the layer");
}

}  // namespace

LayerKind batch_normalization_layer_kind() {
  return {LayerType::kBatchNormalization,
          "batchNormalization",
          layer_keys({"name", "decay", "eps"}),
          {},
          std::nullopt,
          batch_normalization_shape,
          make_layer<BatchNormalizationLayer>};
}

BatchNormShape BatchNormalizationLayer::shape(int batch) const {
  BatchNormShape s;
  s.n = batch;
  s.channels = plan_.input.channels;
  s.spatial = plan_.input.height * plan_.input.width;
  return s;
}

std::vector<ParameterSegment> BatchNormalizationLayer::parameter_segments() const {
  const std::size_t c = channels();
  return {ParameterSegment{0, c, true, true}, ParameterSegment{c, c, true, true},
          ParameterSegment{2 * c, 2 * c, false, false}};
}

void BatchNormalizationLayer::initialize(float* host_params, RandomStream& /*rng*/) const {
  const std::size_t c = channels();
  for (std::size_t i = 0; i < c; ++i) {
    host_params[i] = 1.0f;          // gamma
    host_params[c + i] = 0.0f;      // beta
    host_params[2 * c + i] = 0.0f;  // running mean
    host_params[3 * c + i] = 1.0f;  // running variance
  }
}

void BatchNormalizationLayer::bind(Backend& backend, float* params, float* grads, int max_batch) {
  Layer::bind(backend, params, grads, max_batch);
  save_mean_ = FloatBuffer(backend, channels());
  save_inv_std_ = FloatBuffer(backend, channels());
  if (activation_ != Activation::kIdentity) save_affine_ = FloatBuffer(backend, 2 * channels());
  // The first layer gets no dx, but the backend op always writes one. Only there: on a GPU, where
  // an allocation is memory used, one per layer was 100 MB for ResNet-20 at batch 128.
  if (plan_.sources.front() == kNetworkInput)
    dx_scratch_ = FloatBuffer(backend, static_cast<std::size_t>(max_batch) * input_size());
}

void BatchNormalizationLayer::forward(const float* x, int batch, const StepContext& ctx) {
  const std::size_t c = channels();
  const float eps = static_cast<float>(plan_.config.eps);
  if (ctx.training) {
    // One value per channel (features, and a batch or a worker's share of one sample: an epoch's
    // last partial batch) has no variance to learn from: its batch variance 0 would pull the
    // running variance towards 0, which the evaluation then divides by. Decay 1 keeps the
    // running statistics as they were (PyTorch refuses such a batch; batchSize: 1 is refused).
    const BatchNormShape s = shape(batch);
    const bool one_value = static_cast<std::int64_t>(s.n) * s.spatial == 1;
    const float decay = one_value ? 1.0f : static_cast<float>(plan_.config.decay);
    backend().batchnorm_activation_forward_training(
        s, activation_, eps, decay, x, params_,
        params_ + c, output_data_, params_ + 2 * c, params_ + 3 * c, save_mean_.data(),
        save_inv_std_.data(), save_affine_.data());
  } else {
    backend().batchnorm_activation_forward_inference(shape(batch), activation_, eps, x, params_,
                                                     params_ + c, params_ + 2 * c, params_ + 3 * c,
                                                     output_data_);
  }
}

void BatchNormalizationLayer::backward(const float* x, const float* dy, float* dx, int batch) {
  const std::size_t c = channels();
  backend().batchnorm_activation_backward(
      shape(batch), activation_, x, dy, params_, save_mean_.data(), save_inv_std_.data(),
      save_affine_.data(), dx != nullptr ? dx : dx_scratch_.data(), grads_, grads_ + c);
  backend().fill(grads_ + 2 * c, 2 * c, 0.0f);
}

}  // namespace dl
