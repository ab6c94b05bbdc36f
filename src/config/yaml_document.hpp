// What the config accepts of YAML beyond its syntax, checked the same way in the config file and
// in each --set value: one document, no control characters in the text, no explicit tags, no
// alias that makes a cycle or multiplies the document past a million values. A tag
// (`!!str 3`, `!foo`) would change the type a key is read as, which is the schema's to decide.
// Merge keys (`<<: *base`, YAML 1.1's, which docker-compose and CI files use to share settings)
// are resolved into the maps that hold them.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include <yaml-cpp/yaml.h>

namespace dl {

struct DocumentCount {
  std::size_t documents = 0;
  YAML::Mark second_root = YAML::Mark::null_mark();  // where the second document starts
};

// An alias in a cycle (inside the node it names), aliases that expand a document past a million
// values, or a merge key with no map to merge: what is wrong, where, and the fix.
class YamlDocumentError : public std::runtime_error {
 public:
  YamlDocumentError(const YAML::Mark& mark, const std::string& problem, std::string fix)
      : std::runtime_error(problem), mark_(mark), fix_(std::move(fix)) {}
  const YAML::Mark& mark() const { return mark_; }
  const std::string& fix() const { return fix_; }

 private:
  YAML::Mark mark_;
  std::string fix_;
};

// Counts the documents of `text`, throwing YAML::Exception on a syntax error in any of them and
// YamlDocumentError on an alias no config may hold.
DocumentCount count_documents(const std::string& text);

// A control character in YAML text, which YAML does not allow outside escapes (tab, line feed and
// a carriage return before a line feed aside). A carriage return alone is one too: YAML reads it
// as a line break, but yaml-cpp does not, so a file with old Mac line ends would read as one line
// (its first comment: "the config is empty").
struct ControlCharacter {
  int line = 0;      // 1-based
  int column = 0;    // 1-based, in bytes
  std::string text;  // as a message shows it: "\x00"
};
std::optional<ControlCharacter> find_control_character(const std::string& text);
// How find_control_character shows a carriage return alone.
inline constexpr const char* kLoneCarriageReturn = "\\r";

// A node written with an explicit tag, at `path` below the node searched ("layers.0.dense.nOut",
// "" for that node itself).
struct TaggedNode {
  std::string path;
  std::string tag;  // as written for the core schema ("!!str"), else as yaml-cpp holds it ("!foo")
  YAML::Mark mark;
};
// The first node of `node` (itself, a key or a value below it, in document order) that carries an
// explicit tag.
std::optional<TaggedNode> find_explicit_tag(const YAML::Node& node);

// "remove the tag ...": what to write instead of a tagged value.
std::string explicit_tag_fix();

// Resolves every merge key of `node` in place, in document order: `<<: *a` (or `<<: [*a, *b]`)
// adds the keys of map a (then b) that the map holding it does not write itself, as YAML 1.1's
// merge type says, and the key `<<` goes. The merged keys and values keep their place in the
// text (the anchored map's), so messages point where they are written. Throws YamlDocumentError
// for a merge key whose value is not a map or a list of maps. Call after the alias checks of
// count_documents: the walk follows aliases.
void resolve_merge_keys(YAML::Node& node);

// Whether `node`, below `root`, is reached more than once: written once and used again by an
// alias or a merge key, so that changing it in place changes every place that uses it.
bool reached_more_than_once(const YAML::Node& root, const YAML::Node& node);

}  // namespace dl
