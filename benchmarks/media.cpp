// Base64 of a 1 MiB media input (src/types/media_codec.cpp) against the encoders of OpenSSL
// (EVP_EncodeBlock), nettle (base64_encode_raw, when the build found it) and Boost.Beast
// (detail::base64::encode), on the same pseudo-random bytes; each checks its text against
// OpenSSL's once before it is timed. Then the request body of a call whose input holds a 1 MiB
// image (media/request_body_1MB_image: OpenAI Chat Completions, as the HTTP engine writes it;
// _anthropic: the Messages API's), whose time the base64 figures above are the floor of.
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

#include "covenant/contract/contract.hpp"
#include "covenant/engine/http_engine.hpp"
#include "engine/wire_dialect.hpp"
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

// Outside the unnamed namespace: reflection gives it a variable of external linkage.
namespace media_bench {
struct Scan {
  covenant::image photo;
  std::string note;
};
}  // namespace media_bench

namespace {

using media_bench::Scan;

// The request a contract sends for a 1 MiB PNG: its system prompt and the input message with the
// image as a part, rendered as a call renders it.
std::string png_bytes() {
  std::string png = "\x89PNG\r\n\x1a\n";
  png += input().substr(png.size());
  return png;
}

covenant::chat_request image_request() {
  std::string png = png_bytes();
  const Scan scan{covenant::image::bytes(std::move(png)), "the lunch receipt"};
  covenant::chat_request r;
  r.messages.push_back({covenant::role::system, std::string(900, 's')});
  covenant::detail::render_input_message(r.messages.emplace_back(), scan);
  r.schema_name = "Receipt";
  r.mode = covenant::output_mode::prompt;
  return r;
}

void request_body(benchmark::State& state, std::unique_ptr<covenant::detail::wire_dialect> dialect) {
  const covenant::chat_request request = image_request();
  covenant::http_engine_options o;
  o.model = "gpt-4o";
  const std::string first = dialect->body_text(request, covenant::output_mode::prompt, o);
  const std::string png = png_bytes();
  std::string b64(covenant::detail::base64_length(png.size()) + 1, '\0');
  b64.resize(static_cast<std::size_t>(EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()),
                                                      reinterpret_cast<const unsigned char*>(png.data()),
                                                      static_cast<int>(png.size()))));
  if (first.find(b64) == std::string::npos) {
    state.SkipWithError("the body does not hold the image's base64");
    return;
  }
  for (auto _ : state) {
    std::string body = dialect->body_text(request, covenant::output_mode::prompt, o);
    benchmark::DoNotOptimize(body.data());
    benchmark::ClobberMemory();
  }
  state.counters["body_bytes"] = static_cast<double>(first.size());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(input_size));
}

void BM_request_body_openai(benchmark::State& state) { request_body(state, covenant::detail::openai_dialect()); }
void BM_request_body_anthropic(benchmark::State& state) { request_body(state, covenant::detail::anthropic_dialect()); }

}  // namespace

BENCHMARK(BM_request_body_openai)->Name("media/request_body_1MB_image");
BENCHMARK(BM_request_body_anthropic)->Name("media/request_body_1MB_image_anthropic");
BENCHMARK(BM_base64_covenant)->Name("media/base64_1MB_covenant");
BENCHMARK(BM_base64_openssl)->Name("media/base64_1MB_openssl");
#ifdef COVENANT_HAVE_NETTLE
BENCHMARK(BM_base64_nettle)->Name("media/base64_1MB_nettle");
#endif
BENCHMARK(BM_base64_beast)->Name("media/base64_1MB_beast");
