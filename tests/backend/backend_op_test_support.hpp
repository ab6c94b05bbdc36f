// Shared by the op tests over backends (backend_op_tests*.cpp): host vectors in and out of a
// backend's memory, comparisons, and the loop over backends_under_test().
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/backends_under_test.hpp"
#include "backend/device_buffer.hpp"

namespace dl::testing {

inline constexpr double kReference = 1e-5;  // relative to 1 + |reference|
inline constexpr double kParity = 1e-5;

inline std::vector<float> uniform(std::size_t n, std::uint32_t seed, float lo = -1.0f,
                                  float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(gen);
  return v;
}

inline void near(const std::string& what, const std::vector<float>& got,
                 const std::vector<double>& want, double tolerance) {
  REQUIRE(got.size() == want.size());
  double worst = 0.0;
  std::size_t at = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]) / (1.0 + std::fabs(want[i]));
    if (!(err <= worst)) {
      worst = std::isnan(err) ? INFINITY : err;
      at = i;
    }
  }
  INFO(what << ": worst relative error " << worst << " at " << at);
  CHECK(worst <= tolerance);
}
inline void near(const std::string& what, const std::vector<float>& got,
                 const std::vector<float>& want, double tolerance) {
  near(what, got, std::vector<double>(want.begin(), want.end()), tolerance);
}

// Host vectors in and out of a backend's memory; the buffers live as long as the Io.
class Io {
 public:
  explicit Io(Backend& b) : b_(b) {}
  template <typename T>
  T* put(const std::vector<T>& host) {
    auto buffer = std::make_shared<DeviceBuffer<T>>(b_, std::max<std::size_t>(host.size(), 1));
    if (!host.empty()) b_.upload(buffer->data(), host.data(), host.size() * sizeof(T));
    held_.push_back(buffer);
    return buffer->data();
  }
  float* out(std::size_t n) { return put(std::vector<float>(n, NAN)); }
  template <typename T>
  std::vector<T> get(const T* p, std::size_t n) {
    std::vector<T> host(n);
    b_.download(host.data(), p, n * sizeof(T));
    return host;
  }

 private:
  Backend& b_;
  std::vector<std::shared_ptr<void>> held_;
};

inline double dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

// Runs body(backend) on every float32 backend under test; says so when there is none.
template <typename Body>
void for_each_backend(Body&& body) {
  bool any = false;
  for (const auto& entry : backends_under_test()) {
    if (entry.products != DType::kFloat) continue;
    any = true;
    INFO("backend: " << entry.name);
    auto backend = entry.make();
    body(*backend);
  }
  if (!any) WARN("no backend under test in this program (see its first line)");
}

// Runs body(backend, format) on every backend under test whose products are 16-bit.
template <typename Body>
void for_each_16bit_backend(Body&& body) {
  for (const auto& entry : backends_under_test()) {
    if (entry.products == DType::kFloat) continue;
    INFO("backend: " << entry.name);
    auto backend = entry.make();
    body(*backend, entry.products);
  }
}

}  // namespace dl::testing
