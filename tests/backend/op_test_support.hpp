// Checks shared by the backend op tests: comparison with a double-precision reference, and
// output buffers that catch values an op forgot to write or wrote past its end.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/blas_control.hpp"
#include "backend/cpu/cpu_backend.hpp"

namespace dl::testing {

inline constexpr float kGuardValue = 12345.0f;
inline constexpr std::size_t kGuardElements = 64;

// Every element within `tolerance` of the reference, relative to 1 + |reference|; reports the
// worst element. A NaN counts as infinitely wrong.
inline void check_close(const std::string& what, const float* got, const std::vector<double>& want,
                        double tolerance) {
  double worst = 0.0;
  std::size_t worst_at = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i]));
    if (!(err <= worst)) {  // also catches NaN
      worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
      worst_at = i;
    }
  }
  INFO(what << ": worst relative error " << worst << " at index " << worst_at);
  CHECK(worst <= tolerance);
}

// `count` elements set to `fill` (NaN by default, so a value the op forgot to write shows up),
// followed by a guard band of `guard` the op must leave alone.
template <typename T>
class Guarded {
 public:
  explicit Guarded(std::size_t count, T fill = std::numeric_limits<T>::quiet_NaN(),
                   T guard = static_cast<T>(kGuardValue))
      : data_(count + kGuardElements, fill), count_(count), guard_(guard) {
    std::fill(data_.begin() + count, data_.end(), guard);
  }
  T* get() { return data_.data(); }
  bool guard_intact() const {
    return std::all_of(data_.begin() + count_, data_.end(), [&](T v) { return v == guard_; });
  }

 private:
  std::vector<T> data_;
  std::size_t count_;
  T guard_;
};

// Sets the CPU ops' thread count (and OpenBLAS's) for a scope and restores the previous one, so
// tests run their comparisons under several counts.
class BlasThreads {
 public:
  explicit BlasThreads(int threads) : saved_(dl::cpu_threads()) { dl::set_cpu_threads(threads); }
  ~BlasThreads() { dl::set_cpu_threads(saved_); }
  BlasThreads(const BlasThreads&) = delete;
  BlasThreads& operator=(const BlasThreads&) = delete;

 private:
  int saved_;
};

// The outputs of one forward and backward pass of a layer op (conv2d, dense).
struct LayerPass {
  std::vector<float> y, dx, dw, db;
};

// `pass(threads)` runs the op on that many threads. Every output must have the same bits on 1
// thread (twice), 2, 3, 4, 8 and 16 (more threads than this machine's cores is fine): the work is
// cut by problem size, never by thread count.
template <typename Pass>
void check_same_bits_on_any_thread_count(Pass pass) {
  const LayerPass one = pass(1), again = pass(1);
  CHECK(one.y == again.y);
  CHECK(one.dw == again.dw);
  for (int threads : {2, 3, 4, 8, 16}) {
    INFO("threads " << threads);
    const LayerPass other = pass(threads);
    CHECK(one.y == other.y);
    CHECK(one.dx == other.dx);
    CHECK(one.dw == other.dw);
    CHECK(one.db == other.db);
  }
}

}  // namespace dl::testing
