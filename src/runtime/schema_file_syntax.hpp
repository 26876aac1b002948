// Internal to the schema-file reader (src/schema_file*.cpp): source positions, tokens and the
// lexer, and the parser's entry points with what they hand to the resolver.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/runtime/schema_file.hpp"

namespace covenant::schema_file_impl {

// ---- source positions ---------------------------------------------------------------------------

struct location {
  std::uint32_t line = 1;
  std::uint32_t column = 1;
};

/// A diagnostic at `loc` of `file`.
inline schema_diagnostic diagnostic_at(schema_error_code code, std::string file, location loc, std::string message) {
  schema_diagnostic d;
  d.code = code;
  d.file = std::move(file);
  d.line = loc.line;
  d.column = loc.column;
  d.message = std::move(message);
  return d;
}

class source_map {
 public:
  explicit source_map(std::string_view text) : text_(text) {
    starts_.push_back(0);
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') starts_.push_back(i + 1);
  }

  // Columns count code points. Offsets asked for in increasing order (the lexer's) continue from
  // the previous answer, so a long line costs linear time, not quadratic.
  [[nodiscard]] location at(std::size_t offset) const {
    if (offset > text_.size()) offset = text_.size();
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    const std::size_t line = static_cast<std::size_t>(it - starts_.begin());
    const std::size_t start = starts_[line - 1];
    std::size_t from = start;
    std::uint32_t col = 1;
    if (last_line_ == line && last_offset_ <= offset && last_offset_ >= start) {
      from = last_offset_;
      col = last_col_;
    }
    for (std::size_t i = from; i < offset; ++i)
      if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++col;
    last_line_ = line;
    last_offset_ = offset;
    last_col_ = col;
    return {static_cast<std::uint32_t>(line), col};
  }

  [[nodiscard]] std::string_view text() const noexcept { return text_; }

 private:
  std::string_view text_;
  std::vector<std::size_t> starts_;
  mutable std::size_t last_line_ = 0;
  mutable std::size_t last_offset_ = 0;
  mutable std::uint32_t last_col_ = 1;
};

// ---- lexer (schema_file_lexer.cpp) --------------------------------------------------------------

enum class tk : std::uint8_t { end, ident, string, raw_string, number, expr, punct, doc, other };

struct token {
  tk kind = tk::end;
  std::string text;
  std::size_t offset = 0;          // first byte
  std::size_t end = 0;             // one past the last byte
  std::size_t content = 0;         // expr: offset of the text between the braces
  location loc;
  bool newline_before = false;     // a line break between the previous token and this one
};

inline bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }

struct lex_error {
  std::size_t offset;
  std::string message;
};

class lexer {
 public:
  lexer(std::string_view text, const source_map& map) : s_(text), map_(map) {}

  // The next token; `end` tokens forever after the end of the text or the first lexical error
  // (reported in `error`).
  token next_token(std::optional<lex_error>& error);

 private:
  bool next(token& t, std::optional<lex_error>& error);
  bool quoted(token& t, std::optional<lex_error>& error);

  std::string_view s_;
  const source_map& map_;
  std::size_t i_ = 0;
  bool newline_ = true;
  bool done_ = false;
};

// Tokens produced on demand (the parser looks at most one token ahead), so memory stays small
// whatever the size of the text.
class token_stream {
 public:
  explicit token_stream(lexer& lx) : lx_(lx) {}

  const token& at(std::size_t k) const {
    while (buf_.size() <= k) buf_.push_back(lx_.next_token(error));
    return buf_[k];
  }
  void pop() {
    at(0);
    if (buf_.front().kind != tk::end) buf_.pop_front();
  }

  mutable std::optional<lex_error> error;

 private:
  lexer& lx_;
  mutable std::deque<token> buf_;
};

// ---- parser (schema_file_parse.cpp) -------------------------------------------------------------

struct def_info {
  std::string declared;
  location loc;
  std::vector<location> member_locs;  // per field / enum value
  std::string rename;                 // @@alias
  location rename_loc;
  std::vector<location> invariant_locs;
};

struct ref_site {
  std::string name;
  location loc;
};

struct parse_state {
  std::string file;
  schema_limit_options limits;
  schema::model* all = nullptr;
  std::vector<def_info>* info = nullptr;
  std::vector<std::vector<schema::constraint>>* enum_rules = nullptr;
  schema_diagnostics* errors = nullptr;
  schema_diagnostics* notes = nullptr;
  std::vector<stream_hint>* hints = nullptr;
  std::vector<ref_site> refs;
  std::size_t member_count = 0;
};

// The declarations of a whole text: definitions into *st.all (with *st.info and *st.enum_rules),
// stream hints into *st.hints, the type names used into st.refs; problems into *st.errors, notes
// (skipped blocks, @@dynamic) into *st.notes.
void parse_declarations(token_stream& toks, const source_map& map, parse_state& st);

// The whole input as one type expression (model_for); nullopt when the parser stopped at a problem
// (recorded in *st.errors).
std::optional<schema::type> parse_type_expression(token_stream& toks, const source_map& map, parse_state& st);

}  // namespace covenant::schema_file_impl
