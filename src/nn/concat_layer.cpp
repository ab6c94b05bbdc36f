#include "nn/concat_layer.hpp"

#include <fmt/format.h>

#include "config/config_limits.hpp"
#include "nn/layer_keys.hpp"
#include "nn/layer_registry.hpp"
#include "nn/merge_layer.hpp"

namespace dl {

namespace {

// Image inputs of one height and width: their channels add up; flat inputs: their lengths do.
void concat_shape(const LayerShaping& shaping, PlannedLayer& planned) {
  const auto& inputs = shaping.inputs();
  const std::vector<SampleShape> shapes = merge_input_shapes(inputs);
  const SampleShape& first = shapes.front();
  std::int64_t channels = 0;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const SampleShape& in = shapes[k];
    const bool fits = in.spatial == first.spatial && in.height == first.height &&
                      in.width == first.width;
    if (!fits)
      shaping.fail(
          fmt::format("it stacks the channels of inputs of one height and width (or joins flat "
                      "vectors), but '{}' gives {} and '{}' gives {}",
                      shaping.input_names().front(), inputs.front().str(),
                      shaping.input_names()[k], inputs[k].str()),
          in.spatial != first.spatial
              ? "pool the image input to one pixel with globalPooling (its c x 1 x 1 joins flat "
                "vectors), or flatten it with a dense layer"
              : "pool or stride the larger input to the other's size, or flatten both with dense "
                "layers");
    channels += in.channels;
  }
  if (channels * first.height * first.width > config_limits::kMaxFeatureSize)
    shaping.fail(fmt::format("its output holds {} values per sample, more than {}",
                             channels * first.height * first.width,
                             config_limits::kMaxFeatureSize),
                 "concatenate fewer or narrower inputs");
  planned.output = first;
  planned.output.channels = static_cast<int>(channels);
  planned.config.nOut = planned.output.channels;
}

}  // namespace

LayerKind concat_layer_kind() {
  LayerKind kind{LayerType::kConcat, "concat",     layer_keys({"name"}), {}, std::nullopt,
                 concat_shape,       make_layer<ConcatLayer>};
  kind.merges_inputs = true;
  return kind;
}

void ConcatLayer::forward_inputs(const std::vector<const float*>& xs, int batch) {
  std::size_t offset = 0;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const std::size_t block = plan_.inputs[k].size();
    backend().copy_rows(static_cast<std::size_t>(batch), block, xs[k], block,
                        output_data_ + offset, output_size());
    offset += block;
  }
}

void ConcatLayer::backward_inputs(float* dy, const std::vector<float*>& dxs, int batch) {
  std::size_t offset = 0;
  for (std::size_t k = 0; k < dxs.size(); ++k) {
    const std::size_t block = plan_.inputs[k].size();
    if (dxs[k] != nullptr)
      backend().copy_rows(static_cast<std::size_t>(batch), block, dy + offset, output_size(),
                          dxs[k], block);
    offset += block;
  }
}

}  // namespace dl
