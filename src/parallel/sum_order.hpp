// The one order in which a job adds its workers' buffers, whatever its layout of processes and
// threads, so that N ranks x M workers compute the bits one process with N x M workers computes.
//
// The order is a binary tree over the buffers by global index: a run of buffers is split after
// the largest power of two below its length, each part is summed so, and the left sum is added
// to the right one.
//   2: b0 + b1            3: (b0 + b1) + b2       4: (b0 + b1) + (b2 + b3)
//   6: ((b0 + b1) + (b2 + b3)) + (b4 + b5)
// When M is a power of two, every split of the tree over N x M falls on a rank's boundary (the
// largest power of two below N x M is M times the largest below N), so the tree over N x M is the
// tree over the N ranks of the trees over each rank's M workers. With another M (3 workers per
// rank) the two layouts add in other orders and agree to rounding only (docs/DISTRIBUTED.md).
#pragma once

#include <cstddef>

namespace dl {

// The length of the left part of a run of `count` > 1 buffers.
inline int left_part_of(int count) {
  int left = 1;
  while (left * 2 < count) left *= 2;
  return left;
}

// Adds `parts[0 .. count)` element-wise over [begin, end) in the tree order above, leaving the
// sum in parts[0] and partial sums in other parts' elements of that range (they are scratch).
template <typename T>
void add_in_tree_order(T* const* parts, int count, std::size_t begin, std::size_t end) {
  if (count < 2) return;
  const int left = left_part_of(count);
  add_in_tree_order(parts, left, begin, end);
  add_in_tree_order(parts + left, count - left, begin, end);
  T* __restrict sum = parts[0];
  const T* __restrict right = parts[left];
  for (std::size_t i = begin; i < end; ++i) sum[i] += right[i];
}

}  // namespace dl
