// LossScaler: the dynamic transitions (back off on overflow, grow after an interval of good
// steps, fail below the minimum), the static and disabled modes, and the checkpoint text.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "optim/loss_scaler.hpp"

namespace dl {
namespace {

LossScalingConfig settings(double initial, double growth, double backoff, std::int64_t interval) {
  LossScalingConfig s;
  s.initialScale = initial;
  s.growthFactor = growth;
  s.backoffFactor = backoff;
  s.growthInterval = interval;
  return s;
}

TEST_CASE("loss scaler: the defaults are 2^16, x2 after 2000 good steps, x0.5 on overflow",
          "[optim][loss_scaling]") {
  LossScaler scaler(LossScalingMode::kDynamic, LossScalingConfig{});
  CHECK(scaler.scale() == 65536.0);
  CHECK(scaler.inverse_scale() == 1.0f / 65536.0f);
  for (int i = 0; i < 1999; ++i) scaler.on_good_step();
  CHECK(scaler.scale() == 65536.0);
  CHECK(scaler.good_steps() == 1999);
  scaler.on_good_step();
  CHECK(scaler.scale() == 131072.0);
  CHECK(scaler.good_steps() == 0);
  scaler.on_overflow();
  CHECK(scaler.scale() == 65536.0);
  CHECK(scaler.skipped_steps() == 1);
}

TEST_CASE("loss scaler: an overflow backs off and restarts the count of good steps",
          "[optim][loss_scaling]") {
  LossScaler scaler(LossScalingMode::kDynamic, settings(1024, 2, 0.25, 3));
  scaler.on_good_step();
  scaler.on_good_step();
  scaler.on_overflow();  // two good steps are forgotten: three more are needed to grow
  CHECK(scaler.scale() == 256.0);
  CHECK(scaler.good_steps() == 0);
  scaler.on_good_step();
  scaler.on_good_step();
  CHECK(scaler.scale() == 256.0);
  scaler.on_good_step();
  CHECK(scaler.scale() == 512.0);
  scaler.on_overflow();
  scaler.on_overflow();
  CHECK(scaler.scale() == 32.0);
  CHECK(scaler.skipped_steps() == 3);
}

TEST_CASE("loss scaler: growth stops at the largest float power of two", "[optim][loss_scaling]") {
  LossScaler scaler(LossScalingMode::kDynamic, settings(std::ldexp(1.0, 126), 4, 0.5, 1));
  scaler.on_good_step();
  CHECK(scaler.scale() == std::ldexp(1.0, 127));
  CHECK(std::isfinite(static_cast<float>(scaler.scale())));
  scaler.on_good_step();
  CHECK(scaler.scale() == std::ldexp(1.0, 127));
}

TEST_CASE("loss scaler: falling below the minimum scale is a divergence that says what to do",
          "[optim][loss_scaling]") {
  LossScaler scaler(LossScalingMode::kDynamic, settings(4 * LossScaler::kMinimumScale, 2, 0.5, 5));
  scaler.on_overflow();
  scaler.on_overflow();
  CHECK(scaler.scale() == LossScaler::kMinimumScale);
  try {
    scaler.on_overflow();
    FAIL("no DivergenceError below the minimum scale");
  } catch (const DivergenceError& e) {
    CHECK(e.code() == ExitCode::kDiverged);
    const std::string message = e.what();
    CHECK(message.find("updater.learningRate") != std::string::npos);
    CHECK(message.find("3 skipped steps") != std::string::npos);
  }
}

TEST_CASE("loss scaler: static keeps its scale, none is 1", "[optim][loss_scaling]") {
  const LossScaler fixed(LossScalingMode::kStatic, settings(128, 2, 0.5, 1));
  CHECK(fixed.enabled());
  CHECK_FALSE(fixed.dynamic());
  CHECK(fixed.scale() == 128.0);
  const LossScaler off(LossScalingMode::kNone, settings(128, 2, 0.5, 1));
  CHECK_FALSE(off.enabled());
  CHECK(off.scale() == 1.0);
  CHECK(off.inverse_scale() == 1.0f);
}

TEST_CASE("loss scaler: the saved state restores scale and both counts exactly",
          "[optim][loss_scaling]") {
  // A scale that is not a power of two must come back bit for bit too.
  LossScaler saved(LossScalingMode::kDynamic, settings(1000, 3, 0.3, 4));
  saved.on_overflow();
  saved.on_overflow();
  saved.on_good_step();
  saved.on_good_step();
  LossScaler restored(LossScalingMode::kDynamic, settings(1000, 3, 0.3, 4));
  restored.restore_state(saved.save_state());
  CHECK(restored.scale() == saved.scale());
  CHECK(restored.good_steps() == 2);
  CHECK(restored.skipped_steps() == 2);
  // Both continue alike: two more good steps grow the scale.
  saved.on_good_step();
  saved.on_good_step();
  restored.on_good_step();
  restored.on_good_step();
  CHECK(restored.scale() == saved.scale());
  CHECK(restored.scale() == Approx(1000 * 0.3 * 0.3 * 3));
}

TEST_CASE("loss scaler: the count of steps skipped as non-finite travels in the state",
          "[optim][loss_scaling]") {
  LossScaler saved(LossScalingMode::kNone, LossScalingConfig{});
  for (int i = 0; i < 3; ++i) saved.on_non_finite_skip();
  LossScaler restored(LossScalingMode::kNone, LossScalingConfig{});
  restored.restore_state(saved.save_state());
  CHECK(restored.non_finite_skips() == 3);
  CHECK(restored.skipped_steps() == 0);
  // A checkpoint of an older dl-train has no such field: none were counted.
  LossScaler older(LossScalingMode::kNone, LossScalingConfig{});
  older.on_non_finite_skip();
  older.restore_state("scale=1 good_steps=0 skipped_steps=2");
  CHECK(older.non_finite_skips() == 0);
  CHECK(older.skipped_steps() == 2);
  CHECK_THROWS_AS(older.restore_state("scale=1 good_steps=0 skipped_steps=0 non_finite_skips=-1"),
                  CheckpointError);
}

TEST_CASE("loss scaler: a damaged state is a checkpoint error", "[optim][loss_scaling]") {
  const LossScaler good(LossScalingMode::kDynamic, LossScalingConfig{});
  const std::string text = good.save_state();
  for (const std::string& bad :
       {std::string(), std::string("garbage"), text.substr(0, text.size() - 1) + "x",
        text + " extra", std::string("scale=0 good_steps=0 skipped_steps=0"),
        std::string("scale=inf good_steps=0 skipped_steps=0"),
        std::string("scale=2 good_steps=-1 skipped_steps=0"),
        std::string("scale=2 skipped_steps=0 good_steps=0")}) {
    INFO(bad);
    LossScaler scaler(LossScalingMode::kDynamic, LossScalingConfig{});
    CHECK_THROWS_AS(scaler.restore_state(bad), CheckpointError);
    CHECK(scaler.scale() == LossScalingConfig::kDefaultInitialScale);  // left unchanged
  }
}

}  // namespace
}  // namespace dl
