// The mistakes behind most YAML syntax errors in hand-written configs, found where the YAML reader
// (yaml-cpp) names only its own state ("illegal block entry", "end of map flow not found") and
// often a later place than the mistake: a tab in a line's indentation, a '{' or '[' left open on
// an earlier line, and 'key:value' written without the space YAML needs after the colon. Used
// only once the reader has refused the text, so a miss costs nothing but the reader's own words.
#pragma once

#include <optional>
#include <string>

namespace dl {

struct YamlSyntaxCause {
  int line = 0;    // 1-based
  int column = 0;  // 1-based
  std::string what;
  std::string fix;
};

// The likelier cause of the syntax error the reader reported at `error_line` (1-based) of `text`
// in its words `reader_message`, at or before that line; nullopt when none of the mistakes above
// is found there. The cause's `what` ends with the reader's words.
std::optional<YamlSyntaxCause> find_yaml_syntax_cause(const std::string& text, int error_line,
                                                      const std::string& reader_message);

}  // namespace dl
