// Exports a trained network as an ONNX model (https://onnx.ai; opset 13, IR version 7), so that
// it runs outside dl-train (ONNX Runtime, PyTorch, TensorRT, ...).
//
// The graph takes "input", float [batch, channels, height, width] (NCHW; [batch, size] for a
// feedForward input), with the values dl-train trains on: pixel byte / 255. It returns
// "probabilities", float [batch, classes]: the output layer's activation, what `dl-train predict`
// writes. Op types: Conv, MaxPool, AveragePool (count_include_pad), Flatten, Gemm,
// BatchNormalization, Relu, LeakyRelu, Tanh, Sigmoid, Softmax. Dropout is the identity at
// inference and writes no node. Parameters are float initializers named "<layer>.W", "<layer>.b"
// (BatchNormalization: ".gamma", ".beta", ".mean", ".var"), in dl-train's own layouts, which are
// ONNX's (convolution [out][in][kh][kw]; dense [in][out], Gemm without transB).
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"

namespace dl {

// The serialized ModelProto of the network `config` describes with `parameters` (its flat
// parameter buffer, as a model file holds it). Throws ConfigError for a network ONNX cannot
// express exactly (a softmax over an image-shaped layer, a max-pooling window that can lie wholly
// in the padding) or that ONNX Runtime refuses to load (any pooling padded as far as its kernel),
// naming the layer and the fix. A non-empty `mean` (and `stddev`, one value per
// channel) puts the input normalization the model was trained with in front: the graph then
// takes pixels as byte / 255, as without. Non-empty `class_names` (a model trained on an image
// folder or CSV text labels) go into the metadata as "dl-train.class_names", one name per line in
// label order.
std::string onnx_model_bytes(const Config& config, const std::vector<float>& parameters,
                             const std::vector<float>& mean = {},
                             const std::vector<float>& stddev = {},
                             const std::vector<std::string>& class_names = {});

// True when this binary was built with protobuf (the `onnx` build option); otherwise
// onnx_model_bytes throws ConfigError saying how to build it in.
bool onnx_export_available();

}  // namespace dl
