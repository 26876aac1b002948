// The schema-file reader: BAML type declarations (and the `model Name { field?: type }` form) into schema::model.
//
// Three stages: a lexer (tokens with line and column), a recursive-descent parser that builds
// definitions straight into the model (recording where every field, value and type name was
// written), and a resolver that links names, checks the whole set and turns simple @assert rules
// into keyword constraints. Problems are collected, never thrown past the loader.
#include "covenant/schema_file.hpp"

#include <boost/json/string.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <deque>
#include <memory>
#include <sstream>
#include <system_error>
#include <utility>

#include "covenant/detail/schema_checks.hpp"
#include "covenant/detail/schema_expression.hpp"
#include "text_file.hpp"

namespace covenant {

namespace {

namespace json = boost::json;
using schema::kind;

// ---- source positions ---------------------------------------------------------------------------

struct location {
  std::uint32_t line = 1;
  std::uint32_t column = 1;
};

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

// ---- lexer --------------------------------------------------------------------------------------

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

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }

// Removes the common indentation of the non-blank lines and the blank first and last lines (BAML's
// raw strings: #"..."#).
std::string dedent(std::string_view s) {
  std::vector<std::string_view> lines;
  std::size_t b = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '\n') {
      std::string_view l = s.substr(b, i - b);
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      lines.push_back(l);
      b = i + 1;
    }
  }
  auto blank = [](std::string_view l) { return l.find_first_not_of(" \t") == std::string_view::npos; };
  while (!lines.empty() && blank(lines.front())) lines.erase(lines.begin());
  while (!lines.empty() && blank(lines.back())) lines.pop_back();
  std::size_t indent = std::string_view::npos;
  for (auto l : lines) {
    if (blank(l)) continue;
    indent = std::min(indent, l.find_first_not_of(" \t"));
  }
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out.push_back('\n');
    std::string_view l = lines[i];
    if (!blank(l) && indent != std::string_view::npos) l.remove_prefix(indent);
    while (!l.empty() && (l.back() == ' ' || l.back() == '\t')) l.remove_suffix(1);
    out.append(l);
  }
  return out;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

struct lex_error {
  std::size_t offset;
  std::string message;
};

class lexer {
 public:
  lexer(std::string_view text, const source_map& map) : s_(text), map_(map) {}

  // The next token; `end` tokens forever after the end of the text or the first lexical error
  // (reported in `error`).
  token next_token(std::optional<lex_error>& error) {
    token t;
    if (!done_) {
      // white space and comments
      for (;;) {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r' || s_[i_] == '\n')) {
          if (s_[i_] == '\n') newline_ = true;
          ++i_;
        }
        if (s_.substr(i_, 3) == "///") break;  // doc comment: a token
        if (s_.substr(i_, 2) == "//") {
          while (i_ < s_.size() && s_[i_] != '\n') ++i_;
          continue;
        }
        if (s_.substr(i_, 2) == "/*") {
          const std::size_t close = s_.find("*/", i_ + 2);
          if (close == std::string_view::npos) {
            error = lex_error{i_, "unterminated /* comment"};
            done_ = true;
            break;
          }
          for (std::size_t k = i_; k < close; ++k)
            if (s_[k] == '\n') newline_ = true;
          i_ = close + 2;
          continue;
        }
        break;
      }
    }
    t.offset = i_;
    t.newline_before = newline_;
    newline_ = false;
    if (done_ || i_ >= s_.size() || !next(t, error)) {
      done_ = true;
      t = token{};
      t.kind = tk::end;
      t.offset = t.end = s_.size();
      t.loc = map_.at(s_.size());
      t.newline_before = true;
      return t;
    }
    t.end = i_;
    t.loc = map_.at(t.offset);
    return t;
  }

 private:
  bool next(token& t, std::optional<lex_error>& error) {
    const char c = s_[i_];
    if (s_.substr(i_, 3) == "///") {
      std::size_t e = s_.find('\n', i_);
      if (e == std::string_view::npos) e = s_.size();
      std::string_view body = s_.substr(i_ + 3, e - i_ - 3);
      if (!body.empty() && body.front() == ' ') body.remove_prefix(1);
      while (!body.empty() && (body.back() == '\r' || body.back() == ' ' || body.back() == '\t')) body.remove_suffix(1);
      t.kind = tk::doc;
      t.text = std::string(body);
      i_ = e;
      return true;
    }
    if (ident_start(c)) {
      const std::size_t b = i_;
      while (i_ < s_.size() && ident_char(s_[i_])) ++i_;
      t.kind = tk::ident;
      t.text = std::string(s_.substr(b, i_ - b));
      return true;
    }
    if (digit(c) || (c == '-' && i_ + 1 < s_.size() && digit(s_[i_ + 1]))) {
      const std::size_t b = i_;
      if (c == '-') ++i_;
      while (i_ < s_.size() && digit(s_[i_])) ++i_;
      if (i_ + 1 < s_.size() && s_[i_] == '.' && digit(s_[i_ + 1])) {
        ++i_;
        while (i_ < s_.size() && digit(s_[i_])) ++i_;
      }
      if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
        std::size_t j = i_ + 1;
        if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
        if (j < s_.size() && digit(s_[j])) {
          i_ = j;
          while (i_ < s_.size() && digit(s_[i_])) ++i_;
        }
      }
      t.kind = tk::number;
      t.text = std::string(s_.substr(b, i_ - b));
      return true;
    }
    if (c == '"') return quoted(t, error);
    if (c == '#') {
      std::size_t hashes = 0;
      while (i_ + hashes < s_.size() && s_[i_ + hashes] == '#') ++hashes;
      if (i_ + hashes < s_.size() && s_[i_ + hashes] == '"') {
        const std::string close = "\"" + std::string(hashes, '#');
        const std::size_t start = i_ + hashes + 1;
        const std::size_t e = s_.find(close, start);
        if (e == std::string_view::npos) {
          error = lex_error{i_, "unterminated raw string (#\"...\"#)"};
          return false;
        }
        t.kind = tk::raw_string;
        t.text = dedent(s_.substr(start, e - start));
        i_ = e + close.size();
        return true;
      }
    }
    if (s_.substr(i_, 2) == "{{") {
      const std::size_t start = i_ + 2;
      std::size_t k = start;
      char quote = 0;
      for (; k < s_.size(); ++k) {
        const char d = s_[k];
        if (quote != 0) {
          if (d == '\\') ++k;
          else if (d == quote) quote = 0;
          continue;
        }
        if (d == '"' || d == '\'') quote = d;
        else if (d == '}' && k + 1 < s_.size() && s_[k + 1] == '}') break;
      }
      if (k >= s_.size()) {
        error = lex_error{i_, "unterminated {{ expression }}"};
        return false;
      }
      t.kind = tk::expr;
      t.content = start;
      t.text = std::string(s_.substr(start, k - start));
      i_ = k + 2;
      return true;
    }
    if (s_.substr(i_, 2) == "@@") {
      t.kind = tk::punct;
      t.text = "@@";
      i_ += 2;
      return true;
    }
    static constexpr std::string_view punct = "{}()[]<>,|?=:@.-";
    if (punct.find(c) != std::string_view::npos) {
      t.kind = tk::punct;
      t.text = std::string(1, c);
      ++i_;
      return true;
    }
    // Anything else: one code point, refused by the parser where it matters.
    std::size_t n = 1;
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0xF0) n = 4;
    else if (u >= 0xE0) n = 3;
    else if (u >= 0xC0) n = 2;
    n = std::min(n, s_.size() - i_);
    t.kind = tk::other;
    t.text = std::string(s_.substr(i_, n));
    i_ += n;
    return true;
  }

  bool quoted(token& t, std::optional<lex_error>& error) {
    const std::size_t b = i_;
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      const char c = s_[i_];
      if (c == '\n') {
        error = lex_error{b, "unterminated string (strings end on the same line; use #\"...\"# for several lines)"};
        return false;
      }
      if (c == '\\' && i_ + 1 < s_.size()) {
        const char e = s_[i_ + 1];
        i_ += 2;
        switch (e) {
          case 'n': out.push_back('\n'); break;
          case 't': out.push_back('\t'); break;
          case 'r': out.push_back('\r'); break;
          case '"': out.push_back('"'); break;
          case '\\': out.push_back('\\'); break;
          case '/': out.push_back('/'); break;
          case 'u': {
            std::uint32_t cp = 0;
            if (i_ + 4 > s_.size() ||
                std::from_chars(s_.data() + i_, s_.data() + i_ + 4, cp, 16).ptr != s_.data() + i_ + 4) {
              error = lex_error{i_ - 2, "invalid \\u escape in string"};
              return false;
            }
            i_ += 4;
            append_utf8(out, cp);
            break;
          }
          default:
            out.push_back('\\');
            out.push_back(e);
        }
        continue;
      }
      out.push_back(c);
      ++i_;
    }
    if (i_ >= s_.size()) {
      error = lex_error{b, "unterminated string"};
      return false;
    }
    ++i_;
    t.kind = tk::string;
    t.text = std::move(out);
    return true;
  }

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

// ---- parser -------------------------------------------------------------------------------------

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

struct abort_declaration {};  // a diagnostic was recorded; recover at the next declaration
struct stop_parsing {};       // a limit was hit; no further diagnostics are useful

bool is_primitive_name(std::string_view n) {
  return n == "string" || n == "int" || n == "float" || n == "bool" || n == "null";
}

bool is_reserved(std::string_view n) {
  return is_primitive_name(n) || n == "map" || n == "list" || n == "true" || n == "false" || n == "image" ||
         n == "audio" || n == "pdf" || n == "video";
}

bool is_skipped_block(std::string_view w) {
  return w == "function" || w == "client" || w == "generator" || w == "test" || w == "template_string" ||
         w == "retry_policy";
}

bool is_declaration_keyword(std::string_view w) {
  return w == "class" || w == "enum" || w == "type" || w == "model" || is_skipped_block(w);
}

struct parse_state {
  std::string file;
  schema_load_limits limits;
  schema::model* all = nullptr;
  std::vector<def_info>* info = nullptr;
  std::vector<std::vector<schema::constraint>>* enum_rules = nullptr;
  schema_diagnostics* errors = nullptr;
  schema_diagnostics* notes = nullptr;
  std::vector<stream_hint>* hints = nullptr;
  std::vector<ref_site> refs;
  std::size_t member_count = 0;
};

struct attr_arg {
  enum class kind_t : std::uint8_t { string, expr, bare } kind = kind_t::bare;
  std::string text;
  std::size_t content = 0;  // expr: offset of the expression text
  location loc;
};

struct attribute {
  std::string name;
  bool block = false;  // @@
  bool parens = false;
  std::vector<attr_arg> args;
  location loc;
};

class parser {
 public:
  parser(token_stream& toks, const source_map& map, parse_state& st) : t_(toks), map_(map), st_(st) {}

  void parse_file() {
    try {
      while (cur().kind != tk::end) {
        std::string doc = take_docs();
        if (cur().kind == tk::end) break;
        const std::size_t start = p_;
        try {
          declaration(std::move(doc));
        } catch (const abort_declaration&) {
          if (p_ == start) advance();
          recover_top_level();
        }
      }
    } catch (const stop_parsing&) {
    }
  }

  // A type expression (model_for): the whole input is one type, with optional type attributes.
  std::optional<schema::type> parse_type_only() {
    try {
      type_ctx ctx;
      schema::type t = parse_union(ctx, 0);
      type_attributes(t, 0);
      if (cur().kind != tk::end) error_here(schema_error_code::syntax_error, "unexpected " + describe(cur()) + " after the type");
      return t;
    } catch (const abort_declaration&) {
    } catch (const stop_parsing&) {
    }
    return std::nullopt;
  }

 private:
  struct type_ctx {
    std::string parent;          // definition name, for inline objects
    std::string field;           // field name, for inline objects
    bool inline_objects = false; // model syntax
  };

  // ---- token access ----
  const token& cur() const { return t_.at(0); }
  const token& peek() const { return t_.at(1); }
  void advance() {
    if (cur().kind == tk::end) return;
    t_.pop();
    ++p_;
  }
  bool is_punct(std::string_view p) const { return cur().kind == tk::punct && cur().text == p; }
  bool is_ident(std::string_view w) const { return cur().kind == tk::ident && cur().text == w; }

  static std::string describe(const token& t) {
    switch (t.kind) {
      case tk::end: return "end of input";
      case tk::ident: return "'" + t.text + "'";
      case tk::string: return "string \"" + t.text + "\"";
      case tk::raw_string: return "raw string";
      case tk::number: return "number " + t.text;
      case tk::expr: return "{{ expression }}";
      case tk::punct: return "'" + t.text + "'";
      case tk::doc: return "doc comment";
      case tk::other: return "character '" + t.text + "'";
    }
    return "token";
  }

  // ---- diagnostics ----
  void diag(schema_error_code code, location loc, std::string message) {
    schema_diagnostic d;
    d.code = code;
    d.file = st_.file;
    d.line = loc.line;
    d.column = loc.column;
    d.message = std::move(message);
    if (code == schema_error_code::skipped) {
      st_.notes->push_back(std::move(d));
      return;
    }
    st_.errors->push_back(std::move(d));
    if (st_.errors->size() >= st_.limits.max_errors) {
      schema_diagnostic stop;
      stop.code = schema_error_code::limit_exceeded;
      stop.file = st_.file;
      stop.line = loc.line;
      stop.column = loc.column;
      stop.message = "too many problems; stopped after " + std::to_string(st_.limits.max_errors);
      st_.errors->push_back(std::move(stop));
      throw stop_parsing{};
    }
  }

  [[noreturn]] void error_at(schema_error_code code, location loc, std::string message) {
    diag(code, loc, std::move(message));
    throw abort_declaration{};
  }
  [[noreturn]] void error_here(schema_error_code code, std::string message) {
    error_at(code, cur().loc, std::move(message));
  }
  [[noreturn]] void limit(location loc, std::string message) {
    schema_diagnostic d;
    d.code = schema_error_code::limit_exceeded;
    d.file = st_.file;
    d.line = loc.line;
    d.column = loc.column;
    d.message = std::move(message);
    st_.errors->push_back(std::move(d));
    throw stop_parsing{};
  }

  void expect_punct(std::string_view p, std::string_view what) {
    if (!is_punct(p))
      error_here(schema_error_code::syntax_error,
                 "expected '" + std::string(p) + "' " + std::string(what) + ", found " + describe(cur()));
    advance();
  }

  std::string expect_ident(std::string_view what) {
    if (cur().kind != tk::ident) error_here(schema_error_code::syntax_error, "expected " + std::string(what) + ", found " + describe(cur()));
    std::string s = cur().text;
    advance();
    return s;
  }

  std::string take_docs() {
    std::string doc;
    while (cur().kind == tk::doc) {
      if (!doc.empty()) doc.push_back('\n');
      doc += cur().text;
      advance();
    }
    return doc;
  }

  // Skips to the next token that starts a line with a declaration keyword at brace depth 0.
  void recover_top_level() {
    int depth = 0;
    while (cur().kind != tk::end) {
      if (depth <= 0 && cur().newline_before && cur().kind == tk::ident && is_declaration_keyword(cur().text))
        return;
      if (is_punct("{")) ++depth;
      else if (is_punct("}")) --depth;
      advance();
    }
  }

  // Skips the rest of a member (field or enum value): to the next token that starts a line at
  // the body's brace depth.
  void recover_member(std::size_t start) {
    if (p_ == start) advance();
    int depth = 0;
    while (cur().kind != tk::end) {
      if (depth == 0 && cur().newline_before && !is_punct("@")) return;
      if (depth == 0 && is_punct("}")) return;
      if (is_punct("{") || is_punct("(") || is_punct("[")) ++depth;
      else if ((is_punct("}") || is_punct(")") || is_punct("]")) && depth > 0) --depth;
      advance();
    }
  }

  // ---- declarations ----
  void declaration(std::string doc) {
    if (cur().kind != tk::ident) {
      error_here(schema_error_code::syntax_error,
                 "expected a declaration (class, enum, type or model), found " + describe(cur()));
    }
    const std::string w = cur().text;
    const location at = cur().loc;
    if (w == "class" || w == "model") {
      advance();
      class_declaration(std::move(doc), at, w == "model");
    } else if (w == "enum") {
      advance();
      enum_declaration(std::move(doc), at);
    } else if (w == "type") {
      advance();
      alias_declaration(std::move(doc), at);
    } else if (is_skipped_block(w)) {
      skip_block(w, at);
    } else if (w == "dynamic" && peek().kind == tk::ident && (peek().text == "class" || peek().text == "enum")) {
      error_here(schema_error_code::unsupported,
                 "'dynamic " + peek().text + "' is not supported; declare the type and mark it with @@dynamic");
    } else {
      error_here(schema_error_code::unsupported,
                 "unsupported declaration '" + w +
                     "': the reader understands class, enum, type and model (function, client, generator, test, "
                     "template_string and retry_policy blocks are skipped)");
    }
  }

  void skip_block(const std::string& w, location at) {
    advance();
    std::string name;
    // client<llm> Name
    if (is_punct("<")) {
      while (cur().kind != tk::end && !is_punct(">")) advance();
      if (is_punct(">")) advance();
    }
    if (cur().kind == tk::ident) name = cur().text;
    diag(schema_error_code::skipped, at, "skipped " + w + (name.empty() ? std::string() : " '" + name + "'"));
    if (w == "template_string") {
      while (cur().kind != tk::end && cur().kind != tk::raw_string && cur().kind != tk::string) {
        if (cur().newline_before && cur().kind == tk::ident && is_declaration_keyword(cur().text) && p_ > 0) return;
        advance();
      }
      if (cur().kind != tk::end) advance();
      return;
    }
    int parens = 0;
    while (cur().kind != tk::end && !(parens == 0 && is_punct("{"))) {
      if (is_punct("(")) ++parens;
      else if (is_punct(")")) --parens;
      advance();
    }
    if (cur().kind == tk::end) error_at(schema_error_code::syntax_error, at, "'" + w + "' block has no body");
    int depth = 0;
    do {
      if (is_punct("{")) ++depth;
      else if (is_punct("}")) --depth;
      advance();
    } while (depth > 0 && cur().kind != tk::end);
    if (depth > 0) error_at(schema_error_code::syntax_error, at, "unterminated '" + w + "' block");
  }

  std::string declared_name(std::string_view what) {
    if (cur().kind != tk::ident)
      error_here(schema_error_code::syntax_error, "expected the name of the " + std::string(what) + ", found " + describe(cur()));
    if (is_reserved(cur().text))
      error_here(schema_error_code::syntax_error, "'" + cur().text + "' is a built-in type name");
    std::string n = cur().text;
    advance();
    return n;
  }

  std::uint32_t new_def(const std::string& name, location at, std::string description) {
    if (st_.all->defs.size() >= st_.limits.max_types)
      limit(at, "more than " + std::to_string(st_.limits.max_types) + " types");
    schema::definition d;
    d.name = name;
    d.description = std::move(description);
    d.where = schema::source_location{st_.file, at.line, at.column};
    st_.all->defs.push_back(std::move(d));
    def_info info;
    info.declared = name;
    info.loc = at;
    st_.info->push_back(std::move(info));
    st_.enum_rules->emplace_back();
    return static_cast<std::uint32_t>(st_.all->defs.size() - 1);
  }

  void count_member(location at) {
    if (++st_.member_count > st_.limits.max_fields)
      limit(at, "more than " + std::to_string(st_.limits.max_fields) + " fields and enum values");
  }

  void class_declaration(std::string doc, location at, bool model_syntax) {
    const location name_at = cur().loc;
    const std::string name = declared_name(model_syntax ? "model" : "class");
    const std::uint32_t idx = new_def(name, name_at, std::move(doc));
    (void)at;
    expect_punct("{", "to open the " + std::string(model_syntax ? "model" : "class") + " body");
    schema::object_def body = object_body(idx, name, model_syntax, 1);
    st_.all->defs[idx].body = std::move(body);
  }

  // Parses fields until the closing brace (consumed).
  schema::object_def object_body(std::uint32_t idx, const std::string& name, bool model_syntax, std::size_t depth) {
    schema::object_def body;
    for (;;) {
      std::string doc = take_docs();
      if (is_punct("}")) {
        advance();
        return body;
      }
      if (cur().kind == tk::end)
        error_here(schema_error_code::syntax_error, "unexpected end of input: '" + name + "' is missing its closing '}'");
      const std::size_t start = p_;
      try {
        if (is_punct("@@")) {
          block_attribute(idx, body, nullptr);
          continue;
        }
        field_declaration(idx, name, body, model_syntax, std::move(doc), depth);
      } catch (const abort_declaration&) {
        recover_member(start);
      }
    }
  }

  void field_declaration(std::uint32_t idx, const std::string& parent, schema::object_def& body, bool model_syntax,
                         std::string doc, std::size_t depth) {
    const location at = cur().loc;
    if (cur().kind != tk::ident)
      error_here(schema_error_code::syntax_error, "expected a field name, found " + describe(cur()));
    count_member(at);
    schema::field f;
    f.name = cur().text;
    f.key = f.name;
    f.description = std::move(doc);
    advance();
    bool optional_mark = false;
    if (model_syntax) {
      if (is_punct("?")) {
        optional_mark = true;
        advance();
      }
      expect_punct(":", "after the field name (model fields read `name: type` or `name?: type`)");
    } else if (is_punct(":")) {
      error_here(schema_error_code::syntax_error,
                 "class fields read `name type` (no colon); use `model` for the `name: type` form");
    }
    type_ctx ctx;
    ctx.parent = parent;
    ctx.field = f.name;
    ctx.inline_objects = model_syntax;
    f.type = parse_union(ctx, depth);
    if (optional_mark) f.type.nullable = true;
    // attributes (may continue on the following lines)
    while (is_punct("@")) {
      attribute a = parse_attribute();
      field_attribute(idx, f, a);
    }
    f.required = !f.type.nullable && !f.skip;
    if (model_syntax && is_punct(",")) advance();
    if (!is_punct("}") && !cur().newline_before && cur().kind != tk::end)
      error_here(schema_error_code::syntax_error, "unexpected " + describe(cur()) + " after field '" + f.name + "'");
    body.fields.push_back(std::move(f));
    (*st_.info)[idx].member_locs.push_back(at);
  }

  void field_attribute(std::uint32_t idx, schema::field& f, const attribute& a) {
    if (a.name == "alias") {
      f.key = single_text(a);
    } else if (a.name == "description") {
      f.description = single_text(a);
    } else if (a.name == "skip") {
      no_args(a);
      f.skip = true;
    } else if (a.name == "check" || a.name == "assert") {
      f.type.constraints.push_back(rule(a, a.name == "check"));
    } else if (a.name == "stream.done" || a.name == "stream.not_null" || a.name == "stream.with_state") {
      no_args(a);
      f.type.stream |= stream_bit(a.name);
      st_.hints->push_back(stream_hint{(*st_.info)[idx].declared, f.name, a.name.substr(7)});
    } else {
      error_at(schema_error_code::unknown_attribute, a.loc,
               "unknown field attribute @" + a.name +
                   " (known: @alias, @description, @skip, @check, @assert, @stream.done, @stream.not_null, "
                   "@stream.with_state)");
    }
  }

  // @@attributes of classes (body != nullptr) and enums (values != nullptr).
  void block_attribute(std::uint32_t idx, schema::object_def& body, schema::enum_def* values) {
    (void)values;
    const attribute a = parse_attribute();
    auto& def = st_.all->defs[idx];
    const bool is_enum = std::holds_alternative<schema::enum_def>(def.body) || values != nullptr;
    if (a.name == "description") {
      def.description = single_text(a);
    } else if (a.name == "alias") {
      (*st_.info)[idx].rename = single_text(a);
      (*st_.info)[idx].rename_loc = a.loc;
    } else if (a.name == "assert" || a.name == "check") {
      schema::constraint c = rule(a, a.name == "check");
      if (is_enum) {
        (*st_.enum_rules)[idx].push_back(std::move(c));
      } else {
        schema::invariant inv;
        const auto* check = static_cast<const detail::expression_check*>(c.custom.get());
        inv.description = check->expr().source();
        if (!c.label.empty()) inv.description += " (" + c.label + ")";
        inv.check = c.custom;
        inv.on_fail = c.on_fail;
        body.invariants.push_back(std::move(inv));
        (*st_.info)[idx].invariant_locs.push_back(a.loc);
      }
    } else if (a.name == "dynamic") {
      no_args(a);
      diag(schema_error_code::skipped, a.loc,
           "@@dynamic on '" + def.name + "': the type is used as declared (add fields by editing the schema)");
    } else if (!is_enum && (a.name == "stream.done" || a.name == "stream.not_null")) {
      no_args(a);
      body.stream |= stream_bit(a.name);
      st_.hints->push_back(stream_hint{(*st_.info)[idx].declared, "", a.name.substr(7)});
    } else {
      error_at(schema_error_code::unknown_attribute, a.loc,
               "unknown " + std::string(is_enum ? "enum" : "class") + " attribute @@" + a.name +
                   (is_enum ? " (known: @@alias, @@description, @@assert, @@check, @@dynamic)"
                            : " (known: @@alias, @@description, @@assert, @@check, @@dynamic, @@stream.done, "
                              "@@stream.not_null)"));
    }
  }

  void enum_declaration(std::string doc, location at) {
    (void)at;
    const location name_at = cur().loc;
    const std::string name = declared_name("enum");
    const std::uint32_t idx = new_def(name, name_at, std::move(doc));
    st_.all->defs[idx].body = schema::enum_def{};
    expect_punct("{", "to open the enum body");
    schema::enum_def values;
    schema::object_def unused;
    for (;;) {
      std::string vdoc = take_docs();
      if (is_punct("}")) {
        advance();
        break;
      }
      if (cur().kind == tk::end)
        error_here(schema_error_code::syntax_error, "unexpected end of input: enum '" + name + "' is missing its closing '}'");
      const std::size_t start = p_;
      try {
        if (is_punct("@@")) {
          block_attribute(idx, unused, &values);
          continue;
        }
        const location vat = cur().loc;
        if (cur().kind != tk::ident)
          error_here(schema_error_code::syntax_error, "expected an enum value name, found " + describe(cur()));
        count_member(vat);
        schema::enum_value v;
        v.declared_name = cur().text;
        v.name = v.declared_name;
        v.description = std::move(vdoc);
        v.number = static_cast<std::int64_t>(values.values.size());
        advance();
        while (is_punct("@")) {
          const attribute a = parse_attribute();
          if (a.name == "alias") {
            v.name = single_text(a);  // the alias replaces the declared name in JSON, as in BAML
          } else if (a.name == "description") {
            v.description = single_text(a);
          } else if (a.name == "skip") {
            no_args(a);
            v.skip = true;
          } else {
            error_at(schema_error_code::unknown_attribute, a.loc,
                     "unknown enum value attribute @" + a.name + " (known: @alias, @description, @skip)");
          }
        }
        values.values.push_back(std::move(v));
        (*st_.info)[idx].member_locs.push_back(vat);
        if (!is_punct("}") && !is_punct("@@") && cur().kind != tk::ident && cur().kind != tk::doc && cur().kind != tk::end)
          error_here(schema_error_code::syntax_error, "unexpected " + describe(cur()) + " after enum value '" +
                                                          values.values.back().declared_name + "'");
      } catch (const abort_declaration&) {
        recover_member(start);
      }
    }
    if (values.values.empty()) {
      st_.all->defs[idx].body = std::move(values);
      error_at(schema_error_code::syntax_error, name_at, "enum '" + name + "' declares no values");
    }
    st_.all->defs[idx].body = std::move(values);
  }

  void alias_declaration(std::string doc, location at) {
    (void)at;
    const location name_at = cur().loc;
    const std::string name = declared_name("type alias");
    const std::uint32_t idx = new_def(name, name_at, std::move(doc));
    st_.all->defs[idx].body = schema::alias_def{};
    expect_punct("=", "after the alias name (type Name = ...)");
    type_ctx ctx;
    ctx.parent = name;
    schema::alias_def a;
    a.target = parse_union(ctx, 1);
    while (is_punct("@")) {
      const attribute attr = parse_attribute();
      if (attr.name == "check" || attr.name == "assert") {
        a.target.constraints.push_back(rule(attr, attr.name == "check"));
      } else if (attr.name == "description") {
        st_.all->defs[idx].description = single_text(attr);
      } else {
        error_at(schema_error_code::unknown_attribute, attr.loc,
                 "unknown type alias attribute @" + attr.name + " (known: @check, @assert, @description)");
      }
    }
    st_.all->defs[idx].body = std::move(a);
  }

  // ---- attributes ----
  attribute parse_attribute() {
    attribute a;
    a.loc = cur().loc;
    a.block = is_punct("@@");
    advance();
    if (cur().kind != tk::ident || cur().newline_before)
      error_here(schema_error_code::syntax_error, "expected an attribute name after '@'");
    a.name = cur().text;
    advance();
    while (is_punct(".") && peek().kind == tk::ident && !cur().newline_before) {
      advance();
      a.name += "." + cur().text;
      advance();
    }
    if (is_punct("(") && !cur().newline_before) {
      a.parens = true;
      advance();
      if (!is_punct(")")) {
        for (;;) {
          a.args.push_back(parse_arg());
          if (is_punct(",")) {
            advance();
            continue;
          }
          break;
        }
      }
      expect_punct(")", "to close the arguments of @" + a.name);
    }
    return a;
  }

  attr_arg parse_arg() {
    attr_arg arg;
    arg.loc = cur().loc;
    if ((cur().kind == tk::string || cur().kind == tk::raw_string) && (peek().kind == tk::punct && (peek().text == "," || peek().text == ")"))) {
      arg.kind = attr_arg::kind_t::string;
      arg.text = cur().text;
      advance();
      return arg;
    }
    if (cur().kind == tk::expr) {
      arg.kind = attr_arg::kind_t::expr;
      arg.text = cur().text;
      arg.content = cur().content;
      advance();
      return arg;
    }
    // bare text up to ',' or ')' at depth 0
    const std::size_t from = cur().offset;
    std::size_t to = from;
    int depth = 0;
    while (cur().kind != tk::end) {
      if (depth == 0 && (is_punct(",") || is_punct(")"))) break;
      if (is_punct("{") || is_punct("}") || cur().kind == tk::doc)
        error_here(schema_error_code::syntax_error, "unexpected " + describe(cur()) + " in attribute arguments");
      if (is_punct("(")) ++depth;
      else if (is_punct(")")) --depth;
      to = cur().end;
      advance();
    }
    if (to == from) error_at(schema_error_code::syntax_error, arg.loc, "empty attribute argument");
    std::string_view text = map_.text().substr(from, to - from);
    arg.text = std::string(text);
    return arg;
  }

  std::string single_text(const attribute& a) {
    if (a.args.size() != 1 || a.args[0].kind == attr_arg::kind_t::expr)
      error_at(schema_error_code::invalid_attribute, a.loc, "@" + a.name + " takes one argument: a string");
    return a.args[0].text;
  }

  static std::uint8_t stream_bit(std::string_view name) {
    if (name == "stream.done") return schema::stream_flag::done;
    if (name == "stream.not_null") return schema::stream_flag::not_null;
    return schema::stream_flag::with_state;
  }

  void no_args(const attribute& a) {
    if (a.parens) error_at(schema_error_code::invalid_attribute, a.loc, "@" + a.name + " takes no arguments");
  }

  // @check / @assert: ([name,] {{ expression }} [, action]). The action defaults to noop for
  // @check and reask for @assert.
  schema::constraint rule(const attribute& a, bool soft) {
    const std::string at = (a.block ? "@@" : "@") + a.name;
    const auto is_expr = [](const attr_arg& x) { return x.kind == attr_arg::kind_t::expr; };
    std::size_t body_at = 0;
    while (body_at < a.args.size() && !is_expr(a.args[body_at])) ++body_at;
    if (!a.args.empty() && body_at == a.args.size() && a.args.size() <= 2)
      error_at(schema_error_code::invalid_attribute, a.args.back().loc,
               at + ": the rule must be written as {{ expression }}");
    if (a.args.empty() || body_at == a.args.size() || body_at > 1 || a.args.size() - body_at > 2)
      error_at(schema_error_code::invalid_attribute, a.loc,
               at + " takes ({{ expression }}), (name, {{ expression }}) or either followed by an on-fail action");
    std::string label;
    const attr_arg* body = &a.args[body_at];
    if (body_at == 1) {
      const attr_arg& n = a.args[0];
      label = n.text;
      const bool ok_name = !label.empty() && ident_start(label[0]) &&
                           std::all_of(label.begin(), label.end(), [](char c) { return ident_char(c); });
      if (!ok_name)
        error_at(schema_error_code::invalid_attribute, n.loc, at + ": '" + label + "' is not a valid check name");
    }
    fail_action action = soft ? fail_action::noop : fail_action::reask;
    if (body_at + 1 < a.args.size()) {
      const attr_arg& x = a.args[body_at + 1];
      if (x.kind != attr_arg::kind_t::bare || !parse_fail_action(x.text, action))
        error_at(schema_error_code::invalid_attribute, x.loc,
                 at + ": '" + x.text + "' is not an on-fail action (reask, filter, refrain, noop, exception)");
      if (action == fail_action::fix)
        error_at(schema_error_code::invalid_attribute, x.loc,
                 at + ": a rule written as an expression has no fix (on-fail actions here: reask, filter, refrain, "
                      "noop, exception)");
    }
    std::string err;
    std::size_t off = 0;
    auto e = detail::expression::parse(body->text, err, off, st_.limits.max_depth);
    if (!e) error_at(schema_error_code::invalid_constraint, map_.at(body->content + off), at + ": " + err);
    schema::constraint c;
    c.kind = schema::constraint_kind::predicate;
    c.label = label;
    c.on_fail = action;
    c.text = detail::expression_rule_text(*e, label);
    c.custom = std::make_shared<detail::expression_check>(std::move(e), action == fail_action::noop);
    return c;
  }

  // Attributes written after a type inside parentheses, or after a whole type expression.
  void type_attributes(schema::type& t, std::size_t depth) {
    (void)depth;
    while (is_punct("@")) {
      const attribute a = parse_attribute();
      if (a.name == "check" || a.name == "assert") {
        t.constraints.push_back(rule(a, a.name == "check"));
      } else if (a.name == "stream.done" || a.name == "stream.not_null" || a.name == "stream.with_state") {
        no_args(a);  // streaming attributes: applied by partial reads, nothing to validate
        t.stream |= stream_bit(a.name);
      } else {
        error_at(schema_error_code::unknown_attribute, a.loc,
                 "unknown type attribute @" + a.name +
                     " (known here: @check, @assert, @stream.done, @stream.not_null, @stream.with_state)");
      }
    }
  }

  // ---- types ----
  void check_depth(std::size_t depth) {
    if (depth > st_.limits.max_depth)
      limit(cur().loc, "type nested more than " + std::to_string(st_.limits.max_depth) + " levels deep");
  }

  static bool plain_null(const schema::type& t) { return t.kind == kind::null && t.constraints.empty(); }

  schema::type parse_union(type_ctx& ctx, std::size_t depth) {
    check_depth(depth);
    std::vector<schema::type> alts;
    alts.push_back(parse_postfix(ctx, depth));
    std::size_t count = 1;
    while (is_punct("|")) {
      advance();
      if (++count > 4096) limit(cur().loc, "union with more than 4096 alternatives");
      alts.push_back(parse_postfix(ctx, depth));
    }
    if (alts.size() == 1) return std::move(alts.front());
    // Flatten plain nested unions; `null` alternatives make the union nullable.
    std::vector<schema::type> flat;
    bool nullable = false;
    for (auto& a : alts) {
      if (plain_null(a)) {
        nullable = true;
      } else if (a.kind == kind::union_ && a.constraints.empty() && a.stream == 0) {
        nullable = nullable || a.nullable;
        for (auto& x : a.args) flat.push_back(std::move(x));
      } else {
        flat.push_back(std::move(a));
      }
    }
    if (flat.empty()) return schema::make_primitive(kind::null);
    if (flat.size() == 1) {
      schema::type t = std::move(flat.front());
      t.nullable = t.nullable || nullable;
      return t;
    }
    schema::type u;
    u.kind = kind::union_;
    u.args = std::move(flat);
    u.nullable = nullable;
    return u;
  }

  schema::type parse_postfix(type_ctx& ctx, std::size_t depth) {
    schema::type t = parse_primary(ctx, depth);
    std::size_t layers = 0;
    for (;;) {
      if (is_punct("[") && peek().kind == tk::punct && peek().text == "]") {
        if (++layers + depth > st_.limits.max_depth)
          limit(cur().loc, "type nested more than " + std::to_string(st_.limits.max_depth) + " levels deep");
        advance();
        advance();
        t = schema::make_array(std::move(t));
      } else if (is_punct("?")) {
        advance();
        if (t.kind != kind::null) t.nullable = true;
      } else {
        return t;
      }
    }
  }

  schema::type parse_primary(type_ctx& ctx, std::size_t depth) {
    check_depth(depth);
    const token& tok = cur();
    switch (tok.kind) {
      case tk::string: {
        schema::type t;
        t.kind = kind::literal;
        t.literal = json::string(tok.text);
        advance();
        return t;
      }
      case tk::number: {
        schema::type t;
        t.kind = kind::literal;
        std::int64_t i = 0;
        const auto r = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), i);
        if (r.ec == std::errc() && r.ptr == tok.text.data() + tok.text.size()) {
          t.literal = i;
        } else {
          double d = 0;
          const auto rd = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), d);
          if (rd.ec != std::errc() || !std::isfinite(d))
            error_here(schema_error_code::syntax_error, "number literal " + tok.text + " is out of range");
          t.literal = d;
        }
        advance();
        return t;
      }
      case tk::punct:
        if (tok.text == "(") {
          advance();
          schema::type t = parse_union(ctx, depth + 1);
          type_attributes(t, depth);
          expect_punct(")", "to close the parenthesis");
          return t;
        }
        if (tok.text == "{") {
          if (!ctx.inline_objects)
            error_here(schema_error_code::unsupported,
                       "inline object types are only allowed in `model` declarations; declare a class instead");
          return inline_object(ctx, depth);
        }
        break;
      case tk::ident: {
        const std::string w = tok.text;
        const location at = tok.loc;
        if (w == "string") return primitive(kind::string);
        if (w == "int") return primitive(kind::integer);
        if (w == "float") return primitive(kind::number);
        if (w == "bool") return primitive(kind::boolean);
        if (w == "null") return primitive(kind::null);
        if (w == "true" || w == "false") {
          schema::type t;
          t.kind = kind::literal;
          t.literal = (w == "true");
          advance();
          return t;
        }
        if (w == "map") {
          advance();
          expect_punct("<", "after map (map<K, V>)");
          schema::type key = parse_union(ctx, depth + 1);
          expect_punct(",", "between the key and value types of map<K, V>");
          schema::type value = parse_union(ctx, depth + 1);
          expect_punct(">", "to close map<K, V>");
          schema::type t;
          t.kind = kind::map;
          t.args.push_back(std::move(key));
          t.args.push_back(std::move(value));
          return t;
        }
        if (w == "list" && peek().kind == tk::punct && peek().text == "[") {
          advance();
          advance();
          schema::type item = parse_union(ctx, depth + 1);
          expect_punct("]", "to close list[T]");
          return schema::make_array(std::move(item));
        }
        if (w == "image" || w == "audio" || w == "pdf" || w == "video")
          error_here(schema_error_code::unsupported, "media type '" + w + "' has no JSON form and is not supported");
        advance();
        st_.refs.push_back(ref_site{w, at});
        return schema::make_ref(w);
      }
      default: break;
    }
    error_here(schema_error_code::syntax_error, "expected a type, found " + describe(tok));
  }

  schema::type primitive(kind k) {
    advance();
    schema::type t = schema::make_primitive(k);
    return t;
  }

  schema::type inline_object(type_ctx& ctx, std::size_t depth) {
    const location at = cur().loc;
    advance();  // {
    std::string name = ctx.parent + "_" + ctx.field;
    const std::string base = name;
    for (int n = 2; std::any_of(st_.info->begin(), st_.info->end(), [&](const def_info& i) { return i.declared == name; }); ++n)
      name = base + "_" + std::to_string(n);
    const std::uint32_t idx = new_def(name, at, {});
    schema::object_def body = object_body(idx, name, true, depth + 1);
    st_.all->defs[idx].body = std::move(body);
    st_.refs.push_back(ref_site{name, at});
    return schema::make_ref(name);
  }

  token_stream& t_;
  const source_map& map_;
  parse_state& st_;
  std::size_t p_ = 0;
};

// ---- resolution ---------------------------------------------------------------------------------

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const char x = static_cast<char>(std::tolower(static_cast<unsigned char>(a[i - 1])));
      const char y = static_cast<char>(std::tolower(static_cast<unsigned char>(b[j - 1])));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x == y ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

template <class F>
void for_each_type_mut(schema::type& t, F&& f) {
  f(t);
  for (auto& a : t.args) for_each_type_mut(a, f);
}

template <class F>
void for_each_def_type(schema::model& m, F&& f) {
  for (auto& d : m.defs) {
    if (auto* o = std::get_if<schema::object_def>(&d.body)) {
      for (auto& fl : o->fields) for_each_type_mut(fl.type, f);
    } else if (auto* a = std::get_if<schema::alias_def>(&d.body)) {
      for_each_type_mut(a->target, f);
    }
  }
}

}  // namespace

struct detail::schema_file_access {
  // Links ref types to definitions by name (declared or final).
  static void link(const schema_set& set, schema::type& root) {
    for_each_type_mut(root, [&](schema::type& t) {
      if (t.kind != kind::ref) return;
      auto it = set.by_name_.find(t.name);
      if (it != set.by_name_.end()) {
        t.def = it->second;
        t.name = set.all_.defs[it->second].name;
      }
    });
  }

  // Hard @assert predicates that are simple rules become keyword constraints; enum rules are
  // attached to every use of the enum.
  static void refine(const schema_set& set, schema::type& root) {
    for_each_type_mut(root, [&](schema::type& t) {
      if (!t.constraints.empty()) {
        std::vector<schema::constraint> out;
        const schema::type* base = detail::unalias(set.all_, t);
        const kind k = base == nullptr ? kind::any : base->kind;
        for (auto& c : t.constraints) {
          const auto* check = dynamic_cast<const detail::expression_check*>(c.custom.get());
          if (c.kind == schema::constraint_kind::predicate && check != nullptr && c.on_fail != fail_action::noop) {
            const std::size_t before = out.size();
            if (check->expr().to_constraints(k, out)) {
              for (std::size_t i = before; i < out.size(); ++i) {
                out[i].label = c.label;
                out[i].on_fail = c.on_fail;
              }
              continue;
            }
          }
          out.push_back(std::move(c));
        }
        t.constraints = std::move(out);
      }
      if (t.kind == kind::ref && t.def != schema::no_def && t.def < set.enum_rules_.size()) {
        for (const auto& c : set.enum_rules_[t.def]) t.constraints.push_back(c);
      }
    });
  }

  static schema_load_result load(std::string_view text, const schema_load_options& options) {
    schema_load_result result;
    schema_set& set = result.set;
    set.limits_ = options.limits;
    auto report = [&](schema_error_code code, location loc, std::string message) {
      schema_diagnostic d;
      d.code = code;
      d.file = options.file;
      d.line = loc.line;
      d.column = loc.column;
      d.message = std::move(message);
      result.errors.push_back(std::move(d));
    };
    if (text.size() > options.limits.max_bytes) {
      report(schema_error_code::limit_exceeded, {},
             "schema text is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                 std::to_string(options.limits.max_bytes));
      return result;
    }
    const source_map map(text);
    lexer lx(text, map);
    token_stream toks(lx);

    std::vector<def_info> info;
    parse_state st;
    st.file = options.file;
    st.limits = options.limits;
    st.all = &set.all_;
    st.info = &info;
    st.enum_rules = &set.enum_rules_;
    st.errors = &result.errors;
    st.notes = &result.notes;
    st.hints = &set.stream_hints_;
    parser(toks, map, st).parse_file();
    if (toks.error) report(schema_error_code::syntax_error, map.at(toks.error->offset), toks.error->message);
    if (!result.errors.empty() && result.errors.back().code == schema_error_code::limit_exceeded) return result;

    schema::model& all = set.all_;
    all.root = schema::make_primitive(kind::any);
    // names
    for (std::uint32_t i = 0; i < all.defs.size(); ++i) {
      set.declared_.push_back(info[i].declared);
      auto [it, fresh] = set.by_name_.emplace(info[i].declared, i);
      if (!fresh) {
        const auto& first = info[it->second].loc;
        report(schema_error_code::duplicate_type, info[i].loc,
               "type '" + info[i].declared + "' is already defined at line " + std::to_string(first.line));
      }
    }
    // unknown names
    for (const auto& r : st.refs) {
      if (set.by_name_.count(r.name) != 0) continue;
      std::string best;
      std::size_t best_d = 3;
      for (const auto& n : set.declared_) {
        const std::size_t d = edit_distance(n, r.name);
        if (d < best_d) {
          best_d = d;
          best = n;
        }
      }
      report(schema_error_code::unknown_type, r.loc,
             "unknown type '" + r.name + "'" + (best.empty() ? std::string() : " (did you mean '" + best + "'?)"));
    }
    for_each_def_type(all, [&](schema::type& t) {
      if (t.kind == kind::ref) {
        auto it = set.by_name_.find(t.name);
        if (it != set.by_name_.end()) t.def = it->second;
      }
    });
    // members
    for (std::uint32_t i = 0; i < all.defs.size(); ++i) {
      auto& d = all.defs[i];
      const auto& locs = info[i].member_locs;
      if (auto* o = std::get_if<schema::object_def>(&d.body)) {
        for (std::size_t a = 0; a < o->fields.size(); ++a) {
          const location at = a < locs.size() ? locs[a] : info[i].loc;
          for (std::size_t b = 0; b < a; ++b) {
            if (o->fields[b].name == o->fields[a].name) {
              report(schema_error_code::duplicate_field, at,
                     "field '" + o->fields[a].name + "' of '" + info[i].declared + "' is already declared at line " +
                         std::to_string(b < locs.size() ? locs[b].line : 0));
              break;
            }
            if (o->fields[b].key == o->fields[a].key) {
              report(schema_error_code::conflicting_alias, at,
                     "fields '" + o->fields[b].name + "' and '" + o->fields[a].name + "' of '" + info[i].declared +
                         "' both use the JSON key \"" + o->fields[a].key + "\"");
              break;
            }
          }
          for_each_type_mut(o->fields[a].type, [&](schema::type& t) {
            if (t.kind == kind::map && t.args.size() == 2 && !detail::valid_map_key(all, t.args[0]))
              report(schema_error_code::invalid_map_key, at,
                     "map keys must be string, an enum or string literals, not " +
                         schema::type_expression(t.args[0]));
          });
        }
      } else if (auto* e = std::get_if<schema::enum_def>(&d.body)) {
        for (std::size_t a = 0; a < e->values.size(); ++a) {
          const location at = a < locs.size() ? locs[a] : info[i].loc;
          bool reported = false;
          for (std::size_t b = 0; b < a && !reported; ++b) {
            const auto& x = e->values[b];
            const auto& y = e->values[a];
            if (x.declared_name == y.declared_name) {
              report(schema_error_code::duplicate_value, at,
                     "value '" + y.declared_name + "' of enum '" + info[i].declared + "' is already declared");
              reported = true;
              break;
            }
            auto spellings = [](const schema::enum_value& v) {
              std::vector<std::string> s{v.name};
              for (const auto& al : v.aliases) s.push_back(al);
              return s;
            };
            for (const auto& s1 : spellings(x)) {
              for (const auto& s2 : spellings(y)) {
                if (s1 == s2 && !reported) {
                  report(schema_error_code::conflicting_alias, at,
                         "values '" + x.declared_name + "' and '" + y.declared_name + "' of enum '" +
                             info[i].declared + "' both accept \"" + s1 + "\"");
                  reported = true;
                }
              }
            }
          }
        }
      } else if (auto* al = std::get_if<schema::alias_def>(&d.body)) {
        for_each_type_mut(al->target, [&](schema::type& t) {
          if (t.kind == kind::map && t.args.size() == 2 && !detail::valid_map_key(all, t.args[0]))
            report(schema_error_code::invalid_map_key, info[i].loc,
                   "map keys must be string, an enum or string literals, not " + schema::type_expression(t.args[0]));
        });
      }
    }
    // recursion and nesting depth (the structural checks of check_model; names and keys were
    // checked above with better locations)
    for (auto& p : detail::find_model_problems(all, options.limits.max_depth)) {
      if (p.code != schema_error_code::unescaped_recursion && p.code != schema_error_code::limit_exceeded) continue;
      location at = p.def < info.size() ? info[p.def].loc : location{};
      if (p.def < info.size() && !p.field.empty()) {
        if (const auto* o = all.defs[p.def].object()) {
          for (std::size_t f = 0; f < o->fields.size(); ++f)
            if (o->fields[f].name == p.field && f < info[p.def].member_locs.size()) at = info[p.def].member_locs[f];
        }
      }
      report(p.code, at, std::move(p.message));
    }
    // @@alias renames
    for (std::uint32_t i = 0; i < all.defs.size(); ++i) {
      if (info[i].rename.empty() || info[i].rename == info[i].declared) continue;
      auto it = set.by_name_.find(info[i].rename);
      if (it != set.by_name_.end() && it->second != i) {
        report(schema_error_code::conflicting_alias, info[i].rename_loc,
               "@@alias(\"" + info[i].rename + "\") of '" + info[i].declared + "' is the name of another type");
        continue;
      }
      all.defs[i].name = info[i].rename;
      set.by_name_.emplace(info[i].rename, i);
    }
    for_each_def_type(all, [&](schema::type& t) {
      if (t.kind == kind::ref && t.def != schema::no_def) t.name = all.defs[t.def].name;
    });
    // keyword constraints and enum rules
    for (auto& d : all.defs) {
      if (auto* o = std::get_if<schema::object_def>(&d.body)) {
        for (auto& f : o->fields) refine(set, f.type);
      } else if (auto* a = std::get_if<schema::alias_def>(&d.body)) {
        refine(set, a->target);
      }
    }
    std::stable_sort(result.errors.begin(), result.errors.end(), [](const schema_diagnostic& a, const schema_diagnostic& b) {
      return a.line != b.line ? a.line < b.line : a.column < b.column;
    });
    set.notes_ = result.notes;
    return result;
  }

  static bool model_for(const schema_set& set, std::string_view expr, schema::model& out, schema_diagnostics& errors) {
    const std::size_t before = errors.size();
    const std::string file = "type expression";
    auto report = [&](schema_error_code code, location loc, std::string message) {
      schema_diagnostic d;
      d.code = code;
      d.file = file;
      d.line = loc.line;
      d.column = loc.column;
      d.message = std::move(message);
      errors.push_back(std::move(d));
    };
    if (expr.size() > set.limits_.max_bytes) {
      report(schema_error_code::limit_exceeded, {}, "type expression is larger than the limit");
      return false;
    }
    const source_map map(expr);
    lexer lx(expr, map);
    token_stream toks(lx);
    schema::model scratch;
    std::vector<def_info> info;
    std::vector<std::vector<schema::constraint>> rules;
    schema_diagnostics notes;
    std::vector<stream_hint> hints;
    parse_state st;
    st.file = file;
    st.limits = set.limits_;
    st.all = &scratch;
    st.info = &info;
    st.enum_rules = &rules;
    st.errors = &errors;
    st.notes = &notes;
    st.hints = &hints;
    std::optional<schema::type> root = parser(toks, map, st).parse_type_only();
    if (toks.error) {
      errors.resize(before);
      report(schema_error_code::syntax_error, map.at(toks.error->offset), toks.error->message);
      return false;
    }
    if (!root || errors.size() != before) return false;
    for (const auto& r : st.refs) {
      if (set.by_name_.count(r.name) == 0) report(schema_error_code::unknown_type, r.loc, "unknown type '" + r.name + "'");
    }
    if (errors.size() != before) return false;
    link(set, *root);
    bool bad_key = false;
    for_each_type_mut(*root, [&](schema::type& t) {
      if (t.kind == kind::map && t.args.size() == 2 && !detail::valid_map_key(set.all_, t.args[0])) bad_key = true;
    });
    if (bad_key) {
      report(schema_error_code::invalid_map_key, {}, "map keys must be string, an enum or string literals");
      return false;
    }
    refine(set, *root);
    out = reachable_model(set.all_, *root);
    return true;
  }
};

schema_set schema_set::parse(std::string_view text, const schema_load_options& options) {
  schema_load_result r = load_schema(text, options);
  if (!r.ok()) throw schema_error(std::move(r.errors));
  return std::move(r.set);
}

schema_set schema_set::load(const std::filesystem::path& file, schema_load_options options) {
  schema_load_result r = load_schema_file(file, std::move(options));
  if (!r.ok()) throw schema_error(std::move(r.errors));
  return std::move(r.set);
}

schema_set schema_set::from_model(schema::model m) {
  if (schema_diagnostics problems = check_model(m); !problems.empty()) throw schema_error(std::move(problems));
  schema_set set;
  set.all_.defs = std::move(m.defs);
  set.all_.root = schema::make_primitive(kind::any);
  for (std::uint32_t i = 0; i < set.all_.defs.size(); ++i) {
    set.declared_.push_back(set.all_.defs[i].name);
    set.by_name_.emplace(set.all_.defs[i].name, i);
  }
  set.enum_rules_.resize(set.all_.defs.size());
  return set;
}

std::vector<std::string> schema_set::names() const { return declared_; }

bool schema_set::contains(std::string_view name) const noexcept { return find(name) != nullptr; }

const schema::definition* schema_set::find(std::string_view name) const noexcept {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &all_.defs[it->second];
}

schema::model schema_set::model(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) {
    schema_diagnostic d;
    d.code = schema_error_code::unknown_type;
    d.message = "unknown type '" + std::string(name) + "'";
    throw schema_error({d});
  }
  schema::type root;
  root.kind = kind::ref;
  root.def = it->second;
  root.name = all_.defs[it->second].name;
  return reachable_model(all_, root);
}

schema::model schema_set::model_for(std::string_view type_expression) const {
  schema_diagnostics errors;
  auto m = try_model_for(type_expression, errors);
  if (!m) throw schema_error(std::move(errors));
  return std::move(*m);
}

std::optional<schema::model> schema_set::try_model_for(std::string_view type_expression,
                                                       schema_diagnostics& errors) const {
  schema::model m;
  if (!detail::schema_file_access::model_for(*this, type_expression, m, errors)) return std::nullopt;
  return m;
}

schema_load_result load_schema(std::string_view text, const schema_load_options& options) {
  return detail::schema_file_access::load(text, options);
}

schema_load_result load_schema_file(const std::filesystem::path& file, schema_load_options options) {
  if (options.file.empty()) options.file = file.string();
  const detail::file_text f = detail::read_text_file(file, options.limits.max_bytes);
  if (f.error.empty()) return load_schema(f.text, options);
  schema_load_result result;
  schema_diagnostic d;
  d.code = f.too_large ? schema_error_code::limit_exceeded : schema_error_code::io_error;
  d.file = options.file;
  d.message = f.too_large ? "file " + f.error : "cannot read the file: " + f.error;
  result.errors.push_back(std::move(d));
  return result;
}

}  // namespace covenant
