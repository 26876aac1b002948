// Internal to the lenient reader (src/read/lenient/): what the extractor and the repairer share (byte
// classes, the note writer, the result of one read).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include "covenant/read/detail/json_reader.hpp"
#include "read/lenient_text.hpp"
#include "covenant/read/lenient.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace covenant::lenient_impl {

using detail::is_digit;
using detail::is_ws;
using uchar = unsigned char;

inline constexpr std::size_t npos = static_cast<std::size_t>(-1);
inline constexpr std::size_t depth_ceiling = 1000;

inline bool is_alpha(char c) noexcept { return static_cast<unsigned>((c | 0x20) - 'a') < 26u; }
inline bool is_word_char(char c) noexcept {
  return is_alpha(c) || is_digit(c) || c == '_' || c == '$' || static_cast<uchar>(c) >= 0x80;
}

// [q, e) starts with the n bytes at s.
inline bool is_seq(const char* q, const char* e, const char* s, std::size_t n) noexcept {
  return static_cast<std::size_t>(e - q) >= n && std::memcmp(q, s, n) == 0;
}

// Where the first byte in [q, e) that is not JSON whitespace (space, line feed, carriage return,
// tab) is, looked for 16 bytes at a time while 16 are left: that byte, or where fewer than 16
// bytes were left, for the caller's own byte loop to go on from.
[[gnu::always_inline]] inline const char* skip_json_ws_blocks(const char* q, const char* e) noexcept {
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
  return q;
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

// What one read of the repairer found.
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

}  // namespace covenant::lenient_impl
