// Every way a checkpoint file can be damaged must end in a CheckpointError: never a crash, a
// std::bad_alloc or a state read from bad bytes.
#include <unistd.h>

#include <cstdint>
#include <string>

#include <catch2/catch.hpp>

#include "checkpoint_fixtures.hpp"
#include "core/error.hpp"
#include "io/checkpoint.hpp"
#include "temp_directory.hpp"

namespace dl {
namespace {

using test::Bytes;
using test::TempDirectory;

constexpr int kBitsPerByte = 8;
constexpr std::size_t kFileHeaderBytes = 20;

// Writes `bytes` to a file and reads it; returns the CheckpointError's message, or "" when the
// read succeeded (any other exception fails the test).
std::string read_error(const TempDirectory& dir, const std::string& bytes) {
  const std::string path = dir.file("damaged.dlck");
  test::write_bytes(path, bytes);
  try {
    read_checkpoint(path);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

std::string written_bytes(const TempDirectory& dir, const CheckpointState& state) {
  const std::string path = dir.file("original.dlck");
  write_checkpoint(path, state);
  return test::read_bytes(path);
}

TEST_CASE("every flipped bit of a small checkpoint is detected", "[io][corruption]") {
  TempDirectory dir;
  const std::string original = written_bytes(dir, test::sample_state());
  std::size_t undetected = 0;
  for (std::size_t byte = 0; byte < original.size(); ++byte) {
    for (int bit = 0; bit < kBitsPerByte; ++bit) {
      std::string damaged = original;
      damaged[byte] = static_cast<char>(damaged[byte] ^ (1 << bit));
      if (read_error(dir, damaged).empty()) {
        ++undetected;
        UNSCOPED_INFO("undetected: byte " << byte << " bit " << bit);
      }
    }
  }
  REQUIRE(undetected == 0);
}

TEST_CASE("damaged bytes throughout a larger checkpoint are detected", "[io][corruption]") {
  constexpr std::size_t kStride = 13;
  TempDirectory dir;
  CheckpointState state = test::sample_state();
  state.parameters.assign(4096, 0.25f);
  state.updater_states.assign(2, std::vector<float>(4096, -1.0f));
  const std::string original = written_bytes(dir, state);
  std::size_t undetected = 0;
  for (std::size_t byte = 0; byte < original.size(); byte += kStride) {
    std::string damaged = original;
    damaged[byte] = static_cast<char>(~damaged[byte]);
    if (read_error(dir, damaged).empty()) ++undetected;
  }
  REQUIRE(undetected == 0);
}

TEST_CASE("a checkpoint truncated at any length is detected", "[io][corruption]") {
  TempDirectory dir;
  const std::string original = written_bytes(dir, test::sample_state());
  REQUIRE_THAT(read_error(dir, ""), Catch::Contains("empty"));
  for (std::size_t length = 1; length < original.size(); ++length) {
    INFO("truncated to " << length << " of " << original.size() << " bytes");
    REQUIRE_THAT(read_error(dir, original.substr(0, length)), Catch::Contains("truncated"));
  }
}

TEST_CASE("a truncated section names the section and the byte counts", "[io][corruption]") {
  TempDirectory dir;
  CheckpointState state = test::sample_state();
  state.parameters.assign(100, 1.0f);
  const std::string original = written_bytes(dir, state);
  // The writer's order is META then PARM; cut PARM's 400-byte payload to 100 bytes.
  const std::size_t parm_at = original.find("PARM");
  REQUIRE(parm_at != std::string::npos);
  const std::size_t payload_at = parm_at + 16;
  const std::string message = read_error(dir, original.substr(0, payload_at + 100));
  REQUIRE_THAT(message, Catch::Contains("truncated") && Catch::Contains("'PARM'") &&
                            Catch::Contains("400") && Catch::Contains("100"));
}

TEST_CASE("bytes after the last section are detected", "[io][corruption]") {
  TempDirectory dir;
  const std::string original = written_bytes(dir, test::sample_state());
  REQUIRE_THAT(read_error(dir, original + std::string(1, '\0')),
               Catch::Contains("after the last section"));
}

TEST_CASE("a file that is not a checkpoint is named as such", "[io][corruption]") {
  TempDirectory dir;
  REQUIRE_THAT(read_error(dir, "epoch,iteration,score\n0,10,2.30\n"),
               Catch::Contains("not a dl-train"));
  REQUIRE_THAT(read_error(dir, "PK"), Catch::Contains("not a dl-train"));
  std::string wrong_magic = written_bytes(dir, test::sample_state());
  wrong_magic[0] = 'X';
  REQUIRE_THAT(read_error(dir, wrong_magic), Catch::Contains("not a dl-train"));
}

TEST_CASE("a newer format version is reported with both versions", "[io][corruption]") {
  TempDirectory dir;
  const std::string original = written_bytes(dir, test::sample_state());
  // A future writer would give its version a valid header checksum.
  const std::string newer = test::file_header(2, 4) + original.substr(kFileHeaderBytes);
  const std::string message = read_error(dir, newer);
  REQUIRE_THAT(message, Catch::Contains("format version 2") && Catch::Contains("version 1") &&
                            Catch::Contains("newer"));
  REQUIRE_THAT(read_error(dir, test::file_header(0, 4) + original.substr(kFileHeaderBytes)),
               Catch::Contains("format version 0"));
}

TEST_CASE("a checksum mismatch names the section", "[io][corruption]") {
  TempDirectory dir;
  std::string damaged = written_bytes(dir, test::sample_state());
  const std::size_t rngc_at = damaged.find("RNGC");
  REQUIRE(rngc_at != std::string::npos);
  damaged[rngc_at + 16] = static_cast<char>(damaged[rngc_at + 16] ^ 1);  // first payload byte
  REQUIRE_THAT(read_error(dir, damaged),
               Catch::Contains("checksum mismatch") && Catch::Contains("'RNGC'"));
}

// Section lengths and counts near 2^64 would exhaust memory if trusted: each must be refused as
// a CheckpointError (a std::bad_alloc or length_error escaping would fail REQUIRE_THROWS_AS).
TEST_CASE("absurd sizes are refused before allocating", "[io][corruption]") {
  constexpr std::uint64_t kAbsurd = std::uint64_t{1} << 62;
  TempDirectory dir;
  const std::string meta = test::section("META", test::meta_payload());
  const std::string parm = test::section("PARM", Bytes().f32(1.0f).str());
  const std::string updt = test::section("UPDT", Bytes().u64(0).str());
  const std::string rngc = test::section("RNGC", Bytes().u64(0).str());
  const std::string header = test::file_header(1, 4);
  REQUIRE(read_error(dir, header + meta + parm + updt + rngc).empty());  // the valid baseline

  SECTION("section lengths") {
    REQUIRE_THAT(read_error(dir, header + test::section("PARM", Bytes().f32(1.0f).str(), kAbsurd)),
                 Catch::Contains("truncated"));
    REQUIRE_THAT(read_error(dir, header + test::section("META", test::meta_payload(), kAbsurd)),
                 Catch::Contains("truncated"));
    REQUIRE_THAT(read_error(dir, header + test::section("UPDT", "", ~std::uint64_t{0})),
                 Catch::Contains("truncated"));
  }
  SECTION("counts inside sections with valid checksums") {
    const std::string many_workers = test::section("UPDT", Bytes().u64(kAbsurd).str());
    const std::string long_state = test::section("UPDT", Bytes().u64(1).u64(kAbsurd).f32(0).str());
    const std::string many_counters = test::section("RNGC", Bytes().u64(kAbsurd).u64(1).str());
    const std::string long_string = test::section("META", Bytes().u64(kAbsurd).raw("model").str());
    const std::string many_entries = test::section(
        "META", Bytes().str("model").u64(42).str("").u64(0).u64(0).u64(0).u64(kAbsurd).str());
    REQUIRE_THAT(read_error(dir, header + meta + parm + many_workers + rngc),
                 Catch::Contains("malformed"));
    REQUIRE_THAT(read_error(dir, header + meta + parm + long_state + rngc),
                 Catch::Contains("malformed"));
    REQUIRE_THAT(read_error(dir, header + meta + parm + updt + many_counters),
                 Catch::Contains("malformed"));
    REQUIRE_THAT(read_error(dir, header + long_string + parm + updt + rngc),
                 Catch::Contains("malformed"));
    REQUIRE_THAT(read_error(dir, header + many_entries + parm + updt + rngc),
                 Catch::Contains("malformed"));
  }
  SECTION("section count") {
    REQUIRE_THAT(read_error(dir, test::file_header(1, 0xFFFFFFFFu) + meta),
                 Catch::Contains("sections"));
  }
}

TEST_CASE("structurally wrong files with valid checksums are refused", "[io][corruption]") {
  TempDirectory dir;
  const std::string meta = test::section("META", test::meta_payload());
  const std::string parm = test::section("PARM", Bytes().f32(1.0f).str());
  const std::string updt = test::section("UPDT", Bytes().u64(0).str());
  const std::string rngc = test::section("RNGC", Bytes().u64(0).str());
  REQUIRE_THAT(read_error(dir, test::file_header(1, 3) + meta + parm + updt),
               Catch::Contains("'RNGC' is missing"));
  REQUIRE_THAT(read_error(dir, test::file_header(1, 5) + meta + parm + updt + rngc + rngc),
               Catch::Contains("twice"));
  REQUIRE_THAT(read_error(dir, test::file_header(1, 4) + meta + parm + updt +
                                   test::section("RNG\x01", Bytes().u64(0).str())),
               Catch::Contains("unknown section tag 'RNG\\x01'"));
  REQUIRE_THAT(
      read_error(dir, test::file_header(1, 4) + meta + test::section("PARM", "abc") + updt + rngc),
      Catch::Contains("whole number of floats"));
  const std::string bad_kind = test::section(
      "META", Bytes().str("weights").u64(1).str("").u64(0).u64(0).u64(0).u64(0).str());
  REQUIRE_THAT(read_error(dir, test::file_header(1, 4) + bad_kind + parm + updt + rngc),
               Catch::Contains("\"weights\""));
  const std::string extra_byte = test::section("RNGC", Bytes().u64(0).raw("x").str());
  REQUIRE_THAT(read_error(dir, test::file_header(1, 4) + meta + parm + updt + extra_byte),
               Catch::Contains("unexpected bytes"));
}

TEST_CASE("positions out of range behind valid checksums are refused", "[io][corruption]") {
  TempDirectory dir;
  for (const auto& [epoch, iteration] :
       {std::pair<std::int64_t, std::int64_t>{std::int64_t{1} << 31, 0},
        {std::int64_t{1} << 32, 0},
        {0, std::numeric_limits<std::int64_t>::max()}}) {
    CheckpointState state = test::sample_state();
    state.epoch = epoch;
    state.iteration = iteration;
    const std::string path = dir.file("far.dlck");
    write_checkpoint(path, state);
    CHECK_THROWS_WITH(read_checkpoint(path), Catch::Contains("position out of range"));
  }
}

TEST_CASE("a sparse file declaring a terabyte section is refused before allocating",
          "[io][corruption]") {
  TempDirectory dir;
  const std::uint64_t terabyte = std::uint64_t{1} << 40;
  const std::string head = test::file_header(1, 4) + test::section("META", test::meta_payload()) +
                           test::section("PARM", "", terabyte);
  const std::string path = dir.file("sparse.dlm");
  test::write_bytes(path, head);
  // The file system keeps the declared terabyte as a hole: a few KiB on disk.
  if (truncate(path.c_str(), static_cast<off_t>(head.size() + terabyte)) != 0) {
    WARN("this file system cannot hold a sparse 1 TiB file; skipped");
    return;
  }
  CHECK_THROWS_WITH(read_checkpoint(path),
                    Catch::Contains("section 'PARM' declares 1099511627776 bytes but only") &&
                        Catch::Contains("(a sparse file)"));
}

}  // namespace
}  // namespace dl
