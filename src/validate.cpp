#include "covenant/validate.hpp"

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
    const unsigned char c = u[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3;
    else if (c >= 0xF0 && c <= 0xF4) len = 4;
    else return false;
    if (i + len > n) return false;
    for (std::size_t k = 1; k < len; ++k)
      if ((u[i + k] & 0xC0) != 0x80) return false;
    if (c == 0xE0 && u[i + 1] < 0xA0) return false;
    if (c == 0xED && u[i + 1] > 0x9F) return false;
    if (c == 0xF0 && u[i + 1] < 0x90) return false;
    if (c == 0xF4 && u[i + 1] > 0x8F) return false;
    i += len;
  }
  return true;
}

}  // namespace covenant::detail
