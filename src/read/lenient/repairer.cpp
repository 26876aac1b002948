// The repairing reader's entry points and its values: the dispatch on a value's first byte, objects
// and arrays (keys, summary notes), numbers, triple-quoted strings and ``` blocks.
#include "repairer.hpp"

#include <charconv>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "repairer_state.hpp"

namespace covenant::lenient_impl {

// Reads the value at `at` (after whitespace and comments) up to `end`, appending strict JSON
// to `out` and notes to `nw`. Sets `truncated` when `end` came inside the value.
read_result repairer::impl::read(const char* at, const char* end, std::string& out, note_writer& nw, bool& truncated,
                                 std::vector<source_span>* spans, const char* base) {
  ob_.attach(out, static_cast<std::size_t>(end - at) + 64);
  spans_ = spans;
  span_base_ = base;
  struct detach_at_exit {
    out_buf& b;
    ~detach_at_exit() { b.detach(); }
  } guard{ob_};
  return read_into(at, end, nw, truncated);
}

read_result repairer::impl::read_into(const char* at, const char* end, note_writer& nw, bool& truncated) {
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
  const std::size_t spans_before = spans_ != nullptr ? spans_->size() : 0;
  const vr v = read_value(ctx::root);
  if (fatal_) {
    out.resize(mark);
    if (spans_ != nullptr) spans_->resize(spans_before);
    r.too_deep = true;
    r.deep_at = fatal_at_;
    r.end = p_;
    return r;
  }
  r.end = p_;
  if (v != vr::kept) {
    out.resize(mark);
    if (spans_ != nullptr) spans_->resize(spans_before);
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

// The summary notes of a container (frames_ is the container's path).
void repairer::impl::flush_stats(const container_stats& st) {
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

void repairer::impl::count_note(std::string_view head, std::uint32_t n, std::string_view one,
                                std::string_view many) {
  short_text d;
  d.str(head);
  d.count(n, one, many);
  add(note_kind::repaired, d.view());
}

vr repairer::impl::read_value(ctx c) {
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

// Text where an object member or array element was expected: skip it up to the next ',' (which
// is consumed), the closing bracket, or (in objects) a line starting a member.
void repairer::impl::skip_garbage(bool in_object) {
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

// Reads a key (p_ at its first character) and the ':' after it. On ok, the key is written and
// [kb, ke) is its escaped text in the output.
repairer::impl::key_result repairer::impl::read_key(std::size_t& kb, std::size_t& ke) {
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

vr repairer::impl::read_object(ctx c) {
  const std::size_t start = out().size();
  container_stats st;
  st.span = open_span(start);
  if (!enter('{')) return vr::none;
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
    if (v == vr::kept) {
      ++count;
    } else {
      out().resize(mark);
      drop_spans(mark);
    }
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
  close_span(st.span, closed);
  return vr::kept;
}

vr repairer::impl::read_array(ctx c) {
  const std::size_t start = out().size();
  container_stats st;
  st.span = open_span(start);
  if (!enter('[')) return vr::none;
  const bool root = c == ctx::root;
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
      drop_spans(mark);
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
  close_span(st.span, closed);
  return vr::kept;
}

// """...""" or '''...''' (p_ at the opening quotes). The content is taken as written
// (backslashes are text) and dedented.
vr repairer::impl::read_triple(qk k) {
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
vr repairer::impl::read_block_string() {
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
const char* repairer::impl::line_fence(const char* from) {
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

vr repairer::impl::read_number(ctx c) {
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
  // Cut at the end of the text: dropped. In partial mode a number in an object or a list also
  // waits while only whitespace follows it, as more of it may still come (`10 000`, `10%`): it is
  // shown only once it is finished. A number that is the whole reply is complete JSON, read as it is.
  if (c != ctx::root && (at_end || (partial_ && skip_ws_look(q) >= e_))) return unfinished(mark, "number", raw, false);
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
bool repairer::impl::write_huge_exponent(std::size_t mark, bool neg, const char* ib, const char* ie, const char* fb,
                                         const char* fe, const char* xb, const char* xe) {
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

repairer::repairer() : impl_(std::make_unique<impl>()) {}
repairer::~repairer() = default;

read_result repairer::read(const char* at, const char* end, std::string& out, note_writer& nw, bool& truncated,
                           std::vector<source_span>* spans, const char* base) {
  return impl_->read(at, end, out, nw, truncated, spans, base);
}

void repairer::configure(bool partial, std::size_t max_depth) noexcept { impl_->configure(partial, max_depth); }

}  // namespace covenant::lenient_impl
