// What OpenTelemetry tracing adds to a contract call: the same call whose engine answers at once,
// without a tracer and with one that samples every call and exports its spans and metrics over
// OTLP/HTTP to a collector on 127.0.0.1 (the loopback server, answering 200 to every export).
// The exports run on the runtime's worker and I/O threads; what a call pays is the recording.
#include <benchmark/benchmark.h>
#include <covenant/contract/contract.hpp>
#include <covenant/engine/logging.hpp>
#include <covenant/telemetry/otel.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "../examples/models/final_answer.hpp"
#include "answer_question.hpp"
#include "instant_engine.hpp"
#include "loopback_server.hpp"
#include "sample.hpp"

namespace telemetry_bench {

using bench::AnswerQuestion;
using bench::instant_engine;
using bench::Question;
using bench::sample;

void run(benchmark::State& state, bool traced) {
  const std::string reply = sample("valid_final_answer.json");
  if (reply.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  covenant::set_log_level(covenant::log_level::warn);
  covenant_test::loopback_server collector(
      [](const covenant_test::received_request&, std::size_t) { return covenant_test::whole_reply("{}"); },
      /*keep_requests=*/false);
  std::shared_ptr<covenant::otel_tracer> tracer;
  covenant::contract_options options;
  if (traced) {
    covenant::otel_options o;
    const std::string base = "http://127.0.0.1:" + std::to_string(collector.port());
    o.traces_endpoint = base + "/v1/traces";
    o.metrics_endpoint = base + "/v1/metrics";
    o.sampler = covenant::otel_sampler::always_on;
    o.max_queue_size = 1u << 16;  // nothing dropped: every span is exported
    tracer = std::make_shared<covenant::otel_tracer>(o);
    options.observers.push_back(tracer);
  }
  instant_engine model(reply);
  const covenant::contract<AnswerQuestion> c{model, options};
  const Question q{"How tall is the Eiffel Tower?"};
  for (auto _ : state) {
    auto r = c.run(q);
    if (!r.outcome.success) state.SkipWithError("contract failed");
    benchmark::DoNotOptimize(r);
  }
  const auto total = c.stats().of(covenant::perf_stage::total);
  state.counters["p50_us"] = std::chrono::duration<double, std::micro>(total.p50).count();
  if (tracer) {
    tracer->flush(std::chrono::seconds(10));
    const covenant::otel_stats s = tracer->stats();
    state.counters["spans_exported"] = static_cast<double>(s.spans_exported);
    state.counters["spans_dropped"] = static_cast<double>(s.spans_dropped);
  }
}

void BM_otel_off(benchmark::State& state) { run(state, false); }
BENCHMARK(BM_otel_off)->Name("telemetry/otel_call_zero_latency_off");
void BM_otel_on(benchmark::State& state) { run(state, true); }
BENCHMARK(BM_otel_on)->Name("telemetry/otel_call_zero_latency");

}  // namespace telemetry_bench
