#include <unistd.h>

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/build_info.hpp"

namespace dl {

namespace {

std::vector<std::string>& stored_command_line() {
  static std::vector<std::string> words;
  return words;
}

const char* yes_no(bool value) {
  return value ? "yes" : "no";
}

}  // namespace

std::string version_text() {
  const BuildInfo& b = build_info();
  return fmt::format(
      "dl-train {}\ngit commit: {}\nbuild: {}, {}\nCUDA backend: {}\nMPI: {}\nBLAS: {}\n"
      "ONNX export: {}\nTensorBoard event files: {}\n",
      b.version, b.git_commit, b.build_type, b.compiler, yes_no(b.cuda), yes_no(b.mpi), b.blas,
      yes_no(b.onnx), yes_no(b.tensorboard));
}

void set_command_line(int argc, const char* const* argv) {
  stored_command_line().assign(argv, argv + argc);
}

const std::vector<std::string>& command_line() {
  return stored_command_line();
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

Json build_and_host_json() {
  const BuildInfo& b = build_info();
  Json json = Json::object();
  json["version"] = b.version;
  json["git_commit"] = b.git_commit;
  Json build = Json::object();
  build["type"] = b.build_type;
  build["compiler"] = b.compiler;
  build["cuda"] = b.cuda;
  build["mpi"] = b.mpi;
  build["blas"] = b.blas;
  build["onnx"] = b.onnx;
  build["tensorboard"] = b.tensorboard;
  json["build"] = std::move(build);
  json["host"] = host_name();
  json["cpu"] = cpu_model();
  json["cpus_online"] = sysconf(_SC_NPROCESSORS_ONLN);
  json["command_line"] = command_line();
  return json;
}

}  // namespace dl
