// Media inputs (src/types/media_codec.cpp): base64 against RFC 4648's vectors and OpenSSL's encoder
// (every length to 100, every byte value, unaligned input and output), appending to a string that
// has content, and SHA-256 against the FIPS 180-2 vectors.
#include <gtest/gtest.h>

#include <openssl/evp.h>

#include <cstddef>
#include <random>
#include <string>
#include <string_view>
#include <vector>

// A private header of the library (src/ is on the tests' include path, not on a user's).
#include "types/media_codec.hpp"

namespace {

using covenant::detail::append_base64;
using covenant::detail::base64_length;
using covenant::detail::sha256_hex;
using covenant::detail::write_base64;

std::string base64(std::string_view bytes) {
  std::string out;
  append_base64(out, bytes);
  return out;
}

// OpenSSL's encoding of the same bytes (EVP_EncodeBlock writes padded base64 and a NUL).
std::string openssl_base64(std::string_view bytes) {
  std::vector<unsigned char> buf(base64_length(bytes.size()) + 1);
  const int n = EVP_EncodeBlock(buf.data(), reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  return std::string(reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(n));
}

std::string random_bytes(std::size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(byte(rng));
  return s;
}

TEST(MediaCodec, Base64LengthIsPaddedToFourCharacters) {
  EXPECT_EQ(base64_length(0), 0u);
  EXPECT_EQ(base64_length(1), 4u);
  EXPECT_EQ(base64_length(2), 4u);
  EXPECT_EQ(base64_length(3), 4u);
  EXPECT_EQ(base64_length(4), 8u);
  EXPECT_EQ(base64_length(1048576), 1398104u);
  static_assert(base64_length(6) == 8);
}

TEST(MediaCodec, Base64Rfc4648Vectors) {
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foob"), "Zm9vYg==");
  EXPECT_EQ(base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
}

TEST(MediaCodec, Base64MatchesOpenSslForEveryLengthTo100) {
  std::mt19937 rng(20240611);
  for (std::size_t n = 0; n <= 100; ++n) {
    const std::string bytes = random_bytes(n, rng);
    EXPECT_EQ(base64(bytes), openssl_base64(bytes)) << "length " << n;
  }
}

TEST(MediaCodec, Base64MatchesOpenSslAtEveryInputOffset) {
  // The encoder reads 8 bytes at a time from any address: start the input at each offset of a
  // larger buffer, and end it at each length.
  std::mt19937 rng(7);
  const std::string buffer = random_bytes(200, rng);
  for (std::size_t offset = 0; offset < 16; ++offset) {
    for (std::size_t n = 0; n <= 100; n += 1) {
      const std::string_view bytes(buffer.data() + offset, n);
      ASSERT_EQ(base64(bytes), openssl_base64(bytes)) << "offset " << offset << ", length " << n;
    }
  }
}

TEST(MediaCodec, Base64OfEveryByteValue) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(base64(all), openssl_base64(all));
  // Each value alone and at each place of a 3-byte group and of the 2-byte tail.
  for (int b = 0; b < 256; ++b) {
    const char c = static_cast<char>(b);
    for (const std::string& bytes : {std::string{c}, std::string{c, 0}, std::string{0, c},
                                    std::string{c, 0, 0}, std::string{0, c, 0}, std::string{0, 0, c}}) {
      ASSERT_EQ(base64(bytes), openssl_base64(bytes)) << "byte " << b;
    }
  }
  EXPECT_EQ(base64("\xff\xff\xff"), "////");
  EXPECT_EQ(base64("\xfb\xef\xbe"), "++++");
  EXPECT_EQ(base64(std::string(3, '\0')), "AAAA");
}

TEST(MediaCodec, Base64OfALargeInputMatchesOpenSsl) {
  std::mt19937 rng(1);
  for (const std::size_t n : {std::size_t{1} << 20, (std::size_t{1} << 20) + 1, (std::size_t{1} << 20) + 2}) {
    const std::string bytes = random_bytes(n, rng);
    EXPECT_EQ(base64(bytes), openssl_base64(bytes)) << "length " << n;
  }
}

TEST(MediaCodec, AppendKeepsWhatTheStringHolds) {
  std::string out = "data:image/png;base64,";
  append_base64(out, "foobar");
  EXPECT_EQ(out, "data:image/png;base64,Zm9vYmFy");
  append_base64(out, "f");
  EXPECT_EQ(out, "data:image/png;base64,Zm9vYmFyZg==");
  append_base64(out, "");
  EXPECT_EQ(out, "data:image/png;base64,Zm9vYmFyZg==");

  // Past a capacity that the string already has (no new buffer) and past one it has not.
  std::mt19937 rng(3);
  const std::string bytes = random_bytes(1000, rng);
  std::string roomy = "x";
  roomy.reserve(10000);
  append_base64(roomy, bytes);
  EXPECT_EQ(roomy, "x" + openssl_base64(bytes));
  std::string tight = "y";
  tight.shrink_to_fit();
  append_base64(tight, bytes);
  EXPECT_EQ(tight, "y" + openssl_base64(bytes));
}

TEST(MediaCodec, AppendOfPartOfTheStringItself) {
  // The bytes may lie in the string: a resize that moves its buffer must not leave them behind.
  std::mt19937 rng(5);
  const std::string original = random_bytes(300, rng);
  std::string s = original;
  s.shrink_to_fit();
  append_base64(s, std::string_view(s).substr(10, 200));
  EXPECT_EQ(s, original + openssl_base64(std::string_view(original).substr(10, 200)));

  std::string whole = "foobar";
  append_base64(whole, whole);
  EXPECT_EQ(whole, "foobarZm9vYmFy");
}

TEST(MediaCodec, WriteAtUnalignedDestinations) {
  std::mt19937 rng(11);
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{5}, std::size_t{26},
                              std::size_t{47}, std::size_t{100}}) {
    const std::string bytes = random_bytes(n, rng);
    const std::string expected = openssl_base64(bytes);
    for (std::size_t offset = 0; offset < 16; ++offset) {
      // Guard bytes around the text: nothing before `offset` or past the end is written.
      std::string buffer(offset + base64_length(n) + 16, '#');
      char* const end = write_base64(buffer.data() + offset, bytes);
      ASSERT_EQ(end, buffer.data() + offset + base64_length(n)) << "length " << n << ", offset " << offset;
      EXPECT_EQ(buffer, std::string(offset, '#') + expected + std::string(16, '#'))
          << "length " << n << ", offset " << offset;
    }
  }
}

TEST(MediaCodec, Sha256Vectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
