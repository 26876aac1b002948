// covenant/detail/json_reader.hpp - a strict RFC 8259 JSON tokenizer that reads straight into
// the caller's objects. It allocates only into the strings it is given (which may throw
// std::bad_alloc) and reports syntax errors as values.
// On a syntax error it records the first error (position and message) and reports failure from
// then on, so decoding stops with one parse_error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace covenant::detail {

/// A number token as written in the text.
struct number_token {
  const char* begin = nullptr;
  const char* end = nullptr;
  bool negative = false;
  bool integral = true;  ///< no fraction and no exponent
  [[nodiscard]] std::string_view text() const noexcept { return {begin, static_cast<std::size_t>(end - begin)}; }
};

class json_reader {
 public:
  json_reader(std::string_view text, std::size_t max_depth) noexcept
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), max_depth_(max_depth) {}

  [[nodiscard]] bool failed() const noexcept { return error_ != nullptr; }
  [[nodiscard]] const char* error_message() const noexcept { return error_; }
  [[nodiscard]] std::size_t error_offset() const noexcept { return static_cast<std::size_t>(error_at_ - begin_); }
  [[nodiscard]] const char* position() const noexcept { return p_; }
  [[nodiscard]] const char* text_begin() const noexcept { return begin_; }
  [[nodiscard]] const char* text_end() const noexcept { return end_; }
  void rewind(const char* pos) noexcept { p_ = pos; }

  void fail(const char* at, const char* message) noexcept {
    if (error_ == nullptr) {
      error_ = message;
      error_at_ = at;
    }
    p_ = end_;
  }

  /// Skips whitespace; returns the next character, or '\0' at the end of the text.
  char peek() noexcept {
    const char* q = p_;
    while (q < end_) {
      const char c = *q;
      if (static_cast<unsigned char>(c) > 0x20) break;
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
      ++q;
    }
    p_ = q;
    return q < end_ ? *q : '\0';
  }

  /// After the top-level value: only whitespace may follow.
  bool finish() noexcept {
    if (failed()) return false;
    if (peek() != '\0') {
      fail(p_, "unexpected text after the JSON value");
      return false;
    }
    return true;
  }

  // ---- objects and arrays ------------------------------------------------------------------

  /// Consumes '{' (peek() must have returned '{'). Returns false on error (depth).
  bool begin_object() noexcept { return enter('{'); }
  bool begin_array() noexcept { return enter('['); }

  /// Object iteration: call with first=true right after begin_object(). Returns true and sets
  /// `key` when a member follows (the reader is then at its value); false at '}' or on error.
  /// `key` views the input when it has no escapes, else `scratch`.
  /// `expected` (optional) is the key the caller guesses comes next; when it contains no '"' or
  /// '\\' and matches, the key is taken without scanning.
  /// `matched` tells whether that fast path was taken.
  bool next_key(bool first, std::string_view& key, std::string& scratch, std::string_view expected,
                bool& matched) {
    matched = false;
    char c = peek();
    if (c == '}') {
      ++p_;
      --depth_;
      return false;
    }
    if (!first) {
      if (c != ',') {
        fail(p_, c == '\0' ? "unexpected end of input inside an object" : "expected ',' or '}' after an object member");
        return false;
      }
      ++p_;
      c = peek();
    }
    if (c != '"') {
      fail(p_, c == '\0' ? "unexpected end of input inside an object" : "expected a string key in double quotes");
      return false;
    }
    const std::size_t n = expected.size();
    if (n != 0 && static_cast<std::size_t>(end_ - p_) > n + 1 && p_[n + 1] == '"' &&
        same_bytes(p_ + 1, expected.data(), n)) {
      key = std::string_view(p_ + 1, n);
      p_ += n + 2;
      matched = true;
    } else if (!scan_string(key, scratch)) {
      return false;
    }
    if (peek() != ':') {
      fail(p_, "expected ':' after an object key");
      return false;
    }
    ++p_;
    return true;
  }

  bool next_key(bool first, std::string_view& key, std::string& scratch) {
    bool matched;
    return next_key(first, key, scratch, {}, matched);
  }

  /// Array iteration: call with first=true right after begin_array(). Returns true when an
  /// element follows (the reader is then at it); false at ']' or on error.
  bool next_element(bool first) noexcept {
    char c = peek();
    if (c == ']') {
      ++p_;
      --depth_;
      return false;
    }
    if (!first) {
      if (c != ',') {
        fail(p_, c == '\0' ? "unexpected end of input inside an array" : "expected ',' or ']' after an array element");
        return false;
      }
      ++p_;
      c = peek();
    }
    if (c == '\0') {
      fail(p_, "unexpected end of input inside an array");
      return false;
    }
    if (c == ']') {
      fail(p_, "expected a value after ','");
      return false;
    }
    return true;
  }

  // ---- scalars -------------------------------------------------------------------------------

  /// Reads a string value into `out` (peek() must have returned '"').
  bool read_string(std::string& out) {
    std::string_view view;
    return scan_string_into(view, out);
  }

  /// Reads a string value; `out` views the input when it has no escapes, else `scratch`.
  bool read_string_view(std::string_view& out, std::string& scratch) { return scan_string(out, scratch); }

  /// Reads a number token (peek() must have returned '-' or a digit).
  bool read_number(number_token& tok) noexcept {
    const char* s = p_;
    const char* q = p_;
    tok.negative = false;
    tok.integral = true;
    if (q < end_ && *q == '-') {
      tok.negative = true;
      ++q;
    }
    if (q >= end_) return bad_number(s);
    if (*q == '0') {
      ++q;
    } else if (*q >= '1' && *q <= '9') {
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    } else {
      return bad_number(s);
    }
    if (q < end_ && *q == '.') {
      tok.integral = false;
      ++q;
      if (q >= end_ || *q < '0' || *q > '9') return bad_number(s);
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    if (q < end_ && (*q == 'e' || *q == 'E')) {
      tok.integral = false;
      ++q;
      if (q < end_ && (*q == '+' || *q == '-')) ++q;
      if (q >= end_ || *q < '0' || *q > '9') return bad_number(s);
      while (q < end_ && *q >= '0' && *q <= '9') ++q;
    }
    tok.begin = s;
    tok.end = q;
    p_ = q;
    return true;
  }

  /// Reads `true` or `false` (peek() must have returned 't' or 'f').
  bool read_bool(bool& out) noexcept {
    if (literal("true", 4)) {
      out = true;
      return true;
    }
    if (literal("false", 5)) {
      out = false;
      return true;
    }
    fail(p_, "invalid literal (expected true, false or null)");
    return false;
  }

  /// Reads `null` (peek() must have returned 'n').
  bool read_null() noexcept {
    if (literal("null", 4)) return true;
    fail(p_, "invalid literal (expected true, false or null)");
    return false;
  }

  /// Skips one value of any type, checking its syntax. Returns its text span.
  bool skip_value(std::string_view& span) {
    const char c = peek();
    const char* s = p_;
    if (!skip_any(c)) return false;
    span = std::string_view(s, static_cast<std::size_t>(p_ - s));
    return true;
  }

 private:
  bool enter(char open) noexcept {
    if (depth_ >= max_depth_) {
      fail(p_, "nesting too deep");
      return false;
    }
    (void)open;
    ++p_;
    ++depth_;
    return true;
  }

  bool literal(const char* word, std::size_t n) noexcept {
    if (static_cast<std::size_t>(end_ - p_) >= n && std::memcmp(p_, word, n) == 0) {
      p_ += n;
      return true;
    }
    return false;
  }

  bool bad_number(const char* at) noexcept {
    fail(at, "invalid number");
    return false;
  }

  bool skip_any(char c) {
    switch (c) {
      case '"': {
        std::string_view v;
        return scan_string(v, scratch_);
      }
      case '{': {
        if (!begin_object()) return false;
        std::string_view k;
        bool first = true;
        while (next_key(first, k, scratch_)) {
          first = false;
          if (!skip_any(peek())) return false;
        }
        return !failed();
      }
      case '[': {
        if (!begin_array()) return false;
        bool first = true;
        while (next_element(first)) {
          first = false;
          if (!skip_any(peek())) return false;
        }
        return !failed();
      }
      case 't':
      case 'f': {
        bool b;
        return read_bool(b);
      }
      case 'n':
        return read_null();
      case '\0':
        fail(p_, "unexpected end of input (expected a value)");
        return false;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          number_token t;
          return read_number(t);
        }
        fail(p_, "expected a value (object, array, string, number, true, false or null)");
        return false;
    }
  }

  // Equality of n bytes without a library call for short keys.
  static bool same_bytes(const char* a, const char* b, std::size_t n) noexcept {
    if (n <= 16) {
      if (n >= 8) {
        std::uint64_t x0, y0, x1, y1;
        std::memcpy(&x0, a, 8);
        std::memcpy(&y0, b, 8);
        std::memcpy(&x1, a + n - 8, 8);
        std::memcpy(&y1, b + n - 8, 8);
        return ((x0 ^ y0) | (x1 ^ y1)) == 0;
      }
      if (n >= 4) {
        std::uint32_t x0, y0, x1, y1;
        std::memcpy(&x0, a, 4);
        std::memcpy(&y0, b, 4);
        std::memcpy(&x1, a + n - 4, 4);
        std::memcpy(&y1, b + n - 4, 4);
        return ((x0 ^ y0) | (x1 ^ y1)) == 0;
      }
      for (std::size_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return false;
      return true;
    }
    return std::memcmp(a, b, n) == 0;
  }

  static constexpr std::uint64_t ones = 0x0101010101010101ull;
  static constexpr std::uint64_t highs = 0x8080808080808080ull;

  static std::uint64_t has_zero_byte(std::uint64_t v) noexcept { return (v - ones) & ~v & highs; }

  // Position of the first byte that needs attention: '"', '\\', a control character or a
  // non-ASCII byte.
  const char* find_special(const char* q) const noexcept {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (end_ - q >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
      // signed compare: bytes >= 0x80 are negative, so "< 0x20" also flags non-ASCII bytes
      const __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                     _mm_cmplt_epi8(v, space));
      const int bits = _mm_movemask_epi8(m);
      if (bits != 0) return q + __builtin_ctz(static_cast<unsigned>(bits));
      q += 16;
    }
#endif
    while (end_ - q >= 8) {
      std::uint64_t w;
      std::memcpy(&w, q, 8);
      const std::uint64_t mask = has_zero_byte(w ^ (ones * '"')) | has_zero_byte(w ^ (ones * '\\')) |
                                 ((w - ones * 0x20) & ~w & highs) | (w & highs);
      if (mask != 0) return q + (__builtin_ctzll(mask) >> 3);
      q += 8;
    }
    while (q < end_) {
      const auto u = static_cast<unsigned char>(*q);
      if (u == '"' || u == '\\' || u < 0x20 || u >= 0x80) return q;
      ++q;
    }
    return q;
  }

  // Validates one UTF-8 sequence at q (a byte >= 0x80); returns its length or 0.
  std::size_t utf8_sequence(const char* q) const noexcept {
    const auto* u = reinterpret_cast<const unsigned char*>(q);
    const std::size_t left = static_cast<std::size_t>(end_ - q);
    const unsigned char c = u[0];
    if (c >= 0xC2 && c <= 0xDF) {
      return (left >= 2 && (u[1] & 0xC0) == 0x80) ? 2 : 0;
    }
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

  static void append_utf8(std::string& out, std::uint32_t cp) {
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

  bool hex4(const char* q, std::uint32_t& v) noexcept {
    if (end_ - q < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = q[i];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<std::uint32_t>(c - 'A' + 10);
      else return false;
    }
    return true;
  }

  // Decodes escapes from q (at a backslash) into out until the closing quote.
  bool decode_rest(const char* q, std::string& out) {
    for (;;) {
      const char* s = find_special(q);
      out.append(q, static_cast<std::size_t>(s - q));
      q = s;
      if (q >= end_) {
        fail(q, "unexpected end of input inside a string");
        return false;
      }
      const auto u = static_cast<unsigned char>(*q);
      if (u == '"') {
        p_ = q + 1;
        return true;
      }
      if (u >= 0x80) {
        const std::size_t n = utf8_sequence(q);
        if (n == 0) {
          fail(q, "invalid UTF-8 in string");
          return false;
        }
        out.append(q, n);
        q += n;
        continue;
      }
      if (u < 0x20) {
        fail(q, "control character in string (must be escaped)");
        return false;
      }
      // backslash
      if (end_ - q < 2) {
        fail(q, "unexpected end of input inside a string");
        return false;
      }
      const char e = q[1];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          std::uint32_t cp;
          if (!hex4(q + 2, cp)) {
            fail(q, "invalid \\u escape in string");
            return false;
          }
          q += 6;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            std::uint32_t lo;
            if (end_ - q < 6 || q[0] != '\\' || q[1] != 'u' || !hex4(q + 2, lo) || lo < 0xDC00 || lo > 0xDFFF) {
              fail(q, "unpaired surrogate in \\u escape");
              return false;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            q += 6;
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail(q - 6, "unpaired surrogate in \\u escape");
            return false;
          }
          append_utf8(out, cp);
          continue;
        }
        default:
          fail(q, "invalid escape in string");
          return false;
      }
      q += 2;
    }
  }

  // p_ at the opening quote. Sets `view` to the unescaped contents: a view of the input when
  // there are no escapes, else `scratch` (overwritten).
  bool scan_string(std::string_view& view, std::string& scratch) {
    const char* s = p_ + 1;
    const char* q = s;
    for (;;) {
      q = find_special(q);
      if (q >= end_) {
        fail(q, "unexpected end of input inside a string");
        return false;
      }
      const auto u = static_cast<unsigned char>(*q);
      if (u == '"') {
        view = std::string_view(s, static_cast<std::size_t>(q - s));
        p_ = q + 1;
        return true;
      }
      if (u >= 0x80) {
        const std::size_t n = utf8_sequence(q);
        if (n == 0) {
          fail(q, "invalid UTF-8 in string");
          return false;
        }
        q += n;
        continue;
      }
      if (u < 0x20) {
        fail(q, "control character in string (must be escaped)");
        return false;
      }
      scratch.assign(s, static_cast<std::size_t>(q - s));
      if (!decode_rest(q, scratch)) return false;
      view = scratch;
      return true;
    }
  }

  // out = [s, s + n), without the general-purpose checks of std::string::assign when the
  // string already has room (decoding into an existing object).
  static void assign(std::string& out, const char* s, std::size_t n) {
    if (n <= out.capacity() && n != 0) {
      out.resize(n);
      std::memcpy(out.data(), s, n);
    } else {
      out.assign(s, n);
    }
  }

  // Like scan_string, but the result always ends up in `out` (assigned).
  bool scan_string_into(std::string_view& view, std::string& out) {
    const char* s = p_ + 1;
    const char* q = s;
    for (;;) {
      q = find_special(q);
      if (q >= end_) {
        fail(q, "unexpected end of input inside a string");
        return false;
      }
      const auto u = static_cast<unsigned char>(*q);
      if (u == '"') {
        assign(out, s, static_cast<std::size_t>(q - s));
        view = out;
        p_ = q + 1;
        return true;
      }
      if (u >= 0x80) {
        const std::size_t n = utf8_sequence(q);
        if (n == 0) {
          fail(q, "invalid UTF-8 in string");
          return false;
        }
        q += n;
        continue;
      }
      if (u < 0x20) {
        fail(q, "control character in string (must be escaped)");
        return false;
      }
      out.assign(s, static_cast<std::size_t>(q - s));
      if (!decode_rest(q, out)) return false;
      view = out;
      return true;
    }
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  std::size_t max_depth_;
  std::size_t depth_ = 0;
  const char* error_ = nullptr;
  const char* error_at_ = nullptr;
  std::string scratch_;
};

}  // namespace covenant::detail
