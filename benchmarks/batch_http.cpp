// Batches and streams against the loopback HTTP server (tests/support), the server on its own
// thread in this process (its CPU time is measured apart and left out of the client's):
//   batch/1000_at_50ms_c100     1000 calls answered after 50 ms each, at most 100 in flight
//   batch/10000_at_50ms_c1000   10000 calls, at most 1000 in flight
//   .../inline                  the same with covenant::run_inline as the calls' executor (each
//                               call's work on the thread that has it, not on the workers)
//   stream/chunk_to_partial_latency   time from a piece written by the server to the partial callback
#include <benchmark/benchmark.h>
#include <covenant/contract/batch.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/engine/logging.hpp>

#include <dirent.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "loopback_server.hpp"

namespace batch_http_bench {

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

double process_cpu() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::size_t thread_count() {
  std::size_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

long peak_rss_kib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

void raise_file_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

void run_batch_bench(benchmark::State& state, int calls, std::size_t concurrency, bool inline_work = false) {
  covenant::set_log_level(covenant::log_level::warn);
  raise_file_limit();
  const std::string reply = covenant_test::openai_completion(R"({"id": 1, "label": "ok"})", 40, 8);
  covenant_test::loopback_server server(
      [&](const covenant_test::received_request&, std::size_t) {
        covenant_test::response_plan p;
        p.delay = std::chrono::milliseconds(50);
        p.body = reply;
        return p;
      },
      false);
  covenant::http_engine engine({.base_url = server.base_url(), .connect_timeout = std::chrono::seconds(30)});
  const covenant::contract<Classify> c{engine};
  // Warm up: the runtime's threads and a first connection.
  (void)covenant::run_batch(c, std::vector<Record>{{0, "warm"}}, [](std::size_t, auto&&) {});
  double client_cpu = 0;
  double wall = 0;
  std::size_t done = 0;
  std::size_t max_threads = 0;
  const std::size_t threads_before = thread_count();
  for (auto _ : state) {
    int next = 0;
    auto source = [&]() -> std::optional<Record> {
      if (next == calls) return std::nullopt;
      return Record{next++, "a short record to label"};
    };
    const double server0 = server.cpu_seconds();
    const double cpu0 = process_cpu();
    const auto t0 = std::chrono::steady_clock::now();
    std::size_t seen = 0;
    auto summary = covenant::run_batch(
        c, source,
        [&](std::size_t, auto&&) {
          if (++seen % 100 == 0) max_threads = std::max(max_threads, thread_count());
        },
        {.concurrency = concurrency,
         .order = covenant::batch_order::completion,
         .call = {.executor = inline_work ? covenant::run_inline : nullptr}});
    wall += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    client_cpu += (process_cpu() - cpu0) - (server.cpu_seconds() - server0);
    done += summary.done;
    if (summary.succeeded != static_cast<std::size_t>(calls)) state.SkipWithError("calls failed");
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["wall_s"] = wall / iterations;
  state.counters["ideal_s"] = 0.05 * static_cast<double>(calls) / static_cast<double>(concurrency);
  state.counters["cpu_us_per_call"] = done > 0 ? client_cpu / static_cast<double>(done) * 1e6 : 0;
  state.counters["threads_before"] = static_cast<double>(threads_before);
  state.counters["threads_max"] = static_cast<double>(max_threads);
  state.counters["peak_rss_mib"] = static_cast<double>(peak_rss_kib()) / 1024.0;
}

void BM_batch_1000_c100(benchmark::State& state) { run_batch_bench(state, 1000, 100); }
BENCHMARK(BM_batch_1000_c100)->Name("batch/1000_at_50ms_c100")->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

void BM_batch_10000_c1000(benchmark::State& state) { run_batch_bench(state, 10000, 1000); }
BENCHMARK(BM_batch_10000_c1000)->Name("batch/10000_at_50ms_c1000")->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

void BM_batch_1000_c100_inline(benchmark::State& state) { run_batch_bench(state, 1000, 100, true); }
BENCHMARK(BM_batch_1000_c100_inline)->Name("batch/1000_at_50ms_c100/inline")->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

void BM_batch_10000_c1000_inline(benchmark::State& state) { run_batch_bench(state, 10000, 1000, true); }
BENCHMARK(BM_batch_10000_c1000_inline)->Name("batch/10000_at_50ms_c1000/inline")->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

// The time from a piece written by the server to the partial callback that shows it.
struct Story {
  std::string text;
};
struct Tell {
  static constexpr std::string_view prompt = "Tell a story.";
  Story forward(const Record&, const covenant::outcome<Story>& o) const { return o.result.value_or(Story{}); }
};

void BM_chunk_to_partial(benchmark::State& state) {
  covenant::set_log_level(covenant::log_level::warn);
  constexpr int pieces = 200;
  std::vector<std::string> words = {"{\"text\": \""};
  for (int i = 0; i < pieces; ++i) words.push_back("w");  // one character of the text per piece
  words.push_back("\"}");
  const auto events = covenant_test::openai_stream(words);
  covenant_test::loopback_server server([&](const covenant_test::received_request&, std::size_t) {
    covenant_test::response_plan p;
    p.content_type = "text/event-stream";
    p.chunks = events;
    p.chunk_delay = std::chrono::milliseconds(2);
    return p;
  });
  covenant::http_engine engine({.base_url = server.base_url()});
  const covenant::contract<Tell> c{engine};
  std::vector<double> latencies;
  std::size_t request = 0;
  for (auto _ : state) {
    std::mutex m;
    std::vector<std::pair<std::size_t, std::chrono::steady_clock::time_point>> seen;  // text length, when shown
    auto r = c.stream(Record{}, [&](const covenant::stream_update<Story>& u) {
               if (u.what != covenant::stream_update<Story>::kind::partial) return;
               const auto now = std::chrono::steady_clock::now();
               std::lock_guard lock(m);
               seen.emplace_back(u.partial->value().text.size(), now);
             }).get();
    if (!r.outcome.success) state.SkipWithError("the stream failed");
    const auto sent = server.chunk_times(request++);
    // Piece i (after the role and the opening) carries character i of the text.
    for (const auto& [length, when] : seen) {
      const std::size_t piece = 1 + 1 + length - 1;  // role event, opening event, then one per character
      if (length == 0 || piece >= sent.size()) continue;
      latencies.push_back(std::chrono::duration<double, std::micro>(when - sent[piece]).count());
    }
  }
  std::sort(latencies.begin(), latencies.end());
  if (!latencies.empty()) {
    state.counters["p50_us"] = latencies[latencies.size() / 2];
    state.counters["p99_us"] = latencies[latencies.size() * 99 / 100];
    state.counters["samples"] = static_cast<double>(latencies.size());
  }
}
BENCHMARK(BM_chunk_to_partial)->Name("stream/chunk_to_partial_latency")->Unit(benchmark::kMillisecond)->Iterations(5)->UseRealTime();

}  // namespace batch_http_bench
