// Decoding benchmarks on the same bytes as the Python/Node peers (../shared/bench).
#include <benchmark/benchmark.h>
#include <covenant/read/decode.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/types/schema_of.hpp>

#include <string>

#include "../examples/models/final_answer.hpp"
#include "sample.hpp"

namespace {

using bench::sample;

void decode_fresh(benchmark::State& state, const char* file) {
  const std::string text = sample(file);
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  for (auto _ : state) {
    auto r = covenant::try_decode<models::FinalAnswer>(text);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

void decode_reuse(benchmark::State& state, const char* file) {
  const std::string text = sample(file);
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  models::FinalAnswer out;
  for (auto _ : state) {
    auto issues = covenant::try_decode_into(text, out);
    benchmark::DoNotOptimize(issues);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

// valid_final_answer.json (440 B) -> FinalAnswer, validated, new object each time.
void BM_final_answer_440B(benchmark::State& state) { decode_fresh(state, "valid_final_answer.json"); }
BENCHMARK(BM_final_answer_440B)->Name("decode/final_answer_440B");

// Same, decoding into an existing object (strings and vectors keep their capacity).
void BM_final_answer_440B_reuse(benchmark::State& state) { decode_reuse(state, "valid_final_answer.json"); }
BENCHMARK(BM_final_answer_440B_reuse)->Name("decode/final_answer_440B_reuse");

// large_final_answer.json (50 KB).
void BM_final_answer_50KB(benchmark::State& state) { decode_fresh(state, "large_final_answer.json"); }
BENCHMARK(BM_final_answer_50KB)->Name("decode/final_answer_50KB");

void BM_final_answer_50KB_reuse(benchmark::State& state) { decode_reuse(state, "large_final_answer.json"); }
BENCHMARK(BM_final_answer_50KB_reuse)->Name("decode/final_answer_50KB_reuse");

// The same 50 KB read by the dynamic decoder against schema_of<FinalAnswer>() (a boost::json::value).
void BM_final_answer_50KB_dynamic(benchmark::State& state) {
  const std::string text = sample("large_final_answer.json");
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  const covenant::schema::model& m = covenant::schema_of<models::FinalAnswer>();
  for (auto _ : state) {
    auto r = covenant::try_decode_dynamic(text, m);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_final_answer_50KB_dynamic)->Name("decode/final_answer_50KB_dynamic");

// invalid_final_answer.json -> 3 issues -> feedback text for the model.
void BM_invalid_feedback(benchmark::State& state) {
  const std::string text = sample("invalid_final_answer.json");
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  for (auto _ : state) {
    auto r = covenant::try_decode<models::FinalAnswer>(text);
    std::string feedback = covenant::render_feedback(r.issues);
    benchmark::DoNotOptimize(feedback);
  }
}
BENCHMARK(BM_invalid_feedback)->Name("decode/invalid_final_answer_feedback");

// large_answer_overlimit.json (52 KB) -> 1 issue (answer longer than 10 000 characters).
void BM_overlimit(benchmark::State& state) { decode_fresh(state, "large_answer_overlimit.json"); }
BENCHMARK(BM_overlimit)->Name("decode/large_answer_overlimit");

}  // namespace
