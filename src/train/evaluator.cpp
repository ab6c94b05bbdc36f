#include "train/evaluator.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

#include "parallel/batch_source.hpp"

namespace dl {

void run_inference(Model& model, const Dataset& data, const BatchOutputs& on_batch) {
  const std::size_t batch = static_cast<std::size_t>(model.max_batch());
  const std::size_t sample = data.sample_floats();
  const std::size_t classes = static_cast<std::size_t>(model.num_classes());
  std::vector<std::int64_t> indices(batch);
  std::vector<float> images;  // the host gather's batch, where the backend cannot gather
  std::vector<std::int32_t> labels(batch);
  std::vector<float> outputs(batch * classes);
  Backend& backend = model.backend();
  StepContext inference;
  for (std::int64_t first = 0; first < data.size(); first += static_cast<std::int64_t>(batch)) {
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::int64_t>(batch, data.size() - first));
    if (gather_evaluation_batch(data, first, static_cast<int>(n), model)) {
      backend.download(labels.data(), model.labels(), n * sizeof(std::int32_t));
    } else {
      std::iota(indices.begin(), indices.begin() + n, first);
      images.resize(batch * sample);
      data.gather(indices.data(), n, images.data(), labels.data());
      backend.upload(model.input(), images.data(), n * sample * sizeof(float));
      backend.upload(model.labels(), labels.data(), n * sizeof(std::int32_t));
    }
    model.forward(static_cast<int>(n), inference);
    backend.download(outputs.data(), model.output(), n * classes * sizeof(float));
    on_batch(first, n, labels.data(), outputs.data());
  }
}

EvaluationResult evaluate(Model& model, const Dataset& data) {
  EvaluationResult result(model.num_classes());
  result.evaluation.set_class_names(data.origin().class_names);
  Backend& backend = model.backend();
  double loss_total = 0.0;
  run_inference(model, data,
                [&](std::int64_t, std::size_t n, const std::int32_t* labels, const float* outputs) {
                  model.compute_loss(static_cast<int>(n));
                  float loss_sum = 0.0f;
                  backend.download(&loss_sum, model.loss_sum(), sizeof(float));
                  loss_total += loss_sum;
                  result.evaluation.add(labels, outputs, n);
                });
  result.mean_loss = data.size() > 0 ? loss_total / static_cast<double>(data.size()) : 0.0;
  return result;
}

}  // namespace dl
