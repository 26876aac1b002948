// A picture of a till receipt, drawn from its lines: black text on white in a 5x7 bitmap font
// scaled 2x, encoded as an 8-bit grayscale PNG. The encoder is written out in full and stores the
// pixels uncompressed (deflate "stored" blocks), so the same lines always give the same bytes.
//
//     std::string png = receipts::receipt_png({"CORNER CAFE", "2025-06-14", ...});
//
// Letters are drawn upper case; a character the font lacks is left blank.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace receipts {

namespace png_detail {

// One glyph: seven rows of five pixels, top row in the highest byte, leftmost pixel in bit 4.
struct glyph {
  char c;
  std::uint64_t rows;
};

inline constexpr glyph font[] = {
    {'A', 0x0E11111F111111}, {'B', 0x1E11111E11111E}, {'C', 0x0E11101010110E}, {'D', 0x1C12111111121C},
    {'E', 0x1F10101E10101F}, {'F', 0x1F10101E101010}, {'G', 0x0E11101711110F}, {'H', 0x1111111F111111},
    {'I', 0x0E04040404040E}, {'J', 0x0702020202120C}, {'K', 0x11121418141211}, {'L', 0x1010101010101F},
    {'M', 0x111B1515111111}, {'N', 0x11111915131111}, {'O', 0x0E11111111110E}, {'P', 0x1E11111E101010},
    {'Q', 0x0E11111115120D}, {'R', 0x1E11111E141211}, {'S', 0x0F10100E01011E}, {'T', 0x1F040404040404},
    {'U', 0x1111111111110E}, {'V', 0x11111111110A04}, {'W', 0x1111111515150A}, {'X', 0x11110A040A1111},
    {'Y', 0x1111110A040404}, {'Z', 0x1F01020408101F}, {'0', 0x0E11131519110E},
    {'1', 0x040C040404040E}, {'2', 0x0E11010204081F}, {'3', 0x1F02040201110E}, {'4', 0x02060A121F0202},
    {'5', 0x1F101E0101110E}, {'6', 0x0608101E11110E}, {'7', 0x1F010204080808}, {'8', 0x0E11110E11110E},
    {'9', 0x0E11110F01020C}, {'.', 0x00000000000C0C}, {',', 0x000000000C0408}, {':', 0x000C0C000C0C00},
    {'-', 0x0000001F000000}, {'/', 0x00010204081000}, {' ', 0}};

inline std::uint64_t rows_of(char c) {
  const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const glyph& g : font)
    if (g.c == u) return g.rows;
  return 0;
}

inline void put_u32(std::string& out, std::uint32_t v) {  // big-endian, as PNG writes numbers
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xFF);
}

inline std::uint32_t crc32(std::string_view bytes) {
  std::uint32_t crc = 0xFFFFFFFF;
  for (const char ch : bytes) {
    crc ^= static_cast<unsigned char>(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline std::uint32_t adler32(std::string_view bytes) {
  std::uint32_t a = 1;
  std::uint32_t b = 0;
  for (const char ch : bytes) {
    a = (a + static_cast<unsigned char>(ch)) % 65521;
    b = (b + a) % 65521;
  }
  return (b << 16) | a;
}

// A chunk: length, type, data, and the CRC-32 of type and data.
inline void put_chunk(std::string& out, std::string_view type, std::string_view data) {
  put_u32(out, static_cast<std::uint32_t>(data.size()));
  const std::size_t start = out.size();
  out.append(type).append(data);
  put_u32(out, crc32(std::string_view(out).substr(start)));
}

// A zlib stream holding `raw` in uncompressed deflate blocks of at most 65535 bytes each.
inline std::string zlib_stored(std::string_view raw) {
  std::string out("\x78\x01", 2);  // deflate, 32 KB window, no preset dictionary
  std::size_t at = 0;
  do {
    const std::size_t n = std::min<std::size_t>(raw.size() - at, 65535);
    const bool last = at + n == raw.size();
    out += static_cast<char>(last ? 1 : 0);  // BFINAL, BTYPE 00 (stored)
    for (const std::size_t v : {n, n ^ 0xFFFF}) {  // LEN and its one's complement, little-endian
      out += static_cast<char>(v & 0xFF);
      out += static_cast<char>((v >> 8) & 0xFF);
    }
    out.append(raw.substr(at, n));
    at += n;
  } while (at < raw.size());
  put_u32(out, adler32(raw));
  return out;
}

}  // namespace png_detail

/// A PNG showing `lines`, one under the other, in black on white.
inline std::string receipt_png(const std::vector<std::string>& lines) {
  constexpr int scale = 2;              // each font pixel is a 2x2 square
  constexpr int cell_w = 6 * scale;     // glyph and one column of space
  constexpr int line_h = 10 * scale;    // glyph and three rows of space
  constexpr int margin = 4 * scale;
  std::size_t longest = 0;
  for (const auto& l : lines) longest = std::max(longest, l.size());
  const int width = 2 * margin + static_cast<int>(longest) * cell_w - scale;
  const int height = 2 * margin + static_cast<int>(lines.size()) * line_h - 3 * scale;

  // The pixels, row by row, each row after its filter byte (0: none); 255 is white.
  const std::size_t stride = static_cast<std::size_t>(width) + 1;
  std::string raw(stride * static_cast<std::size_t>(height), '\xFF');
  for (int y = 0; y < height; ++y) raw[static_cast<std::size_t>(y) * stride] = '\0';
  for (std::size_t li = 0; li < lines.size(); ++li) {
    for (std::size_t ci = 0; ci < lines[li].size(); ++ci) {
      const std::uint64_t rows = png_detail::rows_of(lines[li][ci]);
      for (int gy = 0; gy < 7; ++gy) {
        for (int gx = 0; gx < 5; ++gx) {
          const bool ink = (rows >> (8 * (6 - gy) + 4 - gx)) & 1;
          if (!ink) continue;
          const int x0 = margin + static_cast<int>(ci) * cell_w + gx * scale;
          const int y0 = margin + static_cast<int>(li) * line_h + gy * scale;
          for (int dy = 0; dy < scale; ++dy)
            for (int dx = 0; dx < scale; ++dx)
              raw[static_cast<std::size_t>(y0 + dy) * stride + 1 + static_cast<std::size_t>(x0 + dx)] = '\0';
        }
      }
    }
  }

  std::string header;
  png_detail::put_u32(header, static_cast<std::uint32_t>(width));
  png_detail::put_u32(header, static_cast<std::uint32_t>(height));
  header += std::string("\x08\x00\x00\x00\x00", 5);  // 8-bit, grayscale, deflate, no filtering, not interlaced

  std::string png("\x89PNG\r\n\x1A\n", 8);
  png_detail::put_chunk(png, "IHDR", header);
  png_detail::put_chunk(png, "IDAT", png_detail::zlib_stored(raw));
  png_detail::put_chunk(png, "IEND", {});
  return png;
}

}  // namespace receipts
