// How the CPU batch normalization (batchnorm.cpp) cuts a layer into tasks: each channel's values
// into parts of whole samples, the parts' sums made apart and added in a fixed order, so that
// the results depend on the shape alone, never on the thread count; and whether a call runs
// whole channels or parts as its tasks, which gives the same bits.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/isa_namespace.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "backend/ops/batchnorm.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {
namespace batchnorm_parts {

struct Layout {
  std::size_t n, channels, spatial;
  // Offset of the first value of (sample i, channel c); its `spatial` values follow contiguously.
  std::size_t offset(std::size_t i, std::size_t c) const { return (i * channels + c) * spatial; }
  std::size_t per_channel() const { return n * spatial; }
};

inline Layout layout_of(const BatchNormShape& s) {
  ops::check_shape(s);
  return Layout{static_cast<std::size_t>(s.n), static_cast<std::size_t>(s.channels),
                static_cast<std::size_t>(s.spatial)};
}

// A channel larger than kTaskValues values is cut into parts of whole samples, at least
// kTaskValues values each; smaller channels are grouped, whole, several to a task. Each part's
// sums are made in one order and the parts' sums added in a fixed order, so the results depend on
// the shape alone. A call runs whole channels as tasks where there are enough of them for the
// threads (each channel's values then stay in cache from its sums to its output), and its parts as
// tasks where there are not (ResNet's 16 channels on a 64-core server), which gives the same bits.
constexpr std::size_t kTaskValues = std::size_t{1} << 12;

struct Parts {
  std::size_t per_channel = 1;        // parts of each channel
  std::size_t samples = 0;            // samples per part (the channel's last part may have fewer)
  std::size_t channels_per_task = 1;  // whole channels to a task (1 where channels are cut)
};

inline Parts parts_of(const Layout& l) {
  Parts p;
  const std::size_t values = l.per_channel();
  if (values <= kTaskValues) {
    p.channels_per_task = std::max<std::size_t>(kTaskValues / std::max<std::size_t>(values, 1), 1);
    p.samples = l.n;
    return p;
  }
  const std::size_t wanted = std::min(values / kTaskValues, l.n);
  p.samples = (l.n + wanted - 1) / wanted;
  p.per_channel = (l.n + p.samples - 1) / p.samples;
  return p;
}

// Samples [begin, end) of channel c: part `part` of it.
struct Part {
  std::size_t c, part, begin, end;
  std::size_t index(const Parts& p) const { return c * p.per_channel + part; }
};

inline Part part_of(const Layout& l, const Parts& p, std::size_t c, std::size_t k) {
  const std::size_t begin = k * p.samples;
  return Part{c, k, begin, std::min(l.n, begin + p.samples)};
}

// Calls work(c) for every channel, as tasks of channels_per_task channels.
template <typename ChannelWork>
void for_each_channel(const Layout& l, const Parts& p, const ChannelWork& work) {
  const int tasks = static_cast<int>((l.channels + p.channels_per_task - 1) / p.channels_per_task);
  parallel_slices(tasks, [&](int t) {
    const std::size_t first = static_cast<std::size_t>(t) * p.channels_per_task;
    for (std::size_t c = first; c < std::min(l.channels, first + p.channels_per_task); ++c) work(c);
  });
}

// Calls work(part) for every part, a task each (a whole channel's several to a task).
template <typename PartWork>
void for_each_part(const Layout& l, const Parts& p, const PartWork& work) {
  if (p.per_channel == 1)
    return for_each_channel(l, p, [&](std::size_t c) { work(Part{c, 0, 0, l.n}); });
  parallel_slices(static_cast<int>(l.channels * p.per_channel), [&](int t) {
    const auto task = static_cast<std::size_t>(t);
    work(part_of(l, p, task / p.per_channel, task % p.per_channel));
  });
}

// Channels per thread below which a call runs its parts as tasks: a round of whole channels would
// leave threads idle.
constexpr int kChannelRoundsPerThread = 4;

// sum_part(part) makes a part's sums, finish(c) combines channel c's, apply(part) writes a part's
// outputs: by whole channels, each channel's three steps in one task, or by parts, each step over
// all channels before the next (the same steps on the same parts, so the same bits).
template <typename SumPart, typename Finish, typename ApplyPart>
void run_by_parts(const Layout& l, const Parts& p, const SumPart& sum_part, const Finish& finish,
                  const ApplyPart& apply) {
  const bool spread = p.per_channel > 1 && static_cast<std::size_t>(kChannelRoundsPerThread *
                                                                    parallel_width()) > l.channels;
  if (spread) {
    for_each_part(l, p, sum_part);
    for (std::size_t c = 0; c < l.channels; ++c) finish(c);
    for_each_part(l, p, apply);
    return;
  }
  for_each_channel(l, p, [&](std::size_t c) {
    for (std::size_t k = 0; k < p.per_channel; ++k) sum_part(part_of(l, p, c, k));
    finish(c);
    apply(Part{c, 0, 0, l.n});
  });
}

// Channel c's sum: its parts' sums, added in part order.
inline double channel_total(const Parts& p, const std::vector<double>& part_sums, std::size_t c) {
  double total = 0.0;
  for (std::size_t k = 0; k < p.per_channel; ++k) total += part_sums[c * p.per_channel + k];
  return total;
}

}  // namespace batchnorm_parts
}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
