// The resumable JSON tokenizer of the stream readers (src/read/stream_reader.cpp): private to the
// library.
#pragma once

#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "covenant/read/detail/coerce.hpp"
#include "covenant/read/detail/json_lexer.hpp"
#include "covenant/read/detail/json_reader.hpp"
#include "covenant/types/detail/utf8.hpp"
#include "lenient_text.hpp"

namespace covenant::detail {

/// A resumable JSON tokenizer: fed pieces of a text that may end anywhere (inside a string, an
/// escape, a number, a literal or a UTF-8 character), it calls the reader back for each token:
/// begin_container(object?), end_container(), key_part(text) + key_done(), string_part(text,
/// last), number(value) (with the number's text in `number_text`; null out of a double's range),
/// boolean(b), null(). String
/// text is passed through in runs found 16 bytes at a time; escapes are decoded; a UTF-8
/// character cut by the end of a piece is held back until it is whole. Numbers, UTF-8 and
/// surrogate pairs are held to the final reader's rules (json_reader): text it refuses stops the
/// tokenizer. Trailing commas are accepted. Hand-written: Boost.JSON's basic_parser reads a
/// string byte by byte once it has seen an escape, which made streamed text about five times
/// slower to follow.
template <class Reader>
class push_tokenizer {
 public:
  push_tokenizer(Reader& r, std::size_t max_depth) : r_(r), max_depth_(max_depth) {}

  void reset() {
    state_ = st::value;
    stack_.clear();
    number_.clear();
    literal_.clear();
    held_.clear();
    high_ = 0;
    done_ = false;
  }

  [[nodiscard]] bool done() const noexcept { return done_; }

  /// Inside a call of the reader from feed(): the offset in the piece just past the last byte
  /// read so far, which is the byte that made the call (a bracket, a string's closing quote, the
  /// character after a number, the last letter of a literal, the end of an escape or of a held-back
  /// UTF-8 character), or, for a string's run that lies in the piece, just past `within` (a
  /// position in that run). The same however the text was cut into pieces.
  [[nodiscard]] std::size_t offset_after(const char* within = nullptr) const noexcept {
    const auto at = reinterpret_cast<std::uintptr_t>(within);
    if (within != nullptr && at >= reinterpret_cast<std::uintptr_t>(begin_) &&
        at <= reinterpret_cast<std::uintptr_t>(after_))
      return static_cast<std::size_t>(within - begin_);
    return static_cast<std::size_t>(after_ - begin_);
  }

  /// Reads the next piece; false when the text is not JSON (nothing more is read).
  bool feed(std::string_view piece) {
    const char* p = piece.data();
    const char* const e = p + piece.size();
    begin_ = p;
    after_ = p;
    while (p < e) {
      if (done_) return true;
      switch (state_) {
        case st::value:
        case st::after_value:
        case st::object_first:
        case st::object_key:
        case st::after_key:
        case st::array_first: {
          p = skip_space(p, e);
          if (p == e) return true;
          after_ = p + 1;
          if (!structural(*p)) return error();
          ++p;
          break;
        }
        case st::string:
        case st::key: p = string_run(p, e); break;
        case st::escape:
          after_ = p + 1;
          if (!escape(*p)) return error();
          ++p;
          break;
        case st::unicode:
          after_ = p + 1;
          if (!hex_digit(*p)) return error();
          ++p;
          break;
        case st::number: {
          const char* q = p;
          while (q < e && number_char(*q)) ++q;
          number_.append(p, q);
          p = q;
          if (q == e) break;
          after_ = q + 1;  // (a number is known to be finished at the character after it)
          if (!end_number()) return error();
          break;
        }
        case st::literal: {
          after_ = p + 1;
          literal_.push_back(*p++);
          if (!advance_literal()) return error();
          break;
        }
        case st::failed: return false;
      }
      if (state_ == st::failed) return false;
    }
    return true;
  }

 private:
  enum class st : std::uint8_t {
    value,         // a value must come
    after_value,   // ',' or a closing bracket
    object_first,  // after '{': a key or '}'
    object_key,    // after ',' in an object: a key (or '}', a trailing comma)
    after_key,     // ':'
    array_first,   // after '[' or ',' in an array: a value or ']'
    string,
    key,
    escape,
    unicode,
    number,
    literal,
    failed,
  };

  bool error() {
    state_ = st::failed;
    return false;
  }

  static const char* skip_space(const char* p, const char* e) {
    while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) ++p;
    return p;
  }
  static bool number_char(char c) {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
  }

  // One structural character, or the first character of a value.
  bool structural(char c) {
    switch (state_) {
      case st::after_value:
        if (stack_.empty()) return false;
        if (c == ',') {
          state_ = stack_.back() == 'o' ? st::object_key : st::array_first;
          return true;
        }
        return close(c);
      case st::object_first:
      case st::object_key:
        if (c == '}') return close(c);
        if (c != '"') return false;
        state_ = st::key;
        return true;
      case st::after_key:
        if (c != ':') return false;
        state_ = st::value;
        return true;
      case st::array_first:
        if (c == ']') return close(c);
        state_ = st::value;
        return begin_value(c);
      case st::value: return begin_value(c);
      default: return false;
    }
  }

  bool close(char c) {
    const char want = stack_.back() == 'o' ? '}' : ']';
    if (c != want) return false;
    stack_.pop_back();
    r_.end_container();
    after_value();
    return true;
  }

  void after_value() {
    state_ = st::after_value;
    if (stack_.empty()) done_ = true;
  }

  bool begin_value(char c) {
    switch (c) {
      case '{':
      case '[':
        if (stack_.size() >= max_depth_) return false;
        stack_.push_back(c == '{' ? 'o' : 'a');
        r_.begin_container(c == '{');
        state_ = c == '{' ? st::object_first : st::array_first;
        return true;
      case '"':  // (a string is there from its opening quote on)
        state_ = st::string;
        r_.string_part({}, false);
        return true;
      case 't':
      case 'f':
      case 'n':
        literal_.assign(1, c);
        state_ = st::literal;
        return true;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          number_.assign(1, c);
          state_ = st::number;
          return true;
        }
        return false;
    }
  }

  // Text of a string or key up to its end, an escape, or the end of the piece. Its UTF-8 is
  // checked as the final reader checks it (utf8_sequence): an invalid sequence is an error.
  COVENANT_ALWAYS_INLINE const char* string_run(const char* p, const char* e) {
    if (!held_.empty()) {  // finish the UTF-8 character the previous piece cut
      while (p < e && held_.size() < utf8_length(held_[0]) && (static_cast<unsigned char>(*p) & 0xC0u) == 0x80u)
        held_.push_back(*p++);
      if (held_.size() < utf8_length(held_[0]) && p == e) return p;
      if (utf8_sequence(held_.data(), held_.data() + held_.size()) != held_.size()) return fail_at(e);
      after_ = p;
      emit(held_);
      held_.clear();
    }
    if (high_ != 0 && p < e && *p != '\\') return fail_at(e);  // a lone high surrogate
    const char* q = find_string_special(p, e, 0);
    while (q < e && static_cast<unsigned char>(*q) >= 0x80) {
      const std::size_t n = utf8_sequence(q, e);
      if (n == 0) {
        // The text up to here, however the pieces were cut; then the stop at the invalid
        // sequence, or a UTF-8 character cut by the end of the piece held back.
        after_ = q;
        if (q > p) emit(std::string_view(p, static_cast<std::size_t>(q - p)));
        if (!utf8_cut_at_end(q, e)) return fail_at(e);
        held_.assign(q, e);
        return e;
      }
      q = find_string_special(q + n, e, 0);
    }
    after_ = q;
    if (q > p) emit(std::string_view(p, static_cast<std::size_t>(q - p)));
    if (q == e) return e;
    if (*q == '"') {
      if (high_ != 0) return fail_at(e);
      after_ = q + 1;
      end_string();
      return q + 1;
    }
    if (*q == '\\') {
      in_key_ = state_ == st::key;
      state_ = st::escape;
      return q + 1;
    }
    return fail_at(e);  // a raw control character
  }

  const char* fail_at(const char* e) {
    error();
    return e;
  }

  static std::size_t utf8_length(char lead) {
    const auto c = static_cast<unsigned char>(lead);
    return c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  }

  void emit(std::string_view text) {
    if (state_ == st::key || (state_ == st::escape && in_key_) || (state_ == st::unicode && in_key_)) r_.key_part(text);
    else r_.string_part(text, false);
  }

  void end_string() {
    if (state_ == st::key) {
      r_.key_done();
      state_ = st::after_key;
      return;
    }
    r_.string_part({}, true);
    after_value();
  }

  bool escape(char c) {
    if (high_ != 0 && c != 'u') return false;  // a lone high surrogate
    if (c == 'u') {
      hex_ = 0;
      hex_digits_ = 0;
      state_ = st::unicode;
      return true;
    }
    const char out = json_simple_escape(c);
    if (out == 0) return false;
    emit(std::string_view(&out, 1));
    state_ = in_key_ ? st::key : st::string;
    return true;
  }

  bool hex_digit(char c) {
    const int d = json_hex_digit(c);
    if (d < 0) return false;
    hex_ = hex_ * 16 + static_cast<std::uint32_t>(d);
    if (++hex_digits_ < 4) return true;
    std::uint32_t cp = hex_;
    if (cp >= 0xD800 && cp <= 0xDBFF) {  // a high surrogate: its low half follows as \uXXXX
      if (high_ != 0) return false;
      high_ = cp;
      state_ = in_key_ ? st::key : st::string;
      return true;
    }
    // A surrogate must come in a pair, as the final reader requires.
    if ((cp >= 0xDC00 && cp <= 0xDFFF) != (high_ != 0)) return false;
    if (high_ != 0) cp = 0x10000 + ((high_ - 0xD800) << 10) + (cp - 0xDC00);
    high_ = 0;
    emit_code_point(cp);
    state_ = in_key_ ? st::key : st::string;
    return true;
  }

  void emit_code_point(std::uint32_t cp) {
    char b[4];
    const auto n = static_cast<std::size_t>(put_utf8(b, cp) - b);
    const st keep = state_;
    state_ = in_key_ ? st::key : st::string;
    emit(std::string_view(b, n));
    state_ = keep;
  }

  bool end_number() {
    // The final reader's number grammar (no leading zeros, digits after '.' and 'e').
    json_reader grammar(number_, 1);
    number_token t;
    if (!grammar.read_number(t) || t.end != number_.data() + number_.size()) return false;
    r_.number_text = number_;
    boost::json::value v;  // null: out of a double's range (the final reader refuses it)
    number_value(number_, v);
    r_.number(v);
    after_value();
    return true;
  }

  bool advance_literal() {
    static constexpr std::string_view words[] = {"true", "false", "null"};
    for (std::string_view w : words) {
      if (w.substr(0, literal_.size()) != literal_) continue;
      if (literal_.size() < w.size()) return true;
      if (w == "null") r_.null();
      else r_.boolean(w == "true");
      after_value();
      return true;
    }
    return false;
  }

  Reader& r_;
  std::size_t max_depth_;
  const char* begin_ = nullptr;  // the piece being read
  const char* after_ = nullptr;  // just past the last byte read (offset_after)
  st state_ = st::value;
  bool in_key_ = false;
  bool done_ = false;
  std::string stack_;
  std::string number_;
  std::string literal_;
  std::string held_;
  std::uint32_t hex_ = 0;
  int hex_digits_ = 0;
  std::uint32_t high_ = 0;
};

}  // namespace covenant::detail
