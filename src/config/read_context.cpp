#include "config/read_context.hpp"

#include <utility>

#include "core/error.hpp"

namespace dl {

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

ReadContext::ReadContext(std::string source, std::vector<OverrideOrigin> overrides)
    : source_(std::move(source)), overrides_(std::move(overrides)) {}

SourceLocation ReadContext::location(const std::string& path, const YAML::Node& node) const {
  // The last override that wrote this path (or a section holding it) wins, as it did when the
  // overrides were applied in order.
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    const std::string& written = it->path;
    const bool at_or_below = path == written || (path.size() > written.size() &&
                                                 path.compare(0, written.size(), written) == 0 &&
                                                 path[written.size()] == '.');
    if (at_or_below) return SourceLocation{it->text, 0, 0};
  }
  // An empty value's mark is where the parser met the next token, lines below the key when
  // comments follow: its key's place, remembered when the key was read, is the one to name.
  if (node.IsDefined() && node.IsNull()) {
    const auto key = written_.find(path);
    if (key != written_.end()) return key->second;
  }
  SourceLocation where{source_, 0, 0};
  if (node.IsDefined()) {
    const YAML::Mark mark = node.Mark();
    if (!mark.is_null()) {
      where.line = mark.line + 1;
      where.column = mark.column + 1;
    }
  }
  return where;
}

void ReadContext::remember(const std::string& path, const YAML::Node& node) {
  written_[path] = location(path, node);
}

SourceLocation ReadContext::remembered(const std::string& path) const {
  const auto it = written_.find(path);
  return it != written_.end() ? it->second : SourceLocation{source_, 0, 0};
}

void ReadContext::fail(const std::string& path, const YAML::Node& node, const std::string& what,
                       const std::string& fix) const {
  fail_at(location(path, node), what, fix);
}

void fail_at(const SourceLocation& where, const std::string& what, const std::string& fix) {
  throw ConfigError(where.str() + ": " + what + "; " + fix);
}

}  // namespace dl
