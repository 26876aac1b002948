// covenant/detail/utf8.hpp - UTF-8 sequences: checking one (the strict and the lenient readers)
// and writing a code point.
#pragma once

#include <cstddef>
#include <cstdint>

namespace covenant::detail {

/// Length of the valid UTF-8 sequence at q (a byte >= 0x80), or 0.
inline std::size_t utf8_sequence(const char* q, const char* e) noexcept {
  const auto* u = reinterpret_cast<const unsigned char*>(q);
  const std::size_t left = static_cast<std::size_t>(e - q);
  const unsigned char c = u[0];
  if (c >= 0xC2 && c <= 0xDF) return (left >= 2 && (u[1] & 0xC0) == 0x80) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || (u[1] & 0xC0) != 0x80 || (u[2] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && u[1] < 0xA0) return 0;  // overlong
    if (c == 0xED && u[1] > 0x9F) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || (u[1] & 0xC0) != 0x80 || (u[2] & 0xC0) != 0x80 || (u[3] & 0xC0) != 0x80) return 0;
    if (c == 0xF0 && u[1] < 0x90) return 0;  // overlong
    if (c == 0xF4 && u[1] > 0x8F) return 0;  // > U+10FFFF
    return 4;
  }
  return 0;
}

/// UTF-8 of a code point (valid, not a surrogate).
template <class Out>
void append_utf8(Out& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace covenant::detail
