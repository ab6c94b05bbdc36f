#include "config/yaml_document.hpp"

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <yaml-cpp/eventhandler.h>

#include "config/read_context.hpp"
#include "config/yaml_scalars.hpp"
#include "core/message_text.hpp"

namespace dl {

namespace {

// An alias stands for its anchor's whole node, so a loaded config is a graph: an alias inside the
// node it names makes a cycle, on which every walk of the config recurses until the stack runs
// out, and aliases of aliases multiply (a few lines of `&a [*b, *b, ...]` expand to billions of
// values). Both are refused while parsing, before anything walks the nodes.
constexpr std::size_t kMaxExpandedValues = 1'000'000;

// Sees each YAML document's events: the root node, to count documents without building them, and
// the aliases, with the size each anchored node expands to.
class DocumentCounter final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {
    root_seen_ = false;
    expanded_.clear();
    open_.clear();
    total_ = 0;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    on_node(mark, true);
    add_leaf(mark, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override;
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string&) override {
    on_node(mark, false);
    add_leaf(mark, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    on_node(mark, false);
    open_.push_back({anchor, 1});
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    on_node(mark, false);
    open_.push_back({anchor, 1});
  }
  void OnMapEnd() override { close(); }

  bool null_root() const { return null_root_; }
  const YAML::Mark& root_mark() const { return root_mark_; }

 private:
  struct Open {
    YAML::anchor_t anchor;  // 0: none
    std::size_t values;     // this collection and what it holds, aliases expanded
  };

  void on_node(const YAML::Mark& mark, bool is_null) {
    if (root_seen_) return;
    root_seen_ = true;
    null_root_ = is_null;
    root_mark_ = mark;
  }
  void add_leaf(const YAML::Mark& mark, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor) expanded_[anchor] = 1;
    add(mark, 1);
  }
  void add(const YAML::Mark& mark, std::size_t values) {
    total_ += values;
    if (total_ > kMaxExpandedValues)
      throw YamlDocumentError(mark,
                              "the aliases expand the YAML to more than " +
                                  std::to_string(kMaxExpandedValues) + " values",
                              "write the values out, or alias fewer of them");
    if (!open_.empty()) open_.back().values += values;
  }
  void close() {
    const Open done = open_.back();
    open_.pop_back();
    if (done.anchor != YAML::NullAnchor) expanded_[done.anchor] = done.values;
    if (!open_.empty()) open_.back().values += done.values;
    total_ += 1;  // the collection itself; its contents were counted as they came
  }

  bool root_seen_ = false;
  bool null_root_ = false;
  YAML::Mark root_mark_ = YAML::Mark::null_mark();
  std::map<YAML::anchor_t, std::size_t> expanded_;  // per closed anchor: the values it stands for
  std::vector<Open> open_;                          // the collections being read, outermost first
  std::size_t total_ = 0;
};

void DocumentCounter::OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) {
  on_node(mark, false);
  for (const Open& o : open_)
    if (o.anchor == anchor)
      throw YamlDocumentError(mark,
                              "the alias stands for a node that contains it: a cycle, which no "
                              "config value can hold",
                              "write the value out instead of the alias");
  const auto found = expanded_.find(anchor);
  add(mark, found == expanded_.end() ? 1 : found->second);
}

}  // namespace

// Not YAML::LoadAll: in yaml-cpp 0.7 it loops forever, allocating, on a stray token after a
// document (e.g. `"",`): the parser then reports empty documents at that token without ever
// consuming it (yaml-cpp issue 1040, fixed upstream in 2024). Here a second empty document at the
// same place is that token, reported as a syntax error.
DocumentCount count_documents(const std::string& text) {
  std::istringstream input(text);
  YAML::Parser parser(input);
  DocumentCounter counter;
  DocumentCount count;
  std::optional<int> empty_document_at;  // position of the last empty document
  while (parser.HandleNextDocument(counter)) {
    if (!counter.null_root()) {
      if (++count.documents == 2) count.second_root = counter.root_mark();
      empty_document_at.reset();
      continue;
    }
    if (empty_document_at == counter.root_mark().pos) {
      throw YAML::ParserException(counter.root_mark(),
                                  "unexpected token (a stray ',', ']' or '}'?)");
    }
    empty_document_at = counter.root_mark().pos;
  }
  return count;
}

namespace {

// yaml-cpp's tags for nodes written without one: "?" a plain scalar or a collection, "!" a quoted
// scalar (or the non-specific tag "!" itself, which also means a string), "" no value.
bool is_implicit_tag(const std::string& tag) {
  return tag.empty() || tag == "?" || tag == "!";
}

// yaml-cpp expands "!!x" to the core schema's "tag:yaml.org,2002:x"; messages show what was
// written.
std::string tag_as_written(const std::string& tag) {
  constexpr std::string_view kCoreSchemaPrefix = "tag:yaml.org,2002:";
  if (tag.compare(0, kCoreSchemaPrefix.size(), kCoreSchemaPrefix) == 0)
    return "!!" + tag.substr(kCoreSchemaPrefix.size());
  return tag;
}

std::optional<TaggedNode> find_tag_below(const YAML::Node& node, const std::string& path) {
  if (!is_implicit_tag(node.Tag()))
    return TaggedNode{path, quoted_value(tag_as_written(node.Tag())), node.Mark()};
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      if (auto found = find_tag_below(node[i], join_path(path, std::to_string(i)))) return found;
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string key =
          entry.first.IsScalar() ? quoted_value(entry.first.Scalar()) : std::string("?");
      const std::string key_path = join_path(path, key);
      if (auto found = find_tag_below(entry.first, key_path)) return found;
      if (auto found = find_tag_below(entry.second, key_path)) return found;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ControlCharacter> find_control_character(const std::string& text) {
  int line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
      continue;
    }
    const bool crlf = c == '\r' && i + 1 < text.size() && text[i + 1] == '\n';
    if (c == '\t' || crlf || !message_text::is_control(static_cast<unsigned char>(c))) continue;
    return ControlCharacter{line, static_cast<int>(i - line_start) + 1,
                            message_text::escaped(text.substr(i, 1))};
  }
  return std::nullopt;
}

std::optional<TaggedNode> find_explicit_tag(const YAML::Node& node) {
  return find_tag_below(node, "");
}

namespace {

constexpr std::string_view kMergeKey = "<<";

bool is_merge_key(const YAML::Node& key) {
  return key.IsScalar() && key.Tag() == "?" && key.Scalar() == kMergeKey;
}

// The maps a merge key's value names, in the order their keys are taken.
std::vector<YAML::Node> maps_to_merge(const YAML::Node& value, const YAML::Mark& key_mark) {
  std::vector<YAML::Node> maps;
  if (value.IsMap()) maps.push_back(value);
  if (value.IsSequence())
    for (const YAML::Node& item : value) maps.push_back(item);
  const bool all_maps = !maps.empty() && std::all_of(maps.begin(), maps.end(),
                                                     [](const YAML::Node& m) { return m.IsMap(); });
  if (!all_maps)
    throw YamlDocumentError(
        key_mark,
        "the merge key '<<' takes a map or a list of maps to merge, got " + describe_node(value),
        "write '<<: *name' with an anchor '&name' on a map, or '<<: [*a, *b]'");
  return maps;
}

void merge_into(YAML::Node& map) {
  std::vector<YAML::Node> merged;
  YAML::Mark key_mark = YAML::Mark::null_mark();
  for (const auto& entry : map) {
    if (!is_merge_key(entry.first)) continue;
    key_mark = entry.first.Mark();
    for (const YAML::Node& m : maps_to_merge(entry.second, key_mark)) merged.push_back(m);
  }
  if (key_mark.is_null()) return;
  // Every '<<' goes: yaml-cpp keeps a key written twice, and remove takes the first.
  while (map.remove(std::string(kMergeKey))) continue;
  // The map's own keys win, then the merged maps' in the order written (YAML 1.1's merge type).
  // The key and value nodes themselves are inserted, not copies: they keep their marks; an
  // override that would change one of them through this map replaces it instead (config_overrides).
  const YAML::Node& own = map;
  for (const YAML::Node& source : merged)
    for (const auto& entry : source)
      if (!entry.first.IsScalar() || !own[entry.first.Scalar()].IsDefined())
        map.force_insert(entry.first, entry.second);
}

void count_reached(const YAML::Node& node, const YAML::Node& target, int& reached) {
  if (node.is(target)) ++reached;
  if (reached > 1 || !(node.IsMap() || node.IsSequence())) return;
  for (const auto& entry : node) {
    count_reached(node.IsMap() ? entry.second : YAML::Node(entry), target, reached);
    if (reached > 1) return;
  }
}

}  // namespace

void resolve_merge_keys(YAML::Node& node) {
  if (node.IsMap()) merge_into(node);
  if (!(node.IsMap() || node.IsSequence())) return;
  for (auto entry : node) {
    YAML::Node child = node.IsMap() ? entry.second : YAML::Node(entry);
    resolve_merge_keys(child);
  }
}

bool reached_more_than_once(const YAML::Node& root, const YAML::Node& node) {
  if (!node.IsDefined()) return false;  // a key the map does not hold
  int reached = 0;
  count_reached(root, node, reached);
  return reached > 1;
}

std::string explicit_tag_fix() {
  return "remove the tag and write the value alone (each key's type is fixed: docs/CONFIG.md); "
         "quote a string that looks like a number";
}

}  // namespace dl
