// Lenient reading benchmarks on the malformed samples of ../shared/bench/python/samples/malformed
// (BAML's parser: 50-80 us on such inputs; jsonrepair 10-17 us without validation).
//
//   lenient/<name>                 best candidate (max_candidates = 1) + strict decode into
//                                  FinalAnswer with every constraint checked; storage reused
//                                  (extract_into, try_decode_into) as a server reading many replies
//   lenient/<name>/all_candidates  every candidate (default options, fresh vectors), then decode
//                                  of the first that decodes (fresh FinalAnswer)
//   lenient/valid_fast_path        valid JSON: looks_like_strict_json + strict try_decode_into (no
//                                  lenient work at all)
#include <benchmark/benchmark.h>
#include <covenant/read/decode.hpp>
#include <covenant/read/lenient.hpp>

#include <string>

#include "../examples/models/final_answer.hpp"
#include "sample.hpp"

namespace {

using bench::sample;

void best_candidate(benchmark::State& state, const char* file) {
  const std::string text = sample(std::string("malformed/") + file);
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples/malformed)");
    return;
  }
  covenant::lenient_options options;
  options.max_candidates = 1;
  covenant::extraction x;
  models::FinalAnswer out;
  for (auto _ : state) {
    covenant::extract_into(text, options, x);
    auto issues = covenant::try_decode_into(x.candidates.front().json, out);
    if (!issues.empty()) {
      state.SkipWithError("best candidate does not decode");
      return;
    }
    benchmark::DoNotOptimize(issues);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

void all_candidates(benchmark::State& state, const char* file) {
  const std::string text = sample(std::string("malformed/") + file);
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples/malformed)");
    return;
  }
  for (auto _ : state) {
    const auto candidates = covenant::extract_candidates(text);
    bool ok = false;
    for (const auto& c : candidates) {
      auto r = covenant::try_decode<models::FinalAnswer>(c.json);
      if (r) {
        benchmark::DoNotOptimize(r);
        ok = true;
        break;
      }
    }
    if (!ok) {
      state.SkipWithError("no candidate decodes");
      return;
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

#define COVENANT_LENIENT_BENCH(name)                                                             \
  void BM_##name(benchmark::State& state) { best_candidate(state, #name ".txt"); }             \
  BENCHMARK(BM_##name)->Name("lenient/" #name);                                                \
  void BM_##name##_all(benchmark::State& state) { all_candidates(state, #name ".txt"); }       \
  BENCHMARK(BM_##name##_all)->Name("lenient/" #name "/all_candidates");

COVENANT_LENIENT_BENCH(fenced)
COVENANT_LENIENT_BENCH(fenced_bare)
COVENANT_LENIENT_BENCH(trailing_commas)
COVENANT_LENIENT_BENCH(single_quotes)
COVENANT_LENIENT_BENCH(truncated)
COVENANT_LENIENT_BENCH(unquoted_keys)

void BM_valid_fast_path(benchmark::State& state) {
  const std::string text = sample("valid_final_answer.json");
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  models::FinalAnswer out;
  for (auto _ : state) {
    if (!covenant::looks_like_strict_json(text)) {
      state.SkipWithError("valid JSON not recognised");
      return;
    }
    auto issues = covenant::try_decode_into(text, out);
    benchmark::DoNotOptimize(issues);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_valid_fast_path)->Name("lenient/valid_fast_path");

}  // namespace
