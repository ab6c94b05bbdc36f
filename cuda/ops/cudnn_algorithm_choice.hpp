// How CudnnConvolution picks an algorithm for each direction (conv2d_cudnn.cpp uses it): which
// of cuDNN's answers may run here, and the rule that picks one. Header-only: the rule is a
// template over the three directions' algorithm and result types.
#pragma once

#include <cudnn.h>

#include <algorithm>
#include <cstddef>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "ops/precision_cast.hpp"

namespace dl::gpu::conv_algorithms {

// The workspace of an algorithm cuDNN cannot run for a geometry.
inline constexpr std::size_t kUnusable = std::numeric_limits<std::size_t>::max();

// The math a direction runs with when no search result names one: float32 never uses tensor
// cores (TF32 would change its results); 16-bit may.
inline cudnnMathType_t default_math(std::optional<HalfFormat> f) {
  return f ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
}

// Algorithms that compute in a transformed domain (FFT, Winograd).
inline bool transforms(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_FFT || a == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

// A measured or suggested algorithm may run here: it succeeded, it is deterministic (same
// gradients every run) unless `deterministic` is false (Config::deterministic), it does not
// down-convert to another format, and it is GEMM-based or direct (see the header). float32 also
// takes no tensor-core math (TF32 would change its results). Transform-domain algorithms are
// refused in float32 too, deterministic or not: on an H200, cuDNN's measurement sometimes picked
// one for LeNet's 5x5 backward-data pass, whose dx then differed from the CPU's by 2% (0.2122
// against 0.2171), far outside float32's rounding.
template <typename Perf>
bool acceptable(const Perf& p, std::optional<HalfFormat> f, bool deterministic) {
  if (p.status != CUDNN_STATUS_SUCCESS) return false;
  if (deterministic && p.determinism != CUDNN_DETERMINISTIC) return false;
  if (p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION || transforms(p.algo)) return false;
  return f.has_value() || p.mathType != CUDNN_TENSOR_OP_MATH;
}

template <typename Algo>
struct Choice {
  Algo algo;
  cudnnMathType_t math;
  std::size_t bytes;
};

// Picks one algorithm of a direction, in this order: `reuse` if it fits `limit`; with
// `deterministic`, the first of `fixed` that fits; the fastest measured (measure) or best
// suggested acceptable one that fits; the first of `fixed` that fits. `fixed` lists only
// deterministic GEMM-based algorithms (cuDNN documents BWD_DATA_ALGO_0 and BWD_FILTER_ALGO_0 and
// _3 as non-deterministic), so with `deterministic` the choice depends on the geometry and the
// workspace alone, never on timing; cuDNN's suggestions (deterministic ones only) remain for a
// geometry where no listed algorithm runs. Without `deterministic`, measured and suggested
// algorithms may be non-deterministic ones.
// `search(kind, count, &returned, results)` runs cudnnFind* (kind 0) or cudnnGet*_v7 (kind 1);
// `size_of(algo, math)` is its workspace for this geometry with that math, kUnusable when cuDNN
// cannot run it here. float32 runs everything with CUDNN_FMA_MATH, whatever a result says.
template <typename Perf, typename Algo, typename Search, typename SizeOf>
Choice<Algo> choose(const char* direction, const std::string& convolution,
                    std::optional<HalfFormat> format, bool deterministic, bool measure,
                    std::size_t limit, const Choice<Algo>* reuse, std::initializer_list<Algo> fixed,
                    int max_count, Search search, SizeOf size_of) {
  if (reuse != nullptr) {
    const std::size_t bytes = size_of(reuse->algo, reuse->math);
    if (bytes <= limit) return {reuse->algo, reuse->math, bytes};
  }
  auto first_fixed_that_fits = [&]() -> std::optional<Choice<Algo>> {
    for (const Algo algo : fixed) {
      const std::size_t bytes = size_of(algo, default_math(format));
      if (bytes <= limit) return Choice<Algo>{algo, default_math(format), bytes};
    }
    return std::nullopt;
  };
  if (deterministic) {
    if (const auto choice = first_fixed_that_fits()) return *choice;
  }
  std::vector<Perf> results(static_cast<std::size_t>(std::max(max_count, 1)));
  constexpr int kFind = 0, kHeuristic = 1;
  for (const int kind : {kFind, kHeuristic}) {
    if (kind == kFind && (deterministic || !measure)) continue;
    int returned = 0;
    if (search(kind, static_cast<int>(results.size()), &returned, results.data()) !=
        CUDNN_STATUS_SUCCESS)
      continue;  // e.g. cudnnFind* could not allocate its scratch: fall through to the next way
    for (int i = 0; i < returned; ++i) {
      if (!acceptable(results[i], format, deterministic)) continue;
      const cudnnMathType_t math = format ? results[i].mathType : CUDNN_FMA_MATH;
      const std::size_t bytes = size_of(results[i].algo, math);
      if (bytes <= limit) return {results[i].algo, math, bytes};
    }
  }
  if (const auto choice = first_fixed_that_fits()) return *choice;
  throw InternalError(convolution + ": no cuDNN " + direction + " algorithm fits a workspace of " +
                      std::to_string(limit) + " bytes");
}

}  // namespace dl::gpu::conv_algorithms
