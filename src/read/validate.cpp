#include "covenant/read/validate.hpp"

#include "lenient_text.hpp"

#include <cstdint>
#include <cstring>

namespace covenant::detail {

bool valid_utf8(std::string_view s) noexcept {
  const auto* u = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    if (n - i >= 8) {  // ASCII fast path, 8 bytes at a time
      std::uint64_t w;
      std::memcpy(&w, u + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    if (u[i] < 0x80) {
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence(s.data() + i, s.data() + n);  // the one rule (utf8.hpp)
    if (len == 0) return false;
    i += len;
  }
  return true;
}

namespace {

// Length of the valid UTF-8 character at text[i] (1 for ASCII), or 0.
std::size_t character_at(std::string_view text, std::size_t i) noexcept {
  if (static_cast<unsigned char>(text[i]) < 0x80) return 1;
  return utf8_sequence(text.data() + i, text.data() + text.size());
}

}  // namespace

std::string repair_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = character_at(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string printable_text(std::string_view text) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = character_at(text, i);
    const auto c = static_cast<unsigned char>(text[i]);
    if (n == 0 || c < 0x20 || c == 0x7F) {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 0xF]);
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace covenant::detail
