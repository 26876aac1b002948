// Partial results of a streamed reply: the 50 KB sample delivered in 1000 pieces, every partial
// computed (each piece fed, then the partial value read), against decoding the whole text once.
#include <benchmark/benchmark.h>
#include <covenant/read/decode.hpp>
#include <covenant/read/detail/stream_reader.hpp>
#include <covenant/types/schema_of.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "../examples/models/final_answer.hpp"
#include "sample.hpp"

namespace stream_bench {

using bench::sample;

std::vector<std::string_view> pieces_of(const std::string& text, std::size_t count) {
  std::vector<std::string_view> out;
  const std::size_t size = (text.size() + count - 1) / count;
  for (std::size_t at = 0; at < text.size(); at += size) out.push_back(std::string_view(text).substr(at, size));
  return out;
}

void BM_partials_typed(benchmark::State& state) {
  const std::string text = sample("large_final_answer.json");
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  const auto pieces = pieces_of(text, 1000);
  covenant::detail::stream_reader<models::FinalAnswer> reader({}, covenant::strictness::coerce);
  std::size_t shown = 0;
  for (auto _ : state) {
    reader.reset();
    for (std::string_view p : pieces) {
      if (reader.feed(p)) shown += reader.view().value().answer.size() > 0 ? 1 : 0;  // read the partial
      benchmark::DoNotOptimize(reader.view().value());
    }
    if (!reader.violations().empty()) state.SkipWithError("unexpected violation");
  }
  state.counters["pieces"] = static_cast<double>(pieces.size());
  state.counters["partials_shown"] = static_cast<double>(shown) / static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_partials_typed)->Name("stream/partials_50KB_1000_chunks");

void BM_partials_dynamic(benchmark::State& state) {
  const std::string text = sample("large_final_answer.json");
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  const auto pieces = pieces_of(text, 1000);
  covenant::detail::dynamic_stream_reader reader(covenant::schema_of<models::FinalAnswer>(), {},
                                                 covenant::strictness::coerce);
  for (auto _ : state) {
    reader.reset();
    for (std::string_view p : pieces) {
      reader.feed(p);
      benchmark::DoNotOptimize(reader.view().value());
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_partials_dynamic)->Name("stream/partials_50KB_1000_chunks_dynamic");

// The reference in the same binary: the whole text decoded once.
void BM_decode_whole(benchmark::State& state) {
  const std::string text = sample("large_final_answer.json");
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  for (auto _ : state) {
    auto r = covenant::try_decode<models::FinalAnswer>(text);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_decode_whole)->Name("stream/reference_decode_50KB_once");

}  // namespace stream_bench
