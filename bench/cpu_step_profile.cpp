// Times one training step of LeNet (configs/fashion-mnist.yaml's network) at batch 128 through
// the CpuBackend ops, op by op, on 1 and 2 threads (or the counts given): where the CPU step's
// time goes, and which ops stop scaling on a machine with many cores.
//   cpu_step_profile [REPETITIONS=40] [KERNELS=auto] [THREADS=1,2]
// KERNELS is cpu.kernels' value: auto, onednn or cblas (gemm.hpp). THREADS: comma-separated
// thread counts, one group of columns each (e.g. 1,4,16 on a 16-core machine).
// Each op is run REPETITIONS times in a row (after one warm-up call); the table gives the
// minimum and the median in microseconds. The last row of each table times the whole step (all
// ops in order, as the model calls them), which includes the cache effects of one op on the
// next; the "in step" columns give each op's median inside it. Inputs are random; the numbers say
// nothing about accuracy.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/blas_control.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/cpu/gemm.hpp"
#include "op_timing.hpp"

namespace {

using dl::bench::median_of;
using dl::bench::microseconds_of;
using dl::bench::thread_counts_of;
using dl::bench::time_calls;
using dl::bench::Timing;

constexpr int kBatch = 128;
constexpr int kClasses = 10;
constexpr int kDenseOut = 500;
constexpr int kDefaultRepetitions = 40;
constexpr float kLearningRate = 0.01f;
constexpr float kMomentum = 0.9f;
constexpr float kL2 = 0.0005f;
constexpr char kDefaultThreadCounts[] = "1,2";

// A buffer of the backend's, filled with uniform values in [-1, 1).
struct Buffer {
  dl::CpuBackend& backend;
  float* data;
  Buffer(dl::CpuBackend& b, std::size_t n, std::mt19937& rng)
      : backend(b), data(b.allocate_floats(n)) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (std::size_t i = 0; i < n; ++i) data[i] = u(rng);
  }
  ~Buffer() { backend.free_bytes(data); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

dl::Conv2dGeometry conv(int in_c, int in_hw, int out_c, int kernel) {
  dl::Conv2dGeometry g;
  g.batch = kBatch;
  g.in_channels = in_c;
  g.in_height = g.in_width = in_hw;
  g.out_channels = out_c;
  g.out_height = g.out_width = in_hw - kernel + 1;
  g.kernel_height = g.kernel_width = kernel;
  return g;
}

dl::Pool2dGeometry pool(int channels, int in_hw) {
  dl::Pool2dGeometry g;
  g.batch = kBatch;
  g.in_channels = g.out_channels = channels;
  g.in_height = g.in_width = in_hw;
  g.out_height = g.out_width = in_hw / 2;
  g.kernel_height = g.kernel_width = 2;
  g.stride_height = g.stride_width = 2;
  return g;
}

std::size_t input_floats(const dl::Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.in_channels * g.in_height * g.in_width;
}
std::size_t output_floats(const dl::Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.batch) * g.out_channels * g.out_height * g.out_width;
}
std::size_t weight_floats(const dl::Conv2dGeometry& g) {
  return static_cast<std::size_t>(g.out_channels) * g.in_channels * g.kernel_height *
         g.kernel_width;
}

struct Op {
  std::string name;
  std::function<void()> run;
};

// A training step: the ops, by index, in the order the model calls them.
struct Step {
  std::string name;
  std::vector<std::size_t> ops;
};

// The ops in list order, each op named in `replaced` swapped for the op it names, or left out
// where it names none ("").
Step step_of(const std::string& name, const std::vector<Op>& ops,
             const std::vector<std::pair<std::string, std::string>>& replaced) {
  const auto index_of = [&](const std::string& op_name) {
    for (std::size_t i = 0; i < ops.size(); ++i)
      if (ops[i].name == op_name) return i;
    std::fprintf(stderr, "cpu_step_profile: no op named '%s'\n", op_name.c_str());
    std::exit(1);
  };
  Step step{name, {}};
  for (const Op& op : ops) {
    const auto swap = std::find_if(replaced.begin(), replaced.end(),
                                   [&](const auto& r) { return r.first == op.name; });
    if (swap == replaced.end()) {
      step.ops.push_back(index_of(op.name));
    } else if (!swap->second.empty()) {
      step.ops.push_back(index_of(swap->second));
    }
  }
  return step;
}

std::string columns_of(int threads, const char* noun) {
  char text[160];
  std::snprintf(text, sizeof text, " %d %s min | %d %s median | %d %s in step |", threads, noun,
                threads, noun, threads, noun);
  return text;
}

// Each op repeated alone (hot caches), each step as a whole, and each op's median inside the
// first step that runs it (from the caches the ops before it left, as in training): the
// difference is what the op pays for the data the ops before it pushed out.
void print_table(const std::string& kernels, const std::vector<Op>& ops,
                 const std::vector<Step>& steps, int repetitions,
                 const std::vector<int>& thread_counts) {
  std::printf("# %s; batch %d, %d repetitions, microseconds\n", kernels.c_str(), kBatch,
              repetitions);
  std::string head = "| op |", rule = "| --- |";
  for (int threads : thread_counts) {
    const char* noun = threads == 1 ? "thread" : "threads";
    head += columns_of(threads, noun);
    rule += " ---: | ---: | ---: |";
  }
  std::printf("%s\n%s\n", head.c_str(), rule.c_str());
  // With PROFILE_CPU_TIME set, the calling thread's CPU time (op_timing.hpp).
  const bool cpu_time = dl::bench::cpu_time_requested();
  const std::size_t rows = ops.size() + steps.size();
  std::vector<std::vector<Timing>> alone(thread_counts.size());
  std::vector<std::vector<double>> in_step(thread_counts.size(), std::vector<double>(rows));
  for (std::size_t t = 0; t < thread_counts.size(); ++t) {
    dl::set_cpu_threads(thread_counts[t]);
    for (const Op& op : ops) alone[t].push_back(time_calls(repetitions, cpu_time, op.run));
    std::vector<bool> seen(ops.size(), false);
    for (const Step& step : steps) {
      std::vector<std::vector<double>> samples(ops.size());
      const auto run = [&] {
        for (std::size_t i : step.ops) samples[i].push_back(microseconds_of(ops[i].run, cpu_time));
      };
      alone[t].push_back(time_calls(repetitions, cpu_time, run));
      in_step[t][alone[t].size() - 1] = alone[t].back().median;
      for (std::size_t i : step.ops) {
        if (!seen[i]) in_step[t][i] = median_of(samples[i]);
        seen[i] = true;
      }
    }
  }
  for (std::size_t i = 0; i < rows; ++i) {
    const std::string name = i < ops.size() ? ops[i].name : steps[i - ops.size()].name;
    std::printf("| %s |", name.c_str());
    for (std::size_t t = 0; t < thread_counts.size(); ++t) {
      std::printf(" %.0f | %.0f | %.0f |", alone[t][i].min, alone[t][i].median, in_step[t][i]);
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : kDefaultRepetitions;
  const std::string kernel_name = argc > 2 ? argv[2] : "auto";
  const std::vector<int> thread_counts =
      thread_counts_of(argc > 3 ? argv[3] : kDefaultThreadCounts, "cpu_step_profile");
  dl::CpuKernels kernels = dl::CpuKernels::kAuto;
  if (kernel_name == "onednn") kernels = dl::CpuKernels::kOnednn;
  if (kernel_name == "cblas") kernels = dl::CpuKernels::kCblas;
  const std::string blas =
      dl::select_cpu_kernels(kernels) + "; " + dl::configure_blas_for_this_cpu();
  dl::CpuBackend be;
  std::mt19937 rng(1);

  const dl::Conv2dGeometry c1 = conv(1, 28, 20, 5);
  const dl::Pool2dGeometry p1 = pool(20, 24);
  const dl::Conv2dGeometry c2 = conv(20, 12, 50, 5);
  const dl::Pool2dGeometry p2 = pool(50, 8);
  const int flat = 50 * 4 * 4;

  Buffer x(be, input_floats(c1), rng);
  Buffer w1(be, weight_floats(c1) + c1.out_channels, rng),
      g1(be, weight_floats(c1) + c1.out_channels, rng);
  Buffer ws1(be, be.conv2d_workspace_floats(c1), rng);
  Buffer y1(be, output_floats(c1), rng), dy1(be, output_floats(c1), rng);
  Buffer y1p(be, output_floats(p1), rng), dy1p(be, output_floats(p1), rng);
  std::vector<std::int32_t> a1(output_floats(p1)), a2(output_floats(p2));
  Buffer w2(be, weight_floats(c2) + c2.out_channels, rng),
      g2(be, weight_floats(c2) + c2.out_channels, rng);
  Buffer ws2(be, be.conv2d_workspace_floats(c2), rng);
  Buffer y2(be, output_floats(c2), rng), dy2(be, output_floats(c2), rng);
  Buffer y2p(be, output_floats(p2), rng), dy2p(be, output_floats(p2), rng);
  const std::size_t dense_weights = static_cast<std::size_t>(flat) * kDenseOut;
  Buffer w3(be, dense_weights + kDenseOut, rng), g3(be, dense_weights + kDenseOut, rng);
  Buffer y3(be, static_cast<std::size_t>(kBatch) * kDenseOut, rng);
  Buffer dy3(be, static_cast<std::size_t>(kBatch) * kDenseOut, rng);
  const std::size_t out_weights = static_cast<std::size_t>(kDenseOut) * kClasses;
  Buffer w4(be, out_weights + kClasses, rng), g4(be, out_weights + kClasses, rng);
  Buffer z4(be, static_cast<std::size_t>(kBatch) * kClasses, rng);
  Buffer y4(be, static_cast<std::size_t>(kBatch) * kClasses, rng);
  Buffer dz4(be, static_cast<std::size_t>(kBatch) * kClasses, rng);
  Buffer loss(be, 1, rng);
  std::vector<std::int32_t> labels(kBatch);
  for (int i = 0; i < kBatch; ++i) labels[i] = i % kClasses;
  // The updater runs over one flat buffer of every parameter, as the model keeps them.
  const std::size_t params = weight_floats(c1) + c1.out_channels + weight_floats(c2) +
                             c2.out_channels + dense_weights + kDenseOut + out_weights + kClasses;
  Buffer all_params(be, params, rng), all_grads(be, params, rng), state(be, params, rng);
  dl::UpdaterHyper hyper;
  hyper.type = dl::UpdaterType::kNesterovs;
  hyper.learning_rate = kLearningRate;
  hyper.momentum = kMomentum;
  // L2 on the weights, not the biases, in the updater's pass, as the optimizer asks for it.
  dl::UpdateTermRanges l2_terms;
  std::size_t offset = 0;
  const std::pair<std::size_t, std::size_t> layers[] = {{weight_floats(c1), c1.out_channels},
                                                        {weight_floats(c2), c2.out_channels},
                                                        {dense_weights, kDenseOut},
                                                        {out_weights, kClasses}};
  for (const auto& [weights, biases] : layers) {
    dl::UpdateTerms t;
    t.begin = offset;
    t.end = offset + weights;
    t.l2 = kL2;
    l2_terms.push_back(t);
    offset += weights + biases;
  }

  const dl::ConvPool cp1{c1, dl::Activation::kIdentity, p1, dl::PoolingType::kMax};
  const dl::ConvPool cp2{c2, dl::Activation::kIdentity, p2, dl::PoolingType::kMax};
  const float* b1 = w1.data + weight_floats(c1);
  const float* b2 = w2.data + weight_floats(c2);
  const float* b3 = w3.data + dense_weights;
  const float* b4 = w4.data + out_weights;
  const std::vector<Op> ops = {
      {"conv1 fwd", [&] { be.conv2d_forward(c1, x.data, w1.data, b1, y1.data, ws1.data); }},
      {"pool1 fwd",
       [&] { be.pool2d_forward(p1, dl::PoolingType::kMax, y1.data, y1p.data, a1.data()); }},
      {"conv2 fwd", [&] { be.conv2d_forward(c2, y1p.data, w2.data, b2, y2.data, ws2.data); }},
      {"pool2 fwd",
       [&] { be.pool2d_forward(p2, dl::PoolingType::kMax, y2.data, y2p.data, a2.data()); }},
      {"dense fwd",
       [&] { be.dense_forward(kBatch, flat, kDenseOut, y2p.data, w3.data, b3, y3.data); }},
      {"relu fwd",
       [&] { be.activation_forward(dl::Activation::kRelu, kBatch, kDenseOut, y3.data, y3.data); }},
      {"output fwd",
       [&] {
         be.dense_forward(kBatch, kDenseOut, kClasses, y3.data, w4.data, b4, z4.data);
         be.activation_forward(dl::Activation::kSoftmax, kBatch, kClasses, z4.data, y4.data);
       }},
      {"loss",
       [&] {
         be.output_loss({dl::LossFunction::kNegativeLogLikelihood, dl::Activation::kSoftmax},
                        kBatch, kClasses, z4.data, labels.data(), y4.data, dz4.data, 1.0f / kBatch,
                        loss.data);
       }},
      {"output bwd",
       [&] {
         be.dense_backward(kBatch, kDenseOut, kClasses, y3.data, w4.data, dz4.data, dy3.data,
                           g4.data, g4.data + out_weights);
       }},
      {"relu bwd",
       [&] {
         be.activation_backward(dl::Activation::kRelu, kBatch, kDenseOut, nullptr, y3.data,
                                dy3.data, dy3.data);
       }},
      {"dense bwd",
       [&] {
         be.dense_backward(kBatch, flat, kDenseOut, y2p.data, w3.data, dy3.data, dy2p.data, g3.data,
                           g3.data + dense_weights);
       }},
      {"pool2 bwd",
       [&] {
         be.pool2d_backward(p2, dl::PoolingType::kMax, y2.data, y2p.data, dy2p.data, dy2.data,
                            a2.data());
       }},
      {"conv2 bwd",
       [&] {
         be.conv2d_backward(c2, y1p.data, w2.data, dy2.data, dy1p.data, g2.data,
                            g2.data + weight_floats(c2), ws2.data);
       }},
      {"pool1 bwd",
       [&] {
         be.pool2d_backward(p1, dl::PoolingType::kMax, y1.data, y1p.data, dy1p.data, dy1.data,
                            a1.data());
       }},
      {"conv1 bwd",
       [&] {
         be.conv2d_backward(c1, x.data, w1.data, dy1.data, nullptr, g1.data,
                            g1.data + weight_floats(c1), ws1.data);
       }},
      // conv2's backward in its two parts, each alone (dx by Winograd, dW and db by columns).
      {"conv2 bwd, dW only",
       [&] {
         be.conv2d_backward(c2, y1p.data, w2.data, dy2.data, nullptr, g2.data,
                            g2.data + weight_floats(c2), ws2.data);
       }},
      {"conv2 bwd, dx only",
       [&] {
         be.conv2d_backward(c2, y1p.data, w2.data, dy2.data, dy1p.data, nullptr, nullptr, ws2.data);
       }},
      {"l2 + updater",
       [&] {
         be.updater_step(hyper, params, all_params.data, all_grads.data, state.data, l2_terms);
       }},
      // The fused convolution and pooling the model runs (Backend::conv2d_pool_forward): each
      // conv pair above in one op. conv2's backward has dx, where the fused op is the two ops.
      {"conv1+pool1 fwd, fused",
       [&] {
         be.conv2d_pool_forward(cp1, x.data, w1.data, b1, y1.data, y1p.data, a1.data(), ws1.data);
       }},
      {"conv2+pool2 fwd, fused",
       [&] {
         be.conv2d_pool_forward(cp2, y1p.data, w2.data, b2, y2.data, y2p.data, a2.data(), ws2.data);
       }},
      {"pool1+conv1 bwd, fused",
       [&] {
         be.conv2d_pool_backward(cp1, x.data, w1.data, y1.data, y1p.data, dy1p.data, a1.data(),
                                 dy1.data, nullptr, g1.data, g1.data + weight_floats(c1), ws1.data);
       }},
  };
  // The model's step before the fusion (ops in order), and with it.
  // Each step is the op list in order, less the ops it leaves out: the fused step runs each
  // fused op where the first of the pair it replaces ran, and skips the second.
  const std::vector<Step> steps = {
      step_of("whole step", ops,
              {{"conv2 bwd, dW only", ""},
               {"conv2 bwd, dx only", ""},
               {"conv1+pool1 fwd, fused", ""},
               {"conv2+pool2 fwd, fused", ""},
               {"pool1+conv1 bwd, fused", ""}}),
      step_of("whole step, fused", ops,
              {{"conv1 fwd", "conv1+pool1 fwd, fused"},
               {"pool1 fwd", ""},
               {"conv2 fwd", "conv2+pool2 fwd, fused"},
               {"pool2 fwd", ""},
               {"pool1 bwd", "pool1+conv1 bwd, fused"},
               {"conv1 bwd", ""},
               {"conv2 bwd, dW only", ""},
               {"conv2 bwd, dx only", ""},
               {"conv1+pool1 fwd, fused", ""},
               {"conv2+pool2 fwd, fused", ""},
               {"pool1+conv1 bwd, fused", ""}}),
  };
  print_table(blas, ops, steps, repetitions, thread_counts);
  return 0;
}
