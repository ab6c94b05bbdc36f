// Loading a run's configuration: YAML text -> --set overrides -> validation -> a typed Config
// with every default filled in. The only reader of raw YAML in dl-train.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/config.hpp"

namespace dl {

// Parses, defaults and validates the file at `path` after applying `overrides` ("key.path=value",
// as given to --set, in order). Throws ConfigError (exit code 2) with
// "file:line:column: what is wrong; what to write".
//
// The result is resolved: updater.learningRate holds the effective rate (the updater's default when
// none is given), and each layer has its name ("convolution0" unless given), its inferred nIn and,
// for convolution/dense/output layers, its effective activation and weightInit.
Config load_config_file(const std::string& path, const std::vector<std::string>& overrides = {});

// The same for YAML held in memory; `source_name` stands for the file in messages and becomes
// Config::sourcePath.
Config load_config_string(const std::string& yaml_text, const std::string& source_name,
                          const std::vector<std::string>& overrides = {});

// The resolved config as YAML: every key, defaults filled in, enums spelled as in YAML, the
// learning rate as its effective value, keys in a stable order. Loading it again gives an equal
// Config (except sourcePath and the layers' source locations).
std::string dump_config_yaml(const Config& config);

// dump_config_yaml's values by dotted path ("updater.learningRate", "layers.0.dense.nOut"), a
// null one as "~": for naming the keys in which two configs differ.
std::map<std::string, std::string> flat_config(const Config& config);
// The same of a dump's text (a checkpoint's copy); throws YAML::Exception on text that is not.
std::map<std::string, std::string> flat_config_dump(const std::string& dump);

// A stable 64-bit hash (FNV-1a) of dump_config_yaml's text: equal configs hash equal whatever
// file they came from; checkpoints and ranks compare it.
std::uint64_t config_hash(const Config& config);

}  // namespace dl
