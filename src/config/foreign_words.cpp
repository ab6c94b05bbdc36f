#include "config/foreign_words.hpp"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "config/text_match.hpp"

namespace dl {
namespace {

// Words (lower case) and what to write for them.
struct ForeignWords {
  std::initializer_list<std::string_view> words;
  std::string_view fix;
};

constexpr std::string_view kDropOutMeaning =
    "write dropOut: the probability of keeping each activation (DL4J's meaning); Keras's rate "
    "and PyTorch's p are the probability of dropping one, so rate 0.2 is dropOut: 0.8";
constexpr std::string_view kDropoutLayer =
    "dropout is a layer of its own here: put '- dropout: {dropOut: p}' before this layer, p the "
    "probability of keeping each input (DL4J's layer dropOut drops the layer's inputs alike)";

std::optional<std::string_view> find(std::initializer_list<ForeignWords> table,
                                     std::string_view word) {
  const std::string lower = to_lower_ascii(word);
  for (const ForeignWords& entry : table)
    if (std::find(entry.words.begin(), entry.words.end(), lower) != entry.words.end())
      return entry.fix;
  return std::nullopt;
}

}  // namespace

namespace {

std::optional<std::string_view> foreign_layer_type_fix(std::string_view type) {
  return find(
      {
          {{"flatten", "reshape"},
           "dense and output layers read an image input as one flat vector themselves (DL4J's "
           "implicit flattening): remove this layer"},
          {{"conv2d", "convolution2d", "conv"},
           "write convolution (nOut: the filters; kernelSize, stride, padding)"},
          {{"maxpooling2d", "maxpool2d", "maxpool", "maxpooling", "averagepooling2d", "avgpool2d",
            "avgpool", "averagepooling", "pooling", "pool", "pooling2d"},
           "write subsampling, with poolingType: max or avg, kernelSize and stride"},
          {{"globalaveragepooling2d", "globalmaxpooling2d", "adaptiveavgpool2d",
            "adaptivemaxpool2d", "globalavgpool", "globalmaxpool", "globalaveragepooling"},
           "write globalPooling, with poolingType: avg or max"},
          {{"linear", "fullyconnected", "fc"},
           "write dense (nOut: the units; the network's last layer is output)"},
          {{"batchnorm2d", "batchnorm1d", "batchnorm"}, "write batchNormalization"},
          {{"relu", "leakyrelu", "tanh", "sigmoid", "softmax", "gelu", "silu", "swish", "elu",
            "hardswish", "mish", "selu"},
           "an activation is a layer '- activation: {activation: NAME}' here, or the activation "
           "key of the layer before"},
          {{"concatenate"}, "write concat"},
      },
      type);
}

}  // namespace

std::optional<std::string_view> foreign_layer_key_fix(LayerType type, std::string_view key) {
  switch (type) {
    case LayerType::kDropout:
      return find({{{"rate", "p", "drop", "dropout", "droprate", "dropoutrate", "probability",
                     "keepprob", "keep_prob", "retain"},
                    kDropOutMeaning}},
                  key);
    case LayerType::kBatchNormalization:
      return find({{{"momentum"},
                    "write decay: the share of the running statistics kept at each step; Keras's "
                    "momentum is decay as it is (0.99), PyTorch's momentum m is decay: 1 - m "
                    "(0.1 is decay: 0.9)"},
                   {{"epsilon"}, "write eps"}},
                  key);
    case LayerType::kConvolution:
    case LayerType::kDense:
    case LayerType::kOutput:
      return find({{{"dropout", "dropout_rate"}, kDropoutLayer}}, key);
    default:
      return std::nullopt;
  }
}

std::optional<std::string_view> foreign_name_fix(std::string_view kind, std::string_view text) {
  if (kind == "layer type") return foreign_layer_type_fix(text);
  if (kind == "dtype")
    return find({{{"float16", "fp16", "half_float", "mixed_float16", "f16"},
                  "write HALF (IEEE float16, Keras's mixed_float16; BFLOAT16 is another format)"},
                 {{"bf16", "mixed_bfloat16"}, "write BFLOAT16"},
                 {{"float32", "fp32", "single", "f32"}, "write FLOAT"}},
                text);
  if (kind == "weight init")
    return find({{{"he_normal", "kaiming_normal", "he"},
                  "write RELU (He's normal, std sqrt(2 / fan_in); NORMAL is LeCun's, "
                  "std 1 / sqrt(fan_in))"},
                 {{"he_uniform", "kaiming_uniform"}, "write RELU_UNIFORM"},
                 {{"glorot_normal", "xavier_normal", "glorot"}, "write XAVIER"},
                 {{"glorot_uniform", "xavier_uniform"}, "write XAVIER_UNIFORM"},
                 {{"lecun_normal"}, "write NORMAL (std 1 / sqrt(fan_in))"},
                 {{"zeros"}, "write ZERO"}},
                text);
  if (kind == "activation")
    return find({{{"linear", "none"}, "write identity"}, {{"swish"}, "write silu"}}, text);
  if (kind == "loss function")
    return find({{{"categorical_crossentropy", "sparse_categorical_crossentropy", "crossentropy",
                   "cross_entropy", "crossentropyloss", "nll", "nllloss"},
                  "write negativeloglikelihood (with activation: softmax; labels are class "
                  "indices, as sparse_categorical_crossentropy takes them)"},
                 {{"mean_squared_error", "mseloss"}, "write mse"}},
                text);
  if (kind == "key")
    return find(
        {{{"lr", "learning_rate"},
          "write updater.learningRate (updater: {type: sgd, learningRate: 0.1})"},
         {{"optimizer", "optim", "solver"}, "write updater (updater: {type: adam})"},
         {{"batch_size", "batch", "minibatch", "minibatchsize"}, "write batchSize"},
         {{"num_epochs", "max_epochs", "nb_epoch", "n_epochs", "numepochs"}, "write epochs"},
         {{"weight_decay"},
          "write l2 (PyTorch's weight_decay with SGD or Adam: an L2 term on the "
          "gradient), or updater.weightDecay with updater.type: adamw"}},
        text);
  if (kind == "backend")
    return find(
        {{{"gpu", "nvidia", "device"}, "write cuda (or auto: the GPUs when one is visible)"},
         {{"host", "openblas", "onednn"}, "write cpu"}},
        text);
  if (kind == "data format")
    return find({{{"mnist", "fashion-mnist", "fashion_mnist", "fashionmnist", "emnist", "ubyte"},
                  "write idx (the format of MNIST's and Fashion-MNIST's files)"},
                 {{"cifar-10", "cifar_10"}, "write cifar10"},
                 {{"cifar-100", "cifar_100"}, "write cifar100"},
                 {{"folder", "images", "image_folder", "imagenet", "jpeg", "png"},
                  "write imagefolder (a folder per class)"}},
                text);
  if (kind == "pooling type") return find({{{"average", "mean"}, "write avg"}}, text);
  if (kind == "convolution mode")
    return find({{{"valid", "strict"},
                  "write Truncate (Keras's padding='valid' is Truncate with padding 0)"}},
                text);
  return std::nullopt;
}

}  // namespace dl
