// Lenient reading of model text: candidates (whole text, fences, prose, reasoning blocks, JSON in
// strings, one-element arrays, the whole text as a string) and a one-pass repairing reader that
// writes strict JSON and records every change as a note.
//
// Every loop here moves forward; lookaheads are bounded (a few hundred bytes) or cover text that
// no other lookahead covers, so the work is linear in the size of the text. The search for values
// in prose, which may retry from inside text it already read, has a work budget.
#include "covenant/lenient.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
bool is_key_char(char c) noexcept {
  return is_word_char(c) || c == '-' || c == '.' || c == ' ' || c == '\t';
}

// ---- quotes ----------------------------------------------------------------------------------

enum class qk : std::uint8_t { none, dq, sq, bt, ldq, lsq, tdq, tsq, tbt };

bool is_seq(const char* q, const char* e, const char* s, std::size_t n) noexcept {
  return static_cast<std::size_t>(e - q) >= n && std::memcmp(q, s, n) == 0;
}
bool is_ldq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x9C", 3); }
bool is_rdq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x9D", 3); }
bool is_lsq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x98", 3); }
bool is_rsq(const char* q, const char* e) noexcept { return is_seq(q, e, "\xE2\x80\x99", 3); }

qk quote_at(const char* q, const char* e) noexcept {
  if (q >= e) return qk::none;
  switch (*q) {
    case '"': return is_seq(q, e, "\"\"\"", 3) ? qk::tdq : qk::dq;
    case '\'': return is_seq(q, e, "'''", 3) ? qk::tsq : qk::sq;
    case '`': return is_seq(q, e, "```", 3) ? qk::tbt : qk::bt;
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

const char* quote_note_key(qk k) noexcept {
  switch (k) {
    case qk::sq: return "replaced single quotes around key with double quotes";
    case qk::bt: return "replaced backticks around key with double quotes";
    default: return "replaced typographic quotes around key with double quotes";
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

class repairer {
 public:
  repairer(bool partial, std::size_t max_depth) : partial_(partial), max_depth_(max_depth) {}

  // Reads the value at `at` (after whitespace and comments) up to `end`, appending strict JSON
  // to `out` and notes to `nw`. Sets `truncated` when `end` came inside the value.
  read_result read(const char* at, const char* end, std::string& out, note_writer& nw, bool& truncated) {
    p_ = at;
    e_ = end;
    out_ = &out;
    nw_ = &nw;
    depth_ = 0;
    eof_ = false;
    fatal_ = false;
    frames_.clear();
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

 private:
  struct frame {
    std::size_t index = 0;
    std::size_t key_begin = 0;  // escaped key text in the output
    std::size_t key_end = 0;
    bool is_index = false;
  };

  // ---- notes ----

  void build_path(path& p) {
    while (!scratch_path_.empty()) scratch_path_.pop();
    for (const frame& f : frames_) {
      if (f.is_index) {
        scratch_path_.index(f.index);
        continue;
      }
      std::string_view k(out_->data() + f.key_begin, f.key_end - f.key_begin);
      if (k.find('\\') == std::string_view::npos) {
        scratch_path_.key(k);
      } else {
        std::string u;
        detail::unescape_json_string(k, u);
        scratch_path_.key(u);
      }
    }
    p = scratch_path_;
  }

  note* add(note_kind kind, std::string_view detail) {
    note* n = nw_->next(kind);
    if (n == nullptr) return nullptr;
    build_path(n->path);
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

  void skip_ws() {
    for (;;) {
      while (p_ < e_ && is_ws(*p_)) ++p_;
      if (e_ - p_ >= 2 && *p_ == '/') {
        if (p_[1] == '/') {
          const void* nl = std::memchr(p_, '\n', static_cast<std::size_t>(e_ - p_));
          p_ = nl != nullptr ? static_cast<const char*>(nl) : e_;
          add(note_kind::repaired, "removed // comment");
          continue;
        }
        if (p_[1] == '*') {
          const char* q = detail::find_seq(p_ + 2, e_, "*/", 2);
          p_ = q != nullptr ? q + 2 : e_;
          add(note_kind::repaired, "removed /* */ comment");
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
    while (q < e_ && is_ws(*q)) ++q;
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
  bool quote_closes(const char* q, ctx c, char closer) const noexcept {
    if (c == ctx::root || c == ctx::key) return true;
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

  std::string& out() noexcept { return *out_; }

  // ---- values ----

  vr read_value(ctx c) {
    const char ch = *p_;
    if (ch == '{') return read_object(c);
    if (ch == '[') return read_array(c);
    const qk k = quote_at(p_, e_);
    switch (k) {
      case qk::none: break;
      case qk::tdq:
      case qk::tsq: return read_triple(c, k);
      case qk::tbt: return read_block_string(c);
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

  void push_key(std::size_t kb, std::size_t ke) {
    frame f;
    f.key_begin = kb;
    f.key_end = ke;
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
    qk k = quote_at(p_, e_);
    if (k == qk::tdq) k = qk::dq;
    else if (k == qk::tsq) k = qk::sq;
    else if (k == qk::tbt) k = qk::bt;
    if (k != qk::none) {
      kb = out().size() + 1;
      key_flags_ = quote_flags{};
      const vr v = read_quoted(ctx::key, k);
      if (v != vr::kept) return key_result::cut;
      ke = out().size() - 1;
      const quote_flags f = key_flags_;
      if (f.kind != qk::dq || f.raw_newline || f.inner_quote || f.bad_escape || f.bad_utf8) {
        push_key(kb, ke);
        if (f.kind != qk::dq) add(note_kind::repaired, quote_note_key(f.kind));
        if (f.raw_newline) add(note_kind::repaired, "escaped raw line breaks in key");
        if (f.inner_quote) add(note_kind::repaired, "escaped quotes inside key");
        if (f.bad_escape) add(note_kind::repaired, "repaired invalid escapes in key");
        if (f.bad_utf8) add(note_kind::repaired, "replaced invalid UTF-8 with U+FFFD");
        frames_.pop_back();
      }
    } else {
      const char* s = p_;
      const char* q = s;
      while (q < e_) {
        const char c = *q;
        if (c == ':' || c == '\n' || c == ',' || c == '{' || c == '}' || c == '[' || c == ']' || c == '"' ||
            c == '\'' || c == '`')
          break;
        ++q;
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
      detail::append_escaped(out(), b, t, bad_utf8);
      ke = out().size();
      out().push_back('"');
      p_ = q;
      push_key(kb, ke);
      add(note_kind::repaired, emphasis ? "removed markdown emphasis around key" : "quoted unquoted key");
      if (bad_utf8) add(note_kind::repaired, "replaced invalid UTF-8 with U+FFFD");
      frames_.pop_back();
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
    std::size_t count = 0;
    bool closed = false;
    for (;;) {
      skip_ws();
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
        continue;
      }
      if (ch == ',') {
        add(note_kind::repaired, "removed extra comma");
        ++p_;
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
        continue;
      }
      if (kr == key_result::cut) {
        eof_ = true;
        out().resize(mark);
        add(partial_ ? note_kind::incomplete : note_kind::truncated, "dropped unfinished key");
        break;
      }
      push_key(kb, ke);
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
      skip_stray_closers('}');
      if (p_ >= e_) break;
      ch = *p_;
      if (ch == ',') {
        ++p_;
        skip_ws();
        if (p_ < e_ && *p_ == '}') add(note_kind::repaired, "removed trailing comma");
        continue;
      }
      if (ch == '}' || ch == ']' || ch == ')') continue;
      if (member_start_at(p_, false, false)) {
        add(note_kind::repaired, "inserted missing comma");
        continue;
      }
      skip_garbage(true);
    }
    leave('{');
    if (fatal_) return vr::none;
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
    std::size_t count = 0;
    bool closed = false;
    for (;;) {
      skip_ws();
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
        continue;
      }
      if (ch == ',') {
        add(note_kind::repaired, "removed extra comma");
        ++p_;
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
          continue;
        }
      }
      if (eof_) break;
      skip_ws();
      skip_stray_closers(']');
      if (p_ >= e_) break;
      ch = *p_;
      if (ch == ',') {
        ++p_;
        skip_ws();
        if (p_ < e_ && *p_ == ']') add(note_kind::repaired, "removed trailing comma");
        continue;
      }
      if (ch == ']' || ch == '}' || ch == ')') continue;
      if (value_start_at(p_)) {
        add(note_kind::repaired, "inserted missing comma");
        continue;
      }
      skip_garbage(false);
    }
    leave('[');
    if (fatal_) return vr::none;
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
      const char* s = p_;
      p_ = detail::find_string_special(p_, e_, closer);
      if (p_ > s) out().append(s, static_cast<std::size_t>(p_ - s));
      if (p_ >= e_) break;
      const auto u = static_cast<uchar>(*p_);
      if (closer != 0 && *p_ == closer) {
        if (quote_closes(p_ + 1, c, closer)) {
          ++p_;
          out().push_back('"');
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
    if (c == ctx::key) {  // noted by read_key, at the key's path
      key_flags_ = quote_flags{k, raw_newline, inner_quote, bad_escape, bad_utf8};
      return vr::kept;
    }
    if (const char* q = quote_note(k)) add(note_kind::repaired, q);
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
  vr read_triple(ctx c, qk k) {
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
    (void)c;
    out().push_back('"');
    add(note_kind::repaired, "read triple-quoted string");
    if (bad_utf8) add(note_kind::repaired, "replaced invalid UTF-8 with U+FFFD");
    return vr::kept;
  }

  // ```lang ... ``` used as a string value (p_ at the backticks); the info string is dropped and
  // the content dedented.
  vr read_block_string(ctx c) {
    (void)c;
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
    if (fb != nullptr && fe > fb) {
      out().push_back('.');
      out().append(fb, static_cast<std::size_t>(fe - fb));
    }
    if (xb != nullptr) out().append(xb, static_cast<std::size_t>(xe - xb));
    const std::string_view raw(s, static_cast<std::size_t>(q - s));
    p_ = q;
    if (at_end && c != ctx::root) {
      if (exp_cut) {
        out().resize(mark);
        return unfinished(mark, "number", raw, false);
      }
      return unfinished(mark, "number", raw, true);
    }
    if (plus || leading_zeros || grouped || ib == ie || (fb != nullptr && fb == fe)) {
      note* n = add(note_kind::repaired, "read number ");
      if (n != nullptr) {
        n->detail += raw;
        n->detail += " as ";
        n->detail.append(out(), mark, out().size() - mark);
      }
    }
    return vr::kept;
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

  bool partial_;
  std::size_t max_depth_;
  const char* p_ = nullptr;
  const char* e_ = nullptr;
  std::string* out_ = nullptr;
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
  path scratch_path_;
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

// Fenced blocks: a line starting (after indentation) with 3+ backticks and an optional info
// string, up to a line with at least as many backticks and nothing else (or the end of the text).
void find_fences(const char* b, const char* e, std::vector<fence>& out) {
  const char* ls = b;
  while (ls < e) {
    const void* nlv = std::memchr(ls, '\n', static_cast<std::size_t>(e - ls));
    const char* le = nlv != nullptr ? static_cast<const char*>(nlv) : e;
    const char* q = ls;
    while (q < le && (*q == ' ' || *q == '\t')) ++q;
    if (le - q >= 3 && q[0] == '`' && q[1] == '`' && q[2] == '`') {
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
        for (const char* cl = le < e ? le + 1 : e; cl < e;) {
          const void* cv = std::memchr(cl, '\n', static_cast<std::size_t>(e - cl));
          const char* cle = cv != nullptr ? static_cast<const char*>(cv) : e;
          const char* x = cl;
          while (x < cle && (*x == ' ' || *x == '\t')) ++x;
          const char* y = x;
          while (y < cle && *y == '`') ++y;
          if (static_cast<std::size_t>(y - x) >= n) {
            while (y < cle && is_ws(*y)) ++y;
            if (y == cle) {
              f.content_end = cl;
              f.close_end = cle;
              f.closed = true;
              break;
            }
          }
          cl = cle < e ? cle + 1 : e;
        }
        out.push_back(f);
        ls = f.close_end < e ? f.close_end + 1 : e;
        continue;
      }
    }
    ls = le < e ? le + 1 : e;
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

class extractor {
 public:
  extractor(std::string_view text, const lenient_options& o, extraction& x)
      : text_(text),
        tb_(text.data()),
        te_(text.data() + text.size()),
        o_(o),
        x_(x),
        rep_(o.partial, std::min<std::size_t>(o.max_depth, depth_ceiling)),
        line_pos_(text.data()) {}

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
    const reasoning_tags tags = find_reasoning(tb_, te_);
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
    std::uint32_t line = 1;
    std::uint32_t col = 1;
    for (const char* q = tb_; q < at && q < te_; ++q) {
      if (*q == '\n') {
        ++line;
        col = 1;
      } else if ((static_cast<uchar>(*q) & 0xC0) != 0x80) {
        ++col;
      }
    }
    return {line, col};
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
    const read_result r = rep_.read(at, end, c.json, nw_, truncated);
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
      std::string origin("only element of ");
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
    std::string origin("JSON inside the string of ");
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
    if (b >= e) return;
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
      std::string origin("fenced block ");
      origin += std::to_string(i + 1);
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
      std::string origin(*hit == '{' ? "object in prose at line " : "array in prose at line ");
      origin += std::to_string(line_of(hit));
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
  repairer rep_;
  note_writer nw_;
  std::size_t used_ = 0;
  std::vector<fence> fences_;
  std::vector<std::pair<const char*, const char*>> consumed_;
  std::vector<std::size_t> object_slots_;
  std::string inner_;
  bool depth_reported_ = false;
  const char* line_pos_;
  std::size_t line_no_ = 1;
};

}  // namespace

void extract_into(std::string_view text, const lenient_options& options, extraction& out) {
  extractor x(text, options, out);
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
