// data.deviceResident: its default, its three spellings in any letter case, the override, and
// the errors for a misspelt value or key.
#include "config/config_overrides.hpp"
#include "config_test_support.hpp"

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using dl::DeviceResidency;
using dl::testing::kNetwork;
using dl::testing::load;
using dl::testing::load_error;

TEST_CASE("data.deviceResident defaults to auto and reads auto, always, never",
          "[config][device_resident]") {
  CHECK(load(kNetwork).data.deviceResident == DeviceResidency::kAuto);
  CHECK(dl::Config().data.deviceResident == DeviceResidency::kAuto);
  CHECK(load("data: {deviceResident: auto}\n" + kNetwork).data.deviceResident ==
        DeviceResidency::kAuto);
  CHECK(load("data: {deviceResident: always}\n" + kNetwork).data.deviceResident ==
        DeviceResidency::kAlways);
  CHECK(load("data: {deviceResident: NEVER}\n" + kNetwork).data.deviceResident ==
        DeviceResidency::kNever);
}

TEST_CASE("data.deviceResident: a bad value names the key and the choices",
          "[config][device_resident]") {
  const std::string close = load_error("data:\n  deviceResident: allways\n" + kNetwork);
  CHECK_THAT(close, StartsWith("t.yaml:2:19: "));
  CHECK_THAT(close, Contains("unknown device residency 'allways' for data.deviceResident"));
  CHECK_THAT(close, Contains("did you mean 'always'?"));

  const std::string far = load_error("data:\n  deviceResident: sometimes\n" + kNetwork);
  CHECK_THAT(far, Contains("use one of: auto, always, never"));

  // A boolean is not one of the choices: yes/no would hide whether auto was meant.
  CHECK_THAT(load_error("data:\n  deviceResident: true\n" + kNetwork),
             Contains("data.deviceResident"));

  const std::string key = load_error("data:\n  deviceResidnet: always\n" + kNetwork);
  CHECK_THAT(key, Contains("unknown key 'deviceResidnet' in data"));
  CHECK_THAT(key, Contains("did you mean 'deviceResident'?"));
}

TEST_CASE("cuda.nccl defaults to auto, reads always, and names the choices when misspelt",
          "[config][nccl]") {
  CHECK(load(kNetwork).cuda.nccl == dl::NcclUsage::kAuto);
  CHECK(load("cuda: {nccl: always}\n" + kNetwork).cuda.nccl == dl::NcclUsage::kAlways);
  const std::string bad = load_error("cuda:\n  nccl: allways\n" + kNetwork);
  CHECK_THAT(bad, StartsWith("t.yaml:2:9: "));
  CHECK_THAT(bad, Contains("cuda.nccl"));
  CHECK_THAT(bad, Contains("did you mean 'always'?"));
}
