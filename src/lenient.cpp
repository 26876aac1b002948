// Lenient reading of model text: candidates (whole text, fences, prose, reasoning blocks, JSON in
// strings, one-element arrays, the whole text as a string) and a one-pass repairing reader that
// writes strict JSON and records every change as a note.
//
// Every loop here moves forward; lookaheads are bounded (a few hundred bytes) or cover text that
// no other lookahead covers, so the work is linear in the size of the text. The search for values
// in prose, which may retry from inside text it already read, has a work budget.
#include "covenant/lenient.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/detail/json_reader.hpp"
#include "covenant/detail/lenient_text.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace covenant {

std::string_view to_string(strictness level) noexcept {
  switch (level) {
    case strictness::strict: return "strict";
    case strictness::repair: return "repair";
    case strictness::coerce: return "coerce";
  }
  return "coerce";
}

std::string_view to_string(candidate_kind kind) noexcept {
  switch (kind) {
    case candidate_kind::whole_text: return "whole_text";
    case candidate_kind::after_reasoning: return "after_reasoning";
    case candidate_kind::fenced_block: return "fenced_block";
    case candidate_kind::in_prose: return "in_prose";
    case candidate_kind::string_encoded: return "string_encoded";
    case candidate_kind::array_element: return "array_element";
    case candidate_kind::all_values: return "all_values";
    case candidate_kind::scalar_text: return "scalar_text";
  }
  return "whole_text";
}

std::size_t candidate::repairs() const noexcept {
  std::size_t n = 0;
  for (const auto& x : notes) n += x.kind == note_kind::repaired ? 1 : 0;
  return n;
}

bool looks_like_strict_json(std::string_view text) noexcept {
  std::size_t b = 0;
  std::size_t e = text.size();
  while (b < e && detail::is_json_ws(text[b])) ++b;
  while (e > b && detail::is_json_ws(text[e - 1])) --e;
  if (b == e) return false;
  const char first = text[b];
  const char last = text[e - 1];
  switch (first) {
    case '{': return last == '}';
    case '[': return last == ']';
    case '"': return last == '"' && e - b >= 2;
    case 't':
    case 'f': return last == 'e';
    case 'n': return last == 'l';
    default: return (first == '-' || detail::is_digit(first)) && detail::is_digit(last);
  }
}

namespace {

using detail::is_digit;
using detail::is_ws;
using uchar = unsigned char;

constexpr std::size_t npos = static_cast<std::size_t>(-1);
constexpr std::size_t depth_ceiling = 1000;

bool is_alpha(char c) noexcept { return static_cast<unsigned>((c | 0x20) - 'a') < 26u; }
bool is_word_char(char c) noexcept {
  return is_alpha(c) || is_digit(c) || c == '_' || c == '$' || static_cast<uchar>(c) >= 0x80;
}
// Characters of an unquoted key as recognised by the lookahead (spaces allowed: "Some key:").
constexpr auto key_char_table = [] {
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

bool is_seq(const char* q, const char* e, const char* s, std::size_t n) noexcept {
  return static_cast<std::size_t>(e - q) >= n && std::memcmp(q, s, n) == 0;
}
// is_seq for three bytes, compared inline.
[[gnu::always_inline]] inline bool is_seq3(const char* q, const char* e, char a, char b, char c) noexcept {
  return e - q >= 3 && q[0] == a && q[1] == b && q[2] == c;
}
bool is_ldq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x9C", 3); }
bool is_rdq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x9D", 3); }
bool is_lsq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x98", 3); }
bool is_rsq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x99", 3); }

qk quote_at(const char* q, const char* e) noexcept {
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

std::size_t open_len(qk k) noexcept {
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
char ascii_closer(qk k) noexcept {
  switch (k) {
    case qk::dq: return '"';
    case qk::sq: return '\'';
    case qk::bt: return '`';
    default: return 0;
  }
}

// Length of the closing quote at q for kind k, or 0.
std::size_t closer_at(qk k, const char* q, const char* e) noexcept {
  switch (k) {
    case qk::ldq: return is_rdq(q, e) ? 3 : 0;
    case qk::lsq: return is_rsq(q, e) ? 3 : 0;
    default: {
      const char c = ascii_closer(k);
      return (c != 0 && q < e && *q == c) ? 1 : 0;
    }
  }
}

const char* quote_note(qk k) noexcept {
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
std::string_view literal_of(std::string_view w) noexcept {
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

bool is_literal_prefix(std::string_view w) noexcept {
  static constexpr std::string_view words[] = {"true", "True", "TRUE", "false", "False", "FALSE",
                                               "null", "None", "NULL", "Null"};
  if (w.empty()) return false;
  for (auto x : words)
    if (w.size() < x.size() && x.substr(0, w.size()) == w) return true;
  return false;
}

// ---- notes -----------------------------------------------------------------------------------

// Writes notes into a note_list, overwriting the entries of an earlier use (so their strings
// keep their capacity) and capping the count.
struct note_writer {
  note_list* list = nullptr;
  std::size_t used = 0;
  std::size_t suppressed = 0;

  void reset(note_list& l) noexcept {
    list = &l;
    used = 0;
    suppressed = 0;
  }
  note* next(note_kind kind) {
    if (used >= COVENANT_LENIENT_MAX_NOTES) {
      ++suppressed;
      return nullptr;
    }
    return &slot(kind);
  }
  note& slot(note_kind kind) {
    if (used == list->size()) list->emplace_back();
    note& n = (*list)[used++];
    n.kind = kind;
    return n;
  }
  void finish() {
    if (suppressed != 0) {
      note& n = slot(note_kind::repaired);
      n.path = path();
      n.detail = "and " + std::to_string(suppressed) + " more changes not listed";
      suppressed = 0;
    }
    list->resize(used);
  }
};

// ---- the repairing reader --------------------------------------------------------------------

// Output of the reader: writes through a raw pointer into a std::string sized ahead (grown when
// needed), so that the many one-byte writes stay cheap. attach() before writing, detach() after.
class out_buf {
 public:
  void attach(std::string& s, std::size_t hint) {
    s_ = &s;
    const std::size_t n = s.size();
    if (s.capacity() < n + hint) s.reserve(n + hint);
    s.resize(s.capacity());
    b_ = s.data();
    p_ = b_ + n;
    e_ = b_ + s.size();
  }
  void detach() { s_->resize(size()); }

  [[nodiscard]] std::size_t size() const noexcept { return static_cast<std::size_t>(p_ - b_); }
  [[nodiscard]] const char* data() const noexcept { return b_; }
  char operator[](std::size_t i) const noexcept { return b_[i]; }
  void resize(std::size_t n) noexcept { p_ = b_ + n; }  // shrinks only
  [[gnu::always_inline]] void push_back(char c) {
    if (p_ == e_) grow(1);
    *p_++ = c;
  }
  [[gnu::always_inline]] void append(const char* s, std::size_t n) {
    if (static_cast<std::size_t>(e_ - p_) < n) grow(n);
    copy_bytes(p_, s, n);
    p_ += n;
  }
  [[gnu::always_inline]] void append(const char* s) { append(s, std::strlen(s)); }

  // Copies string content from q up to the first byte a string scanner must look at ('"', '\\',
  // `closer` when not 0, a control character or a non-ASCII byte; see
  // detail::find_string_special) and returns where it stopped: 16 bytes are checked and copied
  // at a time (the output keeps 16 bytes of room), the copy of the last block being cut back.
  [[gnu::always_inline]] const char* copy_string_run(const char* q, const char* e, char closer) {
#if defined(__SSE2__)
    const detail::string_special_mask special(closer);
    while (e - q >= 16) {
      if (e_ - p_ < 16) grow(16);
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p_), v);
      const int bits = special(v);
      if (bits != 0) {
        const int k = __builtin_ctz(static_cast<unsigned>(bits));
        p_ += k;
        return q + k;
      }
      q += 16;
      p_ += 16;
    }
#endif
    const char* s = detail::find_string_special(q, e, closer);
    append(q, static_cast<std::size_t>(s - q));
    return s;
  }

 private:
  [[gnu::noinline]] void grow(std::size_t n) {
    const std::size_t used = size();
    s_->resize(std::max(s_->size() * 2, used + n + 256));
    b_ = s_->data();
    p_ = b_ + used;
    e_ = b_ + s_->size();
  }

  // memcpy of a few bytes without a call: overlapping loads of 8, 4 or 1 bytes.
  [[gnu::always_inline]] static void copy_bytes(char* d, const char* s, std::size_t n) noexcept {
    if (n >= 8) {
      if (n > 16) {
        std::memcpy(d, s, n);
        return;
      }
      std::uint64_t a = 0, b = 0;
      std::memcpy(&a, s, 8);
      std::memcpy(&b, s + n - 8, 8);
      std::memcpy(d, &a, 8);
      std::memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
      std::uint32_t a = 0, b = 0;
      std::memcpy(&a, s, 4);
      std::memcpy(&b, s + n - 4, 4);
      std::memcpy(d, &a, 4);
      std::memcpy(d + n - 4, &b, 4);
    } else if (n != 0) {
      const char a = s[0], b = s[n / 2], c = s[n - 1];
      d[0] = a;
      d[n / 2] = b;
      d[n - 1] = c;
    }
  }

  std::string* s_ = nullptr;
  char* b_ = nullptr;
  char* p_ = nullptr;
  char* e_ = nullptr;
};

// Whitespace as a bit set over the bytes 0..32: tab, line feed, vertical tab, form feed,
// carriage return, space.
constexpr std::uint64_t ws_bits = (1ull << 9) | (1ull << 10) | (1ull << 11) | (1ull << 12) | (1ull << 13) | (1ull << 32);
inline bool ws_byte(char c) noexcept {
  const auto u = static_cast<uchar>(c);
  return u <= 32 && ((ws_bits >> u) & 1u) != 0;
}

// End of the whitespace run starting at q (indentation of pretty-printed JSON: often 16+ bytes).
inline const char* skip_ws_run(const char* q, const char* e) noexcept {
#if defined(__SSE2__)
  const __m128i sp = _mm_set1_epi8(' ');
  const __m128i nl = _mm_set1_epi8('\n');
  const __m128i tab = _mm_set1_epi8('\t');
  const __m128i cr = _mm_set1_epi8('\r');
  while (e - q >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, nl)),
                                   _mm_or_si128(_mm_cmpeq_epi8(v, tab), _mm_cmpeq_epi8(v, cr)));
    const unsigned other = ~static_cast<unsigned>(_mm_movemask_epi8(m)) & 0xFFFFu;
    if (other != 0) {
      q += __builtin_ctz(other);
      if (static_cast<uchar>(*q) > 0x20) return q;
      break;
    }
    q += 16;
  }
#endif
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
constexpr auto gap_class = [] {
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

enum class ctx : std::uint8_t { root, key, member, item };
enum class vr : std::uint8_t { kept, dropped, none };

struct read_result {
  bool found = false;
  bool too_deep = false;
  const char* end = nullptr;   // after the value (or where reading stopped)
  const char* deep_at = nullptr;
  char root = 0;               // first character of the value
  std::size_t items = 0;       // root array: elements kept
  std::size_t first_begin = 0; // root array: first element in the output
  std::size_t first_end = 0;
  bool first_is_object = false;
  bool dropped_text = false;   // text that is not part of the value was skipped inside it
};

// Cosmetic repairs inside one object or array, summed up in one note per kind at its path.
struct container_stats {
  std::uint32_t requoted_keys[3] = {0, 0, 0};    // single quotes, backticks, typographic
  std::uint32_t requoted_values[3] = {0, 0, 0};
  std::uint32_t unquoted_keys = 0;
  std::uint32_t emphasis_keys = 0;
  std::uint32_t comments = 0;
  std::uint32_t missing_commas = 0;
  std::uint32_t extra_commas = 0;
  bool any = false;
};

// Bytes that end an unquoted key.
// Bytes that end an unquoted key (1), and bytes that JSON string content cannot hold as they are
// (2: control characters, backslash, non-ASCII).
constexpr auto key_stop = [] {
  std::array<std::uint8_t, 256> t{};
  for (int u = 0; u < 0x20; ++u) t[static_cast<std::size_t>(u)] = 2;
  for (int u = 0x80; u < 0x100; ++u) t[static_cast<std::size_t>(u)] = 2;
  t['\\'] = 2;
  for (char c : std::string_view(":\n,{}[]\"'`")) t[static_cast<unsigned char>(c)] = 1;
  return t;
}();

int quote_class(qk k) noexcept { return k == qk::sq ? 0 : k == qk::bt ? 1 : 2; }

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

// A short note text built on the stack (the summary notes are at most ~80 bytes).
struct short_text {
  char buf[128];
  std::size_t n = 0;
  template <std::size_t N>
  void lit(const char (&s)[N]) noexcept {
    std::memcpy(buf + n, s, N - 1);
    n += N - 1;
  }
  void str(std::string_view s) noexcept {
    const char* q = s.data();
    const std::size_t len = s.size();
    char* d = buf + n;
    if (len >= 8) {  // 8 bytes at a time, the last block overlapping
      std::size_t i = 0;
      for (; i + 8 < len; i += 8) std::memcpy(d + i, q + i, 8);
      std::memcpy(d + len - 8, q + len - 8, 8);
    } else {
      for (std::size_t i = 0; i < len; ++i) d[i] = q[i];
    }
    n += len;
  }
  void count(std::uint32_t v, std::string_view one, std::string_view many) noexcept {
    if (v < 10) {
      buf[n++] = static_cast<char>('0' + v);
    } else {
      const auto r = std::to_chars(buf + n, buf + n + 16, v);
      n = static_cast<std::size_t>(r.ptr - buf);
    }
    buf[n++] = ' ';
    str(v == 1 ? one : many);
  }
  [[nodiscard]] std::string_view view() const noexcept { return {buf, n}; }
};

class repairer {
 public:
  repairer() = default;

  // Reads the value at `at` (after whitespace and comments) up to `end`, appending strict JSON
  // to `out` and notes to `nw`. Sets `truncated` when `end` came inside the value.
  read_result read(const char* at, const char* end, std::string& out, note_writer& nw, bool& truncated) {
    ob_.attach(out, static_cast<std::size_t>(end - at) + 64);
    struct detach_at_exit {
      out_buf& b;
      ~detach_at_exit() { b.detach(); }
    } guard{ob_};
    return read_into(at, end, nw, truncated);
  }

  void configure(bool partial, std::size_t max_depth) noexcept {
    partial_ = partial;
    max_depth_ = max_depth;
  }

 private:
  read_result read_into(const char* at, const char* end, note_writer& nw, bool& truncated) {
    p_ = at;
    e_ = end;
    nw_ = &nw;
    depth_ = 0;
    eof_ = false;
    fatal_ = false;
    frames_.clear();
    stats_ = nullptr;
    open_braces_ = 0;
    open_brackets_ = 0;
    closed_note_ = npos;
    closed_count_ = 0;
    root_items_ = 0;
    first_begin_ = first_end_ = 0;
    first_is_object_ = false;
    dropped_text_ = false;
    ws_from_ = ws_to_ = nullptr;
    fence_from_ = fence_at_ = nullptr;

    read_result r;
    skip_ws();
    r.end = p_;
    if (p_ >= e_) return r;
    out_buf& out = ob_;
    const std::size_t mark = out.size();
    r.root = *p_;
    const vr v = read_value(ctx::root);
    if (fatal_) {
      out.resize(mark);
      r.too_deep = true;
      r.deep_at = fatal_at_;
      r.end = p_;
      return r;
    }
    r.end = p_;
    if (v != vr::kept) {
      out.resize(mark);
      return r;
    }
    if (closed_note_ != npos && closed_note_ < nw.used) {
      note& n = (*nw.list)[closed_note_];
      n.detail = closed_count_ == 1 ? "closed 1 bracket left open at the end of the text"
                                    : "closed " + std::to_string(closed_count_) +
                                          " brackets left open at the end of the text";
    }
    r.found = true;
    r.items = root_items_;
    r.first_begin = first_begin_;
    r.first_end = first_end_;
    r.first_is_object = first_is_object_;
    r.dropped_text = dropped_text_;
    truncated = eof_;
    return r;
  }

  struct frame {
    std::size_t index = 0;
    std::size_t key_begin = 0;  // escaped key text in the output
    std::size_t key_end = 0;
    bool is_index = false;
    bool plain = false;  // the key has no escape (its output text is the key)
  };

  // ---- notes ----

  // The path of the current position, written into p: the leading segments p already has
  // (a note slot reused from an earlier text) are kept, the rest popped and rebuilt.
  void build_path(path& p) {
    const std::vector<path_segment>& segs = p.segments();
    const std::size_t n = frames_.size();
    const std::size_t lim = std::min(n, segs.size());
    std::size_t m = 0;
    for (; m < lim; ++m) {
      const frame& f = frames_[m];
      const path_segment& g = segs[m];
      if (f.is_index) {
        if (!g.is_index || g.index != f.index || !g.key.empty()) break;
        continue;
      }
      if (g.is_index || g.index != 0) break;
      if (f.plain) {
        const std::size_t len = f.key_end - f.key_begin;
        if (g.key.size() != len || !same_bytes(g.key.data(), ob_.data() + f.key_begin, len)) break;
      } else if (std::string_view(g.key) != frame_key(f)) {
        break;
      }
    }
    while (p.size() > m) p.pop();
    for (; m < n; ++m) {
      const frame& f = frames_[m];
      if (f.is_index) p.index(f.index);
      else p.key(frame_key(f));
    }
  }

  // The key of a frame, unescaped (in key_text_ when it had escapes).
  std::string_view frame_key(const frame& f) {
    std::string_view k(ob_.data() + f.key_begin, f.key_end - f.key_begin);
    if (f.plain || k.find('\\') == std::string_view::npos) return k;
    key_text_.clear();
    detail::unescape_json_string(k, key_text_);
    return key_text_;
  }

  note* add(note_kind kind, std::string_view detail) {
    note* n = nw_->next(kind);
    if (n == nullptr) return nullptr;
    build_path(n->path);
    if (n->detail.size() != detail.size() || !same_bytes(n->detail.data(), detail.data(), detail.size()))
      n->detail.assign(detail.data(), detail.size());
    return n;
  }

  void add(note_kind kind, std::string_view detail, std::string_view quoted_text) {
    note* n = add(kind, detail);
    if (n == nullptr) return;
    n->detail += " \"";
    n->detail += elide(quoted_text);
    n->detail += '"';
  }

  // Counts a cosmetic repair in the innermost container (noted when it closes); at the top
  // level (no container) it is noted at once.
  template <class F>
  void cosmetic(F&& count, const char* detail) {
    if (stats_ != nullptr) {
      count(*stats_);
      stats_->any = true;
    } else {
      add(note_kind::repaired, detail);
    }
  }

  // The summary notes of a container (frames_ is the container's path).
  void flush_stats(const container_stats& st) {
    if (!st.any) return;
    static constexpr std::string_view quote_names[3] = {"single quotes", "backticks", "typographic quotes"};
    for (int i = 0; i < 3; ++i) {
      if (st.requoted_keys[i] == 0 && st.requoted_values[i] == 0) continue;
      short_text d;
      d.lit("replaced ");
      d.str(quote_names[i]);
      d.lit(" with double quotes (");
      if (st.requoted_keys[i] != 0) d.count(st.requoted_keys[i], "key", "keys");
      if (st.requoted_keys[i] != 0 && st.requoted_values[i] != 0) d.lit(", ");
      if (st.requoted_values[i] != 0) d.count(st.requoted_values[i], "value", "values");
      d.lit(")");
      add(note_kind::repaired, d.view());
    }
    if (st.unquoted_keys != 0) count_note("quoted ", st.unquoted_keys, "unquoted key", "unquoted keys");
    if (st.emphasis_keys != 0)
      count_note("removed markdown emphasis around ", st.emphasis_keys, "key", "keys");
    if (st.comments != 0) count_note("removed ", st.comments, "comment", "comments");
    if (st.missing_commas != 0) count_note("inserted ", st.missing_commas, "missing comma", "missing commas");
    if (st.extra_commas != 0) count_note("removed ", st.extra_commas, "extra comma", "extra commas");
  }

  void count_note(std::string_view head, std::uint32_t n, std::string_view one, std::string_view many) {
    short_text d;
    d.str(head);
    d.count(n, one, many);
    add(note_kind::repaired, d.view());
  }

  // Installs a container's stats for its lifetime.
  struct stats_scope {
    repairer& r;
    container_stats* saved;
    explicit stats_scope(repairer& rr, container_stats& st) : r(rr), saved(rr.stats_) { rr.stats_ = &st; }
    ~stats_scope() { r.stats_ = saved; }
    stats_scope(const stats_scope&) = delete;
    stats_scope& operator=(const stats_scope&) = delete;
  };

  // A container the text ended inside: one note for all of them (filled in by read()).
  void note_closed_at_end(const char* what_incomplete) {
    if (partial_) {
      add(note_kind::incomplete, what_incomplete);
      return;
    }
    ++closed_count_;
    if (closed_note_ == npos) {
      if (add(note_kind::truncated, "closed brackets left open at the end of the text") != nullptr)
        closed_note_ = nw_->used - 1;
    }
  }

  // ---- low-level scanning ----

  [[gnu::always_inline]] void skip_ws() {
    const char* q = p_;
    const char* const e = e_;
    if (q >= e) return;
    std::uint8_t k = gap_class[static_cast<uchar>(*q)];
    if (k == 0) return;
    if (k == 1) {
      q = skip_spaces(q + 1, e);
      if (q < e) {
        k = gap_class[static_cast<uchar>(*q)];
        if (k == 1) {
          q = skip_ws_run(q, e);
          k = q < e ? gap_class[static_cast<uchar>(*q)] : 0;
        }
      } else {
        k = 0;
      }
      p_ = q;
    }
    if (k == 2) skip_ws_slow();
  }

  // Comments, byte order marks and no-break spaces between tokens.
  [[gnu::noinline]] void skip_ws_slow() {
    for (;;) {
      while (p_ < e_ && ws_byte(*p_)) ++p_;
      if (p_ >= e_) return;
      const auto lead = static_cast<uchar>(*p_);
      if (lead != '/' && lead != 0xEF && lead != 0xC2) return;
      if (e_ - p_ >= 2 && *p_ == '/') {
        if (p_[1] == '/') {
          const void* nl = std::memchr(p_, '\n', static_cast<std::size_t>(e_ - p_));
          p_ = nl != nullptr ? static_cast<const char*>(nl) : e_;
          cosmetic([](container_stats& st) { ++st.comments; }, "removed 1 comment");
          continue;
        }
        if (p_[1] == '*') {
          const char* q = detail::find_seq(p_ + 2, e_, "*/", 2);
          p_ = q != nullptr ? q + 2 : e_;
          cosmetic([](container_stats& st) { ++st.comments; }, "removed 1 comment");
          continue;
        }
      }
      if (e_ - p_ >= 3 && is_seq(p_, e_, "\xEF\xBB\xBF", 3)) {  // byte order mark
        p_ += 3;
        continue;
      }
      if (e_ - p_ >= 2 && static_cast<uchar>(p_[0]) == 0xC2 && static_cast<uchar>(p_[1]) == 0xA0) {  // nbsp
        p_ += 2;
        continue;
      }
      return;
    }
  }

  // Whitespace skipping for lookaheads. The last run skipped is remembered, so lookaheads from
  // many places inside one long run of whitespace (a line break each) do not rescan it.
  const char* skip_ws_look(const char* q) const noexcept {
    if (ws_to_ != nullptr && q >= ws_from_ && q <= ws_to_) return ws_to_;
    const char* s = q;
    q = skip_ws_short(q, e_);
    if (q - s > 16) {
      ws_from_ = s;
      ws_to_ = q;
    }
    return q;
  }

  static bool comment_at(const char* q, const char* e) noexcept {
    return e - q >= 2 && q[0] == '/' && (q[1] == '/' || q[1] == '*');
  }

  // Is there an object member (a key and ':') at q, or (allow_close) the end of the object?
  // The end of the text answers `at_end`. Bounded: a key is looked for in at most ~256 bytes.
  bool member_start_at(const char* q, bool allow_close, bool at_end) const noexcept {
    q = skip_ws_look(q);
    if (q >= e_) return at_end;
    const char c = *q;
    if (c == '}') return allow_close;
    if (comment_at(q, e_)) return true;
    const qk k = quote_at(q, e_);
    if (k == qk::tdq || k == qk::tsq || k == qk::tbt) return false;
    if (k != qk::none) {
      const char* s = q + open_len(k);
      const char* lim = e_ - s > 256 ? s + 256 : e_;
      const char closer = ascii_closer(k);
      if (closer != 0) {
        for (;;) {
          if (s < lim) s = find_any3(s, lim, closer, '\\', '\n');
          if (s >= lim) return s >= e_ ? at_end : true;  // too long to tell: do not refute
          const char ch = *s;
          if (ch == closer) break;
          if (ch == '\\') s += 2;
          else return false;  // a line break
        }
        ++s;
        while (s < e_ && (*s == ' ' || *s == '\t')) ++s;
        return s >= e_ ? at_end : *s == ':';
      }
      for (;;) {
        if (s >= lim) return s >= e_ ? at_end : true;  // too long to tell: do not refute
        if (*s == '\\') {
          s += 2;
          continue;
        }
        if (*s == '\n') return false;
        const std::size_t n = closer_at(k, s, e_);
        if (n != 0) {
          s += n;
          break;
        }
        ++s;
      }
      while (s < e_ && (*s == ' ' || *s == '\t')) ++s;
      return s >= e_ ? at_end : *s == ':';
    }
    const char* s = q;
    while (s < e_ && *s == '*') ++s;
    const char* w = s;
    const char* lim = e_ - s > 128 ? s + 128 : e_;
    s = skip_identifier_chars(s, lim);  // key characters, the common ones
    while (s < lim && is_key_char(*s)) ++s;
    if (s == lim && lim < e_) return false;  // too long for a key
    if (s == w) return false;
    while (s < e_ && *s == '*') ++s;
    while (s < e_ && (*s == ' ' || *s == '\t')) ++s;
    if (s >= e_) return at_end;
    return *s == ':';
  }

  // Can an array element (or the end of the array) start at q?
  bool value_start_at(const char* q) const noexcept {
    q = skip_ws_look(q);
    if (q >= e_) return true;
    const char c = *q;
    if (c == ']' || c == '}' || c == '{' || c == '[' || c == '-' || is_digit(c)) return true;
    if (quote_at(q, e_) != qk::none || comment_at(q, e_)) return true;
    const char* s = q;
    while (s < e_ && is_alpha(*s) && s - q < 6) ++s;
    return !literal_of(std::string_view(q, static_cast<std::size_t>(s - q))).empty() &&
           (s >= e_ || !is_word_char(*s));
  }

  // After a number or literal ending at q (< e_): does the value end there?
  bool scalar_delimited(const char* q, ctx c) const noexcept {
    if (c == ctx::root) return skip_ws_look(q) >= e_;
    while (q < e_ && (*q == ' ' || *q == '\t' || *q == '\r')) ++q;
    if (q >= e_) return true;
    const char ch = *q;
    if (ch == '\n' || ch == ',' || ch == '}' || ch == ']' || comment_at(q, e_)) return true;
    if (c == ctx::member) return member_start_at(q, false, false);
    const char* s = q;
    return value_start_at(s);
  }

  // The quote before q: does it close the string (rather than being part of it)?
  [[gnu::always_inline]] bool quote_closes(const char* q, ctx c, char closer) const noexcept {
    if (c == ctx::root || c == ctx::key) return true;
    return quote_closes_look(q, c, closer);
  }
  bool quote_closes_look(const char* q, ctx c, char closer) const noexcept {
    if (closer != 0 && q < e_ && *q == closer) return false;  // doubled quote: this one is content
    q = skip_ws_look(q);
    if (q >= e_) return true;
    const char ch = *q;
    if (ch == '}' || ch == ']' || comment_at(q, e_)) return true;
    if (c == ctx::member) {
      if (ch == ',') return member_start_at(q + 1, true, true);
      if (ch == ':') return false;
      return member_start_at(q, false, true);
    }
    if (ch == ',') return value_start_at(q + 1);
    return value_start_at(q);
  }

  // ---- output ----

  out_buf& out() noexcept { return ob_; }

  // ---- values ----

  vr read_value(ctx c) {
    const char ch = *p_;
    if (ch == '{') return read_object(c);
    if (ch == '[') return read_array(c);
    if (ch == '"' && !(e_ - p_ >= 3 && p_[1] == '"' && p_[2] == '"')) {
      if (simple_quoted(c, '"')) return vr::kept;
      return read_quoted(c, qk::dq);
    }
    const qk k = (ch == '\'' || ch == '`' || ch == '"' || ch == '\xE2') ? quote_at(p_, e_) : qk::none;
    switch (k) {
      case qk::none: break;
      case qk::tdq:
      case qk::tsq: return read_triple(k);
      case qk::tbt: return read_block_string();
      case qk::sq:
      case qk::bt:
        if (simple_quoted(c, k == qk::sq ? '\'' : '`')) {
          requoted_value(k);
          return vr::kept;
        }
        return read_quoted(c, k);
      default: return read_quoted(c, k);
    }
    if (is_digit(ch) || ch == '-' || ch == '+' || ch == '.') return read_number(c);
    return read_word(c);
  }

  bool enter(char open) {
    if (depth_ >= max_depth_) {
      fatal_ = true;
      fatal_at_ = p_;
      p_ = e_;
      return false;
    }
    ++depth_;
    ++p_;
    out().push_back(open);
    if (open == '{') ++open_braces_;
    else ++open_brackets_;
    return true;
  }

  void leave(char open) {
    --depth_;
    if (open == '{') --open_braces_;
    else --open_brackets_;
  }

  void push_index(std::size_t i) {
    frame f;
    f.is_index = true;
    f.index = i;
    frames_.push_back(f);
  }

  void push_key(std::size_t kb, std::size_t ke, bool plain = false) {
    frame f;
    f.key_begin = kb;
    f.key_end = ke;
    f.plain = plain;
    frames_.push_back(f);
  }

  // Text where an object member or array element was expected: skip it up to the next ',' (which
  // is consumed), the closing bracket, or (in objects) a line starting a member.
  void skip_garbage(bool in_object) {
    const char* s = p_;
    int depth = 0;
    while (p_ < e_) {
      const char c = *p_;
      if (depth == 0) {
        if (c == ',') {
          ++p_;
          break;
        }
        if (c == '}' && (in_object || open_braces_ > 0)) break;
        if (c == ']' && (!in_object || open_brackets_ > 0)) break;
        if (in_object && c == '\n' && member_start_at(p_ + 1, false, false)) break;
      }
      if (c == '{' || c == '[' || c == '(') ++depth;
      else if ((c == '}' || c == ']' || c == ')') && depth > 0) --depth;
      ++p_;
    }
    const char* t = p_;
    while (t > s && (is_ws(t[-1]) || t[-1] == ',')) --t;
    dropped_text_ = true;
    if (t > s) add(note_kind::repaired, "dropped unexpected text", std::string_view(s, static_cast<std::size_t>(t - s)));
  }

  // After a member or element: closing brackets that close nothing open (not this container's
  // `own` closer, no open container of their kind) are removed.
  void skip_stray_closers(char own) {
    while (p_ < e_) {
      const char c = *p_;
      const bool stray = (c == ')') || (c == ']' && own != ']' && open_brackets_ == 0) ||
                         (c == '}' && own != '}' && open_braces_ == 0);
      if (!stray) return;
      add(note_kind::repaired, c == ']' ? "removed stray ]" : c == '}' ? "removed stray }" : "removed stray )");
      ++p_;
      skip_ws();
    }
  }

  enum class key_result : std::uint8_t { ok, not_key, cut, no_colon };

  // Reads a key (p_ at its first character) and the ':' after it. On ok, the key is written and
  // [kb, ke) is its escaped text in the output.
  key_result read_key(std::size_t& kb, std::size_t& ke) {
    const char* const s0 = p_;
    key_plain_ = false;
    qk k = quote_at(p_, e_);
    if (k == qk::tdq) k = qk::dq;
    else if (k == qk::tsq) k = qk::sq;
    else if (k == qk::tbt) k = qk::bt;
    if ((k == qk::dq || k == qk::sq || k == qk::bt) && simple_quoted(ctx::key, ascii_closer(k))) {
      kb = out().size() - (static_cast<std::size_t>(p_ - s0) - 1);
      ke = out().size() - 1;
      key_plain_ = true;  // nothing escaped
      if (k != qk::dq && stats_ != nullptr) {
        ++stats_->requoted_keys[quote_class(k)];
        stats_->any = true;
      }
    } else if (k != qk::none) {
      kb = out().size() + 1;
      key_flags_ = quote_flags{};
      const vr v = read_quoted(ctx::key, k);
      if (v != vr::kept) return key_result::cut;
      ke = out().size() - 1;
      const quote_flags f = key_flags_;
      if (f.kind != qk::dq && stats_ != nullptr) {
        ++stats_->requoted_keys[quote_class(f.kind)];
        stats_->any = true;
      }
      if (f.raw_newline || f.inner_quote || f.bad_escape || f.bad_utf8) {
        push_key(kb, ke);
        if (f.raw_newline) add(note_kind::repaired, "escaped raw line breaks in key");
        if (f.inner_quote) add(note_kind::repaired, "escaped quotes inside key");
        if (f.bad_escape) add(note_kind::repaired, "repaired invalid escapes in key");
        if (f.bad_utf8) add(note_kind::repaired, "replaced invalid UTF-8 with U+FFFD");
        frames_.pop_back();
      }
    } else {
      const char* s = p_;
      const char* q = s;
      std::uint8_t cls = 0;
      q = skip_identifier_chars(q, e_);  // none of them ends the key or needs escaping
      for (; q < e_; ++q) {
        const std::uint8_t x = key_stop[static_cast<uchar>(*q)];
        if (x == 1) break;
        cls |= x;
      }
      if (q >= e_) {
        p_ = q;
        eof_ = true;
        return key_result::cut;
      }
      if (*q != ':') return key_result::not_key;
      const char* b = s;
      const char* t = q;
      while (t > b && is_ws(t[-1])) --t;
      bool emphasis = false;
      if (t - b >= 2 && *b == '*' && t[-1] == '*') {
        while (b < t && *b == '*') ++b;
        while (t > b && t[-1] == '*') --t;
        emphasis = true;
      }
      if (t == b) return key_result::not_key;
      kb = out().size() + 1;
      out().push_back('"');
      bool bad_utf8 = false;
      if (cls == 0) {
        out().append(b, static_cast<std::size_t>(t - b));  // nothing to escape
        key_plain_ = true;
      } else {
        detail::append_escaped(out(), b, t, bad_utf8);
      }
      ke = out().size();
      out().push_back('"');
      p_ = q;
      if (stats_ != nullptr) {
        ++(emphasis ? stats_->emphasis_keys : stats_->unquoted_keys);
        stats_->any = true;
      }
      if (bad_utf8) {
        push_key(kb, ke);
        add(note_kind::repaired, "replaced invalid UTF-8 with U+FFFD");
        frames_.pop_back();
      }
    }
    skip_ws();
    if (p_ >= e_) return key_result::cut;
    if (*p_ != ':') return key_result::no_colon;
    ++p_;
    return key_result::ok;
  }

  vr read_object(ctx c) {
    const std::size_t start = out().size();
    if (!enter('{')) return vr::none;
    container_stats st;
    std::size_t count = 0;
    bool closed = false;
    {
    stats_scope scope(*this, st);
    skip_ws();
    // Each path back to the top of the loop leaves p_ after whitespace and comments.
    for (;;) {
      if (p_ >= e_ || fatal_) break;
      char ch = *p_;
      if (ch == '}') {
        ++p_;
        closed = true;
        break;
      }
      if (ch == ']' || ch == ')') {
        if (ch == ']' && open_brackets_ > 0) {
          add(note_kind::repaired, "inserted missing }");
          closed = true;
          break;
        }
        add(note_kind::repaired, ch == ']' ? "removed stray ]" : "removed stray )");
        ++p_;
        skip_ws();
        continue;
      }
      if (ch == ',') {
        cosmetic([](container_stats& st) { ++st.extra_commas; }, "removed 1 extra comma");
        ++p_;
        skip_ws();
        continue;
      }
      const std::size_t mark = out().size();
      if (count != 0) out().push_back(',');
      std::size_t kb = 0;
      std::size_t ke = 0;
      const key_result kr = read_key(kb, ke);
      if (kr == key_result::not_key) {
        out().resize(mark);
        skip_garbage(true);
        skip_ws();
        continue;
      }
      if (kr == key_result::cut) {
        eof_ = true;
        out().resize(mark);
        add(partial_ ? note_kind::incomplete : note_kind::truncated, "dropped unfinished key");
        break;
      }
      push_key(kb, ke, key_plain_);
      vr v = vr::none;
      if (kr == key_result::no_colon) {
        add(note_kind::repaired, "dropped key without value");
      } else {
        out().push_back(':');
        skip_ws();
        if (p_ >= e_) {
          if (!fatal_) {
            eof_ = true;
            add(partial_ ? note_kind::incomplete : note_kind::truncated, "dropped key without value");
          }
        } else {
          ch = *p_;
          if (ch == ',' || ch == '}' || ch == ']') add(note_kind::repaired, "dropped key without value");
          else v = read_value(ctx::member);
        }
      }
      frames_.pop_back();
      if (fatal_) break;
      if (v == vr::kept) ++count;
      else out().resize(mark);
      if (eof_) break;
      skip_ws();
      if (p_ >= e_) break;
      ch = *p_;
      if (ch == ')' || ch == ']' || ch == '}') {
        skip_stray_closers('}');
        if (p_ >= e_) break;
        ch = *p_;
      }
      if (ch == ',') {
        ++p_;
        skip_ws();
        if (p_ < e_ && *p_ == '}') add(note_kind::repaired, "removed trailing comma");
        continue;
      }
      if (ch == '}' || ch == ']' || ch == ')') continue;
      if (member_start_at(p_, false, false)) {
        cosmetic([](container_stats& st) { ++st.missing_commas; }, "inserted 1 missing comma");
        continue;
      }
      skip_garbage(true);
      skip_ws();
    }
    }
    leave('{');
    if (fatal_) return vr::none;
    flush_stats(st);
    if (!closed) {
      eof_ = true;
      if (!partial_ && count == 0 && c != ctx::root) {
        out().resize(start);
        add(note_kind::truncated, "dropped unfinished object");
        return vr::dropped;
      }
      note_closed_at_end("unfinished object");
    }
    out().push_back('}');
    return vr::kept;
  }

  vr read_array(ctx c) {
    const std::size_t start = out().size();
    if (!enter('[')) return vr::none;
    const bool root = c == ctx::root;
    container_stats st;
    std::size_t count = 0;
    bool closed = false;
    {
    stats_scope scope(*this, st);
    skip_ws();
    // Each path back to the top of the loop leaves p_ after whitespace and comments.
    for (;;) {
      if (p_ >= e_ || fatal_) break;
      char ch = *p_;
      if (ch == ']') {
        ++p_;
        closed = true;
        break;
      }
      if (ch == '}' || ch == ')') {
        if (ch == '}' && open_braces_ > 0) {
          add(note_kind::repaired, "inserted missing ]");
          closed = true;
          break;
        }
        add(note_kind::repaired, ch == '}' ? "removed stray }" : "removed stray )");
        ++p_;
        skip_ws();
        continue;
      }
      if (ch == ',') {
        cosmetic([](container_stats& st) { ++st.extra_commas; }, "removed 1 extra comma");
        ++p_;
        skip_ws();
        continue;
      }
      const std::size_t mark = out().size();
      if (count != 0) out().push_back(',');
      const std::size_t value_begin = out().size();
      push_index(count);
      const vr v = read_value(ctx::item);
      frames_.pop_back();
      if (fatal_) break;
      if (v == vr::kept) {
        if (root && count == 0) {
          first_begin_ = value_begin;
          first_end_ = out().size();
          first_is_object_ = out()[value_begin] == '{';
        }
        ++count;
      } else {
        out().resize(mark);
        if (v == vr::none && !eof_) {
          skip_garbage(false);
          skip_ws();
          continue;
        }
      }
      if (eof_) break;
      skip_ws();
      if (p_ >= e_) break;
      ch = *p_;
      if (ch == ')' || ch == ']' || ch == '}') {
        skip_stray_closers(']');
        if (p_ >= e_) break;
        ch = *p_;
      }
      if (ch == ',') {
        ++p_;
        skip_ws();
        if (p_ < e_ && *p_ == ']') add(note_kind::repaired, "removed trailing comma");
        continue;
      }
      if (ch == ']' || ch == '}' || ch == ')') continue;
      if (value_start_at(p_)) {
        cosmetic([](container_stats& st) { ++st.missing_commas; }, "inserted 1 missing comma");
        continue;
      }
      skip_garbage(false);
      skip_ws();
    }
    }
    leave('[');
    if (fatal_) return vr::none;
    flush_stats(st);
    if (root) root_items_ = count;
    if (!closed) {
      eof_ = true;
      if (!partial_ && count == 0 && c != ctx::root) {
        out().resize(start);
        add(note_kind::truncated, "dropped unfinished array");
        return vr::dropped;
      }
      note_closed_at_end("unfinished array");
    }
    out().push_back(']');
    return vr::kept;
  }

  // A value the text ended inside: dropped (final) or kept (partial, `keep` true).
  vr unfinished(std::size_t mark, const char* what, std::string_view text, bool keep) {
    eof_ = true;
    if (partial_ && keep) {
      std::string d("unfinished ");
      d += what;
      d += " kept as";
      add(note_kind::incomplete, d, text);
      return vr::kept;
    }
    out().resize(mark);
    std::string d("dropped unfinished ");
    d += what;
    add(partial_ ? note_kind::incomplete : note_kind::truncated, d, text);
    return vr::dropped;
  }

  // The common string: nothing to escape or repair before a closing quote that ends it (p_ at
  // the one-byte opening quote `closer`). Written and p_ moved past it when so; otherwise
  // nothing is written, p_ stays, and read_quoted reads it (the same text, from the start).
  [[gnu::always_inline]] bool simple_quoted(ctx c, char closer) {
    const std::size_t mark = out().size();
    out().push_back('"');
    const char* q = out().copy_string_run(p_ + 1, e_, closer);
    while (q < e_ && static_cast<uchar>(*q) >= 0x80) {  // valid UTF-8 is copied as it is
      const std::size_t n = detail::utf8_sequence(q, e_);
      if (n == 0) break;
      out().append(q, n);
      q = out().copy_string_run(q + n, e_, closer);
    }
    if (q < e_ && *q == closer && quote_closes(q + 1, c, closer)) {
      out().push_back('"');
      p_ = q + 1;
      return true;
    }
    out().resize(mark);
    return false;
  }

  // A string value read with other quotes than '"' (and nothing else repaired in it).
  void requoted_value(qk k) {
    if (stats_ != nullptr) {
      ++stats_->requoted_values[quote_class(k)];
      stats_->any = true;
    } else {
      add(note_kind::repaired, quote_note(k));
    }
  }

  // "...", '...', `...`, “...”, ‘...’ (p_ at the opening quote).
  vr read_quoted(ctx c, qk k) {
    const std::size_t mark = out().size();
    const char* content = p_ + open_len(k);
    p_ = content;
    const char closer = ascii_closer(k);
    const bool typographic = k == qk::ldq || k == qk::lsq;
    out().push_back('"');
    bool raw_newline = false, inner_quote = false, bad_escape = false, bad_utf8 = false;
    for (;;) {
      p_ = out().copy_string_run(p_, e_, closer);
      if (p_ >= e_) break;
      const auto u = static_cast<uchar>(*p_);
      if (closer != 0 && *p_ == closer) {
        if (quote_closes(p_ + 1, c, closer)) {
          ++p_;
          out().push_back('"');
          if (k == qk::dq && !(raw_newline | inner_quote | bad_escape | bad_utf8)) return vr::kept;
          return quoted_done(c, k, raw_newline, inner_quote, bad_escape, bad_utf8);
        }
        if (closer == '"') out().append("\\\"");
        else out().push_back(closer);
        inner_quote = true;
        ++p_;
        continue;
      }
      if (u == '"') {
        out().append("\\\"");
        ++p_;
        continue;
      }
      if (u == '\\') {
        if (!escape()) {
          bad_escape = true;
        }
        if (p_ >= e_) break;
        continue;
      }
      if (u < 0x20) {
        if (u == '\n') raw_newline = true;
        detail::append_control(out(), static_cast<char>(u));
        ++p_;
        continue;
      }
      // non-ASCII
      if (typographic) {
        const std::size_t n = closer_at(k, p_, e_);
        if (n != 0) {
          if (quote_closes(p_ + n, c, 0)) {
            p_ += n;
            out().push_back('"');
            return quoted_done(c, k, raw_newline, inner_quote, bad_escape, bad_utf8);
          }
          out().append(p_, n);
          p_ += n;
          continue;
        }
      }
      const std::size_t n = detail::utf8_sequence(p_, e_);
      if (n != 0) {
        out().append(p_, n);
        p_ += n;
        continue;
      }
      if (detail::utf8_cut_at_end(p_, e_)) {  // the text ends mid-character
        p_ = e_;
        break;
      }
      out().append("\\ufffd");
      bad_utf8 = true;
      ++p_;
    }
    // The text ended inside the string.
    if (c == ctx::key) {
      out().resize(mark);
      eof_ = true;
      return vr::dropped;
    }
    std::string_view text(content, static_cast<std::size_t>(e_ - content));
    const vr v = unfinished(mark, "string", text, true);
    if (v == vr::kept) {
      out().push_back('"');
      quoted_done(c, k, raw_newline, inner_quote, bad_escape, bad_utf8);
    }
    return v;
  }

  vr quoted_done(ctx c, qk k, bool raw_newline, bool inner_quote, bool bad_escape, bool bad_utf8) {
    if (k == qk::dq && !(raw_newline | inner_quote | bad_escape | bad_utf8)) return vr::kept;
    if (c == ctx::key) {  // noted by read_key, at the key's path
      key_flags_ = quote_flags{k, raw_newline, inner_quote, bad_escape, bad_utf8};
      return vr::kept;
    }
    if (quote_note(k) != nullptr) requoted_value(k);
    if (raw_newline) add(note_kind::repaired, "escaped raw line breaks in string");
    if (inner_quote) add(note_kind::repaired, "escaped quotes inside string");
    if (bad_escape) add(note_kind::repaired, "repaired invalid escapes in string");
    if (bad_utf8) add(note_kind::repaired, "replaced invalid UTF-8 with U+FFFD");
    return vr::kept;
  }

  // p_ at a backslash inside a string. Writes a valid escape; returns false when the escape
  // was not valid JSON (and was repaired). At the end of the text, p_ = e_.
  bool escape() {
    if (e_ - p_ < 2) {
      p_ = e_;
      return true;
    }
    const char x = p_[1];
    switch (x) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        out().append(p_, 2);
        p_ += 2;
        return true;
      case 'u': {
        std::uint32_t cp = 0;
        if (e_ - p_ < 6) {
          if (detail::hex_prefix(p_ + 2, e_)) {  // cut mid-escape
            p_ = e_;
            return true;
          }
          break;
        }
        if (!detail::hex4(p_ + 2, cp)) break;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          std::uint32_t lo = 0;
          if (e_ - p_ >= 12 && p_[6] == '\\' && p_[7] == 'u' && detail::hex4(p_ + 8, lo) && lo >= 0xDC00 &&
              lo <= 0xDFFF) {
            out().append(p_, 12);
            p_ += 12;
            return true;
          }
          if (e_ - p_ < 12 && detail::hex_escape_prefix(p_ + 6, e_)) {
            p_ = e_;
            return true;
          }
          out().append("\\ufffd");
          p_ += 6;
          return false;
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          out().append("\\ufffd");
          p_ += 6;
          return false;
        }
        out().append(p_, 6);
        p_ += 6;
        return true;
      }
      case '\'':
      case '`':
        out().push_back(x);
        p_ += 2;
        return false;
      case 'x': {
        if (e_ - p_ >= 4 && detail::hex_digit(p_[2]) >= 0 && detail::hex_digit(p_[3]) >= 0) {
          const int v = detail::hex_digit(p_[2]) * 16 + detail::hex_digit(p_[3]);
          detail::append_code_point_escape(out(), static_cast<std::uint32_t>(v));
          p_ += 4;
          return false;
        }
        break;
      }
      default: break;
    }
    // Not an escape: the backslash is text.
    out().append("\\\\");
    ++p_;
    return false;
  }

  // """...""" or '''...''' (p_ at the opening quotes). The content is taken as written
  // (backslashes are text) and dedented.
  vr read_triple(qk k) {
    const std::size_t mark = out().size();
    const char q3 = k == qk::tdq ? '"' : '\'';
    const char* cs = p_ + 3;
    const char* found = nullptr;
    for (const char* q = cs; q < e_;) {
      const void* hit = std::memchr(q, q3, static_cast<std::size_t>(e_ - q));
      if (hit == nullptr) break;
      const char* h = static_cast<const char*>(hit);
      const char* r = h;
      while (r < e_ && *r == q3) ++r;
      if (r - h >= 3) {
        found = h;
        p_ = r;
        found += (r - h) - 3;  // extra quotes before the closing three are content
        break;
      }
      q = r;
    }
    const char* ce = found != nullptr ? found : e_;
    out().push_back('"');
    bool bad_utf8 = false;
    detail::append_dedented(out(), cs, ce, bad_utf8);
    if (found == nullptr) {
      p_ = e_;
      const vr v = unfinished(mark, "string", std::string_view(cs, static_cast<std::size_t>(e_ - cs)), true);
      if (v == vr::kept) out().push_back('"');
      return v;
    }
    out().push_back('"');
    add(note_kind::repaired, "read triple-quoted string");
    if (bad_utf8) add(note_kind::repaired, "replaced invalid UTF-8 with U+FFFD");
    return vr::kept;
  }

  // ```lang ... ``` used as a string value (p_ at the backticks); the info string is dropped and
  // the content dedented.
  vr read_block_string() {
    const std::size_t mark = out().size();
    const char* s = p_;
    while (s < e_ && *s == '`') ++s;
    const void* nlv = std::memchr(s, '\n', static_cast<std::size_t>(e_ - s));
    const char* nl = nlv != nullptr ? static_cast<const char*>(nlv) : e_;
    const char* cs = nullptr;
    const char* ce = nullptr;
    const char* after = nullptr;
    if (const char* inl = detail::find_seq(s, nl, "```", 3)) {  // ```code``` on one line
      cs = s;
      ce = inl;
      after = inl;
      while (after < e_ && *after == '`') ++after;
    } else if (nl < e_) {
      cs = nl + 1;
      // closing: ``` at the start of a line (after indentation), else the next ``` anywhere
      const char* ls = line_fence(cs);
      if (ls < e_) {
        const char* q = ls;
        while (*q != '`') ++q;
        ce = ls;
        after = q;
        while (after < e_ && *after == '`') ++after;
      }
      if (ce == nullptr) {
        if (const char* any = detail::find_seq(cs, e_, "```", 3)) {
          ce = any;
          after = any;
          while (after < e_ && *after == '`') ++after;
        }
      }
    } else {
      cs = e_;
    }
    out().push_back('"');
    bool bad_utf8 = false;
    if (ce == nullptr) {
      detail::append_dedented(out(), cs, e_, bad_utf8);
      p_ = e_;
      const vr v = unfinished(mark, "string", std::string_view(cs, static_cast<std::size_t>(e_ - cs)), true);
      if (v == vr::kept) out().push_back('"');
      return v;
    }
    detail::append_dedented(out(), cs, ce, bad_utf8);
    out().push_back('"');
    p_ = after;
    add(note_kind::repaired, "read ``` block as a string");
    if (bad_utf8) add(note_kind::repaired, "replaced invalid UTF-8 with U+FFFD");
    return vr::kept;
  }

  // Start of the first line at or after `from` (a line start) that begins with ``` after its
  // indentation, or e_. Searches only move forward: a later search reuses the last result.
  const char* line_fence(const char* from) {
    if (fence_from_ != nullptr && from >= fence_from_ && from <= fence_at_) return fence_at_;
    const char* found = e_;
    for (const char* ls = from; ls < e_;) {
      const char* q = ls;
      while (q < e_ && (*q == ' ' || *q == '\t')) ++q;
      if (is_seq(q, e_, "```", 3)) {
        found = ls;
        break;
      }
      const void* n2 = std::memchr(q, '\n', static_cast<std::size_t>(e_ - q));
      if (n2 == nullptr) break;
      ls = static_cast<const char*>(n2) + 1;
    }
    fence_from_ = from;
    fence_at_ = found;
    return found;
  }

  vr read_number(ctx c) {
    const char* s = p_;
    const char* q = s;
    bool neg = false;
    bool plus = false;
    if (*q == '-') {
      neg = true;
      ++q;
    } else if (*q == '+') {
      plus = true;
      ++q;
    }
    const char* ib = q;
    while (q < e_ && is_digit(*q)) ++q;
    const char* ie = q;
    bool grouped = false;
    if (c == ctx::member && ie - ib >= 1 && ie - ib <= 3) {  // 12,345,678.9 (thousands separators)
      const char* g = q;
      while (e_ - g >= 4 && g[0] == ',' && is_digit(g[1]) && is_digit(g[2]) && is_digit(g[3]) &&
             (e_ - g == 4 || !is_digit(g[4])))
        g += 4;
      if (g != q) {
        grouped = true;
        q = ie = g;
      }
    }
    const char* fb = nullptr;
    const char* fe = nullptr;
    if (q < e_ && *q == '.') {
      fb = q + 1;
      fe = fb;
      while (fe < e_ && is_digit(*fe)) ++fe;
      q = fe;
    }
    if (ib == ie && (fb == nullptr || fb == fe)) return read_word(c);
    const char* xb = nullptr;
    const char* xe = nullptr;
    bool exp_cut = false;
    if (q < e_ && (*q == 'e' || *q == 'E')) {
      const char* d = q + 1;
      if (d < e_ && (*d == '+' || *d == '-')) ++d;
      const char* db = d;
      while (d < e_ && is_digit(*d)) ++d;
      if (d > db) {
        xb = q;
        xe = d;
        q = d;
      } else if (d >= e_) {
        exp_cut = true;
        q = d;
      }
    }
    const bool at_end = q >= e_;
    if (!at_end && !scalar_delimited(q, c)) return read_word(c);
    if (at_end && exp_cut && c == ctx::root) return vr::none;
    const std::size_t mark = out().size();
    // normalized spelling
    if (neg) out().push_back('-');
    bool leading_zeros = false;
    {
      const char* d = ib;
      while (d < ie && (*d == '0' || *d == ',')) ++d;
      if (d > ib && d == ie) {
        out().push_back('0');
        leading_zeros = d - ib > 1;
      } else {
        leading_zeros = d > ib;
        for (; d < ie; ++d)
          if (*d != ',') out().push_back(*d);
      }
      if (ib == ie) out().push_back('0');
    }
    bool huge_exponent = false;
    if (xb != nullptr && write_huge_exponent(mark, neg, ib, ie, fb, fe, xb, xe)) {
      huge_exponent = true;
    } else {
      if (fb != nullptr && fe > fb) {
        out().push_back('.');
        out().append(fb, static_cast<std::size_t>(fe - fb));
      }
      if (xb != nullptr) out().append(xb, static_cast<std::size_t>(xe - xb));
    }
    const std::string_view raw(s, static_cast<std::size_t>(q - s));
    p_ = q;
    if (at_end && c != ctx::root) {
      if (exp_cut) {
        out().resize(mark);
        return unfinished(mark, "number", raw, false);
      }
      return unfinished(mark, "number", raw, true);
    }
    if (plus || leading_zeros || grouped || ib == ie || (fb != nullptr && fb == fe) || huge_exponent) {
      note* n = add(note_kind::repaired, "read number ");
      if (n != nullptr) {
        n->detail += raw;
        n->detail += " as ";
        n->detail.append(out().data() + mark, out().size() - mark);
      }
    }
    return vr::kept;
  }

  // A number whose exponent is beyond +-9999 (valid JSON, but past what common parsers take) is
  // rewritten as the same decimal value 0.<significant digits>e<magnitude>, the magnitude clamped
  // to +-9999 (where every double is infinite or zero anyway). Returns false when the exponent is
  // small (nothing written).
  bool write_huge_exponent(std::size_t mark, bool neg, const char* ib, const char* ie, const char* fb, const char* fe,
                           const char* xb, const char* xe) {
    const char* d = xb + 1;
    bool exp_neg = false;
    if (*d == '+' || *d == '-') exp_neg = *d++ == '-';
    while (d < xe && *d == '0') ++d;
    if (xe - d <= 4) return false;
    constexpr long long cap = 1000000000000LL;
    long long exp = 0;
    for (; d < xe && exp < cap; ++d) exp = exp * 10 + (*d - '0');
    if (exp_neg) exp = -exp;
    // significant digits and where the first one sits
    const char* first = nullptr;
    long long position = 0;  // magnitude of the first significant digit before the exponent
    long long int_digits = 0;
    for (const char* q = ib; q < ie; ++q) {
      if (*q == ',') continue;
      if (first == nullptr && *q != '0') first = q;
      if (first != nullptr) ++int_digits;
    }
    if (first != nullptr) {
      position = int_digits;
    } else if (fb != nullptr) {
      long long zeros = 0;
      for (const char* q = fb; q < fe && first == nullptr; ++q) {
        if (*q != '0') first = q;
        else ++zeros;
      }
      position = -zeros;
    }
    out().resize(mark);
    if (neg) out().push_back('-');
    if (first == nullptr) {  // zero
      out().push_back('0');
      return true;
    }
    out().append("0.");
    for (const char* q = first; q < ie; ++q)
      if (*q != ',') out().push_back(*q);
    if (fb != nullptr && fe > fb) {
      const char* from = first >= fb && first < fe ? first : fb;
      out().append(from, static_cast<std::size_t>(fe - from));
    }
    long long magnitude = exp + position;
    if (magnitude > 9999) magnitude = 9999;
    if (magnitude < -9999) magnitude = -9999;
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, magnitude);
    out().push_back('e');
    out().append(buf, static_cast<std::size_t>(r.ptr - buf));
    return true;
  }

  vr read_word(ctx c) {
    const char* s = p_;
    const char* q = s;
    while (q < e_ && is_alpha(*q) && q - s < 6) ++q;
    const std::string_view w(s, static_cast<std::size_t>(q - s));
    const std::string_view lit = literal_of(w);
    if (!lit.empty() && (q >= e_ || !is_word_char(*q)) && (q >= e_ || scalar_delimited(q, c))) {
      out().append(lit.data(), lit.size());
      p_ = q;
      if (lit != w) {
        std::string d("read ");
        d += w;
        d += " as ";
        d += lit;
        add(note_kind::repaired, d);
      }
      return vr::kept;
    }
    if (c != ctx::root && q >= e_ && is_literal_prefix(w)) {
      p_ = q;
      return unfinished(out().size(), "literal", w, false);
    }
    if (c == ctx::root) return vr::none;
    return read_unquoted(c);
  }

  // Text without quotes as a string value: up to ',' (in objects: before the next member) or the
  // closing bracket or (in objects) a line starting a member; brackets inside are balanced.
  vr read_unquoted(ctx c) {
    const char* s = p_;
    const char* q = s;
    int depth = 0;
    bool at_end = false;
    for (;;) {
      if (q >= e_) {
        at_end = true;
        break;
      }
      const char ch = *q;
      if (ch == '(' || ch == '[' || ch == '{') {
        ++depth;
      } else if (ch == ')' || ch == ']' || ch == '}') {
        if (depth > 0) --depth;
        else if (ch != ')') break;
      } else if (ch == ',') {
        if (depth == 0 && (c == ctx::item || member_start_at(q + 1, true, true))) break;
      } else if (ch == '\n') {
        if (c == ctx::item || member_start_at(q + 1, true, true)) break;
      } else if (ch == '/' && comment_at(q, e_) && (q == s || is_ws(q[-1]))) {
        break;
      }
      ++q;
    }
    const char* t = q;
    while (t > s && is_ws(t[-1])) --t;
    p_ = q;
    const std::size_t mark = out().size();
    if (t == s) return vr::none;
    out().push_back('"');
    bool bad_utf8 = false;
    detail::append_escaped(out(), s, t, bad_utf8);
    out().push_back('"');
    const std::string_view text(s, static_cast<std::size_t>(t - s));
    if (at_end) return unfinished(mark, "text", text, true);
    add(note_kind::repaired, "quoted unquoted text", text);
    if (bad_utf8) add(note_kind::repaired, "replaced invalid UTF-8 with U+FFFD");
    return vr::kept;
  }

  bool partial_ = false;
  std::size_t max_depth_ = COVENANT_DEFAULT_MAX_DEPTH;
  const char* p_ = nullptr;
  const char* e_ = nullptr;
  out_buf ob_;
  note_writer* nw_ = nullptr;
  std::size_t depth_ = 0;
  bool eof_ = false;
  bool fatal_ = false;
  const char* fatal_at_ = nullptr;
  std::vector<frame> frames_;
  std::size_t open_braces_ = 0;
  std::size_t open_brackets_ = 0;
  std::size_t closed_note_ = npos;
  std::size_t closed_count_ = 0;
  std::size_t root_items_ = 0;
  std::size_t first_begin_ = 0;
  std::size_t first_end_ = 0;
  bool first_is_object_ = false;
  bool dropped_text_ = false;
  mutable const char* ws_from_ = nullptr;  // last long whitespace run seen by a lookahead
  mutable const char* ws_to_ = nullptr;
  const char* fence_from_ = nullptr;       // last search for a line starting with ```
  const char* fence_at_ = nullptr;         // (its result; e_ when there is none)
  std::string key_text_;  // an unescaped key (frame_key)
  bool key_plain_ = false;  // the key read_key read last has no escape
  container_stats* stats_ = nullptr;  // of the innermost open container (null at the top)
  struct quote_flags {
    qk kind = qk::dq;
    bool raw_newline = false, inner_quote = false, bad_escape = false, bad_utf8 = false;
  } key_flags_;
};

// ---- markdown fences and reasoning blocks ----------------------------------------------------

struct fence {
  const char* open = nullptr;       // start of the opening line
  const char* content = nullptr;    // first byte of the content
  const char* content_end = nullptr;
  const char* close_end = nullptr;  // end of the closing line (or of the text)
  std::string_view lang;
  bool closed = false;
};

// Where the line holding q starts (b: the start of the text).
const char* line_start(const char* b, const char* q) noexcept {
  while (q > b && q[-1] != '\n') --q;
  return q;
}

bool only_indent(const char* b, const char* e) noexcept {
  for (; b < e; ++b)
    if (*b != ' ' && *b != '\t') return false;
  return true;
}

// First line at or after `from` (a line start) that is a closing fence of at least n backticks:
// indentation, the backticks, nothing but whitespace. Sets `line` and `line_end`.
bool find_closing_fence(const char* from, const char* e, std::size_t n, const char*& line, const char*& line_end) {
  const char* cl = from;  // a line start
  while (cl < e) {
    const void* bv = std::memchr(cl, '`', static_cast<std::size_t>(e - cl));
    if (bv == nullptr) return false;
    const char* bt = static_cast<const char*>(bv);
    const char* ls = line_start(cl, bt);
    const void* nv = std::memchr(bt, '\n', static_cast<std::size_t>(e - bt));
    const char* le = nv != nullptr ? static_cast<const char*>(nv) : e;
    if (only_indent(ls, bt)) {
      const char* y = bt;
      while (y < le && *y == '`') ++y;
      if (static_cast<std::size_t>(y - bt) >= n) {
        while (y < le && is_ws(*y)) ++y;
        if (y == le) {
          line = ls;
          line_end = le;
          return true;
        }
      }
    }
    cl = le < e ? le + 1 : e;
  }
  return false;
}

// Fenced blocks: a line starting (after indentation) with 3+ backticks and an optional info
// string, up to a line with at least as many backticks and nothing else (or the end of the text).
// Lines are only looked at where a backtick is.
void find_fences(const char* b, const char* e, std::vector<fence>& out) {
  const char* cl = b;  // a line start
  while (cl < e) {
    const void* bv = std::memchr(cl, '`', static_cast<std::size_t>(e - cl));
    if (bv == nullptr) return;
    const char* q = static_cast<const char*>(bv);
    const char* ls = line_start(cl, q);
    const void* nlv = std::memchr(q, '\n', static_cast<std::size_t>(e - q));
    const char* le = nlv != nullptr ? static_cast<const char*>(nlv) : e;
    if (le - q >= 3 && q[1] == '`' && q[2] == '`' && only_indent(ls, q)) {
      const char* r = q;
      while (r < le && *r == '`') ++r;
      const std::size_t n = static_cast<std::size_t>(r - q);
      const char* ib = r;
      const char* ie = le;
      while (ib < ie && (*ib == ' ' || *ib == '\t')) ++ib;
      while (ie > ib && is_ws(ie[-1])) --ie;
      const std::string_view info(ib, static_cast<std::size_t>(ie - ib));
      const bool opener = info.find('`') == std::string_view::npos &&
                          (info.empty() || is_alpha(info[0]) || info[0] == '{' || info[0] == '[');
      if (opener) {
        fence f;
        f.open = ls;
        std::size_t lang_len = 0;
        while (lang_len < info.size() && (is_word_char(info[lang_len]) || info[lang_len] == '-' || info[lang_len] == '+'))
          ++lang_len;
        if (!info.empty() && (info[0] == '{' || info[0] == '[')) {
          f.content = ib;
        } else {
          f.lang = info.substr(0, lang_len);
          f.content = le < e ? le + 1 : e;
        }
        f.content_end = e;
        f.close_end = e;
        const char* line = nullptr;
        const char* line_end = nullptr;
        if (find_closing_fence(le < e ? le + 1 : e, e, n, line, line_end)) {
          f.content_end = line;
          f.close_end = line_end;
          f.closed = true;
        }
        out.push_back(f);
        cl = f.close_end < e ? f.close_end + 1 : e;
        continue;
      }
    }
    cl = le < e ? le + 1 : e;
  }
}

struct reasoning_tags {
  const char* close_begin = nullptr;  // last closing tag
  const char* close_end = nullptr;
  std::string_view close_name;
  const char* open_begin = nullptr;   // first opening tag (when no closing tag)
  const char* open_end = nullptr;
  std::string_view open_name;
};

reasoning_tags find_reasoning(const char* b, const char* e) {
  static constexpr std::string_view opens[] = {"<think>", "<thinking>", "<reasoning>"};
  static constexpr std::string_view closes[] = {"</think>", "</thinking>", "</reasoning>"};
  reasoning_tags t;
  for (const char* q = b; q < e;) {
    const void* hv = std::memchr(q, '<', static_cast<std::size_t>(e - q));
    if (hv == nullptr) break;
    const char* h = static_cast<const char*>(hv);
    for (auto name : closes) {
      if (is_seq(h, e, name.data(), name.size())) {
        t.close_begin = h;
        t.close_end = h + name.size();
        t.close_name = name;
        break;
      }
    }
    if (t.open_begin == nullptr) {
      for (auto name : opens) {
        if (is_seq(h, e, name.data(), name.size())) {
          t.open_begin = h;
          t.open_end = h + name.size();
          t.open_name = name;
          break;
        }
      }
    }
    q = h + 1;
  }
  return t;
}

// ---- the search ------------------------------------------------------------------------------

// A digit, 'e' or 'E', an optional sign and five or more digits (leading zeros aside): an
// exponent the reader rewrites (see write_huge_exponent). Anywhere, strings included: a false
// alarm only sends the text to the slower path.
bool huge_exponent_at(const char* q, const char* b, const char* e) noexcept {
  if (q == b || !is_digit(q[-1])) return false;
  ++q;
  if (q < e && (*q == '+' || *q == '-')) ++q;
  while (q < e && *q == '0') ++q;
  const char* d = q;
  while (q < e && is_digit(*q) && q - d < 5) ++q;
  return q - d >= 5;
}

bool has_huge_exponent(std::string_view text) noexcept {
  const char* b = text.data();
  const char* e = b + text.size();
  const char* q = b;
#if defined(__SSE2__)
  const __m128i lower = _mm_set1_epi8('e');
  const __m128i upper = _mm_set1_epi8('E');
  const __m128i below_zero = _mm_set1_epi8('0' - 1);
  const __m128i above_nine = _mm_set1_epi8('9' + 1);
  unsigned digit_before = 0;  // the byte before the chunk is a digit
  while (e - q >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const auto digits = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_and_si128(_mm_cmpgt_epi8(v, below_zero), _mm_cmplt_epi8(v, above_nine))));
    unsigned bits = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, lower), _mm_cmpeq_epi8(v, upper))));
    bits &= (digits << 1) | digit_before;  // only an e right after a digit can start an exponent
    digit_before = (digits >> 15) & 1u;
    while (bits != 0) {
      if (huge_exponent_at(q + __builtin_ctz(bits), b, e)) return true;
      bits &= bits - 1;
    }
    q += 16;
  }
#endif
  for (; q < e; ++q)
    if ((*q == 'e' || *q == 'E') && huge_exponent_at(q, b, e)) return true;
  return false;
}

// ---- strict JSON, quickly ---------------------------------------------------------------------

// JSON whitespace run starting at q (space, line feed, carriage return, tab only).
[[gnu::always_inline]] inline const char* skip_json_ws(const char* q, const char* e) noexcept {
  if (q < e && static_cast<uchar>(*q) > 0x20) return q;
#if defined(__SSE2__)
  const __m128i sp = _mm_set1_epi8(' ');
  const __m128i nl = _mm_set1_epi8('\n');
  const __m128i tab = _mm_set1_epi8('\t');
  const __m128i cr = _mm_set1_epi8('\r');
  while (e - q >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, nl)),
                                   _mm_or_si128(_mm_cmpeq_epi8(v, tab), _mm_cmpeq_epi8(v, cr)));
    const unsigned other = ~static_cast<unsigned>(_mm_movemask_epi8(m)) & 0xFFFFu;
    if (other != 0) return q + __builtin_ctz(other);
    q += 16;
  }
#endif
  while (q < e && detail::is_json_ws(*q)) ++q;
  return q;
}

// A strict JSON string (q after the opening quote; after the closing one on success), without
// \u escapes.
[[gnu::always_inline]] inline bool quick_strict_string(const char*& q, const char* e) noexcept {
  for (;;) {
    q = detail::find_string_special(q, e, 0);
    if (q >= e) return false;
    const auto u = static_cast<uchar>(*q);
    if (u == '"') {
      ++q;
      return true;
    }
    if (u == '\\') {
      if (e - q < 2) return false;
      switch (q[1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't': q += 2; continue;
        default: return false;
      }
    }
    if (u < 0x20) return false;
    const std::size_t n = detail::utf8_sequence(q, e);
    if (n == 0) return false;
    q += n;
  }
}

// A quick check that the object or array at `at` is strict JSON, for the common case: returns
// true only when detail::json_reader::skip_value would accept it with the same span (set in
// `span_end`); false when it is not, or when it is unusual (\u escapes, nesting past 64 levels,
// a scalar at the root): the caller then asks json_reader. For a root array, `items` is 1 when
// it has exactly one element, [first_begin, first_end) (offsets from `at`) being that element.
bool quick_strict_container(const char* at, const char* e, std::size_t max_depth, const char*& span_end,
                            std::size_t& items, std::size_t& first_begin, std::size_t& first_end) noexcept {
  constexpr std::size_t stack_size = 64;
  char stack[stack_size];  // the closer of each open container
  std::size_t depth = 0;
  std::size_t root_items = 0;
  const char* elem_begin = nullptr;  // the element of the root array being read
  const bool root_array = at < e && *at == '[';
  const char* q = at;
  if (q >= e || (*q != '{' && *q != '[')) return false;
  for (;;) {
    // q at the start of a value (no whitespace before it)
    if (q >= e) return false;
    if (depth == 1 && root_array) elem_begin = q;
    const char c = *q;
    if (c == '{' || c == '[') {
      if (depth >= max_depth || depth >= stack_size) return false;
      stack[depth++] = c == '{' ? '}' : ']';
      q = skip_json_ws(q + 1, e);
      if (q >= e) return false;
      if (*q == stack[depth - 1]) {  // empty
        ++q;
        --depth;
        goto after_value;
      }
      if (c == '[') continue;
      goto key;
    }
    if (c == '"') {
      ++q;
      if (!quick_strict_string(q, e)) return false;
    } else if (c == 't' || c == 'n') {
      if (e - q < 4 || std::memcmp(q, c == 't' ? "true" : "null", 4) != 0) return false;
      q += 4;
    } else if (c == 'f') {
      if (e - q < 5 || std::memcmp(q, "false", 5) != 0) return false;
      q += 5;
    } else {
      if (*q == '-') ++q;
      if (q >= e) return false;
      if (*q == '0') {
        ++q;
      } else if (*q >= '1' && *q <= '9') {
        while (q < e && is_digit(*q)) ++q;
      } else {
        return false;
      }
      if (q < e && *q == '.') {
        ++q;
        if (q >= e || !is_digit(*q)) return false;
        while (q < e && is_digit(*q)) ++q;
      }
      if (q < e && (*q == 'e' || *q == 'E')) {
        ++q;
        if (q < e && (*q == '+' || *q == '-')) ++q;
        if (q >= e || !is_digit(*q)) return false;
        while (q < e && is_digit(*q)) ++q;
      }
    }
  after_value:
    // q after a complete value; depth: the containers still open
    if (depth == 0) {
      span_end = q;
      items = root_items == 1 ? 1 : 0;
      return true;
    }
    if (depth == 1 && root_array && ++root_items == 1) {
      first_begin = static_cast<std::size_t>(elem_begin - at);
      first_end = static_cast<std::size_t>(q - at);
    }
    q = skip_json_ws(q, e);
    if (q >= e) return false;
    if (*q == stack[depth - 1]) {
      ++q;
      --depth;
      goto after_value;
    }
    if (*q != ',') return false;
    q = skip_json_ws(q + 1, e);
    if (stack[depth - 1] == ']') continue;
  key:
    // q at a key
    if (q >= e || *q != '"') return false;
    ++q;
    if (!quick_strict_string(q, e)) return false;
    q = skip_json_ws(q, e);
    if (q >= e || *q != ':') return false;
    q = skip_json_ws(q + 1, e);
  }
}

// Working storage of one thread's searches, kept between calls so that reading many texts does
// not allocate for it again.
struct workspace {
  repairer rep;
  std::vector<fence> fences;
  std::vector<std::pair<const char*, const char*>> consumed;
  std::vector<std::size_t> object_slots;
  std::string inner;
  std::string trial;
  std::string origin;
  std::string origin2;
  note_list trial_notes;
};

workspace& thread_workspace() {
  thread_local workspace w;
  return w;
}

void append_number(std::string& s, std::size_t n) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, n);
  s.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

class extractor {
 public:
  extractor(std::string_view text, const lenient_options& o, extraction& x, workspace& w)
      : text_(text),
        tb_(text.data()),
        te_(text.data() + text.size()),
        o_(o),
        x_(x),
        w_(w),
        rep_(w.rep),
        fences_(w.fences),
        consumed_(w.consumed),
        object_slots_(w.object_slots),
        inner_(w.inner),
        trial_(w.trial),
        trial_notes_(w.trial_notes),
        line_pos_(text.data()) {
    rep_.configure(o.partial, std::min<std::size_t>(o.max_depth, depth_ceiling));
    fences_.clear();
    consumed_.clear();
    object_slots_.clear();
  }

  void run() {
    x_.problems.clear();
    x_.more_candidates = false;
    if (text_.size() > o_.max_input_bytes) {
      problem("input is larger than the configured maximum size (" + std::to_string(text_.size()) + " > " +
                  std::to_string(o_.max_input_bytes) + " bytes)",
              nullptr);
      x_.candidates.clear();
      return;
    }
    if (o_.max_candidates == 0) {
      x_.more_candidates = !text_.empty();
      x_.candidates.clear();
      return;
    }
    if (o_.level == strictness::strict) {
      if (!text_.empty()) {
        candidate& c = open_slot();
        c.json.assign(text_.data(), text_.size());
        commit(c, candidate_kind::whole_text, "whole text", tb_, te_, false);
      }
      finish();
      return;
    }

    find_fences(tb_, te_, fences_);
    reasoning_tags tags = find_reasoning(tb_, te_);
    if (tags.close_begin != nullptr || tags.open_begin != nullptr) {
      // A tag inside the value the text starts with (a JSON string mentioning "<think>") is text.
      const char* tag = tags.close_begin != nullptr ? tags.close_begin : tags.open_begin;
      const char* q = tb_;
      while (q < te_ && is_ws(*q)) ++q;
      if (q < tag && (*q == '{' || *q == '[' || *q == '"')) {
        trial_.clear();
        nw_.reset(trial_notes_);
        bool truncated = false;
        const read_result r = rep_.read(q, te_, trial_, nw_, truncated);
        if (r.found && r.end > tag) tags = reasoning_tags{};
      }
    }
    if (tags.close_begin != nullptr) {
      std::string after("after ");
      after += tags.close_name;
      region(tags.close_end, te_, candidate_kind::after_reasoning, after, "");
      std::string inside(" inside ");
      inside += tags.close_name.substr(0, 1);
      inside += tags.close_name.substr(2);
      region(tb_, tags.close_begin, candidate_kind::in_prose, {}, inside);
    } else if (tags.open_begin != nullptr) {
      region(tb_, tags.open_begin, candidate_kind::whole_text, "whole text", "");
      std::string inside(" inside unclosed ");
      inside += tags.open_name;
      region(tags.open_end, te_, candidate_kind::in_prose, {}, inside);
    } else {
      region(tb_, te_, candidate_kind::whole_text, "whole text", "");
    }
    all_objects();
    if (o_.level == strictness::coerce) scalar();
    finish();
  }

 private:
  struct primary {
    std::size_t slot = npos;   // candidate index (npos: not accepted)
    bool parsed = false;       // a value was read (possibly a duplicate)
    bool clean = false;        // ... and it was closed, with no text dropped inside it
    const char* end = nullptr; // where reading stopped
  };

  void problem(std::string message, const char* at) {
    issue i;
    i.code = issue_code::parse_error;
    if (at != nullptr) {
      const auto lc = line_col(at);
      i.line = lc.first;
      i.column = lc.second;
      message += " at line " + std::to_string(lc.first) + ", column " + std::to_string(lc.second);
    }
    i.message = std::move(message);
    x_.problems.push_back(std::move(i));
  }

  std::pair<std::uint32_t, std::uint32_t> line_col(const char* at) const {
    return detail::line_column(std::string_view(tb_, static_cast<std::size_t>(te_ - tb_)),
                               at > tb_ ? static_cast<std::size_t>(at - tb_) : 0);
  }

  std::size_t line_of(const char* at) {
    if (at < line_pos_) {
      line_pos_ = tb_;
      line_no_ = 1;
    }
    for (const char* q = line_pos_; q < at;) {
      const void* nl = std::memchr(q, '\n', static_cast<std::size_t>(at - q));
      if (nl == nullptr) break;
      ++line_no_;
      q = static_cast<const char*>(nl) + 1;
    }
    line_pos_ = at;
    return line_no_;
  }

  candidate& open_slot() {
    if (used_ == x_.candidates.size()) x_.candidates.emplace_back();
    candidate& c = x_.candidates[used_];
    c.json.clear();
    c.truncated = false;
    nw_.reset(c.notes);
    return c;
  }

  // Keeps the candidate in the open slot unless it repeats an earlier one.
  bool commit(candidate& c, candidate_kind kind, std::string_view origin, const char* b, const char* e, bool dedupe = true) {
    nw_.finish();
    if (dedupe) {
      for (std::size_t i = 0; i < used_; ++i)
        if (x_.candidates[i].json == c.json) return false;
    }
    c.kind = kind;
    c.origin.assign(origin.data(), origin.size());
    c.source_offset = static_cast<std::size_t>(b - tb_);
    c.source_length = static_cast<std::size_t>(e - b);
    ++used_;
    return true;
  }

  bool full() {
    if (used_ < o_.max_candidates) return false;
    x_.more_candidates = true;
    return true;
  }

  void finish() { x_.candidates.resize(used_); }

  void report_depth(const char* at) {
    if (depth_reported_) return;
    depth_reported_ = true;
    problem("nesting deeper than " + std::to_string(std::min<std::size_t>(o_.max_depth, depth_ceiling)) + " levels",
            at);
  }

  // Reads the value at `at` as a candidate of `kind`. `prose`: only non-empty objects/arrays count.
  primary read_primary(const char* at, const char* end, candidate_kind kind, std::string_view origin, bool prose,
                       bool note_trailing) {
    primary pr;
    if (full()) return pr;
    candidate& c = open_slot();
    if (kind != candidate_kind::whole_text) {
      note& n = nw_.slot(note_kind::extracted);
      n.path = path();
      n.detail.assign(origin.data(), origin.size());
    }
    bool truncated = false;
    read_result r;
    if (kind == candidate_kind::fenced_block || kind == candidate_kind::after_reasoning) {
      r = read_strict(at, end, c.json);  // usually valid JSON already: checked, then copied as is
    }
    if (!r.found) r = rep_.read(at, end, c.json, nw_, truncated);
    pr.end = r.end;
    if (r.too_deep) {
      report_depth(r.deep_at);
      return pr;
    }
    if (!r.found) return pr;
    if (prose) {
      if (r.root != '{' && r.root != '[') return pr;
      if (c.json.size() <= 2) return pr;  // {} or []: nothing read
    }
    pr.parsed = true;
    pr.clean = !truncated && !r.dropped_text;
    if (note_trailing) {
      const char* q = r.end;
      while (q < end && is_ws(*q)) ++q;
      if (q < end) {
        note& n = nw_.slot(note_kind::extracted);
        n.path = path();
        n.detail = "ignored text after the value (line " + std::to_string(line_of(q)) + ")";
      }
    }
    c.truncated = truncated;
    const std::size_t index = used_;
    if (!commit(c, kind, origin, at, r.end)) return pr;
    pr.slot = index;
    if (r.root == '{') object_slots_.push_back(index);
    derived(index, r);
    return pr;
  }

  // The value at `at` when it is strict JSON: copied as written (whitespace included).
  read_result read_strict(const char* at, const char* end, std::string& out) {
    read_result r;
    const char* q = at;
    while (q < end && detail::is_json_ws(*q)) ++q;
    if (q >= end) return r;
    const std::size_t depth = std::min<std::size_t>(o_.max_depth, depth_ceiling);
    {
      const char* span_end = nullptr;
      std::size_t items = 0, first_begin = 0, first_end = 0;
      if (quick_strict_container(q, end, depth, span_end, items, first_begin, first_end)) {
        const std::string_view span(q, static_cast<std::size_t>(span_end - q));
        if (has_huge_exponent(span)) return r;  // the repairer rewrites those numbers
        r.root = *q;
        if (r.root == '[' && items == 1) {
          r.items = 1;
          r.first_begin = first_begin;
          r.first_end = first_end;
          r.first_is_object = q[first_begin] == '{';
        }
        out.append(span.data(), span.size());
        r.found = true;
        r.end = span_end;
        return r;
      }
    }
    detail::json_reader jr(std::string_view(q, static_cast<std::size_t>(end - q)), depth);
    std::string_view span;
    if (!jr.skip_value(span) || span.empty()) return r;
    if (has_huge_exponent(span)) return r;  // the repairer rewrites those numbers
    r.root = span.front();
    if (r.root == '[') {  // one element? (for the candidate of the element)
      detail::json_reader ar(span, depth);
      std::string_view element;
      ar.peek();
      if (ar.begin_array() && ar.next_element(true) && ar.skip_value(element) && !ar.next_element(false) &&
          !ar.failed()) {
        r.items = 1;
        r.first_begin = static_cast<std::size_t>(element.data() - span.data());
        r.first_end = r.first_begin + element.size();
        r.first_is_object = element.front() == '{';
      }
    }
    out.append(span.data(), span.size());
    r.found = true;
    r.end = span.data() + span.size();
    return r;
  }

  // Candidates read from another: JSON inside a string, the object of a one-element array.
  void derived(std::size_t parent, const read_result& r) {
    if (r.root == '[' && r.items == 1 && r.first_is_object) {
      if (full()) return;
      candidate& c = open_slot();
      const candidate& p = x_.candidates[parent];
      note& n = nw_.slot(note_kind::extracted);
      n.path = path();
      n.detail = "the only element of the array";
      for (const note& pn : p.notes) {
        note& m = nw_.slot(pn.kind);
        m.detail = pn.detail;
        m.path = drop_first_index(pn.path);
      }
      c.json.assign(p.json, r.first_begin, r.first_end - r.first_begin);
      c.truncated = p.truncated;
      std::string& origin = w_.origin2;
      origin.assign("only element of ");
      origin += p.origin;
      const char* b = tb_ + p.source_offset;
      const std::size_t index = used_;
      if (commit(c, candidate_kind::array_element, origin, b, b + p.source_length)) object_slots_.push_back(index);
      return;
    }
    if (x_.candidates[parent].json.empty() || x_.candidates[parent].json[0] != '"') return;
    inner_.clear();
    detail::unescape_json_string(std::string_view(x_.candidates[parent].json).substr(1, x_.candidates[parent].json.size() - 2),
                                 inner_);
    std::size_t i = 0;
    while (i < inner_.size() && is_ws(inner_[i])) ++i;
    if (i == inner_.size() || (inner_[i] != '{' && inner_[i] != '[')) return;
    if (full()) return;
    candidate& c = open_slot();
    note& n = nw_.slot(note_kind::extracted);
    n.path = path();
    n.detail = "JSON text inside the string";
    bool truncated = false;
    const read_result ir = rep_.read(inner_.data() + i, inner_.data() + inner_.size(), c.json, nw_, truncated);
    if (ir.too_deep) {
      report_depth(nullptr);
      return;
    }
    if (!ir.found) return;
    const candidate& p = x_.candidates[parent];
    c.truncated = truncated || p.truncated;
    std::string& origin = w_.origin2;
    origin.assign("JSON inside the string of ");
    origin += p.origin;
    const char* b = tb_ + p.source_offset;
    const std::size_t index = used_;
    if (commit(c, candidate_kind::string_encoded, origin, b, b + p.source_length) && ir.root == '{')
      object_slots_.push_back(index);
  }

  static path drop_first_index(const path& p) {
    if (p.empty() || !p.segments().front().is_index) return p;
    path q;
    for (std::size_t i = 1; i < p.segments().size(); ++i) {
      const auto& s = p.segments()[i];
      if (s.is_index) q.index(s.index);
      else q.key(s.key);
    }
    return q;
  }

  void mark_consumed(const char* b, const char* e) {
    if (e > b) consumed_.emplace_back(b, e);
  }

  // One region of the text: the value at its start, its fenced blocks, then values in prose.
  void region(const char* b, const char* e, candidate_kind start_kind, std::string_view start_origin,
              std::string_view suffix) {
    if (b >= e || full()) return;
    consumed_.clear();
    if (!start_origin.empty()) {
      const char* q = b;
      while (q < e && (is_ws(*q) || (static_cast<uchar>(*q) == 0xEF && is_seq(q, e, "\xEF\xBB\xBF", 3)))) {
        q += is_ws(*q) ? 1 : 3;
      }
      if (q < e && !is_seq(q, e, "```", 3)) {
        const primary pr = read_primary(q, e, start_kind, start_origin, false, true);
        if (pr.parsed) mark_consumed(q, pr.end);
      }
    }
    for (std::size_t i = 0; i < fences_.size(); ++i) {
      const fence& f = fences_[i];
      if (f.open < b || f.open >= e) continue;
      if (full()) return;
      std::string& origin = w_.origin;
      origin.assign("fenced block ");
      append_number(origin, i + 1);
      if (!f.lang.empty()) {
        origin += " (";
        origin += f.lang;
        origin += ')';
      }
      origin += suffix;
      const char* ce = std::min(f.content_end, e);
      if (f.content < ce) read_primary(f.content, ce, candidate_kind::fenced_block, origin, false, false);
      mark_consumed(f.content, ce);
    }
    prose(b, e, suffix);
  }

  // Objects and arrays inside prose, in order, skipping text already read.
  void prose(const char* b, const char* e, std::string_view suffix) {
    if (full()) return;
    std::sort(consumed_.begin(), consumed_.end());
    std::size_t ci = 0;
    const std::size_t budget = 4 * static_cast<std::size_t>(e - b) + 4096;
    std::size_t spent = 0;
    const char* q = b;
    while (q < e) {
      while (ci < consumed_.size() && consumed_[ci].second <= q) ++ci;
      if (ci < consumed_.size() && consumed_[ci].first <= q) {
        q = consumed_[ci].second;
        continue;
      }
      const char* stop = ci < consumed_.size() ? consumed_[ci].first : e;
      const char* hit = q;
      while (hit < stop && *hit != '{' && *hit != '[') ++hit;
      if (hit >= stop) {
        q = stop;
        continue;
      }
      if (*hit == '[' && markdown_link(hit, e)) {
        q = hit + 1;
        continue;
      }
      if (full()) return;
      std::string& origin = w_.origin;
      origin.assign(*hit == '{' ? "object in prose at line " : "array in prose at line ");
      append_number(origin, line_of(hit));
      origin += suffix;
      const primary pr = read_primary(hit, e, candidate_kind::in_prose, origin, true, false);
      const char* end = pr.end != nullptr && pr.end > hit ? pr.end : hit + 1;
      spent += static_cast<std::size_t>(end - hit);
      if (spent > budget) {
        problem("stopped looking for JSON in prose (work budget of " + std::to_string(budget) + " bytes spent)",
                hit);
        return;
      }
      // A value read cleanly is skipped; one that needed text dropped or ran to the end may have
      // swallowed the real one (`Here is {{name}: {...}`): look inside it too.
      q = pr.clean ? end : hit + 1;
    }
  }

  // [text](url): a markdown link, not an array.
  static bool markdown_link(const char* q, const char* e) {
    const char* lim = e - q > 200 ? q + 200 : e;
    for (const char* s = q + 1; s < lim; ++s) {
      if (*s == '\n' || *s == '[' || *s == '"' || *s == '{') return false;
      if (*s == ']') return s + 1 < e && s[1] == '(';
    }
    return false;
  }

  // Every object found (two or more), as one array.
  void all_objects() {
    // objects from disjoint parts of the text only (not one found inside another)
    std::size_t kept = 0;
    for (std::size_t k = 0; k < object_slots_.size(); ++k) {
      const candidate& a = x_.candidates[object_slots_[k]];
      bool overlaps = false;
      for (std::size_t j = 0; j < kept && !overlaps; ++j) {
        const candidate& b = x_.candidates[object_slots_[j]];
        overlaps = a.source_offset < b.source_offset + b.source_length && b.source_offset < a.source_offset + a.source_length;
      }
      if (!overlaps) object_slots_[kept++] = object_slots_[k];
    }
    object_slots_.resize(kept);
    if (object_slots_.size() < 2 || full()) return;
    candidate& c = open_slot();
    note& n = nw_.slot(note_kind::extracted);
    n.path = path();
    n.detail = "all " + std::to_string(object_slots_.size()) + " objects in the text, as an array";
    c.json.push_back('[');
    bool truncated = false;
    std::size_t lo = text_.size();
    std::size_t hi = 0;
    for (std::size_t k = 0; k < object_slots_.size(); ++k) {
      const candidate& p = x_.candidates[object_slots_[k]];
      if (k != 0) c.json.push_back(',');
      c.json += p.json;
      truncated = truncated || p.truncated;
      lo = std::min(lo, p.source_offset);
      hi = std::max(hi, p.source_offset + p.source_length);
      for (const note& pn : p.notes) {
        if (pn.kind == note_kind::extracted && pn.path.empty()) continue;
        note& m = nw_.slot(pn.kind);
        m.detail = pn.detail;
        path q;
        q.index(k);
        for (const auto& s : pn.path) {
          if (s.is_index) q.index(s.index);
          else q.key(s.key);
        }
        m.path = std::move(q);
      }
    }
    c.json.push_back(']');
    c.truncated = truncated;
    commit(c, candidate_kind::all_values, "all objects in the text", tb_ + std::min(lo, hi), tb_ + hi);
  }

  // The whole text as a JSON string (coerce level: primitive targets read from prose).
  void scalar() {
    std::size_t i = 0;
    while (i < text_.size() && is_ws(text_[i])) ++i;
    if (i == text_.size() || full()) return;
    candidate& c = open_slot();
    note& n = nw_.slot(note_kind::extracted);
    n.path = path();
    n.detail = "the whole text as a string";
    c.json.reserve(text_.size() + 2);
    c.json.push_back('"');
    bool bad_utf8 = false;
    detail::append_escaped(c.json, tb_, te_, bad_utf8);
    c.json.push_back('"');
    if (bad_utf8) {
      note& m = nw_.slot(note_kind::repaired);
      m.path = path();
      m.detail = "replaced invalid UTF-8 with U+FFFD";
    }
    commit(c, candidate_kind::scalar_text, "whole text as a string", tb_, te_);
  }

  std::string_view text_;
  const char* tb_;
  const char* te_;
  const lenient_options& o_;
  extraction& x_;
  workspace& w_;
  repairer& rep_;
  std::vector<fence>& fences_;
  std::vector<std::pair<const char*, const char*>>& consumed_;
  std::vector<std::size_t>& object_slots_;
  std::string& inner_;
  std::string& trial_;
  note_list& trial_notes_;
  note_writer nw_;
  std::size_t used_ = 0;
  bool depth_reported_ = false;
  const char* line_pos_;
  std::size_t line_no_ = 1;
};

}  // namespace

void extract_into(std::string_view text, const lenient_options& options, extraction& out) {
  extractor x(text, options, out, thread_workspace());
  x.run();
}

extraction extract(std::string_view text, const lenient_options& options) {
  extraction out;
  extract_into(text, options, out);
  return out;
}

std::vector<candidate> extract_candidates(std::string_view text, const lenient_options& options) {
  return extract(text, options).candidates;
}

}  // namespace covenant
