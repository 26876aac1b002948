// The repairing reader's strings and words: quoted strings (any quote kind) and their escapes,
// literals and unquoted text, and values the text ended inside.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "repairer_state.hpp"

namespace covenant::lenient_impl {

// A value the text ended inside: dropped (final) or kept (partial, `keep` true).
vr repairer::impl::unfinished(std::size_t mark, const char* what, std::string_view text, bool keep) {
  eof_ = true;
  short_text d;  // on the stack: no allocation for the note's text
  if (partial_ && keep) {
    d.lit("unfinished ");
    d.str(what);
    d.lit(" kept as");
    add(note_kind::incomplete, d.view(), text);
    return vr::kept;
  }
  out().resize(mark);
  d.lit("dropped unfinished ");
  d.str(what);
  add(partial_ ? note_kind::incomplete : note_kind::truncated, d.view(), text);
  return vr::dropped;
}

// "...", '...', `...`, “...”, ‘...’ (p_ at the opening quote).
vr repairer::impl::read_quoted(ctx c, qk k) {
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

vr repairer::impl::quoted_done(ctx c, qk k, bool raw_newline, bool inner_quote, bool bad_escape, bool bad_utf8) {
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
bool repairer::impl::escape() {
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
      if (!detail::json_hex4(p_ + 2, cp)) break;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        std::uint32_t lo = 0;
        if (e_ - p_ >= 12 && p_[6] == '\\' && p_[7] == 'u' && detail::json_hex4(p_ + 8, lo) && lo >= 0xDC00 &&
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
      if (e_ - p_ >= 4 && detail::json_hex_digit(p_[2]) >= 0 && detail::json_hex_digit(p_[3]) >= 0) {
        const int v = detail::json_hex_digit(p_[2]) * 16 + detail::json_hex_digit(p_[3]);
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

vr repairer::impl::read_word(ctx c) {
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
vr repairer::impl::read_unquoted(ctx c) {
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

}  // namespace covenant::lenient_impl
