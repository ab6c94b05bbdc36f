// A call a convolution's tasks make on the samples they own, for the CPU backend's fused ops
// (conv2d_pool.hpp): a forward task calls it once its samples' outputs are complete, a weight-
// gradient task before it reads its samples' output gradient. It runs on the task's thread, so the
// work it does on those samples finds them in that core's cache.
#pragma once

#include <functional>

namespace dl::cpu {

// Samples [begin, end) of the batch; an empty function is no call.
using SamplesHook = std::function<void(int begin, int end)>;

inline void call_for_samples(const SamplesHook& hook, int begin, int end) {
  if (hook && end > begin) hook(begin, end);
}

}  // namespace dl::cpu
