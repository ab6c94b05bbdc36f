#include <cerrno>
#include <cstring>
#include <string>

#include <catch2/catch.hpp>

#include "checkpoint_fixtures.hpp"
#include "core/error.hpp"
#include "core/random.hpp"
#include "file_size_limit.hpp"
#include "io/checkpoint.hpp"
#include "io/network_signature.hpp"
#include "temp_directory.hpp"

namespace dl {
namespace {

using test::Bytes;
using test::TempDirectory;

TEST_CASE("checkpoint round trip keeps every field bit for bit", "[io][checkpoint]") {
  TempDirectory dir;
  const CheckpointState original = test::sample_state();
  const std::string path = dir.file("state.dlck");
  write_checkpoint(path, original);
  test::require_equal(read_checkpoint(path), original);
}

TEST_CASE("checkpoint round trip of an empty state", "[io][checkpoint]") {
  TempDirectory dir;
  CheckpointState empty;
  empty.kind = "model";
  const std::string path = dir.file("empty.dlck");
  write_checkpoint(path, empty);
  const CheckpointState back = read_checkpoint(path);
  test::require_equal(back, empty);
  REQUIRE(back.parameters.empty());
  REQUIRE(back.updater_states.empty());
}

TEST_CASE("checkpoint round trip of a large parameter vector", "[io][checkpoint]") {
  constexpr std::size_t kParameters = std::size_t{1} << 20;
  constexpr int kWorkers = 2;
  TempDirectory dir;
  CheckpointState state = test::sample_state();
  RandomStream random(7, 0);
  state.parameters.resize(kParameters);
  state.network_signature = "dense:" + std::to_string(kParameters);
  for (float& p : state.parameters) p = static_cast<float>(random.normal());
  state.updater_states.assign(kWorkers, std::vector<float>(2 * kParameters));
  for (auto& worker : state.updater_states) {
    for (float& v : worker) v = random.uniform();
  }
  const std::string path = dir.file("large.dlck");
  write_checkpoint(path, state);
  test::require_equal(read_checkpoint(path), state);
}

TEST_CASE("a parameter section of another length than the file's signature counts is damage",
          "[io][checkpoint]") {
  TempDirectory dir;
  const auto file_with = [](const std::string& signature, int floats) {
    Bytes parameters;
    for (int i = 0; i < floats; ++i) parameters.f32(0.5f);
    return test::file_header(1, 4) + test::section("META", test::meta_payload(signature)) +
           test::section("PARM", parameters.str()) + test::section("UPDT", Bytes().u64(0).str()) +
           test::section("RNGC", Bytes().u64(0).str());
  };
  const std::string path = dir.file("short.dlck");
  // Each checksum holds: only the sections' disagreement tells the damage. It was read as a
  // model of another network, blaming the config.
  test::write_bytes(path, file_with("convolution:4,subsampling:0,output:3", 6));
  REQUIRE_THROWS_WITH(read_checkpoint(path),
                      Catch::Contains("section 'PARM' holds 6 parameters, but the file's own "
                                      "network signature counts 7; the file is damaged"));
  test::write_bytes(path, file_with("convolution:4,subsampling:0,output:3", 7));
  REQUIRE(read_checkpoint(path).parameters.size() == 7);
  REQUIRE(signature_parameter_count("dense") == std::nullopt);
  REQUIRE(signature_parameter_count("dense:x") == std::nullopt);
  REQUIRE(signature_parameter_count("") == std::nullopt);
  REQUIRE(signature_parameter_count("add:0") == 0u);
}

TEST_CASE("a file built from the documented format reads back", "[io][checkpoint]") {
  TempDirectory dir;
  const std::string parameters = Bytes().f32(1.0f).f32(-2.5f).str();
  const std::string updater =
      Bytes().u64(2).u64(1).f32(0.5f).u64(0).str();  // two workers: {0.5}, {}
  const std::string rng = Bytes().u64(2).u64(11).u64(12).str();
  // Sections in an order other than the writer's: the format allows any order.
  const std::string file =
      test::file_header(1, 4) + test::section("RNGC", rng) + test::section("PARM", parameters) +
      test::section("META", test::meta_payload()) + test::section("UPDT", updater);
  const std::string path = dir.file("handmade.dlck");
  test::write_bytes(path, file);

  const CheckpointState s = read_checkpoint(path);
  REQUIRE(s.kind == "model");
  REQUIRE(s.config_hash == 42);
  REQUIRE(s.network_signature == "dense");
  REQUIRE(s.epoch == 1);
  REQUIRE(s.round_in_epoch == 2);
  REQUIRE(s.iteration == 3);
  REQUIRE(s.metadata == std::map<std::string, std::string>{{"k", "v"}});
  REQUIRE(s.parameters == std::vector<float>{1.0f, -2.5f});
  REQUIRE(s.updater_states == std::vector<std::vector<float>>{{0.5f}, {}});
  REQUIRE(s.rng_counters == std::vector<std::uint64_t>{11, 12});
}

TEST_CASE("the writer produces the documented header", "[io][checkpoint]") {
  TempDirectory dir;
  const std::string path = dir.file("state.dlck");
  write_checkpoint(path, test::sample_state());
  const std::string bytes = test::read_bytes(path);
  REQUIRE(bytes.substr(0, 20) == test::file_header(1, 4));
}

TEST_CASE("a failed checkpoint write leaves the old file and no temporary file",
          "[io][checkpoint]") {
  constexpr rlim_t kLimitBytes = 4096;
  TempDirectory dir;
  const std::string path = dir.file("state.dlck");
  const CheckpointState old_state = test::sample_state();
  write_checkpoint(path, old_state);
  const std::string old_bytes = test::read_bytes(path);
  REQUIRE(old_bytes.size() < kLimitBytes);

  CheckpointState bigger = test::sample_state();
  bigger.parameters.assign(10 * kLimitBytes, 0.5f);
  // Exit codes of the child: 0 = IoError naming the path and EFBIG's text.
  const std::string outcome = test::run_with_file_size_limit(kLimitBytes, [&] {
    try {
      write_checkpoint(path, bigger);
      return 1;
    } catch (const IoError& e) {
      const std::string message = e.what();
      const bool names_path = message.find(path) != std::string::npos;
      const bool names_reason = message.find(std::strerror(EFBIG)) != std::string::npos;
      return names_path && names_reason ? 0 : 2;
    }
  });
  REQUIRE(outcome == "exit 0");
  REQUIRE(test::read_bytes(path) == old_bytes);
  test::require_equal(read_checkpoint(path), old_state);
  REQUIRE(dir.entries() == std::vector<std::string>{"state.dlck"});
}

TEST_CASE("writing a checkpoint into a missing directory names the path", "[io][checkpoint]") {
  TempDirectory dir;
  const std::string path = dir.file("missing/state.dlck");
  try {
    write_checkpoint(path, test::sample_state());
    FAIL("no IoError");
  } catch (const IoError& e) {
    REQUIRE_THAT(e.what(), Catch::Contains(path));
    REQUIRE_THAT(e.what(), Catch::Contains(std::strerror(ENOENT)));
  }
  REQUIRE(dir.entries().empty());
}

TEST_CASE("reading a missing checkpoint is a CheckpointError naming it", "[io][checkpoint]") {
  TempDirectory dir;
  const std::string path = dir.file("nothing.dlck");
  REQUIRE_THROWS_WITH(read_checkpoint(path), Catch::Contains(path));
  REQUIRE_THROWS_AS(read_checkpoint(path), CheckpointError);
}

}  // namespace
}  // namespace dl
