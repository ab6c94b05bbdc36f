#include "config/config_overrides.hpp"

#include <cstddef>
#include <vector>

#include <fmt/format.h>

#include "config/yaml_document.hpp"
#include "config/yaml_scalars.hpp"
#include "core/error.hpp"
#include "core/message_text.hpp"

namespace dl {

namespace {

// Where a YAML comment starts in a --set value ('#' first or after a blank, outside quotes), or
// npos. In a file a comment is meant; on a command line `--set data.trainImages=/a #1/x` reaches
// dl-train whole, and YAML would silently drop everything from the '#'.
std::size_t comment_start(const std::string& text) {
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const char before = i == 0 ? ' ' : text[i - 1];
    if (quote != 0) {
      const bool doubled = quote == '\'' && c == '\'' && i + 1 < text.size() && text[i + 1] == '\'';
      if ((quote == '"' && c == '\\') || doubled)
        ++i;  // an escape inside the quotes
      else if (c == quote)
        quote = 0;
      continue;
    }
    const bool opens_scalar = std::string(" \t[{,:").find(before) != std::string::npos;
    if ((c == '\'' || c == '"') && opens_scalar)
      quote = c;
    else if (c == '#' && (before == ' ' || before == '\t'))
      return i;
  }
  return std::string::npos;
}

// Longer indices cannot address a list of a config (and would overflow the conversion).
constexpr std::size_t kMaxIndexDigits = 9;
constexpr std::string_view kOverrideExample = "write --set key.path=value, e.g. --set epochs=3";

class OverrideWriter {
 public:
  explicit OverrideWriter(const std::string& text) : place_("--set " + quoted_value(text)) {}

  [[noreturn]] void fail(const std::string& what, const std::string& fix) const {
    throw ConfigError(place_ + ": " + what + "; " + fix);
  }

  std::vector<std::string> split_path(const std::string& path) const {
    std::vector<std::string> segments;
    std::size_t start = 0;
    while (true) {
      const std::size_t dot = path.find('.', start);
      segments.push_back(path.substr(start, dot - start));
      if (segments.back().empty())
        fail(fmt::format("the key path '{}' has an empty part", quoted_value(path)),
             std::string(kOverrideExample));
      if (dot == std::string::npos) return segments;
      start = dot + 1;
    }
  }

  std::size_t list_index(const std::string& segment, const YAML::Node& list,
                         const std::string& list_path) const {
    const bool digits = segment.find_first_not_of("0123456789") == std::string::npos;
    if (!digits)
      fail(fmt::format("'{}' is a list, so the part after it must be an index, not '{}'", list_path,
                       quoted_value(segment)),
           fmt::format("write e.g. {}.0", list_path));
    const std::size_t size = list.size();
    if (segment.size() > kMaxIndexDigits || std::stoul(segment) >= size)
      fail(fmt::format("index {} is past the end of {}, which has {} items", segment, list_path,
                       size),
           fmt::format("use an index from 0 to {}", size == 0 ? 0 : size - 1));
    return std::stoul(segment);
  }

  // The value as YAML, held to what the config file is held to: one document, no control
  // characters, no explicit tags.
  YAML::Node parse_value(const std::string& value_text) const {
    if (const auto control = find_control_character(value_text))
      fail(fmt::format("the value holds the control character {}", control->text),
           "remove it; a value may not hold control characters");
    if (comment_start(value_text) != std::string::npos)
      fail("the value holds ' #', where YAML starts a comment that would drop the rest",
           "quote the value, e.g. --set 'data.trainImages=\"a #1/b\"'");
    YAML::Node value;
    DocumentCount count;
    try {
      value = YAML::Load(value_text);
      count = count_documents(value_text);
      resolve_merge_keys(value);
    } catch (const YamlDocumentError& e) {
      fail(e.what(), e.fix());
    } catch (const YAML::Exception& e) {
      fail("the value is not valid YAML (" + quoted_value(e.msg) + ")",
           "quote it, or close its brackets, e.g. --set cuda.devices=[0,1]");
    }
    if (count.documents > 1)
      fail(fmt::format("the value holds {} YAML documents (separated by '---')", count.documents),
           "give one value; quote it if '---' belongs to it");
    // '|' or '>' alone starts a YAML block scalar, which reads as the empty string: a delimiter
    // of '|' came out as '' (0 bytes).
    if ((value_text == "|" || value_text == ">") && value.IsScalar() && value.Scalar().empty())
      fail(fmt::format("the value '{}' alone starts a YAML block scalar, which reads as nothing",
                       value_text),
           fmt::format("quote it: {}=\"{}\"'", place_.substr(0, place_.rfind('=')).insert(6, "'"),
                       value_text));
    if (const auto tagged = find_explicit_tag(value))
      fail(fmt::format("the value{} carries the YAML tag '{}', which dl-train does not read",
                       tagged->path.empty() ? "" : " at " + tagged->path, tagged->tag),
           explicit_tag_fix());
    return value;
  }

  const std::string& place() const { return place_; }

 private:
  std::string place_;
};

// A list item written `- <type>: {settings}` (a layer).
bool is_single_key_item(const YAML::Node& node) {
  return node.IsMap() && node.size() == 1 && node.begin()->first.IsScalar();
}

// Turns a key without a value (`data:`) into an empty section; refuses to go through a value.
void ensure_section(const OverrideWriter& writer, YAML::Node& node, const std::string& path) {
  if (node.IsNull()) node = YAML::Node(YAML::NodeType::Map);
  if (!node.IsMap())
    writer.fail(fmt::format("'{}' is {}, not a section with keys", path, describe_node(node)),
                fmt::format("set {} itself, e.g. --set {}=<value>", path, path));
}

// A node written once and used again (by an alias or a merge key) is one node in the tree: an
// override that went into it would change every place that uses it, silently.
void refuse_shared(const OverrideWriter& writer, const YAML::Node& root, const YAML::Node& node,
                   const std::string& path) {
  if (!reached_more_than_once(root, node)) return;
  writer.fail(fmt::format("'{}' is the part of the file written at line {} and used again by a "
                          "YAML alias or merge key, so this override would change every place "
                          "that uses it",
                          path, node.Mark().line + 1),
              fmt::format("write {} out in the file instead of using the alias there", path));
}

// `value`'s keys written into a copy of `section`, recursively where both hold a map.
YAML::Node merged(const YAML::Node& section, const YAML::Node& value) {
  YAML::Node out = YAML::Clone(section);
  for (const auto& entry : value) {
    const std::string key = entry.first.Scalar();
    const YAML::Node existing = out[key];
    out[key] = existing.IsDefined() && existing.IsMap() && entry.second.IsMap()
                   ? merged(existing, entry.second)
                   : entry.second;
  }
  return out;
}

// Whether a map given to the section at `path` replaces it rather than merging into it: one that
// names the section's kind (an updater's or a schedule's `type`, the data's `format`), whose other
// keys belong to the old kind, and one given to a section of alternatives
// (--set inputType={feedForward: {size: 784}} leaves convolutionalFlat behind).
bool replaces_section(const std::string& path, const YAML::Node& value) {
  return path == "inputType" || value["type"].IsDefined() || value["format"].IsDefined();
}

// Sets `map`'s `key` (at `path`) to `value`. A value the map shares with another place (a merged
// key, an alias) is replaced in this map alone: assigning to it would change the shared node. A
// map onto a section merges into it: `--set data={trainLimit: 1000}` changes that key as
// `--set data.trainLimit=1000` does (it replaced the section, silently dropping its data paths).
void set_key(const YAML::Node& root, YAML::Node& map, const std::string& key,
             const std::string& path, const YAML::Node& value) {
  const YAML::Node& read_only = map;
  if (read_only[key].IsDefined() && read_only[key].IsMap() && value.IsMap() &&
      !replaces_section(path, value)) {
    const YAML::Node combined = merged(read_only[key], value);
    map.remove(key);
    map[key] = combined;
    return;
  }
  if (reached_more_than_once(root, read_only[key])) map.remove(key);
  map[key] = value;
}

}  // namespace

OverrideOrigin apply_override(YAML::Node& root, const std::string& text) {
  const OverrideWriter writer(text);
  const std::size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0)
    writer.fail("expected key.path=value", std::string(kOverrideExample));
  const std::vector<std::string> segments = writer.split_path(text.substr(0, equals));
  const YAML::Node value = writer.parse_value(text.substr(equals + 1));

  YAML::Node current = root;
  std::string path;     // canonical: list items by index, without a layer's type key
  std::string created;  // the first section this override had to create
  bool replaces_item_settings = false;  // "layers.0.convolution={...}"
  std::size_t i = 0;
  while (i + 1 < segments.size()) {
    const std::string& segment = segments[i];
    if (current.IsSequence()) {
      const std::size_t index = writer.list_index(segment, current, path);
      path = join_path(path, segment);
      YAML::Node item = current[index];
      current.reset(item);
      refuse_shared(writer, root, current, path);
      ++i;
      if (!is_single_key_item(current)) continue;
      const std::string type_key = current.begin()->first.Scalar();
      if (segments[i] == type_key) {
        if (i + 1 == segments.size()) {
          replaces_item_settings = true;
          break;
        }
        ++i;
      }
      YAML::Node settings = current[type_key];
      refuse_shared(writer, root, settings, join_path(path, type_key));
      if (settings.IsNull()) settings = YAML::Node(YAML::NodeType::Map);
      current.reset(settings);
      continue;
    }
    ensure_section(writer, current, path);
    YAML::Node child = current[segment];
    const std::string child_path = join_path(path, segment);
    if (!child.IsDefined()) {
      current[segment] = YAML::Node(YAML::NodeType::Map);
      child.reset(current[segment]);
      if (created.empty()) created = child_path;
    }
    path = child_path;
    current.reset(child);
    refuse_shared(writer, root, current, path);
    ++i;
  }

  const std::string& last = segments[i];
  if (current.IsSequence()) {
    const std::size_t index = writer.list_index(last, current, path);
    refuse_shared(writer, root, current[index], join_path(path, last));
    current[index] = value;
  } else {
    ensure_section(writer, current, path);
    set_key(root, current, last, join_path(path, last), value);
  }
  const std::string written = replaces_item_settings ? path : join_path(path, last);
  return OverrideOrigin{created.empty() ? written : created, writer.place()};
}

}  // namespace dl
