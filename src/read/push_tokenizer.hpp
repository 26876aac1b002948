// The resumable JSON tokenizer of the stream readers (src/read/stream_reader.cpp): private to the
// library.
#pragma once

#include <boost/json/value.hpp>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "covenant/read/detail/json_lexer.hpp"

namespace covenant::detail {

/// A resumable JSON tokenizer: fed pieces of a text that may end anywhere (inside a string, an
/// escape, a number, a literal or a UTF-8 character), it calls the reader back for each token:
/// begin_container(object?), end_container(), key_part(text) + key_done(), string_part(text,
/// last), number(value) (with the number's text in `number_text`), boolean(b), null(). String
/// text is passed through in runs found 16 bytes at a time; escapes are decoded; a UTF-8
/// character cut by the end of a piece is held back until it is whole. Trailing commas are
/// accepted. Hand-written: Boost.JSON's basic_parser reads a string byte by byte once it has
/// seen an escape, which made streamed text about five times slower to follow.
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
    done_ = false;
  }

  [[nodiscard]] bool done() const noexcept { return done_; }

  /// Reads the next piece; false when the text is not JSON (nothing more is read).
  bool feed(std::string_view piece) {
    const char* p = piece.data();
    const char* const e = p + piece.size();
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
          if (!structural(*p)) return error();
          ++p;
          break;
        }
        case st::string:
        case st::key: p = string_run(p, e); break;
        case st::escape:
          if (!escape(*p)) return error();
          ++p;
          break;
        case st::unicode:
          if (!hex_digit(*p)) return error();
          ++p;
          break;
        case st::number: {
          const char* q = p;
          while (q < e && number_char(*q)) ++q;
          number_.append(p, q);
          p = q;
          if (q < e && !end_number()) return error();
          break;
        }
        case st::literal: {
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
      case '"': state_ = st::string; return true;
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

  // Text of a string or key up to its end, an escape, or the end of the piece.
  const char* string_run(const char* p, const char* e) {
    if (!held_.empty()) {  // finish the UTF-8 character the previous piece cut
      while (p < e && held_.size() < utf8_length(held_[0]) && (static_cast<unsigned char>(*p) & 0xC0u) == 0x80u)
        held_.push_back(*p++);
      if (held_.size() < utf8_length(held_[0]) && p == e) return p;
      emit(held_);
      held_.clear();
    }
    const char* q = find_special(p, e);
    if (q == e) {
      // Hold back a UTF-8 character cut by the end of the piece.
      const char* keep = cut_utf8(p, e);
      if (keep > p) emit(std::string_view(p, static_cast<std::size_t>(keep - p)));
      held_.assign(keep, e);
      return e;
    }
    if (q > p) emit(std::string_view(p, static_cast<std::size_t>(q - p)));
    if (*q == '"') {
      end_string();
      return q + 1;
    }
    if (*q == '\\') {
      state_ = state_ == st::key ? st::key : st::string;
      in_key_ = state_ == st::key;
      state_ = st::escape;
      return q + 1;
    }
    error();  // a raw control character
    return e;
  }

  static std::size_t utf8_length(char lead) {
    const auto c = static_cast<unsigned char>(lead);
    return c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  }

  // Where a UTF-8 character cut by `e` begins (e when none is cut).
  static const char* cut_utf8(const char* p, const char* e) {
    const char* q = e;
    for (int back = 0; back < 3 && q > p; ++back) {
      --q;
      const auto c = static_cast<unsigned char>(*q);
      if ((c & 0xC0u) == 0x80u) continue;
      if (c >= 0xC0 && static_cast<std::size_t>(e - q) < utf8_length(*q)) return q;
      return e;
    }
    return e;
  }

  static const char* find_special(const char* p, const char* e) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i control = _mm_set1_epi8(0x1F);
    while (e - p >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                     _mm_cmpeq_epi8(_mm_min_epu8(v, control), v));
      const int bits = _mm_movemask_epi8(m);
      if (bits != 0) return p + __builtin_ctz(static_cast<unsigned>(bits));
      p += 16;
    }
#endif
    for (; p < e; ++p) {
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"' || c == '\\' || c < 0x20) return p;
    }
    return e;
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
      high_ = cp;
      state_ = in_key_ ? st::key : st::string;
      return true;
    }
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
      if (high_ == 0) cp = 0xFFFD;
      else cp = 0x10000 + ((high_ - 0xD800) << 10) + (cp - 0xDC00);
    } else if (high_ != 0) {
      emit_code_point(0xFFFD);  // a lone high surrogate
    }
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
    const char* b = number_.data();
    const char* e = b + number_.size();
    const bool integral = number_.find_first_of(".eE") == std::string::npos;
    r_.number_text = number_;
    if (integral) {
      std::int64_t i = 0;
      if (auto [q, ec] = std::from_chars(b, e, i); ec == std::errc() && q == e) {
        r_.number(boost::json::value(i));
        after_value();
        return true;
      }
      std::uint64_t u = 0;
      if (auto [q, ec] = std::from_chars(b, e, u); ec == std::errc() && q == e) {
        r_.number(boost::json::value(u));
        after_value();
        return true;
      }
    }
    double d = 0;
    auto [q, ec] = std::from_chars(b, e, d);
    if (q != e || (ec != std::errc() && ec != std::errc::result_out_of_range)) return false;
    r_.number(boost::json::value(d));
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
