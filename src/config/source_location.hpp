// Where a config value came from, for error messages.
#pragma once

#include <string>

namespace dl {

// "file:line:column" of a value.
struct SourceLocation {
  std::string file;
  int line = 0;             // 1-based; 0 when unknown (a default, or a --set override)
  int column = 0;           // 1-based
  std::string str() const;  // "file:line:column" or "file" or "--set"
};

}  // namespace dl
