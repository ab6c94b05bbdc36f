// The optimizer on the CPU backend, against values worked out by hand from DL4J's update rules:
//   SGD:        p -= lr * g
//   Nesterovs:  v' = mu * v - lr * g;  p += (1 + mu) * v' - mu * v
//   Adam:       m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//               p -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps),  t = iteration + 1
// with g the gradient plus L2 (l2 * w on weights, l2Bias * b on biases).
#include <cmath>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>

#include "backend/cpu/cpu_backend.hpp"
#include "optim/optimizer.hpp"

namespace dl {
namespace {

// Relative tolerance for float32 arithmetic over a few steps of a few operations each.
constexpr double kFloatTolerance = 1e-6;

// A backend buffer with host-side access (the CPU backend's memory is host memory, but the test
// goes through upload/download as a caller on any backend would).
class Buffer {
 public:
  Buffer(Backend& backend, const std::vector<float>& values)
      : backend_(backend), size_(values.size()), data_(backend.allocate_floats(values.size())) {
    set(values);
  }
  ~Buffer() { backend_.free_bytes(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void set(const std::vector<float>& values) {
    backend_.upload(data_, values.data(), values.size() * sizeof(float));
  }
  std::vector<float> get() const {
    std::vector<float> values(size_);
    backend_.download(values.data(), data_, size_ * sizeof(float));
    return values;
  }
  float* data() { return data_; }

 private:
  Backend& backend_;
  std::size_t size_;
  float* data_;
};

std::vector<float> download(Backend& backend, const float* p, std::size_t n) {
  std::vector<float> values(n);
  backend.download(values.data(), p, n * sizeof(float));
  return values;
}

void require_close(const std::vector<float>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    INFO("index " << i);
    REQUIRE(actual[i] == Approx(expected[i]).epsilon(kFloatTolerance));
  }
}

// The 4-float buffer of these tests: two weights, one bias, one batch-norm running statistic.
std::vector<ParameterSegment> four_float_segments() {
  return {{0, 2, false, true}, {2, 1, true, true}, {3, 1, false, false}};
}
const std::vector<float> kInitialParams = {1.0f, 2.0f, 3.0f, 4.0f};
const std::vector<float> kGradient = {1.0f, -2.0f, 0.5f, 7.0f};
constexpr double kL2 = 0.1;
constexpr double kL2Bias = 0.5;

UpdaterConfig updater(UpdaterType type, double lr) {
  UpdaterConfig u;
  u.type = type;
  u.learningRate = lr;
  return u;
}

TEST_CASE("SGD with l2 and l2Bias over three steps", "[optim][optimizer]") {
  CpuBackend backend;
  Optimizer optimizer(backend, updater(UpdaterType::kSgd, 0.1), ScheduleConfig{}, kL2, kL2Bias,
                      four_float_segments(), 4);
  REQUIRE(optimizer.state_floats() == 0);
  Buffer params(backend, kInitialParams), grads(backend, kGradient);

  optimizer.step(params.data(), grads.data(), 0);
  // The updater's pass reads g + l2*w = {1.1, -1.8} and g + l2Bias*b = 2.0 and leaves the
  // gradient as it was, but for the non-trainable one, zeroed.
  require_close(grads.get(), {1.0, -2.0, 0.5, 0.0});
  require_close(params.get(), {0.89, 2.18, 2.8, 4.0});

  grads.set(kGradient);
  optimizer.step(params.data(), grads.data(), 1);
  require_close(params.get(), {0.7811, 2.3582, 2.61, 4.0});

  grads.set(kGradient);
  optimizer.step(params.data(), grads.data(), 2);
  require_close(params.get(), {0.673289, 2.534618, 2.4295, 4.0});
}

// DL4J's Nesterovs rule in double precision, L2 included, for the 4-float layout above.
void nesterovs_reference(std::vector<double>* p, std::vector<double>* v, double lr, double mu) {
  const double l2[] = {kL2, kL2, kL2Bias};
  for (int i = 0; i < 3; ++i) {
    const double g = kGradient[i] + l2[i] * (*p)[i];
    const double v_new = mu * (*v)[i] - lr * g;
    (*p)[i] += (1 + mu) * v_new - mu * (*v)[i];
    (*v)[i] = v_new;
  }
}

TEST_CASE("Nesterovs with l2 and l2Bias over three steps", "[optim][optimizer]") {
  constexpr double kLearningRate = 0.1, kMomentum = 0.9;
  CpuBackend backend;
  UpdaterConfig u = updater(UpdaterType::kNesterovs, kLearningRate);
  u.momentum = kMomentum;
  Optimizer optimizer(backend, u, ScheduleConfig{}, kL2, kL2Bias, four_float_segments(), 4);
  REQUIRE(optimizer.state_floats() == 4);
  Buffer params(backend, kInitialParams), grads(backend, kGradient);
  std::vector<double> p(kInitialParams.begin(), kInitialParams.end()), v(4, 0.0);

  optimizer.step(params.data(), grads.data(), 0);
  require_close(params.get(), {0.791, 2.342, 2.62, 4.0});  // p + 1.9 * (-0.1 * g)
  require_close(download(backend, optimizer.state(), 4), {-0.11, 0.18, -0.2, 0.0});

  grads.set(kGradient);
  optimizer.step(params.data(), grads.data(), 1);
  require_close(params.get(), {0.496871, 2.823302, 2.1141, 4.0});

  nesterovs_reference(&p, &v, kLearningRate, kMomentum);
  nesterovs_reference(&p, &v, kLearningRate, kMomentum);
  nesterovs_reference(&p, &v, kLearningRate, kMomentum);
  grads.set(kGradient);
  optimizer.step(params.data(), grads.data(), 2);
  require_close(params.get(), p);
  require_close(download(backend, optimizer.state(), 4), v);
}

TEST_CASE("the bias segment gets l2Bias and the weights l2", "[optim][optimizer]") {
  CpuBackend backend;
  const std::vector<ParameterSegment> segments = {{0, 2, false, true}, {2, 2, true, true}};
  const std::vector<float> zero_gradient(4, 0.0f);
  SECTION("l2 only: weights shrink, biases do not") {
    Optimizer optimizer(backend, updater(UpdaterType::kSgd, 1.0), ScheduleConfig{}, 0.5, 0.0,
                        segments, 4);
    Buffer params(backend, kInitialParams), grads(backend, zero_gradient);
    optimizer.step(params.data(), grads.data(), 0);
    require_close(params.get(), {0.5, 1.0, 3.0, 4.0});
  }
  SECTION("l2Bias only: biases shrink, weights do not") {
    Optimizer optimizer(backend, updater(UpdaterType::kSgd, 1.0), ScheduleConfig{}, 0.0, 0.25,
                        segments, 4);
    Buffer params(backend, kInitialParams), grads(backend, zero_gradient);
    optimizer.step(params.data(), grads.data(), 0);
    require_close(params.get(), {1.0, 2.0, 2.25, 3.0});
  }
}

TEST_CASE("a non-trainable segment is never updated", "[optim][optimizer]") {
  CpuBackend backend;
  for (UpdaterType type :
       {UpdaterType::kSgd, UpdaterType::kNesterovs, UpdaterType::kAdam, UpdaterType::kRmsProp}) {
    Optimizer optimizer(backend, updater(type, 0.1), ScheduleConfig{}, kL2, kL2Bias,
                        four_float_segments(), 4);
    Buffer params(backend, kInitialParams), grads(backend, kGradient);
    for (std::int64_t iteration = 0; iteration < 3; ++iteration) {
      grads.set(kGradient);
      optimizer.step(params.data(), grads.data(), iteration);
    }
    const std::vector<float> p = params.get();
    INFO("updater " << static_cast<int>(type));
    REQUIRE(p[3] == 4.0f);
    REQUIRE(p[0] != 1.0f);  // while the trainable ones did move
    REQUIRE(p[2] != 3.0f);
  }
}

TEST_CASE("Adam's bias correction uses t = iteration + 1", "[optim][optimizer]") {
  constexpr double kLearningRate = 0.01, kBeta1 = 0.9, kBeta2 = 0.999;
  constexpr float kGrad = 0.5f;
  CpuBackend backend;
  UpdaterConfig u = updater(UpdaterType::kAdam, kLearningRate);
  u.beta1 = kBeta1;
  u.beta2 = kBeta2;
  for (std::int64_t iteration : {0, 4, 99}) {
    Optimizer optimizer(backend, u, ScheduleConfig{}, 0.0, 0.0, {{0, 1, false, true}}, 1);
    REQUIRE(optimizer.state_floats() == 2);
    Buffer params(backend, {0.0f}), grads(backend, {kGrad});
    optimizer.step(params.data(), grads.data(), iteration);
    // The backend takes its hyper-parameters as floats (UpdaterHyper); 1 - beta2 is then
    // 1 - 0.999f, 1.3e-5 away from 0.001, so the reference uses the float-rounded values.
    const double b1 = static_cast<float>(kBeta1), b2 = static_cast<float>(kBeta2);
    const double lr = static_cast<float>(kLearningRate);
    const double t = static_cast<double>(iteration + 1);
    const double m = (1 - b1) * kGrad, v = (1 - b2) * kGrad * kGrad;
    const double alpha = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
    INFO("iteration " << iteration);
    require_close(params.get(), {-alpha * m / (std::sqrt(v) + u.epsilon)});
    require_close(download(backend, optimizer.state(), 2), {m, v});
  }
}

TEST_CASE("step uses the scheduled rate times the multiplier", "[optim][optimizer]") {
  CpuBackend backend;
  ScheduleConfig schedule;
  schedule.type = LearningRateSchedule::kStep;
  schedule.gamma = 0.5;
  schedule.step = 2;
  Optimizer optimizer(backend, updater(UpdaterType::kSgd, 1.0), schedule, 0.0, 0.0,
                      {{0, 1, false, true}}, 1);
  Buffer params(backend, {0.0f}), grads(backend, {1.0f});
  optimizer.step(params.data(), grads.data(), 2, 3.0);  // lr = 1 * 0.5^1 * 3
  require_close(params.get(), {-1.5});
}

TEST_CASE("learning_rate applies the schedule to the configured or default rate",
          "[optim][optimizer]") {
  CpuBackend backend;
  ScheduleConfig exponential;
  exponential.type = LearningRateSchedule::kExponential;
  exponential.gamma = 0.5;
  const Optimizer configured(backend, updater(UpdaterType::kSgd, 0.2), exponential, 0, 0, {}, 0);
  REQUIRE(configured.learning_rate(0) == Approx(0.2));
  REQUIRE(configured.learning_rate(2) == Approx(0.05));

  // learningRate 0 means DL4J's default for the updater.
  const ScheduleConfig none;
  REQUIRE(Optimizer(backend, updater(UpdaterType::kSgd, 0), none, 0, 0, {}, 0).learning_rate(5) ==
          Approx(1e-3));
  REQUIRE(
      Optimizer(backend, updater(UpdaterType::kNesterovs, 0), none, 0, 0, {}, 0).learning_rate(5) ==
      Approx(0.1));
  REQUIRE(Optimizer(backend, updater(UpdaterType::kAdam, 0), none, 0, 0, {}, 0).learning_rate(5) ==
          Approx(1e-3));
  REQUIRE(
      Optimizer(backend, updater(UpdaterType::kRmsProp, 0), none, 0, 0, {}, 0).learning_rate(5) ==
      Approx(0.1));
}

TEST_CASE("regularization_score is half l2 times the squares, per segment kind",
          "[optim][optimizer]") {
  CpuBackend backend;
  Buffer params(backend, kInitialParams);
  Optimizer optimizer(backend, updater(UpdaterType::kSgd, 0.1), ScheduleConfig{}, kL2, kL2Bias,
                      four_float_segments(), 4);
  // 0.5*0.1*(1 + 4) + 0.5*0.5*9; the non-trainable 4 does not count.
  REQUIRE(optimizer.regularization_score(params.data()) == Approx(2.5));
  Optimizer unregularized(backend, updater(UpdaterType::kSgd, 0.1), ScheduleConfig{}, 0, 0,
                          four_float_segments(), 4);
  REQUIRE(unregularized.regularization_score(params.data()) == 0.0);
}

TEST_CASE("updater state is sized per updater and starts as DL4J starts it", "[optim][optimizer]") {
  CpuBackend backend;
  constexpr std::size_t kFloats = 5;
  const std::vector<ParameterSegment> all = {{0, kFloats, false, true}};
  const std::pair<UpdaterType, std::size_t> expected[] = {{UpdaterType::kSgd, 0},
                                                          {UpdaterType::kNesterovs, kFloats},
                                                          {UpdaterType::kAdam, 2 * kFloats},
                                                          {UpdaterType::kRmsProp, kFloats}};
  for (const auto& [type, floats] : expected) {
    Optimizer optimizer(backend, updater(type, 0.1), ScheduleConfig{}, 0, 0, all, kFloats);
    REQUIRE(optimizer.type() == type);
    REQUIRE(optimizer.state_floats() == floats);
    if (floats > 0) {
      // DL4J fills RMSProp's mean square with epsilon; every other state starts at zero.
      const float initial =
          type == UpdaterType::kRmsProp ? static_cast<float>(UpdaterConfig{}.epsilon) : 0.0f;
      REQUIRE(download(backend, optimizer.state(), floats) == std::vector<float>(floats, initial));
    }
  }
}

TEST_CASE("a moved optimizer keeps its state", "[optim][optimizer]") {
  CpuBackend backend;
  Optimizer first(backend, updater(UpdaterType::kNesterovs, 0.1), ScheduleConfig{}, 0, 0,
                  {{0, 1, false, true}}, 1);
  Buffer params(backend, {0.0f}), grads(backend, {1.0f});
  first.step(params.data(), grads.data(), 0);
  Optimizer second = std::move(first);
  REQUIRE(second.state_floats() == 1);
  REQUIRE(download(backend, second.state(), 1) == std::vector<float>{-0.1f});
}

}  // namespace
}  // namespace dl
