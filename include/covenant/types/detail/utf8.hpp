// covenant/types/detail/utf8.hpp - UTF-8 sequences: checking one (the strict and the lenient readers),
// counting code points, finding the first invalid one in a text, and writing a code point.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

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

/// Code points in `s` (the bytes that do not continue a UTF-8 sequence): what string lengths count.
inline std::size_t code_points(std::string_view s) noexcept {
  std::size_t n = 0;
  for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

/// The first `n` code points of `v` (all of it when it has fewer).
inline std::string_view first_code_points(std::string_view v, std::size_t n) noexcept {
  std::size_t cps = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if ((static_cast<unsigned char>(v[i]) & 0xC0) != 0x80) {
      if (cps == n) return v.substr(0, i);
      ++cps;
    }
  }
  return v;
}

/// Offset in `text` of the first byte that does not start a valid UTF-8 sequence (a stray
/// continuation byte, an overlong or surrogate encoding, a sequence cut short, a byte never used
/// in UTF-8), or std::string_view::npos when all of `text` is valid.
inline std::size_t first_invalid_utf8(std::string_view text) noexcept {
  const char* const b = text.data();
  const char* const e = b + text.size();
  for (const char* q = b; q < e;) {
    if (static_cast<unsigned char>(*q) < 0x80) {
      ++q;
      continue;
    }
    const std::size_t n = utf8_sequence(q, e);
    if (n == 0) return static_cast<std::size_t>(q - b);
    q += n;
  }
  return std::string_view::npos;
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
