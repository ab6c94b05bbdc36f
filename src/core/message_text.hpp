// Text a user wrote (a config value, a key, a path, a --set argument) as an error message quotes
// it: on one line and of bounded length, so that a message stays one readable line whatever the
// input holds. Control characters, characters a terminal shows as nothing or a plain space, and
// bytes that are not UTF-8 are written as escapes (\n, \t, \x00, \u200b, \ufeff, \xff); a
// backslash is left as it is, so escaping text twice changes nothing. Text longer than the limit
// keeps its beginning and its end (a path's file name) around "...", followed by its length in
// bytes.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dl {

namespace message_text {

// A value, a key or a --set argument: enough to recognize it.
constexpr std::size_t kMaxValueBytes = 80;
// A path: most are shown whole; one this long is surely not the path meant.
constexpr std::size_t kMaxPathBytes = 256;
// A whole message: far more than any message needs, so only a message that quotes user text
// unclipped (a 10 MB CSV field) reaches it. Standard error drops what it cannot take
// (cli/console_writer.hpp), so such a message would vanish and leave "dl-train: " alone.
constexpr std::size_t kMaxMessageBytes = 4096;
// Of a clipped text, the share kept from its end (the rest from its beginning).
constexpr std::size_t kTailDivisor = 3;

// The length of the UTF-8 sequence starting with `lead` (1 to 4), or 0 when `lead` cannot start
// one.
inline std::size_t utf8_sequence_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) return 2;
  if (lead >= 0xE0 && lead <= 0xEF) return 3;
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  return 0;
}

inline bool is_continuation(unsigned char byte) {
  return (byte & 0xC0) == 0x80;
}

// The length of the valid UTF-8 character at `text[at]` (no overlong form, surrogate or code
// point past U+10FFFF), or 0 when the bytes there are not one.
inline std::size_t utf8_character_length(std::string_view text, std::size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  const std::size_t length = utf8_sequence_length(lead);
  if (length == 0 || at + length > text.size()) return 0;
  for (std::size_t i = 1; i < length; ++i)
    if (!is_continuation(static_cast<unsigned char>(text[at + i]))) return 0;
  if (length == 3) {
    const auto second = static_cast<unsigned char>(text[at + 1]);
    if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second >= 0xA0)) return 0;
  }
  if (length == 4) {
    const auto second = static_cast<unsigned char>(text[at + 1]);
    if ((lead == 0xF0 && second < 0x90) || (lead == 0xF4 && second >= 0x90)) return 0;
  }
  return length;
}

// C0 controls and DEL: the characters that break a line or a terminal.
inline bool is_control(unsigned char c) {
  constexpr unsigned char kFirstPrintable = 0x20;
  constexpr unsigned char kDelete = 0x7F;
  return c < kFirstPrintable || c == kDelete;
}

// U+0080 to U+009F, which some terminals obey as C0 controls (U+0085 ends a line): in UTF-8,
// 0xC2 followed by 0x80 to 0x9F.
inline bool is_c1_control(std::string_view text, std::size_t at, std::size_t length) {
  constexpr unsigned char kC1Lead = 0xC2;
  constexpr unsigned char kFirstAfterC1 = 0xA0;
  return length == 2 && static_cast<unsigned char>(text[at]) == kC1Lead &&
         static_cast<unsigned char>(text[at + 1]) < kFirstAfterC1;
}

// The code point of the valid UTF-8 character of `length` bytes at `text[at]`.
inline char32_t code_point(std::string_view text, std::size_t at, std::size_t length) {
  constexpr unsigned kPayloadBits = 6;
  constexpr unsigned char kPayloadMask = 0x3F;
  static constexpr unsigned char kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  char32_t cp = static_cast<unsigned char>(text[at]) & kLeadMask[length];
  for (std::size_t i = 1; i < length; ++i)
    cp = (cp << kPayloadBits) | (static_cast<unsigned char>(text[at + i]) & kPayloadMask);
  return cp;
}

// Characters a terminal shows as nothing or as a plain space, which would make a quoted value
// look like another ("6.77" holding a zero-width space or a byte order mark): no-break and other
// spaces, zero-width and joining characters, direction marks and embeddings, the soft hyphen.
inline bool is_invisible(char32_t cp) {
  return cp == 0xA0 || cp == 0xAD || cp == 0x34F || cp == 0x61C || cp == 0x180E ||
         (cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
         (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF ||
         (cp >= 0xFFF9 && cp <= 0xFFFB);
}

inline void append_hex_byte(std::string& out, unsigned char byte) {
  static constexpr char kHex[] = "0123456789abcdef";
  constexpr unsigned kNibbleBits = 4;
  constexpr unsigned kNibbleMask = 0xF;
  out += kHex[byte >> kNibbleBits];
  out += kHex[byte & kNibbleMask];
}

// `text` with every control character and every byte that is not part of a UTF-8 character
// escaped.
inline std::string escaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = utf8_character_length(text, i);
    if (is_c1_control(text, i, length)) {
      out += "\\u00";
      append_hex_byte(out, static_cast<unsigned char>(text[i + 1]));
      i += length;
      continue;
    }
    if (length > 1 && is_invisible(code_point(text, i, length))) {
      constexpr unsigned kByteBits = 8;
      const char32_t cp = code_point(text, i, length);
      out += "\\u";
      append_hex_byte(out, static_cast<unsigned char>(cp >> kByteBits));
      append_hex_byte(out, static_cast<unsigned char>(cp));
      i += length;
      continue;
    }
    if (length > 0 && !is_control(c)) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += "\\x";
      append_hex_byte(out, c);
    }
    ++i;
  }
  return out;
}

// The character at `at` escaped (one byte when no UTF-8 character starts there).
inline std::string escaped_character_at(std::string_view text, std::size_t at) {
  const std::size_t length = utf8_character_length(text, at);
  return escaped(text.substr(at, length == 0 ? 1 : length));
}

// Where the first control character of `text` (C0, DEL or C1) starts, or npos.
inline std::size_t find_control(std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i)
    if (is_control(static_cast<unsigned char>(text[i])) ||
        is_c1_control(text, i, utf8_character_length(text, i)))
      return i;
  return std::string_view::npos;
}

// Where the first byte of `text` that is not part of a UTF-8 character is, or npos.
inline std::size_t find_non_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_character_length(text, i);
    if (length == 0) return i;
    i += length;
  }
  return std::string_view::npos;
}

// `at` moved back to the start of the UTF-8 character it falls in, so a cut splits none.
inline std::size_t character_start(std::string_view text, std::size_t at) {
  while (at > 0 && at < text.size() && is_continuation(static_cast<unsigned char>(text[at]))) --at;
  return at;
}

// `text` escaped and, past `max_bytes`, clipped: "<beginning>...<end> (N bytes)".
inline std::string clipped(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return escaped(text);
  const std::size_t tail = max_bytes / kTailDivisor;
  const std::size_t head_end = character_start(text, max_bytes - tail);
  const std::size_t tail_start = character_start(text, text.size() - tail);
  return escaped(text.substr(0, head_end)) + "..." + escaped(text.substr(tail_start)) + " (" +
         std::to_string(text.size()) + " bytes)";
}

}  // namespace message_text

// A value, key or --set argument the user wrote, as a message quotes it.
inline std::string quoted_value(std::string_view text) {
  return message_text::clipped(text, message_text::kMaxValueBytes);
}

// A path the user gave, as a message quotes it.
inline std::string quoted_path(std::string_view path) {
  return message_text::clipped(path, message_text::kMaxPathBytes);
}

// A whole message on one line and of bounded length: what an Error carries, whatever text it
// quotes. A message past the bound keeps its beginning (the file and what is wrong) and its end
// (the fix).
inline std::string one_line(std::string_view message) {
  return message_text::clipped(message, message_text::kMaxMessageBytes);
}

}  // namespace dl
