// The schema-file reader's lexer: tokens with line and column; comments skipped, /// doc comments,
// strings ("...", raw #"..."#) and {{ expressions }} kept as tokens.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "read/lenient_text.hpp"
#include "types/number_text.hpp"
#include "schema_file_syntax.hpp"

namespace covenant::schema_file_impl {

namespace {

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

}  // namespace

token lexer::next_token(std::optional<lex_error>& error) {
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

bool lexer::next(token& t, std::optional<lex_error>& error) {
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
    bool integral = true;  // the parser reads the text for its type
    i_ = detail::number_end(s_, i_, integral);
    t.kind = tk::number;
    t.text = std::string(s_.substr(b, i_ - b));
    return true;
  }
  if (c == '"') return quoted(t, error);
  if (c == '#') {
    std::size_t hashes = 0;
    while (i_ + hashes < s_.size() && s_[i_ + hashes] == '#') ++hashes;
    if (i_ + hashes < s_.size() && s_[i_ + hashes] == '"') {
      std::string close(hashes + 1, '#');  // a quote, then as many # as opened it
      close.front() = '"';
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

bool lexer::quoted(token& t, std::optional<lex_error>& error) {
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
          detail::append_utf8(out, cp);
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

}  // namespace covenant::schema_file_impl
