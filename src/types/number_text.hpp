// Internal: numbers as text. A double written as the shortest text that reads back as the same
// value (1, 0.5, 1e+100), as issues, prompts and schema reports show numbers; and where a number
// written in JSON's grammar ends, for the schema-file and expression lexers.
#pragma once

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>

namespace covenant::detail {

inline std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, static_cast<std::size_t>(r.ptr - buf));
}

/// Where the number whose digits start at `i` in `s` ends (a sign goes before `i`): its digits,
/// then a fraction (".5") and an exponent ("e-3") where they are complete. `integral` is set to
/// false when it has either.
inline std::size_t number_end(std::string_view s, std::size_t i, bool& integral) noexcept {
  auto digit = [&](std::size_t k) { return k < s.size() && s[k] >= '0' && s[k] <= '9'; };
  integral = true;
  while (digit(i)) ++i;
  if (i < s.size() && s[i] == '.' && digit(i + 1)) {
    integral = false;
    ++i;
    while (digit(i)) ++i;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    std::size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    if (digit(j)) {
      integral = false;
      i = j;
      while (digit(i)) ++i;
    }
  }
  return i;
}

}  // namespace covenant::detail
