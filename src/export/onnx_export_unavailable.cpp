// The ONNX exporter of a dl-train built without protobuf (-Donnx=disabled, or libprotobuf-dev /
// protobuf-compiler missing at configure time): `export --format onnx` says how to get it.
#include "core/error.hpp"
#include "export/onnx_export.hpp"

namespace dl {

bool onnx_export_available() {
  return false;
}

std::string onnx_model_bytes(const Config& /*config*/, const std::vector<float>& /*parameters*/,
                             const std::vector<float>& /*mean*/,
                             const std::vector<float>& /*stddev*/,
                             const std::vector<std::string>& /*class_names*/) {
  throw ConfigError(
      "export --format onnx: this dl-train was built without protobuf; install libprotobuf-dev "
      "and protobuf-compiler (scripts/install_packages.sh) and rebuild (meson setup --reconfigure "
      "build -Donnx=auto)");
}

}  // namespace dl
