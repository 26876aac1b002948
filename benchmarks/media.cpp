// Base64 of a 1 MiB media input (src/types/media_codec.cpp) against the encoders of OpenSSL
// (EVP_EncodeBlock), nettle (base64_encode_raw, when the build found it) and Boost.Beast
// (detail::base64::encode), on the same pseudo-random bytes; each checks its text against
// OpenSSL's once before it is timed.
#include <benchmark/benchmark.h>
#include <boost/beast/core/detail/base64.hpp>
#include <openssl/evp.h>
#ifdef COVENANT_HAVE_NETTLE
#include <nettle/base64.h>
#endif

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "types/media_codec.hpp"

namespace {

constexpr std::size_t input_size = std::size_t{1} << 20;

// 1 MiB of bytes from a fixed-seed xorshift64 generator: the same input in every run.
const std::string& input() {
  static const std::string bytes = [] {
    std::string s(input_size, '\0');
    std::uint64_t x = 0x9e3779b97f4a7c15u;
    for (auto& c : s) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      c = static_cast<char>(x >> 56);
    }
    return s;
  }();
  return bytes;
}

const unsigned char* input_bytes() { return reinterpret_cast<const unsigned char*>(input().data()); }

// OpenSSL's text of the input, the reference every encoder is checked against.
const std::string& expected() {
  static const std::string text = [] {
    std::string s(covenant::detail::base64_length(input_size) + 1, '\0');  // + EVP_EncodeBlock's NUL
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(s.data()), input_bytes(), static_cast<int>(input_size));
    s.resize(static_cast<std::size_t>(n));
    return s;
  }();
  return text;
}

// Checks one encoding before the timing; false (and the benchmark skipped) when it differs.
bool check(benchmark::State& state, std::string_view text) {
  if (text == expected()) return true;
  state.SkipWithError("the text differs from OpenSSL's");
  return false;
}

void BM_base64_covenant(benchmark::State& state) {
  std::string out;
  covenant::detail::append_base64(out, input());
  if (!check(state, out)) return;
  for (auto _ : state) {
    out.clear();  // the capacity stays: no allocation in the loop
    covenant::detail::append_base64(out, input());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(input_size));
}

void BM_base64_openssl(benchmark::State& state) {
  std::string out(covenant::detail::base64_length(input_size) + 1, '\0');
  auto* dest = reinterpret_cast<unsigned char*>(out.data());
  const int n = EVP_EncodeBlock(dest, input_bytes(), static_cast<int>(input_size));
  if (!check(state, std::string_view(out.data(), static_cast<std::size_t>(n)))) return;
  for (auto _ : state) {
    benchmark::DoNotOptimize(EVP_EncodeBlock(dest, input_bytes(), static_cast<int>(input_size)));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(input_size));
}

#ifdef COVENANT_HAVE_NETTLE
void BM_base64_nettle(benchmark::State& state) {
  std::string out(BASE64_ENCODE_RAW_LENGTH(input_size), '\0');
  base64_encode_raw(out.data(), input_size, input_bytes());
  if (!check(state, out)) return;
  for (auto _ : state) {
    base64_encode_raw(out.data(), input_size, input_bytes());
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(input_size));
}
#endif

void BM_base64_beast(benchmark::State& state) {
  namespace base64 = boost::beast::detail::base64;
  std::string out(base64::encoded_size(input_size), '\0');
  const std::size_t n = base64::encode(out.data(), input().data(), input_size);
  if (!check(state, std::string_view(out.data(), n))) return;
  for (auto _ : state) {
    benchmark::DoNotOptimize(base64::encode(out.data(), input().data(), input_size));
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(input_size));
}

}  // namespace

BENCHMARK(BM_base64_covenant)->Name("media/base64_1MB_covenant");
BENCHMARK(BM_base64_openssl)->Name("media/base64_1MB_openssl");
#ifdef COVENANT_HAVE_NETTLE
BENCHMARK(BM_base64_nettle)->Name("media/base64_1MB_nettle");
#endif
BENCHMARK(BM_base64_beast)->Name("media/base64_1MB_beast");
