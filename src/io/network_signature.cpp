#include "io/network_signature.hpp"

#include <algorithm>

namespace dl {

std::optional<std::uint64_t> signature_parameter_count(const std::string& signature) {
  if (signature.empty()) return std::nullopt;
  std::uint64_t total = 0;
  std::size_t start = 0;
  while (start <= signature.size()) {
    const std::size_t end = std::min(signature.find(',', start), signature.size());
    const std::size_t colon = signature.rfind(':', end == 0 ? 0 : end - 1);
    if (colon == std::string::npos || colon < start || colon + 1 >= end) return std::nullopt;
    const std::string digits = signature.substr(colon + 1, end - colon - 1);
    if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 18)
      return std::nullopt;
    total += std::stoull(digits);
    start = end + 1;
  }
  return total;
}

}  // namespace dl
