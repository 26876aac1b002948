#include "covenant/detail/coerce.hpp"

#include <charconv>
#include <cmath>
#include <string>

namespace covenant::detail {

namespace {

std::string_view trim(std::string_view s) noexcept {
  const char* ws = " \t\r\n";
  const std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const std::size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool digit(char c) noexcept { return c >= '0' && c <= '9'; }

// A plain decimal number (optional sign, digits with optional thousands separators, optional
// fraction, optional exponent), the whole of `s`.
bool plain_number(std::string_view s, double& out) noexcept {
  if (s.empty()) return false;
  char buf[64];
  std::size_t n = 0;
  std::size_t i = 0;
  if (s[i] == '-' || s[i] == '+') {
    if (s[i] == '-') buf[n++] = '-';
    ++i;
  }
  // integer part, with commas only in groups of three
  const std::size_t int_start = i;
  std::size_t group = 0;
  bool commas = false;
  while (i < s.size() && (digit(s[i]) || s[i] == ',')) {
    if (s[i] == ',') {
      if (i == int_start || (commas && group != 3) || (!commas && group > 3)) return false;
      commas = true;
      group = 0;
    } else {
      if (n >= sizeof buf - 1) return false;
      buf[n++] = s[i];
      ++group;
    }
    ++i;
  }
  if (commas && group != 3) return false;
  const bool int_digits = i > int_start;
  if (i < s.size() && s[i] == '.') {
    buf[n++] = '.';
    ++i;
    const std::size_t f = i;
    while (i < s.size() && digit(s[i]) && n < sizeof buf - 1) buf[n++] = s[i++];
    if (i == f && !int_digits) return false;
  } else if (!int_digits) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    buf[n++] = 'e';
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) buf[n++] = s[i++];
    const std::size_t e = i;
    while (i < s.size() && digit(s[i]) && n < sizeof buf - 1) buf[n++] = s[i++];
    if (i == e) return false;
  }
  if (i != s.size()) return false;
  const auto r = std::from_chars(buf, buf + n, out);
  return r.ec == std::errc() && r.ptr == buf + n && std::isfinite(out);
}

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool separator(char c) noexcept { return c == '_' || c == '-' || c == ' '; }

// Lower case without separators.
std::string folded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    if (!separator(c)) out.push_back(lower(c));
  return out;
}

bool word_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || digit(c) || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}

// Whether `name` occurs in `text` as a whole word, ignoring letter case.
bool contains_word(std::string_view text, std::string_view name) noexcept {
  if (name.empty() || name.size() > text.size()) return false;
  for (std::size_t i = 0; i + name.size() <= text.size(); ++i) {
    bool same = true;
    for (std::size_t k = 0; k < name.size() && same; ++k) same = lower(text[i + k]) == lower(name[k]);
    if (!same) continue;
    const bool left = i == 0 || !word_char(text[i - 1]);
    const bool right = i + name.size() == text.size() || !word_char(text[i + name.size()]);
    if (left && right) return true;
  }
  return false;
}

}  // namespace

bool number_from_text(std::string_view text, bool percent_is_fraction, double& out) noexcept {
  std::string_view s = trim(text);
  if (s.empty()) return false;
  if (s.back() == '%') {
    if (!percent_is_fraction) return false;
    double v = 0;
    if (!plain_number(trim(s.substr(0, s.size() - 1)), v)) return false;
    out = v / 100.0;
    return true;
  }
  if (const std::size_t slash = s.find('/'); slash != std::string_view::npos) {
    double num = 0;
    double den = 0;
    if (!plain_number(trim(s.substr(0, slash)), num) || !plain_number(trim(s.substr(slash + 1)), den) || den == 0)
      return false;
    out = num / den;
    return true;
  }
  return plain_number(s, out);
}

bool bool_from_text(std::string_view text, bool& out) noexcept {
  const std::string_view s = trim(text);
  auto is = [&](std::string_view word) {
    if (s.size() != word.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (lower(s[i]) != word[i]) return false;
    return true;
  };
  if (is("true")) {
    out = true;
    return true;
  }
  if (is("false")) {
    out = false;
    return true;
  }
  return false;
}

std::size_t match_enum_value(const schema::enum_def& e, std::string_view text, std::string& how) {
  const auto& values = e.values;
  auto each_name = [&](auto&& fn) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (values[i].skip) continue;
      if (fn(i, values[i].name)) return i;
      for (const auto& a : values[i].aliases)
        if (fn(i, a)) return i;
    }
    return no_match;
  };
  // exact
  if (std::size_t i = each_name([&](std::size_t, const std::string& n) { return n == text; }); i != no_match) {
    how = "exact";
    return i;
  }
  // letter case, separators, surrounding punctuation
  std::string_view core = trim(text);
  while (!core.empty() && !word_char(core.front())) core.remove_prefix(1);
  while (!core.empty() && !word_char(core.back())) core.remove_suffix(1);
  const std::string key = folded(core);
  if (!key.empty()) {
    std::size_t found = no_match;
    bool ambiguous = false;
    each_name([&](std::size_t i, const std::string& n) {
      if (folded(n) == key) {
        if (found != no_match && found != i) ambiguous = true;
        found = i;
      }
      return false;
    });
    if (found != no_match && !ambiguous) {
      how = "ignoring case and punctuation";
      return found;
    }
  }
  // the only value named as a whole word in a longer text
  std::size_t found = no_match;
  bool ambiguous = false;
  each_name([&](std::size_t i, const std::string& n) {
    if (contains_word(text, n)) {
      if (found != no_match && found != i) ambiguous = true;
      found = i;
    }
    return false;
  });
  if (found != no_match && !ambiguous) {
    how = "named in the text";
    return found;
  }
  return no_match;
}

std::size_t match_field_key(const schema::object_def& o, std::string_view key) {
  const std::string k = folded(key);
  if (k.empty()) return no_match;
  std::size_t found = no_match;
  for (std::size_t i = 0; i < o.fields.size(); ++i) {
    if (o.fields[i].skip) continue;
    if (folded(o.fields[i].key) == k || folded(o.fields[i].name) == k) {
      if (found != no_match) return no_match;  // ambiguous
      found = i;
    }
  }
  return found;
}

}  // namespace covenant::detail
