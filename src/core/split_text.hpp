// A text cut at each separator into its pieces: "a,b,,c" at ',' is "a", "b", "" and "c", and a
// text without one is itself. The one rule for the lists dl-train packs into one string (a
// network's signature, a rank's facts).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dl {

inline std::vector<std::string> split_text(const std::string& text, char separator) {
  std::vector<std::string> pieces;
  std::size_t start = 0;
  for (std::size_t end; (end = text.find(separator, start)) != std::string::npos; start = end + 1)
    pieces.push_back(text.substr(start, end - start));
  pieces.push_back(text.substr(start));
  return pieces;
}

}  // namespace dl
