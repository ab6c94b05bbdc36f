#include "nn/layer.hpp"

#include "backend/ops/activation.hpp"

namespace dl {

std::size_t Layer::parameter_count() const {
  std::size_t n = 0;
  for (const ParameterSegment& s : parameter_segments()) n += s.count;
  return n;
}

void Layer::initialize(float* /*host_params*/, RandomStream& /*rng*/) const {}

void Layer::bind(Backend& backend, float* params, float* grads, int max_batch) {
  backend_ = &backend;
  params_ = params;
  grads_ = grads;
  max_batch_ = max_batch;
  if (borrowed_output_ == nullptr)
    output_ = FloatBuffer(backend, static_cast<std::size_t>(max_batch) * output_size());
  output_data_ = borrowed_output_ != nullptr ? borrowed_output_ : output_.data();
  if (ops::activation_reads_input(plan_.activation))
    pre_activation_ = FloatBuffer(backend, static_cast<std::size_t>(max_batch) * output_size());
  if (!plan_.config.hasBias) {
    const auto channels = static_cast<std::size_t>(plan_.output.channels);
    absent_bias_ = FloatBuffer(backend, channels);
    absent_bias_gradient_ = FloatBuffer(backend, channels);
    backend.fill(absent_bias_.data(), channels, 0.0f);
  }
}

const float* Layer::bias(std::size_t weight_count) const {
  return plan_.config.hasBias ? params_ + weight_count : absent_bias_.data();
}

float* Layer::bias_gradient(std::size_t weight_count) {
  return plan_.config.hasBias ? grads_ + weight_count : absent_bias_gradient_.data();
}

std::vector<ParameterSegment> Layer::weight_and_bias_segments(std::size_t weight_count) const {
  std::vector<ParameterSegment> segments{ParameterSegment{0, weight_count, false, true}};
  if (plan_.config.hasBias)
    segments.push_back(ParameterSegment{
        weight_count, static_cast<std::size_t>(plan_.output.channels), true, true});
  return segments;
}

float* Layer::activation_input() {
  return pre_activation_.size() > 0 ? pre_activation_.data() : output_data_;
}

void Layer::activate_output(int batch) {
  if (plan_.activation == Activation::kIdentity) return;
  backend().activation_forward(plan_.activation, batch, output_size(), activation_input(),
                               output_data_);
}

void Layer::activation_gradient_in_place(const float* dy, int batch, const float* term) {
  const float* x = pre_activation_.size() > 0 ? pre_activation_.data() : nullptr;
  float* dz = const_cast<float*>(dy);
  if (term != nullptr) {
    backend().add_activation_backward(plan_.activation,
                                      static_cast<std::size_t>(batch) * output_size(), x,
                                      output_data_, term, dz);
    return;
  }
  if (plan_.activation == Activation::kIdentity) return;
  backend().activation_backward(plan_.activation, batch, output_size(), x, output_data_, dy, dz);
}

}  // namespace dl
