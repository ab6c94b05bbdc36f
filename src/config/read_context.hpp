// Where each value being read came from, and how a problem with it is reported: every config
// error names the file, line and column of the offending YAML (or the --set override that wrote
// it), what is wrong and what to write instead.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config.hpp"

namespace dl {

// A --set override applied to the YAML tree: values at `path` or below it came from `text`.
struct OverrideOrigin {
  std::string path;  // dotted, list items by index and without the layer type: "layers.0.nOut"
  std::string text;  // as the user wrote it, prefixed: "--set layers.0.nOut=32"
};

// Joins a dotted key path: ("", "a") -> "a", ("a", "b") -> "a.b".
std::string join_path(const std::string& parent, const std::string& key);

class ReadContext {
 public:
  // `text` is the config as read from `source`, for places the YAML reader does not mark.
  ReadContext(std::string source, std::string text, std::vector<OverrideOrigin> overrides);

  const std::string& source() const { return source_; }

  // The location of the value at `path`, held by `node`.
  SourceLocation location(const std::string& path, const YAML::Node& node) const;

  // The location of the section at `path` (a layer), with the --set overrides that changed keys
  // inside it: an error about the whole section then names what the file does not show.
  SourceLocation section_location(const std::string& path, const YAML::Node& node) const;

  // Records where the key at `path` was written, for checks that span several keys.
  void remember(const std::string& path, const YAML::Node& node);
  // Where `path` was written; the source alone when it was not (a default).
  SourceLocation remembered(const std::string& path) const;
  // Where the first of `paths` that was written was: a check between keys, one of them perhaps
  // left at its default, names a line the user wrote. The source alone when none was written.
  SourceLocation remembered(std::initializer_list<std::string> paths) const;

  // The dotted paths of every key the schema has (key_paths of the config's table), for the
  // messages about a key written at the wrong level; none until set.
  void set_schema_keys(std::vector<std::string> paths) { schema_keys_ = std::move(paths); }
  // The schema's paths whose last part is `key` ("updater.learningRate" for "learningRate").
  std::vector<std::string> schema_homes(const std::string& key) const;

  // Throws ConfigError "<location>: <what>; <fix>".
  [[noreturn]] void fail(const std::string& path, const YAML::Node& node, const std::string& what,
                         const std::string& fix) const;

 private:
  std::string source_;
  std::string text_;
  std::vector<OverrideOrigin> overrides_;
  std::map<std::string, SourceLocation> written_;
  std::vector<std::string> schema_keys_;
};

[[noreturn]] void fail_at(const SourceLocation& where, const std::string& what,
                          const std::string& fix);

}  // namespace dl
