// Internal to the lenient reader (src/read/lenient/): byte-level scanning for the repairing reader
// (quote kinds, literal words, whitespace and comments, key bytes).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "text.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace covenant::lenient_impl {

// Characters of an unquoted key as recognised by the lookahead (spaces allowed: "Some key:").
inline constexpr auto key_char_table = [] {
  std::array<bool, 256> t{};
  for (int u = 0; u < 256; ++u) {
    const char c = static_cast<char>(u);
    t[static_cast<std::size_t>(u)] = static_cast<unsigned>((c | 0x20) - 'a') < 26u || (c >= '0' && c <= '9') ||
                                     c == '_' || c == '$' || u >= 0x80 || c == '-' || c == '.' || c == ' ' ||
                                     c == '\t';
  }
  return t;
}();
inline bool is_key_char(char c) noexcept { return key_char_table[static_cast<uchar>(c)]; }

// ---- quotes ----------------------------------------------------------------------------------

enum class qk : std::uint8_t { none, dq, sq, bt, ldq, lsq, tdq, tsq, tbt };

// is_seq for three bytes, compared inline.
[[gnu::always_inline]] inline bool is_seq3(const char* q, const char* e, char a, char b, char c) noexcept {
  return e - q >= 3 && q[0] == a && q[1] == b && q[2] == c;
}
inline bool is_ldq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x9C", 3); }
inline bool is_rdq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x9D", 3); }
inline bool is_lsq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x98", 3); }
inline bool is_rsq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x99", 3); }

inline qk quote_at(const char* q, const char* e) noexcept {
  if (q >= e) return qk::none;
  switch (*q) {
    case '"': return is_seq3(q, e, '"', '"', '"') ? qk::tdq : qk::dq;
    case '\'': return is_seq3(q, e, '\'', '\'', '\'') ? qk::tsq : qk::sq;
    case '`': return is_seq3(q, e, '`', '`', '`') ? qk::tbt : qk::bt;
    case '\xE2':
      if (is_ldq(q, e)) return qk::ldq;
      if (is_lsq(q, e)) return qk::lsq;
      return qk::none;
    default: return qk::none;
  }
}

inline std::size_t open_len(qk k) noexcept {
  switch (k) {
    case qk::ldq:
    case qk::lsq:
    case qk::tdq:
    case qk::tsq:
    case qk::tbt: return 3;
    default: return 1;
  }
}

// ASCII closing character of a single-character quote kind (0 for the typographic ones).
inline char ascii_closer(qk k) noexcept {
  switch (k) {
    case qk::dq: return '"';
    case qk::sq: return '\'';
    case qk::bt: return '`';
    default: return 0;
  }
}

// Length of the closing quote at q for kind k, or 0.
inline std::size_t closer_at(qk k, const char* q, const char* e) noexcept {
  switch (k) {
    case qk::ldq: return is_rdq(q, e) ? 3 : 0;
    case qk::lsq: return is_rsq(q, e) ? 3 : 0;
    default: {
      const char c = ascii_closer(k);
      return (c != 0 && q < e && *q == c) ? 1 : 0;
    }
  }
}

inline const char* quote_note(qk k) noexcept {
  switch (k) {
    case qk::sq: return "replaced single quotes with double quotes";
    case qk::bt: return "replaced backticks with double quotes";
    case qk::ldq:
    case qk::lsq: return "replaced typographic quotes with double quotes";
    default: return nullptr;
  }
}

// ---- literals --------------------------------------------------------------------------------

// JSON spelling of a literal word (true/True/TRUE, false/..., null/None/NULL/Null), or empty.
inline std::string_view literal_of(std::string_view w) noexcept {
  switch (w.size()) {
    case 4:
      if (w == "true" || w == "True" || w == "TRUE") return "true";
      if (w == "null" || w == "None" || w == "NULL" || w == "Null") return "null";
      return {};
    case 5:
      if (w == "false" || w == "False" || w == "FALSE") return "false";
      return {};
    default: return {};
  }
}

inline bool is_literal_prefix(std::string_view w) noexcept {
  static constexpr std::string_view words[] = {"true", "True", "TRUE", "false", "False", "FALSE",
                                               "null", "None", "NULL", "Null"};
  if (w.empty()) return false;
  for (auto x : words)
    if (w.size() < x.size() && x.substr(0, w.size()) == w) return true;
  return false;
}

// Whitespace as a bit set over the bytes 0..32: tab, line feed, vertical tab, form feed,
// carriage return, space.
inline constexpr std::uint64_t ws_bits = (1ull << 9) | (1ull << 10) | (1ull << 11) | (1ull << 12) | (1ull << 13) | (1ull << 32);
inline bool ws_byte(char c) noexcept {
  const auto u = static_cast<uchar>(c);
  return u <= 32 && ((ws_bits >> u) & 1u) != 0;
}

// End of the whitespace run starting at q (indentation of pretty-printed JSON: often 16+ bytes).
inline const char* skip_ws_run(const char* q, const char* e) noexcept {
  q = skip_json_ws_blocks(q, e);
  while (q < e && ws_byte(*q)) ++q;
  return q;
}

// First byte in [q, e) that is not an ASCII letter, digit or '_' (the bulk of a key written
// without quotes), checked 16 bytes at a time while 16 are left; the rest byte by byte.
inline const char* skip_identifier_chars(const char* q, const char* e) noexcept {
#if defined(__SSE2__)
  const __m128i case_bit = _mm_set1_epi8(0x20);
  const __m128i a1 = _mm_set1_epi8('a' - 1);
  const __m128i z1 = _mm_set1_epi8('z' + 1);
  const __m128i d0 = _mm_set1_epi8('0' - 1);
  const __m128i d9 = _mm_set1_epi8('9' + 1);
  const __m128i us = _mm_set1_epi8('_');
  while (e - q >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i lower = _mm_or_si128(v, case_bit);  // signed compares: non-ASCII bytes are negative
    const __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(lower, a1), _mm_cmplt_epi8(lower, z1));
    const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, d0), _mm_cmplt_epi8(v, d9));
    const __m128i ok = _mm_or_si128(_mm_or_si128(letter, digit), _mm_cmpeq_epi8(v, us));
    const unsigned other = ~static_cast<unsigned>(_mm_movemask_epi8(ok)) & 0xFFFFu;
    if (other != 0) return q + __builtin_ctz(other);
    q += 16;
  }
#endif
  for (; q < e; ++q) {
    const char c = *q;
    if (!(static_cast<unsigned>((c | 0x20) - 'a') < 26u || (c >= '0' && c <= '9') || c == '_')) break;
  }
  return q;
}

// Bytes between tokens: 1 whitespace, 2 the first byte of what skip_ws_slow() skips (a comment,
// a byte order mark, a no-break space), 0 anything else.
inline constexpr auto gap_class = [] {
  std::array<std::uint8_t, 256> t{};
  for (char c : std::string_view(" \n\r\t\f\v")) t[static_cast<unsigned char>(c)] = 1;
  t['/'] = 2;
  t[0xEF] = 2;
  t[0xC2] = 2;
  return t;
}();

// End of the whitespace run starting at q (any length, 0 included). The common runs are short:
// one space after ':', or a line break (already passed) and the spaces of the indentation,
// which are counted 8 bytes at a time; anything else goes to skip_ws_run.
[[gnu::always_inline]] inline const char* skip_spaces(const char* q, const char* e) noexcept {
  while (e - q >= 8) {
    std::uint64_t w = 0;
    std::memcpy(&w, q, 8);
    const std::uint64_t x = w ^ 0x2020202020202020ull;  // zero bytes: spaces (little-endian)
    if (x != 0) {
      q += __builtin_ctzll(x) >> 3;
      break;
    }
    q += 8;
  }
  return q;
}
[[gnu::always_inline]] inline const char* skip_ws_short(const char* q, const char* e) noexcept {
  if (q < e && gap_class[static_cast<uchar>(*q)] == 1) {
    q = skip_spaces(q + 1, e);
    if (q < e && gap_class[static_cast<uchar>(*q)] == 1) return skip_ws_run(q, e);
  }
  return q;
}

// First of the bytes a, b, c in [q, e), or e.
inline const char* find_any3(const char* q, const char* e, char a, char b, char c) noexcept {
#if defined(__SSE2__)
  const __m128i va = _mm_set1_epi8(a);
  const __m128i vb = _mm_set1_epi8(b);
  const __m128i vc = _mm_set1_epi8(c);
  while (e - q >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, va), _mm_cmpeq_epi8(v, vb)), _mm_cmpeq_epi8(v, vc));
    const unsigned bits = static_cast<unsigned>(_mm_movemask_epi8(m));
    if (bits != 0) return q + __builtin_ctz(bits);
    q += 16;
  }
#endif
  while (q < e && *q != a && *q != b && *q != c) ++q;
  return q;
}

// Bytes that end an unquoted key (1), and bytes that JSON string content cannot hold as they are
// (2: control characters, backslash, non-ASCII).
inline constexpr auto key_stop = [] {
  std::array<std::uint8_t, 256> t{};
  for (int u = 0; u < 0x20; ++u) t[static_cast<std::size_t>(u)] = 2;
  for (int u = 0x80; u < 0x100; ++u) t[static_cast<std::size_t>(u)] = 2;
  t['\\'] = 2;
  for (char c : std::string_view(":\n,{}[]\"'`")) t[static_cast<unsigned char>(c)] = 1;
  return t;
}();

inline int quote_class(qk k) noexcept { return k == qk::sq ? 0 : k == qk::bt ? 1 : 2; }

// [a, a + n) and [b, b + n) hold the same bytes (short keys: compared without a call).
inline bool same_bytes(const char* a, const char* b, std::size_t n) noexcept {
  if (n >= 8) {
    std::size_t i = 0;
    for (; i + 8 < n; i += 8) {
      std::uint64_t x = 0, y = 0;
      std::memcpy(&x, a + i, 8);
      std::memcpy(&y, b + i, 8);
      if (x != y) return false;
    }
    std::uint64_t x = 0, y = 0;
    std::memcpy(&x, a + n - 8, 8);
    std::memcpy(&y, b + n - 8, 8);
    return x == y;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

}  // namespace covenant::lenient_impl
