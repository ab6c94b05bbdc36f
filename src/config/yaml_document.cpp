#include "config/yaml_document.hpp"

#include <sstream>

#include <yaml-cpp/eventhandler.h>

#include "config/read_context.hpp"
#include "core/message_text.hpp"

namespace dl {

namespace {

// Sees the root node of each YAML document, to count documents without building them.
class DocumentCounter final : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override { root_seen_ = false; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { on_node(mark, true); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { on_node(mark, false); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    on_node(mark, false);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    on_node(mark, false);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    on_node(mark, false);
  }
  void OnMapEnd() override {}

  bool null_root() const { return null_root_; }
  const YAML::Mark& root_mark() const { return root_mark_; }

 private:
  void on_node(const YAML::Mark& mark, bool is_null) {
    if (root_seen_) return;
    root_seen_ = true;
    null_root_ = is_null;
    root_mark_ = mark;
  }

  bool root_seen_ = false;
  bool null_root_ = false;
  YAML::Mark root_mark_ = YAML::Mark::null_mark();
};

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
    if (c == '\t' || c == '\r' || !message_text::is_control(static_cast<unsigned char>(c)))
      continue;
    return ControlCharacter{line, static_cast<int>(i - line_start) + 1,
                            message_text::escaped(text.substr(i, 1))};
  }
  return std::nullopt;
}

std::optional<TaggedNode> find_explicit_tag(const YAML::Node& node) {
  return find_tag_below(node, "");
}

std::string explicit_tag_fix() {
  return "remove the tag and write the value alone (each key's type is fixed: docs/CONFIG.md); "
         "quote a string that looks like a number";
}

}  // namespace dl
