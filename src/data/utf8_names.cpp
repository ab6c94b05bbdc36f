#include "data/utf8_names.hpp"

#include <fmt/format.h>

#include <cstddef>

namespace dl {
namespace {

// The length of the valid UTF-8 sequence at text[i], or 0 (overlong forms, surrogates and code
// points above U+10FFFF are invalid).
std::size_t utf8_sequence(const std::string& text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  if (lead < 0x80) return 1;
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the allowed range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return length;
}

}  // namespace

bool is_valid_utf8(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

bool has_control_character(const std::string& text) {
  constexpr unsigned char kFirstPrintable = 0x20, kDelete = 0x7f;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < kFirstPrintable || byte == kDelete) return true;
  }
  return false;
}

std::string printable_path(const std::string& path) {
  std::string out;
  for (std::size_t i = 0; i < path.size();) {
    const std::size_t n = utf8_sequence(path, i);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(path[i]));
      ++i;
    } else {
      out.append(path, i, n);
      i += n;
    }
  }
  return out;
}

bool has_combining_accent(const std::string& text) {
  // U+0300 to U+036F in UTF-8: 0xCC 0x80 to 0xCD 0xAF.
  constexpr unsigned char kFirstLead = 0xCC, kLastLead = 0xCD, kLastOfLastLead = 0xAF;
  for (std::size_t i = 0; i + 1 < text.size(); ++i) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const auto next = static_cast<unsigned char>(text[i + 1]);
    if (lead == kFirstLead && next >= 0x80 && next <= 0xBF) return true;
    if (lead == kLastLead && next >= 0x80 && next <= kLastOfLastLead) return true;
  }
  return false;
}

}  // namespace dl
