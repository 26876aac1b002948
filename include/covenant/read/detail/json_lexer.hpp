// covenant/detail/json_lexer.hpp - the pieces of JSON's lexical grammar shared by the strict
// reader (detail/json_reader.hpp), the stream readers' tokenizer and the lenient reader: one-letter
// escapes, hex digits of \u escapes, and a code point written as UTF-8.
#pragma once

#include <array>
#include <cstdint>

namespace covenant::detail {

/// The character a one-letter escape stands for (the letter after the backslash), or 0 when the
/// escape is not one of JSON's (\u is handled apart).
inline char json_simple_escape(char e) noexcept {
  static constexpr auto table = [] {
    std::array<char, 256> t{};
    t[static_cast<unsigned char>('"')] = '"';
    t[static_cast<unsigned char>('\\')] = '\\';
    t[static_cast<unsigned char>('/')] = '/';
    t[static_cast<unsigned char>('b')] = '\b';
    t[static_cast<unsigned char>('f')] = '\f';
    t[static_cast<unsigned char>('n')] = '\n';
    t[static_cast<unsigned char>('r')] = '\r';
    t[static_cast<unsigned char>('t')] = '\t';
    return t;
  }();
  return table[static_cast<unsigned char>(e)];
}

/// The value of a hexadecimal digit, or -1.
constexpr int json_hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The four hex digits of a \u escape at `q` (the caller checked there are four bytes) into `v`;
/// false when one is not a hex digit.
inline bool json_hex4(const char* q, std::uint32_t& v) noexcept {
  v = 0;
  for (int i = 0; i < 4; ++i) {
    const int d = json_hex_digit(q[i]);
    if (d < 0) return false;
    v = (v << 4) | static_cast<std::uint32_t>(d);
  }
  return true;
}

/// Writes code point `cp` as UTF-8 at `w` (1 to 4 bytes); returns the end.
inline char* put_utf8(char* w, std::uint32_t cp) noexcept {
  if (cp < 0x80) {
    *w++ = static_cast<char>(cp);
  } else if (cp < 0x800) {
    *w++ = static_cast<char>(0xC0 | (cp >> 6));
    *w++ = static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *w++ = static_cast<char>(0xE0 | (cp >> 12));
    *w++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *w++ = static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *w++ = static_cast<char>(0xF0 | (cp >> 18));
    *w++ = static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *w++ = static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *w++ = static_cast<char>(0x80 | (cp & 0x3F));
  }
  return w;
}

}  // namespace covenant::detail
