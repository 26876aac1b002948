// covenant/detail/json_reader.hpp - a strict RFC 8259 JSON tokenizer that reads straight into
// the caller's objects. It allocates only into the strings it is given (which may throw
// std::bad_alloc) and reports syntax errors as values.
// On a syntax error it records the first error (position and message) and reports failure from
// then on, so decoding stops with one parse_error.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "covenant/read/detail/json_lexer.hpp"
#include "covenant/types/config.hpp"
#include "covenant/types/detail/utf8.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__GNUC__) || defined(__clang__)
#define COVENANT_ALWAYS_INLINE inline __attribute__((always_inline))
#define COVENANT_NOINLINE __attribute__((noinline))
#define COVENANT_LIKELY(x) __builtin_expect(!!(x), 1)
#define COVENANT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define COVENANT_ALWAYS_INLINE inline
#define COVENANT_NOINLINE
#define COVENANT_LIKELY(x) (x)
#define COVENANT_UNLIKELY(x) (x)
#endif

namespace covenant::detail {

/// 1-based line and column (counted in code points) of byte `offset` of `text`, for messages.
inline std::pair<std::uint32_t, std::uint32_t> line_column(std::string_view text, std::size_t offset) noexcept {
  std::uint32_t line = 1;
  std::uint32_t column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  return {line, column};
}

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
  COVENANT_ALWAYS_INLINE char peek() noexcept {
    if (COVENANT_LIKELY(p_ < end_)) {
      const char c = *p_;
      if (static_cast<unsigned char>(c) > 0x20) return c;
      // The usual single space before a value or after a comma.
      if (c == ' ' && p_ + 1 < end_ && static_cast<unsigned char>(p_[1]) > 0x20) return *++p_;
    }
    return peek_slow();
  }

 private:
  // First byte at or after q that is not JSON whitespace (or end_).
  const char* skip_whitespace(const char* q) const noexcept {
    while (q < end_) {
      const char c = *q;
      if (static_cast<unsigned char>(c) > 0x20) break;
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
      ++q;
    }
    return q;
  }

  // expect_key with any whitespace, near the end of the text.
  COVENANT_API bool expect_key_slow(bool first, const char* pattern, std::size_t n) noexcept;

  char peek_slow() noexcept {
    const char* q = skip_whitespace(p_);
    p_ = q;
    return q < end_ ? *q : '\0';
  }

 public:
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
  COVENANT_ALWAYS_INLINE bool next_key(bool first, std::string_view& key, std::string& scratch,
                                       std::string_view expected, bool& matched) {
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

  /// Object iteration: true (and the reader after the object) when '}' is next.
  COVENANT_ALWAYS_INLINE bool end_object() noexcept {
    if (peek() != '}') return false;
    ++p_;
    --depth_;
    return true;
  }

  COVENANT_API bool next_key(bool first, std::string_view& key, std::string& scratch);

  /// Whether a later member of the object being read (after the value the reader is at) has the
  /// key `key`. Looks ahead without moving the reader; a syntax error on the way is left for the
  /// caller's own reading to find.
  COVENANT_API bool later_key_is(std::string_view key);

  /// Fast path in front of next_key for the member the caller expects next. `pattern` is the
  /// key in double quotes followed by ':' (`"key":`, the key without '"' or '\\'). When the next
  /// member (after the ',' unless `first`) starts with exactly that text, consumes it, and one
  /// space after it, and returns true: the reader is then at the value, as after next_key.
  /// Otherwise returns false without moving (call next_key, which reads any other form).
  COVENANT_ALWAYS_INLINE bool expect_key(bool first, const char* pattern, std::size_t n) noexcept {
    const char* q = p_;
    // The usual form: [", "]"key": with room for one more byte (all reads below stay in the text).
    if (COVENANT_LIKELY(static_cast<std::size_t>(end_ - q) >= n + 3)) {
      if (!first) {
        if (COVENANT_UNLIKELY(*q != ',')) return expect_key_slow(first, pattern, n);
        ++q;
      }
      if (*q == ' ') ++q;
      if (COVENANT_UNLIKELY(static_cast<unsigned char>(*q) <= 0x20)) return expect_key_slow(first, pattern, n);
      if (!same_bytes(q, pattern, n)) return false;
      q += n;
      if (*q == ' ') ++q;
      p_ = q;
      return true;
    }
    return expect_key_slow(first, pattern, n);
  }

  /// Array iteration: call with first=true right after begin_array(). Returns true when an
  /// element follows (the reader is then at it); false at ']' or on error.
  COVENANT_ALWAYS_INLINE bool next_element(bool first) noexcept {
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
  COVENANT_ALWAYS_INLINE bool read_string(std::string& out) {
    std::string_view view;
    return scan_string_into(view, out);
  }

  /// Reads a string value; `out` views the input when it has no escapes, else `scratch`.
  bool read_string_view(std::string_view& out, std::string& scratch) { return scan_string(out, scratch); }

  /// Reads a number token (peek() must have returned '-' or a digit).
  COVENANT_ALWAYS_INLINE bool read_number(number_token& tok) noexcept {
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

  COVENANT_API bool skip_any(char c);

  // Equality of n bytes without a library call for short keys.
  COVENANT_ALWAYS_INLINE static bool same_bytes(const char* a, const char* b, std::size_t n) noexcept {
    if (n - 8 <= 8) {  // 8 to 16 bytes
      std::uint64_t x0, y0, x1, y1;
      std::memcpy(&x0, a, 8);
      std::memcpy(&y0, b, 8);
      std::memcpy(&x1, a + n - 8, 8);
      std::memcpy(&y1, b + n - 8, 8);
      return ((x0 ^ y0) | (x1 ^ y1)) == 0;
    }
    if (n - 17 <= 15) {  // 17 to 32 bytes
      std::uint64_t x[4], y[4];
      std::memcpy(&x[0], a, 16);
      std::memcpy(&y[0], b, 16);
      std::memcpy(&x[2], a + n - 16, 16);
      std::memcpy(&y[2], b + n - 16, 16);
      return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3])) == 0;
    }
    if (n < 8) {
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
  COVENANT_ALWAYS_INLINE const char* find_special(const char* q) const noexcept {
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

  // Doubles the decoding buffer; returns where `at` is now.
  static char* grow(std::string& buf, char*& base, char*& limit, char* at);

  // Decodes the string whose contents start at s, from its first escape at q (bytes [s, q) are
  // plain text, already checked), into out (replaced) until the closing quote. The text is written
  // through a pointer 16 bytes at a time into a buffer that keeps room for a whole store and grows
  // by doubling: `out` itself when it already has room (decoding into an existing object), else
  // the reader's buffer, copied into `out` once at the end.
  COVENANT_API bool decode_rest(const char* s, const char* q, std::string& out);

  // p_ at the opening quote. Sets `view` to the unescaped contents: a view of the input when
  // there are no escapes, else `scratch` (overwritten).
  COVENANT_API bool scan_string(std::string_view& view, std::string& scratch);

  // out = [s, s + n), without the general-purpose checks of std::string::assign: in place when
  // the string already has room (decoding into an existing object), else a new string of exactly
  // that size.
  COVENANT_ALWAYS_INLINE static void assign(std::string& out, const char* s, std::size_t n) {
    if (COVENANT_LIKELY(n <= out.capacity())) {
      if (n != out.size()) out.resize(n);
      copy_bytes(out.data(), s, n);
    } else {
      assign_new(out, s, n);
    }
  }

  COVENANT_API static void assign_new(std::string& out, const char* s, std::size_t n);

  // memcpy without a library call for up to 64 bytes (overlapping loads and stores).
  COVENANT_ALWAYS_INLINE static void copy_bytes(char* d, const char* s, std::size_t n) noexcept {
    if (n <= 16) {
      if (n >= 8) {
        std::uint64_t a, b;
        std::memcpy(&a, s, 8);
        std::memcpy(&b, s + n - 8, 8);
        std::memcpy(d, &a, 8);
        std::memcpy(d + n - 8, &b, 8);
      } else if (n >= 4) {
        std::uint32_t a, b;
        std::memcpy(&a, s, 4);
        std::memcpy(&b, s + n - 4, 4);
        std::memcpy(d, &a, 4);
        std::memcpy(d + n - 4, &b, 4);
      } else {
        for (std::size_t i = 0; i < n; ++i) d[i] = s[i];
      }
      return;
    }
#if defined(__SSE2__)
    if (n <= 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + n - 16));
      if (n > 32) {
        const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + 16));
        const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + n - 32));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 16), c);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n - 32), e);
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d), a);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n - 16), b);
      return;
    }
#endif
    std::memcpy(d, s, n);
  }

  // From q (just after an opening quote): the closing quote or the first escape, the bytes before
  // it checked (valid UTF-8, no control character). Null on an error (recorded).
  COVENANT_ALWAYS_INLINE const char* plain_end(const char* q) noexcept {
    for (;;) {
      q = find_special(q);
      if (q >= end_) {
        fail(q, "unexpected end of input inside a string");
        return nullptr;
      }
      const auto u = static_cast<unsigned char>(*q);
      if (u == '"' || u == '\\') return q;
      if (u < 0x80) {
        fail(q, "control character in string (must be escaped)");
        return nullptr;
      }
      const std::size_t n = utf8_sequence(q, end_);
      if (n == 0) {
        fail(q, "invalid UTF-8 in string");
        return nullptr;
      }
      q += n;
    }
  }

  // Like scan_string, but the result always ends up in `out` (assigned).
  COVENANT_ALWAYS_INLINE bool scan_string_into(std::string_view& view, std::string& out) {
    const char* s = p_ + 1;
    const char* q = plain_end(s);
    if (q == nullptr) return false;
    if (*q == '"') {
      assign(out, s, static_cast<std::size_t>(q - s));
      view = out;
      p_ = q + 1;
      return true;
    }
    if (!decode_rest(s, q, out)) return false;
    view = out;
    return true;
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
