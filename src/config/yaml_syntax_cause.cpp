#include "config/yaml_syntax_cause.hpp"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <vector>

#include <fmt/format.h>

#include "core/message_text.hpp"

namespace dl {

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

// Whether a quote or bracket at `at` starts a node: first on its line, or after what ends a key or
// begins a value (': ', '- ', ',', '[', '{'); elsewhere it is part of a plain word ("it's").
bool starts_node(const std::string& line, std::size_t at) {
  std::size_t k = at;
  while (k > 0 && (line[k - 1] == ' ' || line[k - 1] == '\t')) --k;
  if (k == 0) return true;
  const char before = line[k - 1];
  return before == ':' || before == '-' || before == ',' || before == '[' || before == '{';
}

struct Opener {
  int line, column;
  char bracket;
};

// The flow brackets still open after the lines scanned so far, outside quotes and comments, and
// whether the next line begins inside one (there a tab may indent).
class FlowScan {
 public:
  // Scans `line`, the number-th of the text (from 1).
  void scan_line(const std::string& line, int number) {
    for (std::size_t k = 0; k < line.size(); ++k) {
      const char c = line[k];
      if (quote_ != 0) {
        if (quote_ == '"' && c == '\\')
          ++k;
        else if (c == quote_ && quote_ == '\'' && k + 1 < line.size() && line[k + 1] == '\'')
          ++k;
        else if (c == quote_)
          quote_ = 0;
      } else if (c == '#' && (k == 0 || line[k - 1] == ' ' || line[k - 1] == '\t')) {
        return;  // a comment to the line's end
      } else if ((c == '"' || c == '\'') && starts_node(line, k)) {
        quote_ = c;
      } else if ((c == '{' || c == '[') && (!open_.empty() || starts_node(line, k))) {
        open_.push_back({number, static_cast<int>(k) + 1, c});
      } else if ((c == '}' || c == ']') && !open_.empty()) {
        open_.pop_back();
      }
    }
  }
  bool in_flow() const { return !open_.empty() || quote_ != 0; }
  const std::vector<Opener>& open() const { return open_; }

 private:
  std::vector<Opener> open_;
  char quote_ = 0;
};

// 'key:value' at the start of a line (after its indentation and a list's '- '): the key, a word
// of letters, digits and '_', then ':' and no space.
std::optional<YamlSyntaxCause> missing_space_after_colon(const std::string& line, int number) {
  std::size_t k = line.find_first_not_of(" \t");
  if (k == std::string::npos) return std::nullopt;
  if (line.compare(k, 2, "- ") == 0) k = line.find_first_not_of(' ', k + 2);
  if (k == std::string::npos || !std::isalpha(static_cast<unsigned char>(line[k])))
    return std::nullopt;
  std::size_t colon = k;
  while (colon < line.size() &&
         (std::isalnum(static_cast<unsigned char>(line[colon])) || line[colon] == '_'))
    ++colon;
  if (colon + 1 >= line.size() || line[colon] != ':' || line[colon + 1] == ' ' ||
      line[colon + 1] == '\t')
    return std::nullopt;
  const std::string key = quoted_value(line.substr(k, colon - k));
  const std::string value = quoted_value(line.substr(colon + 1));
  return YamlSyntaxCause{
      number, static_cast<int>(colon) + 1,
      fmt::format("'{}:{}' has no space after ':', so YAML reads it as one word, not as the key "
                  "'{}'",
                  key, value, key),
      fmt::format("write '{}: {}'", key, value)};
}

}  // namespace

std::optional<YamlSyntaxCause> find_yaml_syntax_cause(const std::string& text, int error_line,
                                                      const std::string& reader_message) {
  const std::vector<std::string> lines = lines_of(text);
  const std::size_t last =
      std::min(lines.size(), static_cast<std::size_t>(std::max(error_line, 1)));
  std::optional<YamlSyntaxCause> cause;
  FlowScan flow;
  int last_content_line = 0;
  for (std::size_t i = 0; i < last && !cause; ++i) {
    const std::string& line = lines[i];
    const std::size_t content = line.find_first_not_of(" \t");
    const bool blank = content == std::string::npos || line[content] == '#';
    const std::size_t tab = line.find('\t');
    if (!blank && !flow.in_flow() && tab < content) {
      cause = YamlSyntaxCause{static_cast<int>(i) + 1, static_cast<int>(tab) + 1,
                              "a tab indents this line, and YAML indents with spaces only",
                              "indent with spaces, two per level as in configs/mnist.yaml (an "
                              "editor can turn tabs into spaces)"};
    }
    flow.scan_line(line, static_cast<int>(i) + 1);
    if (!blank && i + 1 < last) last_content_line = static_cast<int>(i) + 1;
  }
  const bool flow_error = reader_message.find("flow") != std::string::npos;
  if (!cause && flow_error && !flow.open().empty() && flow.open().back().line < error_line) {
    const Opener& o = flow.open().back();
    const char closer = o.bracket == '{' ? '}' : ']';
    cause = YamlSyntaxCause{
        o.line, o.column,
        fmt::format("the '{}' opened here is not closed before line {}", o.bracket, error_line),
        fmt::format("close it with '{}' after its last value, or write its entries as indented "
                    "lines",
                    closer)};
  }
  for (const int number : {error_line, last_content_line}) {
    if (cause || number < 1 || static_cast<std::size_t>(number) > lines.size()) continue;
    cause = missing_space_after_colon(lines[static_cast<std::size_t>(number) - 1], number);
  }
  if (cause) cause->what += fmt::format(" (the YAML reader: {})", quoted_value(reader_message));
  return cause;
}

}  // namespace dl
