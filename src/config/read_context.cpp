#include "config/read_context.hpp"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "config/text_match.hpp"
#include "core/error.hpp"

namespace dl {

std::string join_path(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

namespace {

// `line` without its comment ('#' at its start or after a blank) and trailing blanks (a CRLF
// file's '\r' among them). Quotes are not followed: a line ending an empty list item holds none.
std::string_view line_without_comment(std::string_view line) {
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) {
      line = line.substr(0, i);
      break;
    }
  }
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r'))
    line.remove_suffix(1);
  return line;
}

// An empty list item ('-' and nothing after it) is marked where the parser met the next token,
// a line or more below: its '-' is the last thing written before that place, past blank and
// comment lines. Nothing when something else is (a flow list's ',', a key, the value '~').
std::optional<SourceLocation> empty_item_dash(const std::string& source, std::string_view text,
                                              const YAML::Mark& mark) {
  std::vector<std::string_view> lines;
  for (std::size_t at = 0;
       at <= text.size() && lines.size() <= static_cast<std::size_t>(mark.line);) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  if (lines.size() <= static_cast<std::size_t>(mark.line)) return std::nullopt;
  lines[mark.line] = lines[mark.line].substr(0, static_cast<std::size_t>(mark.column));
  for (std::size_t i = lines.size(); i-- > 0;) {
    const std::string_view line = line_without_comment(lines[i]);
    if (line.empty() || line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const std::size_t dash = line.size() - 1;
    // On the mark's own line, the mark is the item's value ('- ~') and names it better.
    if (line[dash] != '-' || (dash > 0 && line[dash - 1] != ' ') || i == lines.size() - 1)
      return std::nullopt;
    return SourceLocation{source, static_cast<int>(i) + 1, static_cast<int>(dash) + 1};
  }
  return std::nullopt;
}

// Whether dotted `path` lies inside `section` ("layers.0.nOut" inside "layers.0").
bool is_below(const std::string& path, const std::string& section) {
  return path.size() > section.size() && path.compare(0, section.size(), section) == 0 &&
         path[section.size()] == '.';
}

bool is_list_item(const std::string& path) {
  const std::size_t dot = path.rfind('.');
  const std::string last = dot == std::string::npos ? path : path.substr(dot + 1);
  return !last.empty() && last.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

ReadContext::ReadContext(std::string source, std::string text,
                         std::vector<OverrideOrigin> overrides)
    : source_(std::move(source)), text_(std::move(text)), overrides_(std::move(overrides)) {}

SourceLocation ReadContext::location(const std::string& path, const YAML::Node& node) const {
  // The last override that wrote this path (or a section holding it) wins, as it did when the
  // overrides were applied in order.
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    if (path == it->path || is_below(path, it->path)) return SourceLocation{it->text, 0, 0};
  }
  // An empty value's mark is where the parser met the next token, lines below the key when
  // comments follow: its key's place, remembered when the key was read, is the one to name.
  if (node.IsDefined() && node.IsNull()) {
    const auto key = written_.find(path);
    if (key != written_.end()) return key->second;
    if (is_list_item(path) && !node.Mark().is_null())
      if (const auto dash = empty_item_dash(source_, text_, node.Mark())) return *dash;
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

std::vector<std::string> ReadContext::schema_homes(const std::string& key) const {
  std::vector<std::string> homes;
  for (const std::string& path : schema_keys_) {
    const std::size_t dot = path.rfind('.');
    if (path.compare(dot == std::string::npos ? 0 : dot + 1, std::string::npos, key) == 0)
      homes.push_back(path);
  }
  return homes;
}

SourceLocation ReadContext::section_location(const std::string& path,
                                             const YAML::Node& node) const {
  SourceLocation where = location(path, node);
  if (where.line == 0) return where;  // the section itself came from a --set: that names it
  for (const OverrideOrigin& o : overrides_)
    if (is_below(o.path, path)) where.changed_by.push_back(o.text);
  return where;
}

void ReadContext::remember(const std::string& path, const YAML::Node& node) {
  written_[path] = location(path, node);
}

SourceLocation ReadContext::remembered(const std::string& path) const {
  const auto it = written_.find(path);
  return it != written_.end() ? it->second : SourceLocation{source_, 0, 0};
}

SourceLocation ReadContext::remembered(std::initializer_list<std::string> paths) const {
  for (const std::string& path : paths)
    if (written_.count(path) != 0) return written_.at(path);
  return SourceLocation{source_, 0, 0};
}

void ReadContext::fail(const std::string& path, const YAML::Node& node, const std::string& what,
                       const std::string& fix) const {
  fail_at(location(path, node), what, fix);
}

void fail_at(const SourceLocation& where, const std::string& what, const std::string& fix) {
  std::string place = where.str();
  if (!where.changed_by.empty()) place += " with " + join_words(where.changed_by);
  throw ConfigError(place + ": " + what + "; " + fix);
}

}  // namespace dl
