// A response cache hit: the 440-byte sample answered from the SQLite cache, from the request to
// the decoded value (covenant/engine/response_cache.hpp). Compare with
// contract/final_answer_zero_latency, the same call answered instantly by an engine in memory.
#include <benchmark/benchmark.h>
#include <covenant/contract/contract.hpp>
#include <covenant/engine/logging.hpp>
#include <covenant/engine/response_cache.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "../examples/models/final_answer.hpp"
#include "answer_question.hpp"
#include "instant_engine.hpp"
#include "sample.hpp"

namespace cache_bench {

using bench::AnswerQuestion;
using bench::Question;

void BM_cache_hit(benchmark::State& state) {
  const std::string reply = bench::sample("valid_final_answer.json");
  if (reply.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  covenant::set_log_level(covenant::log_level::warn);
  const auto dir = std::filesystem::temp_directory_path() / ("covenant_bench_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  bench::instant_engine server(reply);
  {
    covenant::cached_engine model({.path = dir / "responses.sqlite", .scope = "bench"}, server);
    const covenant::contract<AnswerQuestion> c{model};
    const Question q{"How tall is the Eiffel Tower?"};
    if (!c.run(q).outcome.success) state.SkipWithError("contract failed");  // stores the reply
    for (auto _ : state) {
      auto r = c.run(q);
      if (!r.outcome.success || !r.outcome.attempts.front().from_cache) state.SkipWithError("not a cache hit");
      benchmark::DoNotOptimize(r);
    }
    const auto total = c.stats().of(covenant::perf_stage::total);
    state.counters["p50_us"] = std::chrono::duration<double, std::micro>(total.p50).count();
    state.counters["p99_us"] = std::chrono::duration<double, std::micro>(total.p99).count();
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_cache_hit)->Name("cache/hit_440B");

}  // namespace cache_bench
