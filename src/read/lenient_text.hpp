// src/read/lenient_text.hpp - byte-level helpers of the lenient reader: character
// classes, UTF-8 checks, JSON string escaping and unescaping, dedenting of code blocks.
// Everything writes valid JSON string content (escaped, valid UTF-8) whatever the input bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "covenant/read/detail/json_lexer.hpp"
#include "covenant/types/detail/utf8.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace covenant::detail {

/// JSON whitespace (space, tab, line feed, carriage return).
constexpr bool is_json_ws(char c) noexcept { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
/// Whitespace the lenient reader skips between tokens (JSON whitespace, form feed, vertical tab).
constexpr bool is_ws(char c) noexcept { return is_json_ws(c) || c == '\f' || c == '\v'; }
constexpr bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// [q, e) holds at most four bytes, all hex digits (a \u escape cut by the end of the text).
inline bool hex_prefix(const char* q, const char* e) noexcept {
  if (e - q > 4) return false;
  for (; q < e; ++q)
    if (json_hex_digit(*q) < 0) return false;
  return true;
}

/// [q, e) is a proper prefix of a `\uXXXX` escape (cut by the end of the text).
inline bool hex_escape_prefix(const char* q, const char* e) noexcept {
  if (e - q >= 6) return false;
  if (q < e && *q != '\\') return false;
  if (q + 1 < e && q[1] != 'u') return false;
  return q + 2 >= e || hex_prefix(q + 2, e);
}

/// First occurrence of the n bytes `s` in [b, e), or nullptr.
inline const char* find_seq(const char* b, const char* e, const char* s, std::size_t n) noexcept {
  if (b >= e) return nullptr;
  const std::string_view hay(b, static_cast<std::size_t>(e - b));
  const std::size_t at = hay.find(std::string_view(s, n));
  return at == std::string_view::npos ? nullptr : b + at;
}

#if defined(__SSE2__)
/// Classifies 16 bytes at a time for find_string_special: bit i of the result is set where
/// byte i is '"', '\\', `closer` (when not 0), a control character or a non-ASCII byte.
class string_special_mask {
 public:
  explicit string_special_mask(char closer) noexcept
      : quote_(_mm_set1_epi8('"')),
        backslash_(_mm_set1_epi8('\\')),
        close_(_mm_set1_epi8(closer != 0 ? closer : '"')),
        space_(_mm_set1_epi8(0x20)) {}
  [[nodiscard]] int operator()(__m128i v) const noexcept {
    // signed compare: bytes >= 0x80 are negative, so "< 0x20" also flags non-ASCII bytes
    const __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote_), _mm_cmpeq_epi8(v, backslash_)),
                                   _mm_or_si128(_mm_cmpeq_epi8(v, close_), _mm_cmplt_epi8(v, space_)));
    return _mm_movemask_epi8(m);
  }

 private:
  __m128i quote_, backslash_, close_, space_;
};
#endif

/// First byte in [q, e) that a string scanner must look at: '"', '\\', `closer` (when not 0),
/// a control character or a non-ASCII byte.
inline const char* find_string_special(const char* q, const char* e, char closer) noexcept {
#if defined(__SSE2__)
  const string_special_mask special(closer);
  while (e - q >= 16) {
    const int bits = special(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
    if (bits != 0) return q + __builtin_ctz(static_cast<unsigned>(bits));
    q += 16;
  }
#endif
  for (; q < e; ++q) {
    const auto u = static_cast<unsigned char>(*q);
    if (u == '"' || u == '\\' || u < 0x20 || u >= 0x80 || (closer != 0 && *q == closer)) return q;
  }
  return q;
}

/// [q, e) is the start of a multi-byte UTF-8 character cut by the end of the text.
inline bool utf8_cut_at_end(const char* q, const char* e) noexcept {
  const auto* u = reinterpret_cast<const unsigned char*>(q);
  const std::size_t left = static_cast<std::size_t>(e - q);
  const unsigned char c = u[0];
  const std::size_t need = (c >= 0xC2 && c <= 0xDF) ? 2 : (c >= 0xE0 && c <= 0xEF) ? 3 : (c >= 0xF0 && c <= 0xF4) ? 4 : 0;
  if (need == 0 || left >= need) return false;
  for (std::size_t i = 1; i < left; ++i)
    if ((u[i] & 0xC0) != 0x80) return false;
  return true;
}

// The writers below append to `Out`: std::string or anything with push_back(char) and
// append(const char*, std::size_t).

/// JSON escape of a control character.
template <class Out>
void append_control(Out& out, char c) {
  switch (c) {
    case '\n': out.append("\\n", 2); return;
    case '\r': out.append("\\r", 2); return;
    case '\t': out.append("\\t", 2); return;
    case '\b': out.append("\\b", 2); return;
    case '\f': out.append("\\f", 2); return;
    default: {
      static constexpr char hex[] = "0123456789abcdef";
      const auto u = static_cast<unsigned char>(c);
      const char esc[6] = {'\\', 'u', '0', '0', hex[u >> 4], hex[u & 15]};
      out.append(esc, 6);
    }
  }
}

/// A code point (< 0x10000, not a surrogate) as JSON string content.
template <class Out>
void append_code_point_escape(Out& out, std::uint32_t cp) {
  if (cp < 0x20) return append_control(out, static_cast<char>(cp));
  if (cp == '"') return out.append("\\\"", 2), void();
  if (cp == '\\') return out.append("\\\\", 2), void();
  append_utf8(out, cp);
}

/// Raw text [b, e) as JSON string content (without the quotes): quotes, backslashes and control
/// characters escaped, invalid UTF-8 replaced by U+FFFD (sets `bad_utf8`).
template <class Out>
void append_escaped(Out& out, const char* b, const char* e, bool& bad_utf8) {
  while (b < e) {
    const char* s = find_string_special(b, e, 0);
    if (s > b) out.append(b, static_cast<std::size_t>(s - b));
    if (s >= e) return;
    const auto u = static_cast<unsigned char>(*s);
    if (u == '"') {
      out.append("\\\"", 2);
      b = s + 1;
    } else if (u == '\\') {
      out.append("\\\\", 2);
      b = s + 1;
    } else if (u < 0x20) {
      append_control(out, *s);
      b = s + 1;
    } else {
      const std::size_t n = utf8_sequence(s, e);
      if (n != 0) {
        out.append(s, n);
        b = s + n;
      } else {
        out.append("\\ufffd", 6);
        bad_utf8 = true;
        b = s + 1;
      }
    }
  }
}

/// Content of a valid JSON string (without the quotes) decoded into `out` (appended).
inline void unescape_json_string(std::string_view in, std::string& out) {
  const char* q = in.data();
  const char* e = q + in.size();
  while (q < e) {
    const void* bs = std::memchr(q, '\\', static_cast<std::size_t>(e - q));
    const char* s = bs != nullptr ? static_cast<const char*>(bs) : e;
    out.append(q, static_cast<std::size_t>(s - q));
    if (s >= e) return;
    if (e - s < 2) return;
    const char x = s[1];
    q = s + 2;
    switch (x) {
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        std::uint32_t cp = 0;
        if (e - s < 6 || !json_hex4(s + 2, cp)) return;
        q = s + 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          std::uint32_t lo = 0;
          if (e - q >= 6 && q[0] == '\\' && q[1] == 'u' && json_hex4(q + 2, lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            q += 6;
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;
        }
        append_utf8(out, cp);
        break;
      }
      default: out.push_back(x); break;  // " \ /
    }
  }
}

/// Code-block text [b, e) as JSON string content, dedented like Python's textwrap.dedent: a
/// blank first line and a blank last line are dropped, whitespace-only lines become empty and
/// the indentation common to all other lines is removed.
template <class Out>
void append_dedented(Out& out, const char* b, const char* e, bool& bad_utf8) {
  // blank first line
  {
    const char* q = b;
    while (q < e && (*q == ' ' || *q == '\t' || *q == '\r')) ++q;
    if (q < e && *q == '\n') b = q + 1;
  }
  // blank last line
  {
    const char* q = e;
    while (q > b && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\r')) --q;
    if (q > b && q[-1] == '\n') e = q - 1;
    if (e > b && e[-1] == '\r') --e;
  }
  // common indentation of the non-blank lines
  std::size_t indent = static_cast<std::size_t>(-1);
  bool blank_lines = false;
  for (const char* ls = b; ls < e;) {
    const void* nl = std::memchr(ls, '\n', static_cast<std::size_t>(e - ls));
    const char* le = nl != nullptr ? static_cast<const char*>(nl) : e;
    const char* q = ls;
    while (q < le && (*q == ' ' || *q == '\t' || *q == '\r')) ++q;
    if (q < le) {
      const auto n = static_cast<std::size_t>(q - ls);
      if (n < indent) indent = n;
    } else if (le > ls) {
      blank_lines = true;
    }
    ls = le < e ? le + 1 : e;
  }
  if (indent == static_cast<std::size_t>(-1)) indent = 0;
  if (indent == 0 && !blank_lines) {
    append_escaped(out, b, e, bad_utf8);
    return;
  }
  for (const char* ls = b; ls < e;) {
    const void* nl = std::memchr(ls, '\n', static_cast<std::size_t>(e - ls));
    const char* le = nl != nullptr ? static_cast<const char*>(nl) : e;
    const char* q = ls;
    while (q < le && (*q == ' ' || *q == '\t' || *q == '\r')) ++q;
    if (q < le) {  // not blank: remove the common indentation
      q = ls;
      while (q < le && static_cast<std::size_t>(q - ls) < indent) ++q;
      append_escaped(out, q, le, bad_utf8);
    }
    if (le < e) out.append("\\n", 2);
    ls = le < e ? le + 1 : e;
  }
}

}  // namespace covenant::detail
