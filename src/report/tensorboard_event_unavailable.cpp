// Built without protobuf: output.tensorboard is refused with how to build it in.
#include "core/error.hpp"
#include "report/tensorboard_writer.hpp"

namespace dl {

namespace {

[[noreturn]] void refuse() {
  throw ConfigError(
      "output.tensorboard: this dl-train was built without protobuf; install libprotobuf-dev and "
      "protobuf-compiler and rebuild (meson setup --reconfigure)");
}

}  // namespace

bool tensorboard_built() {
  return false;
}

std::string encode_file_version_event(double) {
  refuse();
}

std::string encode_scalars_event(double, std::int64_t, const std::vector<Scalar>&) {
  refuse();
}

std::string encode_session_start_event(double, std::int64_t) {
  refuse();
}

}  // namespace dl
