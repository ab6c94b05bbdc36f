// How a person reads a class: by its label (an index from 0) and, where the data named its
// classes (an image folder's class folders, a CSV file's text labels), by its name, quoted as a
// message quotes user text: "9 'ankle boot'". Without names, or for a label past the last name
// (an output layer wider than the data's classes), the label alone: "9". Files keep the index
// and give the names beside it (docs/OUTPUTS.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/message_text.hpp"

namespace dl {

// The name of class `label`, or nullptr when the classes are numbers or `label` has none.
inline const std::string* class_name(const std::vector<std::string>& names, long long label) {
  if (label < 0 || static_cast<std::size_t>(label) >= names.size()) return nullptr;
  return &names[static_cast<std::size_t>(label)];
}

// "9 'ankle boot'" with a name, "9" without.
inline std::string class_text(long long label, const std::vector<std::string>& names) {
  const std::string* name = class_name(names, label);
  return name == nullptr ? std::to_string(label)
                         : std::to_string(label) + " '" + quoted_value(*name) + "'";
}

}  // namespace dl
