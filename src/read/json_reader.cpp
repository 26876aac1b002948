// src/read/json_reader.cpp - the parts of the JSON tokenizer (covenant/read/detail/json_reader.hpp) off
// its fast path: strings with escapes, skipping a value, looking ahead for a key. Compiled once
// here rather than in every file that decodes.
#include "covenant/read/detail/json_reader.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace covenant::detail {

bool json_reader::expect_key_slow(bool first, const char* pattern, std::size_t n) noexcept {
  const char* q = skip_whitespace(p_);
  if (!first) {
    if (q >= end_ || *q != ',') return false;
    q = skip_whitespace(q + 1);
  }
  if (static_cast<std::size_t>(end_ - q) < n || !same_bytes(q, pattern, n)) return false;
  q += n;
  if (q < end_ && *q == ' ') ++q;
  p_ = q;
  return true;
}

bool json_reader::next_key(bool first, std::string_view& key, std::string& scratch) {
  bool matched;
  return next_key(first, key, scratch, {}, matched);
}

bool json_reader::later_key_is(std::string_view key) {
  const char* p = p_;
  const std::size_t depth = depth_;
  const char* error = error_;
  const char* error_at = error_at_;
  std::string scratch;
  std::string_view k;
  std::string_view ignored;
  bool found = false;
  if (skip_value(ignored)) {
    while (next_key(false, k, scratch)) {
      if (k == key) {
        found = true;
        break;
      }
      if (!skip_value(ignored)) break;
    }
  }
  p_ = p;
  depth_ = depth;
  error_ = error;
  error_at_ = error_at;
  return found;
}

bool json_reader::skip_any(char c) {
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

char* json_reader::grow(std::string& buf, char*& base, char*& limit, char* at) {
  const auto used = static_cast<std::size_t>(at - base);
  buf.resize(2 * buf.size());
  base = buf.data();
  limit = base + buf.size() - 32;
  return base + used;
}

bool json_reader::decode_rest(const char* s, const char* q, std::string& out) {
  const auto prefix = static_cast<std::size_t>(q - s);
  std::string& buf = (&out == &scratch_ || out.capacity() >= prefix + 64) ? out : scratch_;
  if (&buf == &out) buf.resize(buf.capacity());
  if (buf.size() < prefix + 64) buf.resize(prefix + 64 > 2 * buf.size() ? prefix + 64 : 2 * buf.size());
  char* base = buf.data();
  char* limit = base + buf.size() - 32;  // room for a 16-byte store or a 4-byte character
  std::memmove(base, s, prefix);
  char* w = base + prefix;
  const char* error_at = nullptr;
  const char* error = nullptr;
  for (;;) {
#if defined(__SSE2__)
    {
      const __m128i quote = _mm_set1_epi8('"');
      const __m128i backslash = _mm_set1_epi8('\\');
      const __m128i space = _mm_set1_epi8(0x20);
      while (end_ - q >= 16) {
        if (COVENANT_UNLIKELY(w > limit)) w = grow(buf, base, limit, w);
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(w), v);
        const __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                       _mm_cmplt_epi8(v, space));
        const int bits = _mm_movemask_epi8(m);
        if (bits != 0) {
          const int n = __builtin_ctz(static_cast<unsigned>(bits));
          q += n;
          w += n;
          goto special;
        }
        q += 16;
        w += 16;
      }
    }
#endif
    // The last bytes of the text, one at a time.
    while (q < end_) {
      const auto c = static_cast<unsigned char>(*q);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      if (COVENANT_UNLIKELY(w > limit)) w = grow(buf, base, limit, w);
      *w++ = *q++;
    }
#if defined(__SSE2__)
  special:
#endif
    if (COVENANT_UNLIKELY(w > limit)) w = grow(buf, base, limit, w);
    if (q >= end_) {
      error_at = q;
      error = "unexpected end of input inside a string";
      goto failed;
    }
    const auto u = static_cast<unsigned char>(*q);
    if (u == '"') {
      p_ = q + 1;
      if (&buf == &out) out.resize(static_cast<std::size_t>(w - base));
      else assign(out, base, static_cast<std::size_t>(w - base));
      return true;
    }
    if (u >= 0x80) {
      const std::size_t n = utf8_sequence(q, end_);
      if (n == 0) {
        error_at = q;
        error = "invalid UTF-8 in string";
        goto failed;
      }
      std::memcpy(w, q, n);
      w += n;
      q += n;
      continue;
    }
    if (u < 0x20) {
      error_at = q;
      error = "control character in string (must be escaped)";
      goto failed;
    }
    // backslash
    if (end_ - q < 2) {
      error_at = q;
      error = "unexpected end of input inside a string";
      goto failed;
    }
    const char e = q[1];
    if (e != 'u') {
      // \" \\ \/ \b \f \n \r \t by table (no jump per kind of escape)
      const char d = json_simple_escape(e);
      if (d == 0) {
        error_at = q;
        error = "invalid escape in string";
        goto failed;
      }
      *w++ = d;
      q += 2;
      continue;
    }
    {
      std::uint32_t cp;
      if (end_ - q < 6 || !json_hex4(q + 2, cp)) {
        error_at = q;
        error = "invalid \\u escape in string";
        goto failed;
      }
      q += 6;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        std::uint32_t lo;
        if (end_ - q < 6 || q[0] != '\\' || q[1] != 'u' || !json_hex4(q + 2, lo) || lo < 0xDC00 || lo > 0xDFFF) {
          error_at = q;
          error = "unpaired surrogate in \\u escape";
          goto failed;
        }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        q += 6;
      } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
        error_at = q - 6;
        error = "unpaired surrogate in \\u escape";
        goto failed;
      }
      w = put_utf8(w, cp);
    }
  }
failed:  // `out` keeps what was decoded before the error
  if (&buf == &out) out.resize(static_cast<std::size_t>(w - base));
  else assign(out, base, static_cast<std::size_t>(w - base));
  fail(error_at, error);
  return false;
}

bool json_reader::scan_string(std::string_view& view, std::string& scratch) {
  const char* s = p_ + 1;
  const char* q = plain_end(s);
  if (q == nullptr) return false;
  if (*q == '"') {
    view = std::string_view(s, static_cast<std::size_t>(q - s));
    p_ = q + 1;
    return true;
  }
  if (!decode_rest(s, q, scratch)) return false;
  view = scratch;
  return true;
}

void json_reader::assign_new(std::string& out, const char* s, std::size_t n) { out = std::string(s, n); }

}  // namespace covenant::detail
