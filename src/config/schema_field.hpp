// The building block of the one schema: a Field names a YAML key and knows how to read it
// (type, range, the struct member it sets) and how to write it back. A section of the config
// is a table of Fields; reading and dumping walk the same table, so a key cannot be accepted
// without also being dumped, and the dump's key order is the table's order.
#pragma once

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "config/read_context.hpp"
#include "config/text_match.hpp"
#include "config/yaml_scalars.hpp"

namespace dl {

template <class T>
struct Field {
  using Reader = std::function<void(ReadContext&, const std::string& path, const YAML::Node&, T&)>;
  using Writer = std::function<void(YAML::Emitter&, const T&)>;

  Field(std::string key_, Reader read_, Writer write_, std::string required_fix_ = {})
      : key(std::move(key_)),
        read(std::move(read_)),
        write(std::move(write_)),
        required_fix(std::move(required_fix_)) {}

  std::string key;
  Reader read;
  Writer write;              // the value only
  std::string required_fix;  // non-empty for a required key: what to add when it is missing
  // Set for a key the dump leaves out while it holds its default (a key most configs never
  // write, whose absence already says what the default does).
  std::function<bool(const T&)> omitted_when;
  // Set for a section: the dotted paths of the keys inside it, for "learningRate is a key of
  // updater" when a key is written at the wrong level.
  std::function<std::vector<std::string>()> nested_keys;

  bool required() const { return !required_fix.empty(); }
};

template <class T>
using FieldTable = std::vector<Field<T>>;

template <class T>
std::vector<std::string> field_keys(const FieldTable<T>& table) {
  std::vector<std::string> keys;
  for (const auto& f : table) keys.push_back(f.key);
  return keys;
}

// The dotted path of every key a table reads, its sections' keys included ("updater",
// "updater.learningRate", ...).
template <class T>
std::vector<std::string> key_paths(const FieldTable<T>& table) {
  std::vector<std::string> paths;
  for (const auto& f : table) {
    paths.push_back(f.key);
    if (!f.nested_keys) continue;
    for (const std::string& inner : f.nested_keys()) paths.push_back(f.key + "." + inner);
  }
  return paths;
}

// Doubles are written in the shortest form that reads back to the same value.
inline void write_real(YAML::Emitter& out, double v) {
  out << fmt::format("{}", v);
}
inline void write_bool(YAML::Emitter& out, bool v) {
  out << (v ? "true" : "false");
}

template <class T, class M>
Field<T> integer_field(std::string key, M T::*member, std::int64_t min,
                       std::int64_t max = std::numeric_limits<M>::max()) {
  static_assert(std::is_integral_v<M> && std::is_signed_v<M>, "signed integer members only");
  const IntRange range{min, std::min<std::int64_t>(max, std::numeric_limits<M>::max())};
  return {std::move(key),
          [member, range](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            t.*member = static_cast<M>(read_integer(ctx, path, node, range));
          },
          [member](YAML::Emitter& out, const T& t) { out << t.*member; }};
}

template <class T>
Field<T> unsigned_field(std::string key, std::uint64_t T::*member) {
  return {std::move(key),
          [member](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            t.*member = read_unsigned(ctx, path, node);
          },
          [member](YAML::Emitter& out, const T& t) { out << t.*member; }};
}

template <class T>
Field<T> real_field(std::string key, double T::*member, RealRange range) {
  return {std::move(key),
          [member, range](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            t.*member = read_real(ctx, path, node, range);
          },
          [member](YAML::Emitter& out, const T& t) { write_real(out, t.*member); }};
}

// No value (`key: ~` or an absent key) leaves the member unset.
template <class T>
Field<T> optional_real_field(std::string key, std::optional<double> T::*member) {
  return {std::move(key),
          [member](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            if (node.IsNull())
              t.*member = std::nullopt;
            else
              t.*member = read_real(ctx, path, node, RealRange::any());
          },
          [member](YAML::Emitter& out, const T& t) {
            if (t.*member)
              write_real(out, *(t.*member));
            else
              out << YAML::Null;
          }};
}

template <class T>
Field<T> bool_field(std::string key, bool T::*member) {
  return {std::move(key),
          [member](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            t.*member = read_bool(ctx, path, node);
          },
          [member](YAML::Emitter& out, const T& t) { write_bool(out, t.*member); }};
}

// Strings are dumped quoted so that a path such as "null" or "123" reads back as the string.
template <class T>
Field<T> text_field(std::string key, std::string T::*member) {
  return {std::move(key),
          [member](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            t.*member = read_text(ctx, path, node);
          },
          [member](YAML::Emitter& out, const T& t) { out << YAML::DoubleQuoted << t.*member; }};
}

// A list of numbers in `range`; no value (`key: ~`) or an empty list leaves it empty.
template <class T>
Field<T> real_list_field(std::string key, std::vector<double> T::*member, RealRange range) {
  return {std::move(key),
          [member, range](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            (t.*member).clear();
            if (node.IsNull()) return;
            if (!node.IsSequence())
              ctx.fail(path, node, path + " must be a list of numbers, got " + describe_node(node),
                       "write a list such as [0.49, 0.48, 0.45], one number per channel");
            for (std::size_t i = 0; i < node.size(); ++i)
              (t.*member).push_back(read_real(ctx, path + "." + std::to_string(i), node[i], range));
          },
          [member](YAML::Emitter& out, const T& t) {
            out << YAML::Flow << YAML::BeginSeq;
            for (double v : t.*member) write_real(out, v);
            out << YAML::EndSeq;
          }};
}

// No value (`key: ~` or an absent key) leaves the member unset.
template <class T>
Field<T> optional_text_field(std::string key, std::optional<std::string> T::*member) {
  return {std::move(key),
          [member](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            if (node.IsNull())
              t.*member = std::nullopt;
            else
              t.*member = read_text(ctx, path, node);
          },
          [member](YAML::Emitter& out, const T& t) {
            if (t.*member)
              out << YAML::DoubleQuoted << *(t.*member);
            else
              out << YAML::Null;
          }};
}

template <class T, class E>
Field<T> enum_field(std::string key, E T::*member) {
  return {std::move(key),
          [member](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            t.*member = read_enum<E>(ctx, path, node);
          },
          [member](YAML::Emitter& out, const T& t) { out << std::string(enum_name(t.*member)); }};
}

template <class T, class E>
Field<T> optional_enum_field(std::string key, std::optional<E> T::*member) {
  return {std::move(key),
          [member](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            if (node.IsNull())
              t.*member = std::nullopt;
            else
              t.*member = read_enum<E>(ctx, path, node);
          },
          [member](YAML::Emitter& out, const T& t) {
            if (t.*member)
              out << std::string(enum_name(*(t.*member)));
            else
              out << YAML::Null;
          }};
}

template <class T>
Field<T> byte_size_field(std::string key, std::uint64_t T::*member) {
  return {std::move(key),
          [member](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            t.*member = read_byte_size(ctx, path, node);
          },
          [member](YAML::Emitter& out, const T& t) { out << t.*member; }};
}

// A byte size, or the word `auto` (any letter case) for the member's unset value, which the
// reader resolves (data.cacheBytes: from the machine's memory).
template <class T>
Field<T> optional_byte_size_field(std::string key, std::optional<std::uint64_t> T::*member) {
  return {std::move(key),
          [member](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
            const bool word = node.IsScalar() && to_lower_ascii(node.Scalar()) == "auto";
            if (word)
              t.*member = std::nullopt;
            else
              t.*member = read_byte_size(ctx, path, node, true);
          },
          [member](YAML::Emitter& out, const T& t) {
            if (t.*member)
              out << *(t.*member);
            else
              out << "auto";
          }};
}

// "where" in messages about the keys of a map at `path`.
inline std::string section_where(const std::string& path) {
  return path.empty() ? "at the top level" : "in " + path;
}

// A key unknown where it is written (`where`: "in output") that the schema has elsewhere: said
// so, with where to write it (a DL4J user writes learningRate at the top level; an indent too
// many puts epochs inside output). Returns when the schema has no such key.
inline void fail_misplaced_key(const ReadContext& ctx, const std::string& child,
                               const YAML::Node& key_node, const std::string& key,
                               const std::string& where) {
  const std::vector<std::string> homes = ctx.schema_homes(key);
  // Inside a section, a word several sections have ("type" in output) is more likely a wrong
  // name for this one: the section's own keys, below, say more.
  if (homes.empty() || (homes.size() > 1 && where != section_where(""))) return;
  std::vector<std::string> sections;
  for (const std::string& home : homes) {
    const std::size_t dot = home.rfind('.');
    sections.push_back(dot == std::string::npos ? "the top level" : home.substr(0, dot));
  }
  const std::string what =
      fmt::format("unknown key '{}' {}: it is a key of {}", key, where, join_words(sections));
  if (homes.size() > 1)
    ctx.fail(child, key_node, what, "write it inside one of them: " + join_words(homes));
  if (homes.front() == key)
    ctx.fail(child, key_node, what,
             fmt::format("move it out to the top level (not indented: {}: ...)", key));
  ctx.fail(child, key_node, what,
           fmt::format("write it inside {} ({})", sections.front(), homes.front()));
}

// Reads the map `node` (no value: every key at its default) into `target` through `table`.
// `where` says where the map is in messages ("in updater"); `owner` is the node to point at
// when a required key is missing.
template <class T>
void read_fields(ReadContext& ctx, const std::string& path, const YAML::Node& node,
                 const FieldTable<T>& table, T& target, const std::string& where,
                 const YAML::Node& owner) {
  std::set<std::string> seen;
  if (!node.IsNull()) {
    if (!node.IsMap())
      ctx.fail(path, node,
               fmt::format("{} must be a map of keys, got {}", path.empty() ? "the config" : path,
                           describe_node(node)),
               "write its keys as 'key: value' lines indented below it");
    for (const auto& entry : node) {
      const YAML::Node& key_node = entry.first;
      const std::string key = key_node.IsScalar() ? key_node.Scalar() : describe_node(key_node);
      const std::string child = join_path(path, key);
      const auto field =
          std::find_if(table.begin(), table.end(), [&](const Field<T>& f) { return f.key == key; });
      if (field == table.end()) {
        fail_misplaced_key(ctx, child, key_node, key, where);
        fail_unknown_name(ctx, child, key_node, "key", key, where, field_keys(table));
      }
      if (!seen.insert(key).second)
        ctx.fail(child, key_node, fmt::format("duplicate key '{}' {}", key, where),
                 "keep one of them");
      ctx.remember(child, entry.second.IsNull() ? key_node : entry.second);
      field->read(ctx, child, entry.second, target);
    }
  }
  for (const auto& f : table)
    if (f.required() && seen.count(f.key) == 0)
      ctx.fail(path, owner, fmt::format("missing required key '{}' {}", f.key, where),
               f.required_fix);
}

template <class T>
void read_fields(ReadContext& ctx, const std::string& path, const YAML::Node& node,
                 const FieldTable<T>& table, T& target) {
  read_fields(ctx, path, node, table, target, section_where(path), node);
}

template <class T>
void write_fields(YAML::Emitter& out, const FieldTable<T>& table, const T& target) {
  out << YAML::BeginMap;
  for (const auto& f : table) {
    if (f.omitted_when && f.omitted_when(target)) continue;
    out << YAML::Key << f.key << YAML::Value;
    f.write(out, target);
  }
  out << YAML::EndMap;
}

// A nested section: `key: {...}` read through its own table into `T::*member`.
template <class T, class S>
Field<T> section_field(std::string key, S T::*member, const FieldTable<S>& (*table)()) {
  Field<T> field{
      std::move(key),
      [member, table](ReadContext& ctx, const std::string& path, const YAML::Node& node, T& t) {
        read_fields(ctx, path, node, table(), t.*member);
      },
      [member, table](YAML::Emitter& out, const T& t) { write_fields(out, table(), t.*member); }};
  field.nested_keys = [table] { return key_paths(table()); };
  return field;
}

}  // namespace dl
