// Calls a convolution's tasks make on the samples they own, for the CPU backend's fused ops
// (conv2d_pool.hpp): a forward task calls SamplesHook once its samples' outputs are complete, a
// weight-gradient task asks DyOfSamples for its samples' output gradient before it reads it. They
// run on the task's thread, so what they do with those samples stays in that core's cache.
#pragma once

#include <functional>

#include "backend/cpu/isa_namespace.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

// Samples [begin, end) of the batch; an empty function is no call.
using SamplesHook = std::function<void(int begin, int end)>;

// Where the output gradient of samples [begin, end) starts (sample n's at + (n - begin) times a
// sample's output floats), made for the asking task: a weight-gradient task's samples.
using DyOfSamples = std::function<const float*(int begin, int end)>;

inline void call_for_samples(const SamplesHook& hook, int begin, int end) {
  if (hook && end > begin) hook(begin, end);
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
