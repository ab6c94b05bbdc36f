#include "nn/gradient_slots.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace dl {

namespace {

// A free slot for `need` floats: the smallest that holds it, else the largest (grown to `need`),
// else a new one.
int take_slot(GradientSlots& g, std::vector<int>& free_slots, std::size_t need) {
  auto best = free_slots.end();
  for (auto it = free_slots.begin(); it != free_slots.end(); ++it) {
    const std::size_t c = g.capacity[static_cast<std::size_t>(*it)];
    if (best == free_slots.end()) {
      best = it;
      continue;
    }
    const std::size_t b = g.capacity[static_cast<std::size_t>(*best)];
    const bool fits = c >= need, best_fits = b >= need;
    if ((fits && (!best_fits || c < b)) || (!fits && !best_fits && c > b)) best = it;
  }
  if (best == free_slots.end()) {
    g.capacity.push_back(need);
    return static_cast<int>(g.capacity.size() - 1);
  }
  const int slot = *best;
  free_slots.erase(best);
  std::size_t& capacity = g.capacity[static_cast<std::size_t>(slot)];
  capacity = std::max(capacity, need);
  return slot;
}

}  // namespace

GradientSlots plan_gradient_slots(const std::vector<std::size_t>& floats,
                                  const std::vector<int>& first_write,
                                  const std::vector<int>& last_read) {
  const std::size_t n = floats.size();
  DL_CHECK(first_write.size() == n && last_read.size() == n, "one entry per layer");
  GradientSlots g;
  g.slot_of.assign(n, -1);
  std::vector<int> free_slots;
  for (int step = static_cast<int>(n) - 1; step >= 0; --step) {
    // Gradients written at this step take a slot while the step's own is still held...
    for (std::size_t j = 0; j < n; ++j)
      if (first_write[j] == step) g.slot_of[j] = take_slot(g, free_slots, floats[j]);
    // ...and those read for the last time here give theirs back after it.
    for (std::size_t j = 0; j < n; ++j) {
      if (last_read[j] != step || first_write[j] < 0) continue;
      DL_CHECK(g.slot_of[j] >= 0, "a gradient is written before it is last read");
      free_slots.push_back(g.slot_of[j]);
    }
  }
  return g;
}

}  // namespace dl
