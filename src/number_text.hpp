// Internal: a double as the shortest text that reads back as the same value (1, 0.5, 1e+100), as
// issues, prompts and schema reports show numbers.
#pragma once

#include <charconv>
#include <cstddef>
#include <string>

namespace covenant::detail {

inline std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, static_cast<std::size_t>(r.ptr - buf));
}

}  // namespace covenant::detail
