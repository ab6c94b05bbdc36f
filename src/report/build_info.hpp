// What this binary is and where it runs, for `dl-train --version`, summary.json and the report:
// the version and git commit it was built from, its build options, and the machine and command
// line of this process.
#pragma once

#include <string>
#include <vector>

#include "core/node_identity.hpp"
#include "io/json_writer.hpp"

namespace dl {

struct BuildInfo {
  std::string version;     // meson.build's project version
  std::string git_commit;  // `git describe --always --dirty` at build time; "unknown" outside git
  std::string build_type;  // meson buildtype
  bool cuda = false, mpi = false, onnx = false, tensorboard = false;
  std::string blas;      // openblas or reference
  std::string compiler;  // e.g. "gcc 12.2.0"
};

const BuildInfo& build_info();

// The text of `dl-train --version`: the version line, then one line per build option.
std::string version_text();

// Kept by main() so every output can name the command that made it.
void set_command_line(int argc, const char* const* argv);
const std::vector<std::string>& command_line();

// host_name() is the core's (core/node_identity.hpp).
std::string cpu_model();  // /proc/cpuinfo's first "model name", or "unknown"

// Version, commit, build options, host, CPU and command line as one JSON object.
Json build_and_host_json();

}  // namespace dl
