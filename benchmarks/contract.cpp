// A full contract call whose engine answers instantly: the contract's own overhead.
#include <benchmark/benchmark.h>
#include <covenant/telemetry/audit_log.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/read/decode.hpp>
#include <covenant/engine/logging.hpp>
#include <covenant/telemetry/metrics.hpp>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "../examples/models/final_answer.hpp"
#include "answer_question.hpp"
#include "instant_engine.hpp"
#include "sample.hpp"

namespace contract_bench {

using bench::AnswerQuestion;
using bench::instant_engine;
using bench::Question;
using bench::sample;

void BM_contract_zero_latency(benchmark::State& state) {
  const std::string reply = sample("valid_final_answer.json");
  if (reply.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  covenant::set_log_level(covenant::log_level::warn);
  instant_engine model(reply);
  const covenant::contract<AnswerQuestion> c{model};
  const Question q{"How tall is the Eiffel Tower?"};
  for (auto _ : state) {
    auto r = c.run(q);
    if (!r.outcome.success) state.SkipWithError("contract failed");
    benchmark::DoNotOptimize(r);
  }
  const auto total = c.stats().of(covenant::perf_stage::total);
  state.counters["p50_us"] = std::chrono::duration<double, std::micro>(total.p50).count();
  state.counters["p99_us"] = std::chrono::duration<double, std::micro>(total.p99).count();
}
BENCHMARK(BM_contract_zero_latency)->Name("contract/final_answer_zero_latency");

// The same with telemetry on: Prometheus metrics and the audit log (one line per attempt written
// to a file in a temporary directory).
void run_with_telemetry(benchmark::State& state, bool with_metrics, bool with_audit,
                        std::chrono::milliseconds audit_flush_interval = std::chrono::milliseconds(1000)) {
  const std::string reply = sample("valid_final_answer.json");
  if (reply.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  covenant::set_log_level(covenant::log_level::warn);
  const auto dir = std::filesystem::temp_directory_path() / ("covenant_bench_audit_" + std::to_string(::getpid()));
  instant_engine model(reply);
  covenant::contract_options o;
  if (with_metrics) o.observers.push_back(std::make_shared<covenant::metrics>());
  if (with_audit)
    o.observers.push_back(std::make_shared<covenant::audit_log>(
        covenant::audit_log_options{.directory = dir, .flush_interval = audit_flush_interval}));
  {
    const covenant::contract<AnswerQuestion> c{model, o};
    const Question q{"How tall is the Eiffel Tower?"};
    for (auto _ : state) {
      auto r = c.run(q);
      if (!r.outcome.success) state.SkipWithError("contract failed");
      benchmark::DoNotOptimize(r);
    }
    const auto total = c.stats().of(covenant::perf_stage::total);
    state.counters["p50_us"] = std::chrono::duration<double, std::micro>(total.p50).count();
    state.counters["p99_us"] = std::chrono::duration<double, std::micro>(total.p99).count();
  }
  o.observers.clear();
  std::filesystem::remove_all(dir);
}
void BM_contract_zero_latency_telemetry(benchmark::State& state) { run_with_telemetry(state, true, true); }
BENCHMARK(BM_contract_zero_latency_telemetry)->Name("contract/final_answer_zero_latency_telemetry");
void BM_contract_zero_latency_metrics(benchmark::State& state) { run_with_telemetry(state, true, false); }
BENCHMARK(BM_contract_zero_latency_metrics)->Name("contract/final_answer_zero_latency_metrics_only");
void BM_contract_zero_latency_audit(benchmark::State& state) { run_with_telemetry(state, false, true); }
BENCHMARK(BM_contract_zero_latency_audit)->Name("contract/final_answer_zero_latency_audit_only");
// The audit log without its journal: one write(2) per line.
void BM_contract_zero_latency_audit_unbuffered(benchmark::State& state) {
  run_with_telemetry(state, false, true, std::chrono::milliseconds(0));
}
BENCHMARK(BM_contract_zero_latency_audit_unbuffered)->Name("contract/final_answer_zero_latency_audit_unbuffered");

// The same call made asynchronously and waited for: the hand-off to a worker and back included.
void BM_async_overhead(benchmark::State& state) {
  const std::string reply = sample("valid_final_answer.json");
  if (reply.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  covenant::set_log_level(covenant::log_level::warn);
  instant_engine model(reply);
  const covenant::contract<AnswerQuestion> c{model};
  const Question q{"How tall is the Eiffel Tower?"};
  for (auto _ : state) {
    auto r = c.run_async(q).get();
    if (!r.outcome.success) state.SkipWithError("contract failed");
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_async_overhead)->Name("engine/async_overhead")->UseRealTime();

}  // namespace contract_bench
