// The repairing reader: one pass over a JSON-like value, writing strict JSON and recording every
// change as a note. Every loop moves forward; lookaheads are bounded (a few hundred bytes) or
// cover text that no other lookahead covers, so the work is linear in the size of the text.
#include "repairer.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/detail/lenient_text.hpp"
#include "out_buf.hpp"
#include "scan.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace covenant::lenient_impl {

namespace {

enum class ctx : std::uint8_t { root, key, member, item };
enum class vr : std::uint8_t { kept, dropped, none };

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
  std::size_t span = static_cast<std::size_t>(-1);  // the container's source span (repairer::impl::open_span)
};

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

}  // namespace

class repairer::impl {
 public:
  impl() = default;

  // Reads the value at `at` (after whitespace and comments) up to `end`, appending strict JSON
  // to `out` and notes to `nw`. Sets `truncated` when `end` came inside the value.
  read_result read(const char* at, const char* end, std::string& out, note_writer& nw, bool& truncated,
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
    impl& r;
    container_stats* saved;
    explicit stats_scope(impl& rr, container_stats& st) : r(rr), saved(rr.stats_) { rr.stats_ = &st; }
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

  // Where the container opening at p_ (written at `json_offset`) was read from: recorded when
  // spans are asked for; its length is set by close_span(). Returns its slot (npos: none). The
  // slot is kept in the container's stats, which live in memory, so that the container loops
  // keep their registers.
  std::size_t open_span(std::size_t json_offset) {
    if (spans_ == nullptr) return npos;
    spans_->push_back(source_span{json_offset, static_cast<std::size_t>(p_ - span_base_), 0, true});
    return spans_->size() - 1;
  }

  void close_span(std::size_t slot, bool closed) {
    if (slot == npos) return;
    source_span& s = (*spans_)[slot];
    const char* const src = span_base_ + s.source_offset;
    const char* end = p_;
    while (end > src && is_ws(end[-1])) --end;  // after a bracket inserted before the outer one
    s.source_length = static_cast<std::size_t>(end - src);
    s.closed = closed;
  }

  // A value written from `mark` on was taken back: so are the spans of its containers.
  void drop_spans(std::size_t mark) {
    if (spans_ == nullptr) return;
    while (!spans_->empty() && spans_->back().json_offset >= mark) spans_->pop_back();
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

  vr read_array(ctx c) {
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

  // A value the text ended inside: dropped (final) or kept (partial, `keep` true).
  vr unfinished(std::size_t mark, const char* what, std::string_view text, bool keep) {
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
    if (c == ctx::root && ((at_end && exp_cut) || partial_)) return vr::none;
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
    // Cut at the end of the text: dropped. In partial mode a number also waits while only
    // whitespace follows it, as more of it may still come (`10 000`, `10%`); a number that is the
    // whole reply so far is no candidate yet (above): a number is shown only once it is finished.
    if (c != ctx::root && (at_end || (partial_ && skip_ws_look(q) >= e_)))
      return unfinished(mark, "number", raw, false);
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
  std::vector<source_span>* spans_ = nullptr;  // where containers were read from (null: not asked)
  const char* span_base_ = nullptr;
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

repairer::repairer() : impl_(std::make_unique<impl>()) {}
repairer::~repairer() = default;

read_result repairer::read(const char* at, const char* end, std::string& out, note_writer& nw, bool& truncated,
                           std::vector<source_span>* spans, const char* base) {
  return impl_->read(at, end, out, nw, truncated, spans, base);
}

void repairer::configure(bool partial, std::size_t max_depth) noexcept { impl_->configure(partial, max_depth); }

}  // namespace covenant::lenient_impl
