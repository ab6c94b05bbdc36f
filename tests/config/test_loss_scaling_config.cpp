// The lossScaling section: defaults resolved from the dtype, the resolved mode in the dump,
// overrides, and the range and spelling errors.
#include "config_test_support.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using dl::LossScalingMode;
using dl::testing::check_same_config;
using dl::testing::kNetwork;
using dl::testing::load;
using dl::testing::load_error;

TEST_CASE("lossScaling defaults: none for FLOAT, dynamic for HALF, documented settings",
          "[config][loss_scaling]") {
  const dl::Config flt = load(kNetwork);
  REQUIRE(flt.lossScaling.mode.has_value());
  CHECK(*flt.lossScaling.mode == LossScalingMode::kNone);
  CHECK(flt.lossScaling.initialScale == 65536.0);
  CHECK(flt.lossScaling.growthFactor == 2.0);
  CHECK(flt.lossScaling.backoffFactor == 0.5);
  CHECK(flt.lossScaling.growthInterval == 2000);

  const dl::Config half = load("backend: cuda\ndtype: HALF\n" + kNetwork);
  CHECK(half.lossScaling.mode == LossScalingMode::kDynamic);
  const dl::Config bf16 = load("backend: cuda\ndtype: BFLOAT16\n" + kNetwork);
  CHECK(bf16.lossScaling.mode == LossScalingMode::kNone);
  // An explicit mode wins over the dtype's default, and `~` means the default.
  CHECK(
      load("backend: cuda\ndtype: HALF\nlossScaling: {mode: none}\n" + kNetwork).lossScaling.mode ==
      LossScalingMode::kNone);
  CHECK(load("backend: cuda\ndtype: HALF\nlossScaling: {mode: ~}\n" + kNetwork).lossScaling.mode ==
        LossScalingMode::kDynamic);
  // Dynamic scaling with FLOAT is allowed.
  CHECK(load("lossScaling: {mode: DYNAMIC}\n" + kNetwork).lossScaling.mode ==
        LossScalingMode::kDynamic);
}

TEST_CASE("a Config built in code resolves the mode from its dtype", "[config][loss_scaling]") {
  dl::Config c;
  CHECK(dl::effective_loss_scaling_mode(c) == LossScalingMode::kNone);
  c.dtype = dl::DType::kHalf;
  CHECK(dl::effective_loss_scaling_mode(c) == LossScalingMode::kDynamic);
  c.lossScaling.mode = LossScalingMode::kStatic;
  CHECK(dl::effective_loss_scaling_mode(c) == LossScalingMode::kStatic);
}

TEST_CASE("the dump states the resolved mode and round-trips every setting",
          "[config][loss_scaling]") {
  const std::string half = dl::dump_config_yaml(load("backend: auto\ndtype: HALF\n" + kNetwork));
  CHECK_THAT(half, Contains("lossScaling:\n  mode: dynamic\n  initialScale: 65536\n"));
  const dl::Config original = load(
      "lossScaling: {mode: static, initialScale: 0.25, growthFactor: 4, backoffFactor: 0.125,"
      " growthInterval: 7}\n" +
      kNetwork);
  CHECK(original.lossScaling.initialScale == 0.25);
  CHECK(original.lossScaling.growthInterval == 7);
  const dl::Config again = dl::load_config_string(dl::dump_config_yaml(original), "dump.yaml");
  check_same_config(original, again);
  // Writing the resolved default explicitly is the same config.
  CHECK(dl::config_hash(load(kNetwork)) ==
        dl::config_hash(load(kNetwork, {"lossScaling.mode=none"})));
  CHECK(dl::config_hash(load(kNetwork)) !=
        dl::config_hash(load(kNetwork, {"lossScaling.mode=dynamic"})));
}

TEST_CASE("lossScaling overrides create the section", "[config][loss_scaling]") {
  const dl::Config c = load(kNetwork, {"lossScaling.mode=dynamic", "lossScaling.initialScale=1024",
                                       "lossScaling.growthInterval=5"});
  CHECK(c.lossScaling.mode == LossScalingMode::kDynamic);
  CHECK(c.lossScaling.initialScale == 1024.0);
  CHECK(c.lossScaling.growthInterval == 5);
}

TEST_CASE("lossScaling errors: ranges, spellings, unknown keys", "[config][loss_scaling]") {
  CHECK_THAT(load_error("lossScaling:\n  mode: dynamik\n" + kNetwork),
             StartsWith("t.yaml:2:9: unknown loss scaling mode 'dynamik' for lossScaling.mode; "
                        "did you mean 'dynamic'?"));
  CHECK_THAT(load_error("lossScaling:\n  initalScale: 8\n" + kNetwork),
             Contains("unknown key 'initalScale' in lossScaling; did you mean 'initialScale'?"));
  CHECK_THAT(load_error("lossScale: {mode: dynamic}\n" + kNetwork),
             Contains("did you mean 'lossScaling'?"));

  const std::string zero = load_error(kNetwork, {"lossScaling.initialScale=0"});
  CHECK_THAT(zero, StartsWith("--set lossScaling.initialScale=0: lossScaling.initialScale = 0 "
                              "is out of range"));
  CHECK_THAT(zero, Contains("allowed: [5.960464477539063e-08, 1.7014118346046923e+38]"));
  CHECK_THAT(load_error(kNetwork, {"lossScaling.initialScale=1e39"}), Contains("out of range"));
  CHECK_THAT(load_error(kNetwork, {"lossScaling.initialScale=-2"}), Contains("out of range"));
  CHECK_THAT(load_error(kNetwork, {"lossScaling.growthFactor=1"}),
             Contains("lossScaling.growthFactor = 1 is out of range"));
  CHECK_THAT(load_error(kNetwork, {"lossScaling.backoffFactor=1"}),
             Contains("lossScaling.backoffFactor = 1 is out of range; allowed: (0, 1)"));
  CHECK_THAT(load_error(kNetwork, {"lossScaling.backoffFactor=0"}), Contains("out of range"));
  CHECK_THAT(load_error(kNetwork, {"lossScaling.growthInterval=0"}),
             Contains("lossScaling.growthInterval = 0 is out of range"));
  CHECK_THAT(load_error(kNetwork, {"lossScaling.growthInterval=1.5"}),
             Contains("lossScaling.growthInterval must be an integer"));
  CHECK_THAT(load_error(kNetwork, {"lossScaling.initialScale=big"}),
             Contains("lossScaling.initialScale must be a finite number"));
}
