// The repairing reader's scanning: comments and other gaps between tokens, and the bounded
// lookaheads that decide where a member, an element or a string ends.
#include <cstring>
#include <string_view>

#include "repairer_state.hpp"

namespace covenant::lenient_impl {

// Comments, byte order marks and no-break spaces between tokens.
void repairer::impl::skip_ws_slow() {
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

// Is there an object member (a key and ':') at q, or (allow_close) the end of the object?
// The end of the text answers `at_end`. Bounded: a key is looked for in at most ~256 bytes.
bool repairer::impl::member_start_at(const char* q, bool allow_close, bool at_end) const noexcept {
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
bool repairer::impl::value_start_at(const char* q) const noexcept {
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

// The lookahead of quote_closes(), in an object member or an array element.
bool repairer::impl::quote_closes_look(const char* q, ctx c, char closer) const noexcept {
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

}  // namespace covenant::lenient_impl
