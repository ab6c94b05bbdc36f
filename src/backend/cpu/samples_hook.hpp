// Calls a convolution's tasks make on the samples they own, for the CPU backend's fused ops
// (conv2d_pool.hpp): a forward task asks SamplesHook where to write its samples' outputs and
// calls it once they are complete; a weight-gradient task asks DyOfSamples for its samples'
// output gradient before it reads it. They run on the task's thread, so what they do with those
// samples stays in that core's cache.
#pragma once

#include <cstddef>
#include <functional>

#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// A forward task's samples [begin, end), whose outputs lie at `outputs` (sample n's at outputs +
// (n - begin) times one sample's output floats).
struct SamplesHook {
  // Where the task writes them; empty: the caller's y.
  std::function<float*(int begin, int end)> place;
  // Called once they are complete; empty: no call.
  std::function<void(int begin, int end, float* outputs)> done;
};

// Where the outputs of samples [begin, end) go: the hook's place, else y at sample begin.
inline float* outputs_of_samples(const SamplesHook& hook, float* y, std::size_t sample_floats,
                                 int begin, int end) {
  if (hook.place && end > begin) return hook.place(begin, end);
  return y + static_cast<std::size_t>(begin) * sample_floats;
}

inline void call_for_samples(const SamplesHook& hook, int begin, int end, float* outputs) {
  if (hook.done && end > begin) hook.done(begin, end, outputs);
}

// Where the output gradient of samples [begin, end) starts (sample n's at + (n - begin) times a
// sample's output floats), made for the asking task: a weight-gradient task's samples.
using DyOfSamples = std::function<const float*(int begin, int end)>;

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
