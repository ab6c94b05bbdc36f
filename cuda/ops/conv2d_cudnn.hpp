// The forward convolution through cuDNN's convolution API: descriptors and algorithms per
// geometry, chosen once and cached. (The backward pass is CudaBackend's own: columns and cuBLAS
// products, ops/conv2d_columns.hpp.)
//
// Precision. Without a 16-bit format (Config::dtype FLOAT) every tensor is float32 and the math
// is CUDNN_FMA_MATH: no TF32 tensor cores, so results agree with the CPU backend to float
// rounding. With a 16-bit format (HALF or BFLOAT16) x and w are rounded to it by our kernels
// into the layer's workspace and cuDNN runs its "pseudo" 16-bit configuration: 16-bit x, w and y
// with float32 arithmetic (the convolution descriptor's compute type is FLOAT), tensor-core math
// allowed. cuDNN writes y in the 16-bit format; our kernel widens it back into the float32 output
// of the Backend interface together with the bias add.
// Only GEMM-based or direct algorithms are taken, in every format: FFT and Winograd re-round
// transformed data, which would void the error bound docs/CUDA.md states for 16-bit and float32's
// parity with the CPU (a Winograd-like backward-data pass, when cuDNN still ran backward, was seen
// 2% off on an H200).
//
// Algorithm choice. conv2d_workspace_floats(g) is called when a layer is bound, for its largest
// batch: that call times the algorithms (cudnnFind*, which allocates its own scratch memory, once)
// and keeps the fastest acceptable deterministic one whose workspace is at most
// max_workspace_bytes. A later call with a smaller batch (the last minibatch of an epoch) reuses
// those algorithms when their workspace still fits the buffer the layer holds, else takes cuDNN's
// heuristics (cudnnGet*_v7) restricted to what fits; no timing and no allocation happen inside a
// step.
//
// Padding. cuDNN pads symmetrically; the Backend contract pads pad_top/pad_left before and
// whatever the output size implies after (ConvolutionMode::Same can need one more row below than
// above). When symmetric padding gives the requested output size, cuDNN pads. Otherwise the input
// is copied into a zero-padded buffer in the workspace first, and cuDNN runs unpadded.
//
// Workspace layout, each part starting on a 256-byte boundary: float32: [padded input, when
// padding is explicit] [cuDNN's workspace]. 16-bit: [x (padded when explicit)] [w] [y]
// [cuDNN's workspace].
#pragma once

#include <cudnn.h>

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>

#include "backend/backend.hpp"
#include "launch_limits.hpp"
#include "ops/precision_cast.hpp"

namespace dl::gpu {

class CudnnConvolution {
 public:
  // `handle` is bound to the stream the calls below are given; it must outlive this object.
  // `half_format`: the 16-bit format of the tensor-core inputs, none for float32 throughout.
  // `deterministic` (Config::deterministic): algorithms by a fixed rule (the first deterministic
  // one of a fixed list whose workspace fits), so that every run, resume and worker with the same
  // geometry, cuDNN and workspace runs the same algorithms and gets the same bits; false: the
  // fastest one cudnnFind* measures, deterministic or not (transform-domain ones still refused),
  // which may differ from run to run.
  CudnnConvolution(cudnnHandle_t handle, std::size_t max_workspace_bytes,
                   std::optional<HalfFormat> half_format, bool deterministic = true);
  ~CudnnConvolution();
  CudnnConvolution(const CudnnConvolution&) = delete;
  CudnnConvolution& operator=(const CudnnConvolution&) = delete;

  std::size_t workspace_floats(const Conv2dGeometry& g);
  // The forward algorithm of every geometry workspace_floats was asked for, in geometry order:
  // "conv2d 128x1x28x28 -> 20x24x24, kernel 5x5: forward IMPLICIT_PRECOMP_GEMM", "; "-separated
  // (" tensor ops" after an algorithm run with tensor-core math). Only forward: CudaBackend's
  // backward pass is its own (columns and cuBLAS).
  std::string algorithms() const;
  void forward(const Conv2dGeometry& g, const float* x, const float* w, const float* b, float* y,
               float* workspace, const LaunchLimits& limits, cudaStream_t stream);

  struct Plan;  // descriptors, algorithms and workspace layout of one geometry

 private:
  using Key = std::array<int, 13>;       // every Conv2dGeometry field
  using ShapeKey = std::array<int, 12>;  // every field but the batch

  const Plan& plan_for_call(const Conv2dGeometry& g);
  // measure: time the algorithms (bind time); budget_floats: the workspace the call may use;
  // reuse: a plan of the same shape whose algorithms to try first.
  std::unique_ptr<Plan> make_plan(const Conv2dGeometry& g, bool measure, std::size_t budget_floats,
                                  const Plan* reuse) const;

  cudnnHandle_t handle_;
  std::size_t max_workspace_bytes_;
  std::optional<HalfFormat> half_format_;
  bool deterministic_;
  std::map<Key, std::unique_ptr<Plan>> plans_;
  // Per shape: batch -> the workspace floats conv2d_workspace_floats returned for it. A call with
  // batch b may rely only on the smallest of these over batches >= b.
  std::map<ShapeKey, std::map<int, std::size_t>> bound_;
};

}  // namespace dl::gpu
