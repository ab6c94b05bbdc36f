// Fully connected layer (DL4J's DenseLayer): weights [nIn][nOut], bias [nOut], activation.
// A spatial input is flattened in (channel, row, column) order, as DL4J's CNN-to-feed-forward
// preprocessor does; with NCHW memory that flattening costs nothing.
#pragma once

#include "nn/layer.hpp"

namespace dl {

// nOut units of the input flattened (shared by the output layer).
void dense_shape(const LayerShaping& shaping, PlannedLayer& planned);

class DenseLayer : public Layer {
 public:
  explicit DenseLayer(PlannedLayer plan) : Layer(std::move(plan)) {}
  std::vector<ParameterSegment> parameter_segments() const override;
  void initialize(float* host_params, RandomStream& rng) const override;
  void forward(const float* x, int batch, const StepContext& ctx) override;
  void backward(const float* x, const float* dy, float* dx, int batch) override;

 protected:
  int n_in() const { return static_cast<int>(input_size()); }
  int n_out() const { return static_cast<int>(output_size()); }
  std::size_t weight_count() const { return static_cast<std::size_t>(n_in()) * n_out(); }
};

}  // namespace dl
