#include "cli/json_output.hpp"

#include <iostream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/saved_model.hpp"
#include "config/config_loader.hpp"
#include "core/hash.hpp"
#include "io/atomic_file.hpp"
#include "io/json_writer.hpp"
#include "io/run_files.hpp"
#include "nn/model.hpp"
#include "report/build_info.hpp"
#include "report/report_html.hpp"
#include "report/run_record.hpp"

namespace dl {

namespace {

// A YAML node as JSON; scalars stay strings except numbers and booleans as YAML reads them.
Json yaml_to_json(const YAML::Node& node) {
  if (node.IsMap()) {
    Json object = Json::object();
    for (const auto& entry : node)
      object[entry.first.as<std::string>()] = yaml_to_json(entry.second);
    return object;
  }
  if (node.IsSequence()) {
    Json array = Json::array();
    for (const auto& item : node) array.push_back(yaml_to_json(item));
    return array;
  }
  if (!node.IsScalar()) return Json();
  const std::string text = node.Scalar();
  if (node.Tag() != "!") {  // a quoted scalar is a string whatever it holds
    if (text == "true" || text == "false") return text == "true";
    try {
      std::size_t used = 0;
      const long long whole = std::stoll(text, &used);
      if (used == text.size()) return whole;
      const double real = std::stod(text, &used);
      if (used == text.size()) return real;
    } catch (const std::exception&) {
    }
  }
  return text;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

void print(const Json& document) {
  std::cout << json_document(document) << std::flush;
}

}  // namespace

void print_validate_json(const std::string& config_path, const Config& config,
                         const std::string& data) {
  Json out = versioned_json_object();
  out["config"] = config_path;
  out["valid"] = true;
  out["config_hash"] = fmt::format("{:016x}", config_hash(config));
  out["resolved"] = yaml_to_json(YAML::Load(dump_config_yaml(config)));
  out["layer_table"] = lines_of(layer_table(config));
  out["data_checked"] = !data.empty();
  out["data"] = data.empty() ? Json() : Json(data);
  print(out);
}

void print_eval_json(const std::string& model_path, const CheckpointState& state,
                     const std::string& test_set, std::size_t examples,
                     const EvaluationResult& result) {
  Json out = versioned_json_object();
  out["model"] = model_path;
  out["kind"] = state.kind;
  out["epoch"] = state.epoch;
  out["iteration"] = state.iteration;
  out["test_set"] = test_set;
  out["examples"] = examples;
  out["mean_loss"] = result.mean_loss;
  Json evaluation;
  out["evaluation"] = parse_json(result.evaluation.to_json(), evaluation) ? evaluation : Json();
  print(out);
}

void print_inspect_json(const std::string& model_path, const CheckpointState& state) {
  Json out = versioned_json_object();
  out["file"] = model_path;
  out["kind"] = state.kind;
  out["epoch"] = state.epoch;
  out["round_in_epoch"] = state.round_in_epoch;
  out["iteration"] = state.iteration;
  out["network"] = state.network_signature;
  out["parameters"] = state.parameters.size();
  out["parameter_hash"] = fmt::format(
      "{:016x}", fnv1a(state.parameters.data(), state.parameters.size() * sizeof(float)));
  out["updater_states"] = state.updater_states.size();
  Json metadata = Json::object();
  for (const auto& [key, value] : state.metadata) metadata[key] = value;
  out["metadata"] = std::move(metadata);
  print(out);
}

void print_info_json(const ThreadBudget& cpus, const std::string& blas,
                     const BackendAvailability& available) {
  Json out = versioned_json_object();
  out.update(build_and_host_json());
  Json cpu = Json::object();
  cpu["available"] = true;
  cpu["cores"] = cpus.cores;
  cpu["cores_from"] = cpus.cores_from;
  cpu["blas"] = blas;
  Json cuda = Json::object();
  cuda["built"] = available.cuda_built;
  Json devices = Json::array();
  for (const DeviceInfo& d : available.devices) {
    Json device = Json::object();
    device["index"] = d.index;
    device["name"] = d.name;
    device["memory_bytes"] = d.memory_bytes;
    device["compute_capability"] = fmt::format("{}.{}", d.compute_major, d.compute_minor);
    devices.push_back(std::move(device));
  }
  cuda["devices"] = std::move(devices);
  cuda["libraries"] = available.library_versions;
  Json backends = Json::object();
  backends["cpu"] = std::move(cpu);
  backends["cuda"] = std::move(cuda);
  out["backends"] = std::move(backends);
  print(out);
}

int run_report(const std::vector<std::string>& run_directories, const std::string& output) {
  std::vector<RunRecord> runs;
  for (const std::string& dir : run_directories) {
    runs.push_back(read_run_record(dir));
    for (const std::string& what : runs.back().left_out)
      std::cerr << "dl-train: note: " << quoted_path(dir) << "/" << what
                << "; left out of the report\n";
  }
  std::string path = output;
  if (path.empty())
    path = runs.size() == 1 ? run_report_path(run_directories.front()) : run_files::kReport;
  std::vector<NamedInput> inputs;
  for (const std::string& dir : run_directories)
    for (std::string& file : run_record_files(dir)) inputs.push_back({"a run's log", file});
  // Another file of a run (its model.dlm, a checkpoint, the marker) is refused: a page written
  // over it destroyed the trained model.
  refuse_command_output(path, "--output", inputs, run_files::kReport);
  // A page the user named is written as a redirection would; the default one, in the run
  // directory (or the working directory), is dl-train's own file and never written through.
  if (output.empty())
    write_file_atomically(path, render_report(runs));
  else
    write_named_output(path, render_report(runs));
  std::cout << "report: " << path << "\n";
  return 0;
}

}  // namespace dl
