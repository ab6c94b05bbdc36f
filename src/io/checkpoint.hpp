// Checkpoint and model files: everything needed to resume a run exactly (or, for a "model", to
// use the trained network), versioned, checksummed and written atomically.
//
// Format version 1 (docs/CHECKPOINT_FORMAT.md has the full description). Little-endian
// throughout; strings are a u64 byte count then the bytes; float arrays are raw IEEE-754 binary32.
//
//   file header (20 bytes)
//     magic          8 bytes  "DLTRAIN\0"
//     format version u32      1
//     section count  u32      4
//     header CRC     u32      CRC-32 (zlib) of the 16 bytes before it
//   then `section count` sections, each:
//     tag            4 bytes  "META", "PARM", "UPDT" or "RNGC"
//     payload length u64
//     CRC            u32      CRC-32 of tag, payload length and payload
//     payload        `payload length` bytes
//   and nothing after the last section.
//
//   META: kind (string), config_hash (u64), network_signature (string), epoch (i64),
//         round_in_epoch (i64), iteration (i64), metadata entry count (u64), then per entry
//         key (string) and value (string)
//   PARM: the parameters: payload length / 4 floats
//   UPDT: worker count (u64), then per worker: float count (u64) and the floats
//   RNGC: counter count (u64), then the counters (u64 each)
//
// Each section must appear exactly once, in any order. With the header CRC, the per-section CRCs
// (which also cover each section's tag and length), the section count and the "nothing after the
// last section" rule, any truncation and any corrupted byte is detected.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dl {

inline constexpr std::uint32_t kCheckpointFormatVersion = 1;
inline constexpr const char* kCheckpointKind = "checkpoint";
inline constexpr const char* kModelKind = "model";

struct CheckpointState {
  std::string kind = kCheckpointKind;  // kCheckpointKind or kModelKind
  std::uint64_t config_hash = 0;       // hash of the resolved config
  // e.g. "convolution:520,subsampling:0,...": the caller compares it with its network on load.
  std::string network_signature;
  std::int64_t epoch = 0;                          // epoch in progress (0-based)
  std::int64_t round_in_epoch = 0;                 // next round to run within that epoch
  std::int64_t iteration = 0;                      // global count of optimizer steps so far
  std::vector<float> parameters;                   // the flat parameter buffer (averaged state)
  std::vector<std::vector<float>> updater_states;  // one per worker (identical when averaged)
  std::vector<std::uint64_t> rng_counters;         // per worker / stream
  std::map<std::string, std::string> metadata;     // free-form: best score, dl-train version, ...
};

// Writes `state` to `path` atomically (see write_file_atomically): on failure an existing file at
// `path` is left as it was, no temporary file remains, and IoError names the path and the reason.
void write_checkpoint(const std::string& path, const CheckpointState& state);

// Reads and verifies a file written by write_checkpoint. Throws CheckpointError naming the path
// and what is wrong: not a dl-train file, unsupported format version, truncated (which section,
// bytes expected and found), checksum mismatch (which section), malformed or absurd sizes (refused
// before allocating anything for them).
CheckpointState read_checkpoint(const std::string& path);

}  // namespace dl
