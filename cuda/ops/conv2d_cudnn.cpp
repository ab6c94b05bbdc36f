#include "ops/conv2d_cudnn.hpp"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "backend/ops/window.hpp"
#include "core/error.hpp"
#include "cuda_check.hpp"
#include "library_check.hpp"
#include "ops/conv2d.hpp"
#include "ops/cudnn_algorithm_choice.hpp"

namespace dl::gpu {

namespace {

using conv_algorithms::Choice;
using conv_algorithms::choose;
using conv_algorithms::default_math;
using conv_algorithms::kUnusable;

// Every part of the workspace starts at a 256-byte boundary, the alignment cudaMalloc gives and
// cuDNN's (tensor-core) kernels prefer.
constexpr std::size_t kAlignBytes = 256;

std::size_t round_up(std::size_t n, std::size_t step) {
  return (n + step - 1) / step * step;
}
std::size_t bytes_to_floats(std::size_t bytes) {
  return (bytes + sizeof(float) - 1) / sizeof(float);
}

std::string describe(const Conv2dGeometry& g) {
  return "conv2d " + std::to_string(g.batch) + "x" + std::to_string(g.in_channels) + "x" +
         std::to_string(g.in_height) + "x" + std::to_string(g.in_width) + " -> " +
         std::to_string(g.out_channels) + "x" + std::to_string(g.out_height) + "x" +
         std::to_string(g.out_width) + ", kernel " + std::to_string(g.kernel_height) + "x" +
         std::to_string(g.kernel_width);
}

// cuDNN's output size along one axis with symmetric padding `pad`: the Truncate rule of the op
// contract (0 when the kernel is larger than the padded input).
int cudnn_output_size(int in, int pad, int kernel, int stride) {
  const auto extent = ops::window_extent(in, kernel, stride, pad, ConvolutionMode::kTruncate);
  return extent ? extent->out : 0;
}

bool symmetric_padding_fits(const Conv2dGeometry& g) {
  return cudnn_output_size(g.in_height, g.pad_top, g.kernel_height, g.stride_height) ==
             g.out_height &&
         cudnn_output_size(g.in_width, g.pad_left, g.kernel_width, g.stride_width) == g.out_width;
}

std::size_t weight_count(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.out_channels) * g.in_channels * g.kernel_height *
         g.kernel_width;
}
std::size_t output_count(const Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.out_channels * g.out_height * g.out_width;
}

// cuDNN's names without their common prefix, for the checkpoint's record of the algorithms.
const char* algorithm_name(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM:
      return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
      return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM:
      return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT:
      return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT:
      return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING:
      return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD:
      return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED:
      return "WINOGRAD_NONFUSED";
    default:
      return "unknown";
  }
}
template <typename Algo>
std::string describe(const Choice<Algo>& c) {
  return std::string(algorithm_name(c.algo)) +
         (c.math == CUDNN_TENSOR_OP_MATH ? " tensor ops" : "");
}

// The geometry of a plan's key (CudnnConvolution::Key: every field, in declaration order).
Conv2dGeometry geometry_of(const std::array<int, 13>& k) {
  Conv2dGeometry g;
  g.batch = k[0];
  g.in_channels = k[1];
  g.in_height = k[2];
  g.in_width = k[3];
  g.out_channels = k[4];
  g.out_height = k[5];
  g.out_width = k[6];
  g.kernel_height = k[7];
  g.kernel_width = k[8];
  g.stride_height = k[9];
  g.stride_width = k[10];
  g.pad_top = k[11];
  g.pad_left = k[12];
  return g;
}

cudnnDataType_t tensor_type(std::optional<HalfFormat> f) {
  if (!f) return CUDNN_DATA_FLOAT;
  return *f == HalfFormat::kHalf ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}

}  // namespace

struct CudnnConvolution::Plan {
  cudnnTensorDescriptor_t x_desc = nullptr;  // the input cuDNN sees (padded or not)
  cudnnTensorDescriptor_t y_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv_desc = nullptr;
  bool explicit_padding = false;
  PlaneDims x_planes, padded_planes;
  // Byte offsets into the workspace (see the header's layout). input_bytes is 0 for float32
  // without explicit padding (cuDNN reads x itself).
  std::size_t input_bytes = 0;
  std::size_t weights_offset = 0, output_offset = 0;  // 16-bit only
  std::size_t cudnn_offset = 0;
  Choice<cudnnConvolutionFwdAlgo_t> forward{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                            CUDNN_FMA_MATH, 0};

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    // Destruction cannot report failures; the descriptors are host objects.
    if (conv_desc != nullptr) cudnnDestroyConvolutionDescriptor(conv_desc);
    if (w_desc != nullptr) cudnnDestroyFilterDescriptor(w_desc);
    if (y_desc != nullptr) cudnnDestroyTensorDescriptor(y_desc);
    if (x_desc != nullptr) cudnnDestroyTensorDescriptor(x_desc);
  }

  std::size_t workspace_floats() const { return bytes_to_floats(cudnn_offset + forward.bytes); }
  static void* at(float* workspace, std::size_t offset) {
    return reinterpret_cast<char*>(workspace) + offset;
  }
  // The algorithms of one descriptor may have been chosen with different math types; cuDNN
  // runs an algorithm with the math type its descriptor holds when it is called.
  void use_math(cudnnMathType_t math) const {
    DL_CUDNN_CALL(cudnnSetConvolutionMathType(conv_desc, math));
  }
};

CudnnConvolution::CudnnConvolution(cudnnHandle_t handle, std::size_t max_workspace_bytes,
                                   std::optional<HalfFormat> half_format, bool deterministic)
    : handle_(handle),
      max_workspace_bytes_(max_workspace_bytes),
      half_format_(half_format),
      deterministic_(deterministic) {}

CudnnConvolution::~CudnnConvolution() = default;

std::unique_ptr<CudnnConvolution::Plan> CudnnConvolution::make_plan(const Conv2dGeometry& g,
                                                                    bool measure,
                                                                    std::size_t budget_floats,
                                                                    const Plan* reuse) const {
  auto plan = std::make_unique<Plan>();
  Plan& p = *plan;
  p.explicit_padding = !symmetric_padding_fits(g);
  p.x_planes = {g.batch * g.in_channels, g.in_height, g.in_width};
  int pad_h = g.pad_top, pad_w = g.pad_left;
  int in_h = g.in_height, in_w = g.in_width;
  if (p.explicit_padding) {
    // Exactly the rows and columns the output's windows read, padding included.
    in_h = (g.out_height - 1) * g.stride_height + g.kernel_height;
    in_w = (g.out_width - 1) * g.stride_width + g.kernel_width;
    pad_h = pad_w = 0;
    p.padded_planes = {p.x_planes.planes, in_h, in_w};
  }

  // The workspace layout of the header.
  const std::size_t element = half_format_ ? kHalfBytes : sizeof(float);
  std::size_t offset = 0;
  if (half_format_ || p.explicit_padding) {
    p.input_bytes = static_cast<std::size_t>(p.x_planes.planes) * in_h * in_w * element;
    offset = round_up(p.input_bytes, kAlignBytes);
  }
  if (half_format_) {
    p.weights_offset = offset;
    offset = round_up(offset + weight_count(g) * kHalfBytes, kAlignBytes);
    p.output_offset = offset;
    offset = round_up(offset + output_count(g) * kHalfBytes, kAlignBytes);
  }
  p.cudnn_offset = offset;

  const cudnnDataType_t type = tensor_type(half_format_);
  DL_CUDNN_CALL(cudnnCreateTensorDescriptor(&p.x_desc));
  DL_CUDNN_CALL(cudnnCreateTensorDescriptor(&p.y_desc));
  DL_CUDNN_CALL(cudnnCreateFilterDescriptor(&p.w_desc));
  DL_CUDNN_CALL(cudnnCreateConvolutionDescriptor(&p.conv_desc));
  DL_CUDNN_CALL(cudnnSetTensor4dDescriptor(p.x_desc, CUDNN_TENSOR_NCHW, type, g.batch,
                                           g.in_channels, in_h, in_w));
  DL_CUDNN_CALL(cudnnSetTensor4dDescriptor(p.y_desc, CUDNN_TENSOR_NCHW, type, g.batch,
                                           g.out_channels, g.out_height, g.out_width));
  DL_CUDNN_CALL(cudnnSetFilter4dDescriptor(p.w_desc, type, CUDNN_TENSOR_NCHW, g.out_channels,
                                           g.in_channels, g.kernel_height, g.kernel_width));
  constexpr int kNoDilation = 1;
  // The compute type is float32 in both precisions: with 16-bit tensors this is cuDNN's
  // PSEUDO_HALF / PSEUDO_BFLOAT16 configuration (16-bit storage, float32 arithmetic).
  DL_CUDNN_CALL(cudnnSetConvolution2dDescriptor(p.conv_desc, pad_h, pad_w, g.stride_height,
                                                g.stride_width, kNoDilation, kNoDilation,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  p.use_math(default_math(half_format_));

  // The descriptors must describe the geometry's output exactly.
  int n = 0, c = 0, h = 0, w = 0;
  DL_CUDNN_CALL(
      cudnnGetConvolution2dForwardOutputDim(p.conv_desc, p.x_desc, p.w_desc, &n, &c, &h, &w));
  DL_CHECK(
      n == g.batch && c == g.out_channels && h == g.out_height && w == g.out_width,
      describe(g) + ": cuDNN computes an output of " + std::to_string(h) + "x" + std::to_string(w));

  const std::size_t budget_bytes =
      std::min(budget_floats, std::numeric_limits<std::size_t>::max() / sizeof(float)) *
      sizeof(float);
  DL_CHECK(budget_bytes >= p.cudnn_offset,
           describe(g) + ": the workspace cannot hold the padded or 16-bit tensors");
  const std::size_t limit = std::min(max_workspace_bytes_, budget_bytes - p.cudnn_offset);

  int max_count = 0;
  DL_CUDNN_CALL(cudnnGetConvolutionForwardAlgorithmMaxCount(handle_, &max_count));
  p.forward = choose<cudnnConvolutionFwdAlgoPerf_t>(
      "forward", describe(g), half_format_, deterministic_, measure, limit,
      reuse ? &reuse->forward : nullptr,
      {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM},
      max_count,
      [&](int kind, int count, int* returned, cudnnConvolutionFwdAlgoPerf_t* results) {
        p.use_math(default_math(half_format_));
        return kind == 0
                   ? cudnnFindConvolutionForwardAlgorithm(handle_, p.x_desc, p.w_desc, p.conv_desc,
                                                          p.y_desc, count, returned, results)
                   : cudnnGetConvolutionForwardAlgorithm_v7(handle_, p.x_desc, p.w_desc,
                                                            p.conv_desc, p.y_desc, count, returned,
                                                            results);
      },
      [&](cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math) {
        std::size_t bytes = 0;
        p.use_math(math);
        return cudnnGetConvolutionForwardWorkspaceSize(handle_, p.x_desc, p.w_desc, p.conv_desc,
                                                       p.y_desc, algo,
                                                       &bytes) == CUDNN_STATUS_SUCCESS
                   ? bytes
                   : kUnusable;
      });

  return plan;
}

std::size_t CudnnConvolution::workspace_floats(const Conv2dGeometry& g) {
  if (g.batch <= 0) return 0;
  const Key key = {g.batch,        g.in_channels, g.in_height,     g.in_width,     g.out_channels,
                   g.out_height,   g.out_width,   g.kernel_height, g.kernel_width, g.stride_height,
                   g.stride_width, g.pad_top,     g.pad_left};
  auto it = plans_.find(key);
  if (it == plans_.end()) {
    constexpr bool kMeasure = true;
    it = plans_
             .emplace(key,
                      make_plan(g, kMeasure,
                                std::numeric_limits<std::size_t>::max() / sizeof(float), nullptr))
             .first;
  }
  const std::size_t floats = it->second->workspace_floats();
  const ShapeKey shape = {g.in_channels,   g.in_height,    g.in_width,      g.out_channels,
                          g.out_height,    g.out_width,    g.kernel_height, g.kernel_width,
                          g.stride_height, g.stride_width, g.pad_top,       g.pad_left};
  bound_[shape][g.batch] = floats;
  return floats;
}

std::string CudnnConvolution::algorithms() const {
  std::string out;
  for (const auto& [shape, batches] : bound_) {
    for (const auto& [batch, floats] : batches) {
      Key key;
      key[0] = batch;
      std::copy(shape.begin(), shape.end(), key.begin() + 1);
      const Plan& p = *plans_.at(key);
      out += (out.empty() ? "" : "; ") + describe(geometry_of(key)) + ": forward " +
             describe(p.forward);
    }
  }
  return out;
}

const CudnnConvolution::Plan& CudnnConvolution::plan_for_call(const Conv2dGeometry& g) {
  const Key key = {g.batch,        g.in_channels, g.in_height,     g.in_width,     g.out_channels,
                   g.out_height,   g.out_width,   g.kernel_height, g.kernel_width, g.stride_height,
                   g.stride_width, g.pad_top,     g.pad_left};
  const auto it = plans_.find(key);
  if (it != plans_.end()) return *it->second;
  // A batch no workspace was sized for: the layer's buffer was sized for some batch >= this
  // one; rely only on the smallest such size, and start from that plan's algorithms.
  const ShapeKey shape = {g.in_channels,   g.in_height,    g.in_width,      g.out_channels,
                          g.out_height,    g.out_width,    g.kernel_height, g.kernel_width,
                          g.stride_height, g.stride_width, g.pad_top,       g.pad_left};
  const auto bound = bound_.find(shape);
  std::size_t budget = std::numeric_limits<std::size_t>::max();
  int source_batch = 0;
  if (bound != bound_.end()) {
    for (auto b = bound->second.lower_bound(g.batch); b != bound->second.end(); ++b) {
      if (b->second < budget) {
        budget = b->second;
        source_batch = b->first;
      }
    }
  }
  DL_CHECK(source_batch > 0, describe(g) +
                                 ": no conv2d_workspace_floats call on this backend "
                                 "covered this batch; size the workspace first");
  Key source_key = key;
  source_key[0] = source_batch;
  const Plan* source = plans_.at(source_key).get();
  constexpr bool kMeasure = false;
  return *plans_.emplace(key, make_plan(g, kMeasure, budget, source)).first->second;
}

void CudnnConvolution::forward(const Conv2dGeometry& g, const float* x, const float* w,
                               const float* b, float* y, float* workspace,
                               const LaunchLimits& limits, cudaStream_t stream) {
  if (g.batch <= 0) return;
  const Plan& p = plan_for_call(g);
  const float one = 1.0f, zero = 0.0f;  // float scaling factors for FLOAT and PSEUDO_* configs
  void* cudnn_workspace = Plan::at(workspace, p.cudnn_offset);
  p.use_math(p.forward.math);
  if (!half_format_) {
    const float* input = x;
    if (p.explicit_padding) {
      launch_pad_planes(p.x_planes, p.padded_planes, g.pad_top, g.pad_left, x, workspace, limits,
                        stream);
      input = workspace;
    }
    DL_CUDNN_CALL(cudnnConvolutionForward(handle_, &one, p.x_desc, input, p.w_desc, w, p.conv_desc,
                                          p.forward.algo, cudnn_workspace, p.forward.bytes, &zero,
                                          p.y_desc, y));
    launch_add_channel_bias(g.batch, g.out_channels, g.out_height * g.out_width, b, y, limits,
                            stream);
    return;
  }
  const HalfFormat f = *half_format_;
  void* x16 = Plan::at(workspace, 0);
  void* w16 = Plan::at(workspace, p.weights_offset);
  void* y16 = Plan::at(workspace, p.output_offset);
  if (p.explicit_padding) {
    launch_pad_planes_to_half_format(f, p.x_planes, p.padded_planes, g.pad_top, g.pad_left, x, x16,
                                     limits, stream);
  } else {
    launch_cast_to_half_format(f, p.input_bytes / kHalfBytes, x, x16, limits, stream);
  }
  launch_cast_to_half_format(f, weight_count(g), w, w16, limits, stream);
  DL_CUDNN_CALL(cudnnConvolutionForward(handle_, &one, p.x_desc, x16, p.w_desc, w16, p.conv_desc,
                                        p.forward.algo, cudnn_workspace, p.forward.bytes, &zero,
                                        p.y_desc, y16));
  launch_add_channel_bias_from_half_format(f, g.batch, g.out_channels, g.out_height * g.out_width,
                                           y16, b, y, limits, stream);
}

}  // namespace dl::gpu
