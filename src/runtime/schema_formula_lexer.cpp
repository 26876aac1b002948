// The formulas' lexer: identifiers, numbers, quoted strings (with their escapes) and punctuation.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "schema_formula_impl.hpp"
#include "types/number_text.hpp"

namespace covenant::detail::formula_impl {

namespace {

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

token lexer::next() {
  while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  token t;
  t.offset = i_;
  if (i_ >= s_.size()) return t;
  const char c = s_[i_];
  if (ident_start(c)) {
    const std::size_t b = i_;
    while (i_ < s_.size() && ident_char(s_[i_])) ++i_;
    t.kind = tok::ident;
    t.text = std::string(s_.substr(b, i_ - b));
    return t;
  }
  if (digit(c)) {
    const std::size_t b = i_;
    bool integral = true;
    i_ = number_end(s_, i_, integral);
    const std::string_view text = s_.substr(b, i_ - b);
    t.kind = tok::number;
    if (integral) {
      std::int64_t v = 0;
      const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
      if (r.ec == std::errc()) {
        t.number = v;
        return t;
      }
    }
    double d = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), d);
    if (r.ec != std::errc() || !std::isfinite(d)) {
      t.kind = tok::error;
      t.text = "number out of range";
      return t;
    }
    t.number = d;
    return t;
  }
  if (c == '"' || c == '\'') {
    const char q = c;
    ++i_;
    std::string out;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
        const char e = s_[i_ + 1];
        switch (e) {
          case '\\': out.push_back('\\'); break;
          case '"': out.push_back('"'); break;
          case '\'': out.push_back('\''); break;
          case 'n': out.push_back('\n'); break;
          case 't': out.push_back('\t'); break;
          case 'r': out.push_back('\r'); break;
          default:  // unknown escapes stay as written (regular expressions: \d, \s, \.)
            out.push_back('\\');
            out.push_back(e);
        }
        i_ += 2;
        continue;
      }
      out.push_back(s_[i_++]);
    }
    if (i_ >= s_.size()) {
      t.kind = tok::error;
      t.text = "unterminated string";
      return t;
    }
    ++i_;
    t.kind = tok::string;
    t.text = std::move(out);
    return t;
  }
  static constexpr std::string_view two[] = {"==", "!=", "<=", ">=", "//"};
  for (auto p : two) {
    if (s_.substr(i_, 2) == p) {
      i_ += 2;
      t.kind = tok::punct;
      t.text = std::string(p);
      return t;
    }
  }
  static constexpr std::string_view one = "<>()[].,|+-*/%~=";
  if (one.find(c) != std::string_view::npos) {
    ++i_;
    t.kind = tok::punct;
    t.text = std::string(1, c);
    return t;
  }
  t.kind = tok::error;
  t.text = std::string("unexpected character '") + c + "'";
  return t;
}

}  // namespace covenant::detail::formula_impl
