#include "backend/cpu/batchnorm.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/cpu/batchnorm_parts.hpp"
#include "backend/cpu/lane_vectors.hpp"
#include "backend/cpu/thread_pool.hpp"
#include "backend/ops/batchnorm.hpp"

namespace dl::cpu {
inline namespace DL_CPU_ISA {

namespace {

using namespace batchnorm_parts;

// A channel's sums: kSumLanes partial sums, so that the compiler keeps kChains vectors of adds in
// flight (one accumulator waits out the add's latency on every value) and needs no conversion per
// value. Value k of each row (one sample's `spatial` values) goes to lane k mod kSumLanes, except
// the row's last values that fill no whole vector, which go to double partial sums of their own.
// A float lane takes at most kFlushBlocks values before it is added into its double lane and
// restarted: float rounding reaches no further than those few values (about 1e-7 of their sum
// each), and the double lanes, added in a fixed order at the end, carry the channel's thousands of
// values like a double accumulator would. The variance stays two-pass, on values centered on the
// batch mean, so |mean| >> std cancels nothing. Vectors are 8 floats in every variant of the
// kernels (one AVX2 register; 16-float AVX-512 ones measured no faster, the passes wait on
// memory), so the AVX2 and AVX-512 variants add the same values in the same order.
constexpr int kLaneFloats = 8;
constexpr int kChains = 4;
constexpr int kSumLanes = kLaneFloats * kChains;
constexpr int kFlushBlocks = 32;
using Floats = Lanes<kLaneFloats>;

Floats floats_at(const float* p, int chain) {
  return load_lanes<kLaneFloats>(p + chain * kLaneFloats);
}

class LaneSums {
 public:
  // Adds term(j), a vector of kLaneFloats values, to chain j for j < chains (kChains but at a
  // row's end).
  template <typename Term>
  void add_block(int chains, const Term& term) {
    for (int j = 0; j < chains; ++j) floats_[j] += term(j);
    if (++blocks_ == kFlushBlocks) flush();
  }
  // A value of a row's last part that fills no vector: the row's k-th such.
  void add_tail(int k, double value) { tail_[k] += value; }
  double total() {
    flush();
    double sum = 0.0;
    for (double d : doubles_) sum += d;
    for (double t : tail_) sum += t;
    return sum;
  }

 private:
  void flush() {
    for (int j = 0; j < kChains; ++j) {
      for (int k = 0; k < kLaneFloats; ++k) doubles_[j * kLaneFloats + k] += floats_[j][k];
      floats_[j] = Floats{};
    }
    blocks_ = 0;
  }

  Floats floats_[kChains] = {};
  int blocks_ = 0;
  double doubles_[kSumLanes] = {};
  double tail_[kLaneFloats] = {};
};

// Calls block(at, chains) for the runs of values of the part that fill whole vectors, each run
// starting at x[at] on a row's multiple of kSumLanes and `chains` vectors long (kChains but at a
// row's end), then tail(at, k) for each remaining value x[at] of the row, k counted from the
// first.
template <typename Block, typename Tail>
void walk_part(const Layout& l, const Part& part, const Block& block, const Tail& tail) {
  const std::size_t whole = l.spatial / kSumLanes * kSumLanes;
  const int rest_vectors = static_cast<int>((l.spatial - whole) / kLaneFloats);
  const std::size_t vectors_end = whole + static_cast<std::size_t>(rest_vectors) * kLaneFloats;
  for (std::size_t i = part.begin; i < part.end; ++i) {
    const std::size_t row = l.offset(i, part.c);
    for (std::size_t k = 0; k < whole; k += kSumLanes) block(row + k, kChains);
    if (rest_vectors > 0) block(row + whole, rest_vectors);
    for (std::size_t k = vectors_end; k < l.spatial; ++k)
      tail(row + k, static_cast<int>(k - vectors_end));
  }
}

double part_sum(const Layout& l, const Part& part, const float* x) {
  LaneSums s;
  walk_part(
      l, part,
      [&](std::size_t at, int chains) {
        s.add_block(chains, [&](int j) { return floats_at(x + at, j); });
      },
      [&](std::size_t at, int k) { s.add_tail(k, x[at]); });
  return s.total();
}

// x - mean in float: rounding the mean to float (by up to 2^-24 |mean|) moves the variance by the
// square of that shift, (2^-24 |mean| / std)^2 of itself: under 1e-6 while |mean| < 16000 std,
// where float x itself resolves its spread to 2^-24 |mean| only.
double part_centered_squares(const Layout& l, const Part& part, const float* x, double mean) {
  LaneSums s;
  const float mean_f = static_cast<float>(mean);
  walk_part(
      l, part,
      [&](std::size_t at, int chains) {
        s.add_block(chains, [&](int j) {
          const Floats d = floats_at(x + at, j) - mean_f;
          return d * d;
        });
      },
      [&](std::size_t at, int k) {
        const double d = x[at] - mean;
        s.add_tail(k, d * d);
      });
  return s.total();
}

// A channel's scale and shift: y = act(x * scale + shift). `affine` holds the fused activation's
// (ops/batchnorm.hpp), unread for the identity.
struct Affine {
  float scale, shift;
};

// The gradient w.r.t. the normalized value: dy taken through the fused activation's gradient.
template <Activation A>
float pre_activation_gradient(float x, float dy, Affine f) {
  if constexpr (A == Activation::kIdentity) return dy;
  return ops::batchnorm_activation_gradient<A>(x, f.scale, f.shift, dy);
}
template <Activation A>
Floats pre_activation_gradient(const float* x, const float* dy, int chain, Affine f) {
  if constexpr (A == Activation::kIdentity) return floats_at(dy, chain);
  Floats g;
  for (int k = 0; k < kLaneFloats; ++k) {
    const int at = chain * kLaneFloats + k;
    g[k] = pre_activation_gradient<A>(x[at], dy[at], f);
  }
  return g;
}

// sum g and sum g * xhat over a part of a channel, g = pre_activation_gradient, xhat = (x - mean) *
// inv_std rounded to float.
struct GradientSums {
  double dy, dy_xhat;
};
template <Activation A>
GradientSums part_gradient_sums(const Layout& l, const Part& part, const float* x, const float* dy,
                                float mean, float inv_std, Affine f) {
  LaneSums s_dy, s_dy_xhat;
  walk_part(
      l, part,
      [&](std::size_t at, int chains) {
        Floats g[kChains];
        for (int j = 0; j < chains; ++j) g[j] = pre_activation_gradient<A>(x + at, dy + at, j, f);
        s_dy.add_block(chains, [&](int j) { return g[j]; });
        s_dy_xhat.add_block(
            chains, [&](int j) { return g[j] * ((floats_at(x + at, j) - mean) * inv_std); });
      },
      [&](std::size_t at, int k) {
        const float g = pre_activation_gradient<A>(x[at], dy[at], f);
        s_dy.add_tail(k, g);
        s_dy_xhat.add_tail(k, static_cast<double>(g) * ((x[at] - mean) * inv_std));
      });
  return {s_dy.total(), s_dy_xhat.total()};
}

// y = act(x * scale + shift) over the values of a part of a channel.
template <Activation A>
void apply_affine(const Layout& l, const Part& part, const float* x, Affine f, float* y) {
  for (std::size_t i = part.begin; i < part.end; ++i) {
    const float* xs = x + l.offset(i, part.c);
    float* ys = y + l.offset(i, part.c);
    for (std::size_t k = 0; k < l.spatial; ++k)
      ys[k] = ops::activate<A>(ops::batchnorm_affine(xs[k], f.scale, f.shift));
  }
}

// A part's mean and sum of squared deviations from it: its values read twice while they are in
// cache (a part is a few thousand values), the second time centered on the part's own mean.
struct PartStats {
  double count = 0.0, mean = 0.0, squares = 0.0;
};

PartStats part_stats(const Layout& l, const Part& part, const float* x) {
  PartStats stats;
  stats.count = static_cast<double>((part.end - part.begin) * l.spatial);
  stats.mean = part_sum(l, part, x) / stats.count;
  stats.squares = part_centered_squares(l, part, x, stats.mean);
  return stats;
}

// A channel's mean and biased variance from its parts' stats, added in part order (Chan, Golub
// and LeVeque's pairwise update): the squares about the channel's mean are each part's squares
// about its own mean plus count (part mean - mean)^2, so nothing cancels, as in a two-pass
// variance, while the values are read from memory once.
struct ChannelStats {
  double mean, var;
};

ChannelStats channel_stats(const Parts& p, const std::vector<PartStats>& parts, std::size_t c) {
  const PartStats* first = parts.data() + c * p.per_channel;
  double count = 0.0, sum = 0.0;
  for (std::size_t k = 0; k < p.per_channel; ++k) {
    count += first[k].count;
    sum += first[k].mean * first[k].count;
  }
  const double mean = sum / count;
  double squares = 0.0;
  for (std::size_t k = 0; k < p.per_channel; ++k) {
    const double shift = first[k].mean - mean;
    squares += first[k].squares + first[k].count * shift * shift;
  }
  return {mean, squares / count};
}

template <Activation A>
void forward_training(const Layout& l, float eps, float decay, const float* x, const float* gamma,
                      const float* beta, float* y, float* running_mean, float* running_var,
                      float* save_mean, float* save_inv_std, float* save_affine) {
  const double m = static_cast<double>(l.per_channel());
  const double unbias = l.per_channel() > 1 ? m / (m - 1.0) : 1.0;
  const Parts p = parts_of(l);
  std::vector<PartStats> parts(l.channels * p.per_channel);
  std::vector<Affine> affine(l.channels);
  const auto finish = [&](std::size_t c) {
    const ChannelStats stats = channel_stats(p, parts, c);
    const double inv_std = 1.0 / std::sqrt(stats.var + eps);
    affine[c] = Affine{static_cast<float>(gamma[c] * inv_std),
                       static_cast<float>(beta[c] - stats.mean * gamma[c] * inv_std)};
    save_mean[c] = static_cast<float>(stats.mean);
    save_inv_std[c] = static_cast<float>(inv_std);
    if (save_affine != nullptr) {
      save_affine[c] = affine[c].scale;
      save_affine[l.channels + c] = affine[c].shift;
    }
    running_mean[c] = static_cast<float>(decay * running_mean[c] + (1.0 - decay) * stats.mean);
    running_var[c] =
        static_cast<float>(decay * running_var[c] + (1.0 - decay) * stats.var * unbias);
  };
  run_by_parts(
      l, p, [&](const Part& part) { parts[part.index(p)] = part_stats(l, part, x); }, finish,
      [&](const Part& part) { apply_affine<A>(l, part, x, affine[part.c], y); });
}

// dx = a (g - mean_dy - xhat mean_dy_xhat) for the values of a channel: the header's dx formula
// with 1/m moved inside, a = gamma inv_std.
struct DxTerms {
  float a, mean_dy, mean_dy_xhat;
};

template <Activation A>
void backward(const Layout& l, const float* x, const float* dy, const float* gamma,
              const float* save_mean, const float* save_inv_std, const float* save_affine,
              float* dx, float* dgamma, float* dbeta) {
  const double m = static_cast<double>(l.per_channel());
  const Parts p = parts_of(l);
  const auto affine_of = [&](std::size_t c) {
    return save_affine != nullptr ? Affine{save_affine[c], save_affine[l.channels + c]}
                                  : Affine{1.0f, 0.0f};
  };
  std::vector<double> dy_sums(l.channels * p.per_channel), dy_xhat_sums(dy_sums.size());
  std::vector<DxTerms> terms(l.channels);
  const auto sum_part = [&](const Part& part) {
    const GradientSums sums = part_gradient_sums<A>(l, part, x, dy, save_mean[part.c],
                                                    save_inv_std[part.c], affine_of(part.c));
    dy_sums[part.index(p)] = sums.dy;
    dy_xhat_sums[part.index(p)] = sums.dy_xhat;
  };
  const auto finish = [&](std::size_t c) {
    const double sum_dy = channel_total(p, dy_sums, c);
    const double sum_dy_xhat = channel_total(p, dy_xhat_sums, c);
    dbeta[c] = static_cast<float>(sum_dy);
    dgamma[c] = static_cast<float>(sum_dy_xhat);
    terms[c] = DxTerms{gamma[c] * save_inv_std[c], static_cast<float>(sum_dy / m),
                       static_cast<float>(sum_dy_xhat / m)};
  };
  const auto apply = [&](const Part& part) {
    const float mean = save_mean[part.c];
    const float inv_std = save_inv_std[part.c];
    const Affine f = affine_of(part.c);
    const DxTerms t = terms[part.c];
    for (std::size_t i = part.begin; i < part.end; ++i) {
      const float* xs = x + l.offset(i, part.c);
      const float* dys = dy + l.offset(i, part.c);
      float* dxs = dx + l.offset(i, part.c);
      for (std::size_t k = 0; k < l.spatial; ++k) {
        const float g = pre_activation_gradient<A>(xs[k], dys[k], f);
        const float xhat = (xs[k] - mean) * inv_std;
        dxs[k] = t.a * (g - t.mean_dy - xhat * t.mean_dy_xhat);
      }
    }
  };
  run_by_parts(l, p, sum_part, finish, apply);
}

}  // namespace

void batchnorm_forward_training(const BatchNormShape& s, Activation a, float eps, float decay,
                                const float* x, const float* gamma, const float* beta, float* y,
                                float* running_mean, float* running_var, float* save_mean,
                                float* save_inv_std, float* save_affine) {
  const Layout l = layout_of(s);
  ops::check_activation(a, save_affine);
  ops::visit_activation_or_identity(a, [&](auto tag) {
    forward_training<decltype(tag)::value>(l, eps, decay, x, gamma, beta, y, running_mean,
                                           running_var, save_mean, save_inv_std, save_affine);
  });
}

void batchnorm_forward_inference(const BatchNormShape& s, Activation a, float eps, const float* x,
                                 const float* gamma, const float* beta, const float* running_mean,
                                 const float* running_var, float* y) {
  const Layout l = layout_of(s);
  ops::check_fusable(a);
  ops::visit_activation_or_identity(a, [&](auto tag) {
    std::vector<Affine> affine(l.channels);
    for (std::size_t c = 0; c < l.channels; ++c) {
      const double inv_std = 1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps);
      affine[c] = Affine{static_cast<float>(gamma[c] * inv_std),
                         static_cast<float>(beta[c] - running_mean[c] * gamma[c] * inv_std)};
    }
    for_each_part(l, parts_of(l), [&](const Part& part) {
      apply_affine<decltype(tag)::value>(l, part, x, affine[part.c], y);
    });
  });
}

void batchnorm_backward(const BatchNormShape& s, Activation a, const float* x, const float* dy,
                        const float* gamma, const float* save_mean, const float* save_inv_std,
                        const float* save_affine, float* dx, float* dgamma, float* dbeta) {
  const Layout l = layout_of(s);
  ops::check_activation(a, save_affine);
  ops::visit_activation_or_identity(a, [&](auto tag) {
    backward<decltype(tag)::value>(l, x, dy, gamma, save_mean, save_inv_std, save_affine, dx,
                                   dgamma, dbeta);
  });
}

}  // namespace DL_CPU_ISA
}  // namespace dl::cpu
