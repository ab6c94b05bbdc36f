// Which buffer holds each layer's output gradient. The backward pass runs the layers from the
// last to the first; layer i's output gradient is first written at the backward step of its
// highest reader and last read at its own step (or at the step of the convolution a pooling is
// fused into). Layers whose gradients are never live at once share a buffer, so a chain needs
// two whatever its depth, and a residual network one more per open shortcut, instead of one per
// layer (which for ResNet-20 at batch 128 was 300 MB of the run's 850).
#pragma once

#include <cstddef>
#include <vector>

namespace dl {

struct GradientSlots {
  std::vector<int> slot_of;            // per layer: its slot
  std::vector<std::size_t> capacity;   // per slot: floats per sample, the largest it holds
};

// floats: per layer, floats per sample of its output; first_write and last_read: per layer, the
// backward steps (layer indices) of the first write and the last read of its gradient, with
// first_write >= last_read; first_write -1 for a layer whose gradient lives in another's buffer
// (GradientRoutes' aliases), which gets no slot (slot_of -1).
GradientSlots plan_gradient_slots(const std::vector<std::size_t>& floats,
                                  const std::vector<int>& first_write,
                                  const std::vector<int>& last_read);

}  // namespace dl
