// Shared by the checkpoint tests: a state with every field set, exact comparison, and an encoder
// written from docs/CHECKPOINT_FORMAT.md (not from the implementation) to craft files by hand.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "io/checkpoint.hpp"
#include "same_bits.hpp"

namespace dl::test {

inline CheckpointState sample_state() {
  CheckpointState s;
  s.kind = "checkpoint";
  s.config_hash = 0x0123456789ABCDEFull;
  s.network_signature = "convolution:2,subsampling:0,dense:3";  // counts the 5 parameters
  s.epoch = 3;
  s.round_in_epoch = 17;
  s.iteration = 12345;
  s.parameters = {1.5f, -0.0f, 1e-40f, std::numeric_limits<float>::infinity(), -2.0f};
  s.updater_states = {{0.1f, 0.2f}, {0.3f, 0.4f, 0.5f}, {}};
  s.rng_counters = {7, 0, std::numeric_limits<std::uint64_t>::max()};
  s.metadata = {{"bestScore", "0.25"}, {"version", "0.1.0"}, {"empty", ""}};
  return s;
}

using dl::testing::same_bits;  // -0.0 and 0.0 differ, as a resume must not change either

inline void require_equal(const CheckpointState& a, const CheckpointState& b) {
  REQUIRE(a.kind == b.kind);
  REQUIRE(a.config_hash == b.config_hash);
  REQUIRE(a.network_signature == b.network_signature);
  REQUIRE(a.epoch == b.epoch);
  REQUIRE(a.round_in_epoch == b.round_in_epoch);
  REQUIRE(a.iteration == b.iteration);
  REQUIRE(same_bits(a.parameters, b.parameters));
  REQUIRE(a.updater_states.size() == b.updater_states.size());
  for (std::size_t i = 0; i < a.updater_states.size(); ++i) {
    REQUIRE(same_bits(a.updater_states[i], b.updater_states[i]));
  }
  REQUIRE(a.rng_counters == b.rng_counters);
  REQUIRE(a.metadata == b.metadata);
}

// Little-endian bytes, as the format document describes them.
class Bytes {
 public:
  Bytes& u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) s_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return *this;
  }
  Bytes& u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) s_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return *this;
  }
  Bytes& str(const std::string& v) {
    u64(v.size());
    s_ += v;
    return *this;
  }
  Bytes& f32(float v) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    return u32(bits);
  }
  Bytes& raw(const std::string& v) {
    s_ += v;
    return *this;
  }
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

inline std::uint32_t crc_of(const std::string& bytes) {
  return static_cast<std::uint32_t>(
      crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

// Header: magic, version, section count, CRC of those 16 bytes.
inline std::string file_header(std::uint32_t version, std::uint32_t sections) {
  Bytes h;
  h.raw(std::string("DLTRAIN\0", 8)).u32(version).u32(sections);
  return h.str() + Bytes().u32(crc_of(h.str())).str();
}

// A section with its CRC over tag, length and payload; `length` overrides the real length.
inline std::string section(const std::string& tag, const std::string& payload,
                           std::uint64_t length) {
  Bytes head;
  head.raw(tag).u64(length);
  return head.str() + Bytes().u32(crc_of(head.str() + payload)).str() + payload;
}
inline std::string section(const std::string& tag, const std::string& payload) {
  return section(tag, payload, payload.size());
}

// META for kind "model", hash 42, `signature`, epoch 1, round 2, iteration 3, metadata
// {"k": "v"}. The default signature states no parameter count (an older file's form), so that
// any PARM section goes with it.
inline std::string meta_payload(const std::string& signature = "dense") {
  return Bytes()
      .str("model")
      .u64(42)
      .str(signature)
      .u64(1)
      .u64(2)
      .u64(3)
      .u64(1)
      .str("k")
      .str("v")
      .str();
}

}  // namespace dl::test
