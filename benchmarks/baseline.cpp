// Reference points measured in the same run as the decode benchmarks: Boost.JSON parsing the same
// samples into its DOM (no typed output, no validation), fresh and with a reused buffer.
#include <benchmark/benchmark.h>
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <array>
#include <cstdint>
#include <string>

#include "sample.hpp"

namespace baseline_bench {

using bench::sample;

// boost::json::parse with the default allocator: what "parse to a DOM, then map it" starts with.
void dom_parse(benchmark::State& state, const char* file) {
  const std::string text = sample(file);
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  for (auto _ : state) {
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(text, ec);
    benchmark::DoNotOptimize(v);
    if (ec) state.SkipWithError("parse error");
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(text.size()));
}

// The same with a monotonic resource over a stack buffer, made anew for each parse.
void dom_parse_buffer(benchmark::State& state, const char* file) {
  const std::string text = sample(file);
  if (text.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  std::array<unsigned char, 16384> buffer{};
  for (auto _ : state) {
    boost::json::monotonic_resource mr(buffer.data(), buffer.size());
    boost::system::error_code ec;
    boost::json::value v = boost::json::parse(text, ec, &mr);
    benchmark::DoNotOptimize(v);
    if (ec) state.SkipWithError("parse error");
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(text.size()));
}

BENCHMARK_CAPTURE(dom_parse, 440B, "valid_final_answer.json")->Name("baseline/boost_json_dom_440B");
BENCHMARK_CAPTURE(dom_parse_buffer, 440B, "valid_final_answer.json")->Name("baseline/boost_json_dom_440B_buffer");
BENCHMARK_CAPTURE(dom_parse, 50KB, "large_final_answer.json")->Name("baseline/boost_json_dom_50KB");

}  // namespace baseline_bench
