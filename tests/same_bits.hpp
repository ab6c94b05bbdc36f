// The tests' one exact comparison of float vectors, for results that must not depend on the
// thread count, the order of work or a resume: the same bits (so -0.0 and 0.0 differ).
#pragma once

#include <cstring>
#include <vector>

namespace dl::testing {

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp must not see the null data() an empty vector may have, even for 0 bytes.
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace dl::testing
