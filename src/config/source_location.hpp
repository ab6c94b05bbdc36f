// Where a config value came from, for error messages.
#pragma once

#include <string>
#include <vector>

namespace dl {

// "file:line:column" of a value.
struct SourceLocation {
  std::string file;
  int line = 0;             // 1-based; 0 when unknown (a default, or a --set override)
  int column = 0;           // 1-based
  std::string str() const;  // "file:line:column" or "file" or "--set"
  // The --set overrides that changed values inside the place (a layer's keys): an error about
  // the whole place names them beside it, since the file alone no longer shows what was read.
  std::vector<std::string> changed_by = {};
};

}  // namespace dl
