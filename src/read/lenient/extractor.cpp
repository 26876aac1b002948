// Lenient reading of model text, the extractor: the candidates (whole text, fences, prose,
// reasoning blocks, JSON in strings, one-element arrays, the whole text as a string), each read by
// the repairing reader (repairer*.cpp).
//
// Every loop here moves forward; lookaheads are bounded or cover text that no other lookahead
// covers, so the work is linear in the size of the text. The search for values in prose, which
// may retry from inside text it already read, has a work budget.
#include "covenant/read/lenient.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/read/detail/json_reader.hpp"
#include "read/lenient_text.hpp"
#include "repairer.hpp"
#include "text.hpp"

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

using namespace lenient_impl;
using detail::is_digit;
using detail::is_ws;

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
  q = skip_json_ws_blocks(q, e);
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
    x_.issues.clear();
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
    x_.issues.push_back(std::move(i));
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
    c.spans.clear();
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
    if (!r.found) r = rep_.read(at, end, c.json, nw_, truncated, &c.spans, tb_);
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
      for (const source_span& sp : p.spans) {
        if (sp.json_offset < r.first_begin || sp.json_offset >= r.first_end) continue;
        c.spans.push_back(sp);
        c.spans.back().json_offset -= r.first_begin;
      }
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
      for (const source_span& sp : p.spans) {
        c.spans.push_back(sp);
        c.spans.back().json_offset += c.json.size();
      }
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

