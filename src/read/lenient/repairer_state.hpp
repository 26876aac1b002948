// Internal to the lenient reader (src/read/lenient/): the state of the repairing reader
// (repairer::impl) and its small inline helpers; its other methods are in repairer*.cpp.
//
// The repairing reader: one pass over a JSON-like value, writing strict JSON and recording every
// change as a note. Every loop moves forward; lookaheads are bounded (a few hundred bytes) or
// cover text that no other lookahead covers, so the work is linear in the size of the text.
//
// The members declared `inline` here without a body are defined in the one file that calls them:
// read(), read_into(), count_note(), read_array(), read_number(), read_triple(),
// read_block_string() and line_fence() in repairer.cpp; quoted_done() and read_unquoted() in
// repairer_strings.cpp; frame_key() in repairer_notes.cpp. All but read() are always inlined
// into their only caller.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "read/lenient_text.hpp"
#include "out_buf.hpp"
#include "repairer.hpp"
#include "scan.hpp"

namespace covenant::lenient_impl {

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

class repairer::impl {
 public:
  impl() = default;

  // Reads the value at `at` (after whitespace and comments) up to `end`, appending strict JSON
  // to `out` and notes to `nw`. Sets `truncated` when `end` came inside the value.
  inline read_result read(const char* at, const char* end, std::string& out, note_writer& nw, bool& truncated,
                          std::vector<source_span>* spans, const char* base);

  void configure(bool partial, std::size_t max_depth) noexcept {
    partial_ = partial;
    max_depth_ = max_depth;
  }

 private:
  [[gnu::always_inline]] inline read_result read_into(const char* at, const char* end, note_writer& nw,
                                                      bool& truncated);

  struct frame {
    std::size_t index = 0;
    std::size_t key_begin = 0;  // escaped key text in the output
    std::size_t key_end = 0;
    bool is_index = false;
    bool plain = false;  // the key has no escape (its output text is the key)
  };

  // ---- notes ----

  // The path of a note and the note (repairer_notes.cpp).
  void build_path(path& p);
  [[gnu::always_inline]] inline std::string_view frame_key(const frame& f);
  note* add(note_kind kind, std::string_view detail);

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

  // The summary notes of a container (repairer.cpp).
  void flush_stats(const container_stats& st);
  [[gnu::always_inline]] inline void count_note(std::string_view head, std::uint32_t n, std::string_view one,
                                                std::string_view many);

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

  [[gnu::noinline]] void skip_ws_slow();  // comments and other gaps (repairer_scan.cpp)

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

  // Lookaheads (repairer_scan.cpp).
  bool member_start_at(const char* q, bool allow_close, bool at_end) const noexcept;
  bool value_start_at(const char* q) const noexcept;

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
  bool quote_closes_look(const char* q, ctx c, char closer) const noexcept;

  // ---- output ----

  out_buf& out() noexcept { return ob_; }

  // ---- values ----

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

  // The values (repairer.cpp): the dispatch on the first byte, objects and arrays, numbers,
  // triple-quoted strings and ``` blocks.
  vr read_value(ctx c);
  void skip_garbage(bool in_object);
  key_result read_key(std::size_t& kb, std::size_t& ke);
  vr read_object(ctx c);
  [[gnu::always_inline]] inline vr read_array(ctx c);
  [[gnu::always_inline]] inline vr read_triple(qk k);
  [[gnu::always_inline]] inline vr read_block_string();
  [[gnu::always_inline]] inline const char* line_fence(const char* from);
  [[gnu::always_inline]] inline vr read_number(ctx c);
  bool write_huge_exponent(std::size_t mark, bool neg, const char* ib, const char* ie, const char* fb, const char* fe,
                           const char* xb, const char* xe);

  // Strings and words (repairer_strings.cpp): quoted strings and their escapes, literals and
  // unquoted text, and values the text ended inside.
  vr unfinished(std::size_t mark, const char* what, std::string_view text, bool keep);
  vr read_quoted(ctx c, qk k);
  [[gnu::always_inline]] inline vr quoted_done(ctx c, qk k, bool raw_newline, bool inner_quote, bool bad_escape,
                                               bool bad_utf8);
  bool escape();
  vr read_word(ctx c);
  [[gnu::always_inline]] inline vr read_unquoted(ctx c);

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

}  // namespace covenant::lenient_impl
