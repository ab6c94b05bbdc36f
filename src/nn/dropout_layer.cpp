#include "nn/dropout_layer.hpp"

#include "nn/layer_keys.hpp"
#include "nn/layer_registry.hpp"

namespace dl {

namespace {

std::unique_ptr<Layer> make_dropout_layer(const PlannedLayer& plan, std::size_t index) {
  return std::make_unique<DropoutLayer>(plan, static_cast<int>(index));
}

}  // namespace

LayerKind dropout_layer_kind() {
  return {LayerType::kDropout, "dropout",         layer_keys({"name", "dropOut"}), {}, std::nullopt,
          keep_shape,          make_dropout_layer};
}

void DropoutLayer::bind(Backend& backend, float* params, float* grads, int max_batch) {
  Layer::bind(backend, params, grads, max_batch);
  mask_ = FloatBuffer(backend, static_cast<std::size_t>(max_batch) * output_size());
}

void DropoutLayer::forward(const float* x, int batch, const StepContext& ctx) {
  const std::size_t n = static_cast<std::size_t>(batch) * output_size();
  last_was_training_ = ctx.training;
  if (!ctx.training) {
    backend().copy(output_data_, x, n * sizeof(float));
    return;
  }
  const std::uint64_t stream_seed = mix(ctx.seed, (static_cast<std::uint64_t>(layer_index_) << 32) |
                                                      static_cast<std::uint32_t>(ctx.worker));
  backend().dropout_forward(n, static_cast<float>(plan_.config.dropOut), stream_seed, ctx.iteration,
                            x, output_data_, mask_.data());
}

void DropoutLayer::backward(const float* /*x*/, const float* dy, float* dx, int batch) {
  if (dx == nullptr) return;
  const std::size_t n = static_cast<std::size_t>(batch) * output_size();
  backend().dropout_backward(n, mask_.data(), dy, dx);
}

}  // namespace dl
