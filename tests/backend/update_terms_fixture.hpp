// Term ranges for the updater tests (UpdateTerms): every kind of range, with gaps between some and
// none between others, so a test meets L2 alone, decay alone, both, and parameters under no term.
#pragma once

#include <algorithm>
#include <cstddef>

#include "backend/ops/updater.hpp"

namespace dl::testing {

// `ranges` ranges over a buffer of n, cycling through L2 only, decay only, both, and a bias-like
// L2 with decay; every third one starts right where the last ended. Needs n >= 8 * ranges.
inline UpdateTermRanges mixed_update_terms(std::size_t n, int ranges) {
  constexpr float kL2[] = {5e-4f, 0.0f, 1e-2f, 2.5e-1f};
  constexpr float kKeep[] = {1.0f, 0.99f, 0.995f, 0.9f};
  const std::size_t stride = n / static_cast<std::size_t>(std::max(ranges, 1));
  UpdateTermRanges terms;
  for (int r = 0; r < ranges; ++r) {
    UpdateTerms t;
    const std::size_t base = static_cast<std::size_t>(r) * stride;
    t.begin = r % 3 == 0 && !terms.empty() ? terms.back().end : base + stride / 4;
    t.end = std::min(n, base + stride - stride / 8);
    t.l2 = kL2[r % 4];
    t.decay_keep = kKeep[r % 4];
    terms.push_back(t);
  }
  return terms;
}

}  // namespace dl::testing
