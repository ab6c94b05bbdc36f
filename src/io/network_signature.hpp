// A network signature as files hold it ("convolution:520,subsampling:0,...": each layer's kind
// and parameter count, written by nn's network_signature), read back where a file is checked.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dl {

// The parameter count a network signature states, or nothing for a signature of another form
// (an empty one: a file of an older dl-train).
std::optional<std::uint64_t> signature_parameter_count(const std::string& signature);

}  // namespace dl
