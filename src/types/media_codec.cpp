// Media inputs for model APIs (media_codec.hpp): base64 through a table of the 4096 two-character
// pairs (12 input bits -> 2 characters), 6 bytes -> 8 characters per 64-bit load; SHA-256 through
// OpenSSL's EVP interface.
#include "media_codec.hpp"

#include <openssl/evp.h>

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>

namespace covenant::detail {

namespace {

static_assert(std::endian::native == std::endian::little || std::endian::native == std::endian::big,
              "base64: a mixed-endian target");
constexpr bool little_endian = std::endian::native == std::endian::little;

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// pairs[i]: the characters of the 12 bits i (high 6 bits first), as a 16-bit value whose bytes in
// memory are the two characters in order.
constexpr std::array<std::uint16_t, 4096> pairs = [] {
  std::array<std::uint16_t, 4096> t{};
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto first = static_cast<unsigned char>(alphabet[i >> 6]);
    const auto second = static_cast<unsigned char>(alphabet[i & 63]);
    t[i] = little_endian ? static_cast<std::uint16_t>(first | second << 8)
                         : static_cast<std::uint16_t>(first << 8 | second);
  }
  return t;
}();

// The 8 bytes at p as a big-endian number (the first byte in the top bits). Compilers make the
// swap one instruction.
inline std::uint64_t load_be64(const unsigned char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (little_endian) {
    v = (v >> 56) | ((v >> 40) & 0xff00u) | ((v >> 24) & 0xff0000u) | ((v >> 8) & 0xff000000u) |
        ((v & 0xff000000u) << 8) | ((v & 0xff0000u) << 24) | ((v & 0xff00u) << 40) | (v << 56);
  }
  return v;
}

inline void store2(char* dest, std::uint16_t pair) noexcept { std::memcpy(dest, &pair, sizeof pair); }

// Writes the 8 characters of the top 48 bits of w as four pairs, each stored as the table holds it
// (faster than assembling one 64-bit word of them first).
inline void write8(char* dest, std::uint64_t w) noexcept {
  store2(dest, pairs[w >> 52]);
  store2(dest + 2, pairs[(w >> 40) & 0xfff]);
  store2(dest + 4, pairs[(w >> 28) & 0xfff]);
  store2(dest + 6, pairs[(w >> 16) & 0xfff]);
}

}  // namespace

char* write_base64(char* dest, std::string_view bytes) noexcept {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  std::size_t left = bytes.size();
  // 24 bytes -> 32 characters per round; each 64-bit load reads 2 bytes past its 6, so a round
  // needs 26 bytes.
  while (left >= 26) {
    write8(dest, load_be64(p));
    write8(dest + 8, load_be64(p + 6));
    write8(dest + 16, load_be64(p + 12));
    write8(dest + 24, load_be64(p + 18));
    p += 24;
    dest += 32;
    left -= 24;
  }
  while (left >= 8) {
    write8(dest, load_be64(p));
    p += 6;
    dest += 8;
    left -= 6;
  }
  // The last 0 to 7 bytes: whole groups of 3, then 1 or 2 with padding.
  while (left >= 3) {
    const unsigned v = unsigned{p[0]} << 16 | unsigned{p[1]} << 8 | p[2];
    store2(dest, pairs[v >> 12]);
    store2(dest + 2, pairs[v & 0xfff]);
    p += 3;
    dest += 4;
    left -= 3;
  }
  if (left == 2) {
    const unsigned v = unsigned{p[0]} << 8 | p[1];  // 16 bits: 6, 6, 4 (+ 2 zero bits)
    store2(dest, pairs[v >> 4]);
    dest[2] = alphabet[(v & 0xf) << 2];
    dest[3] = '=';
    dest += 4;
  } else if (left == 1) {
    dest[0] = alphabet[p[0] >> 2];
    dest[1] = alphabet[(p[0] & 0x3) << 4];
    dest[2] = '=';
    dest[3] = '=';
    dest += 4;
  }
  return dest;
}

void append_base64(std::string& out, std::string_view bytes) {
  const std::size_t old = out.size();
  // `bytes` may lie in `out`: found again after the resize, which may move the buffer.
  const std::less<const char*> before;
  const bool inside = !bytes.empty() && !before(bytes.data(), out.data()) && before(bytes.data(), out.data() + old);
  const auto offset = inside ? static_cast<std::size_t>(bytes.data() - out.data()) : 0;
  out.resize(old + base64_length(bytes.size()));
  if (inside) bytes = std::string_view(out.data() + offset, bytes.size());
  write_base64(out.data() + old, bytes);
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("sha256_hex: EVP_Digest failed");
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out(std::size_t{length} * 2, '\0');
  for (unsigned int i = 0; i < length; ++i) {
    out[2 * i] = hex[digest[i] >> 4];
    out[2 * i + 1] = hex[digest[i] & 0xf];
  }
  return out;
}

}  // namespace covenant::detail
