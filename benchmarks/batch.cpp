// Batches without a network: the cost per call of run_batch itself, and memory for a large batch.
// (The batches against the loopback HTTP server are in benchmarks/batch_http.cpp.)
#include <benchmark/benchmark.h>
#include <covenant/contract/batch.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/engine/logging.hpp>

#include <sys/resource.h>

#include <ctime>
#include <optional>
#include <string>

namespace batch_bench {

struct Record {
  int id = 0;
  std::string text;
};

struct Label {
  int id = 0;
  std::string label;
};

struct Classify {
  static constexpr std::string_view prompt = "Label the record.";
  Label forward(const Record&, const covenant::outcome<Label>& o) const { return o.result.value_or(Label{}); }
};

// Answers every request at once from the calling thread (an engine with no I/O).
class instant_engine final : public covenant::engine {
 public:
  ~instant_engine() override { close(); }
  void start(const covenant::chat_request&, std::shared_ptr<covenant::reply_receiver> receiver,
             std::stop_token) override {
    covenant::chat_response r;
    r.text = R"({"id": 1, "label": "ok"})";
    r.usage = {30, 6};
    receiver->on_reply(std::move(r));
  }
  [[nodiscard]] covenant::engine_capabilities capabilities() const noexcept override { return {true, false}; }
};

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// 100 000 short records from a generator, 100 in flight: peak RSS must not grow with the batch.
void BM_batch_100k_rss(benchmark::State& state) {
  covenant::set_log_level(covenant::log_level::warn);
  instant_engine model;
  const covenant::contract<Classify> c{model};
  const long rss_before = peak_rss_kib();
  double cpu = 0;
  std::size_t calls = 0;
  for (auto _ : state) {
    int next = 0;
    auto source = [&]() -> std::optional<Record> {
      if (next == 100'000) return std::nullopt;
      return Record{next++, "short record text"};
    };
    const double c0 = cpu_seconds();
    auto summary = covenant::run_batch(c, source, [](std::size_t, auto&&) {}, {.concurrency = 100});
    cpu += cpu_seconds() - c0;
    calls += summary.done;
    if (summary.succeeded != 100'000) state.SkipWithError("records failed");
  }
  state.counters["cpu_us_per_call"] = calls > 0 ? cpu / static_cast<double>(calls) * 1e6 : 0;
  state.counters["peak_rss_mib"] = static_cast<double>(peak_rss_kib()) / 1024.0;
  state.counters["rss_growth_mib"] = static_cast<double>(peak_rss_kib() - rss_before) / 1024.0;
}
BENCHMARK(BM_batch_100k_rss)->Name("batch/100000_short_records_rss")->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

}  // namespace batch_bench
