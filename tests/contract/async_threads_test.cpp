// Many asynchronous calls on one contract and one engine at once, with faults (engine failures,
// rejections, cancellations, deadlines, streamed replies): every call ends in forward with its own
// outcome. Also built with ThreadSanitizer (target covenant_tsan_tests) in the clang test tree.
#include <covenant/contract/batch.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/engine/runtime.hpp>
#include <covenant/testing/testing.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

namespace async_threads_test {

struct Job {
  std::string id;
  int kind = 0;  // 0 good, 1 rejected once then good, 2 engine failure, 3 always rejected
};

struct Echo {
  std::string id;
  double score = 0;
};

struct EchoBack {
  static constexpr std::string_view prompt = "Echo the job id.";
  void post(const Echo& e, const Job& j) const {
    if (e.id != j.id) throw covenant::violation("id", "must echo the job id " + j.id);
    if (e.score < 0.5) throw covenant::violation("score", "must be at least 0.5");
  }
  std::string forward(const Job& j, const covenant::outcome<Echo>& o) const {
    return o.success ? o.result->id : "failed:" + j.id;
  }
};

}  // namespace async_threads_test

namespace {

using namespace async_threads_test;
using namespace std::chrono_literals;

// The reply depends only on the request: the job (from the input block) and the attempt number
// (how many assistant turns the conversation holds).
covenant::chat_response reply(const covenant::chat_request& req, std::size_t) {
  const std::string& input = req.messages.at(1).content;
  const auto at = input.find("\"id\":\"") + 6;
  const std::string id = input.substr(at, input.find('"', at) - at);
  const int kind = input[input.find("\"kind\":") + 7] - '0';
  const bool first = req.messages.size() <= 2;
  if (kind == 2) throw covenant::engine_error("quota exceeded", 429, true);
  const bool low = kind == 3 || (kind == 1 && first);
  covenant::chat_response r;
  r.text = R"({"id": ")" + id + R"(", "score": )" + (low ? "0.1" : "0.9") + "}";
  r.usage = {10, 2};
  return r;
}

TEST(AsyncThreads, ManyCallsWithFaultsEachKeepTheirOwnOutcome) {
  covenant::runtime rt{{.workers = 3}};
  covenant::testing::scripted_engine model{covenant::testing::scripted_engine::responder(reply)};
  model.stream_in_chunks(6).use_runtime(rt);
  auto options = covenant::testing::instant({.tries = 1});
  options.runtime = &rt;
  const covenant::contract<EchoBack> c{model, options};
  using result = covenant::contract<EchoBack>::call_result;

  constexpr int threads = 4;
  constexpr int per_thread = 50;
  std::vector<std::vector<covenant::future<result>>> futures(threads);
  std::vector<std::vector<Job>> jobs(threads);
  std::stop_source stop_all;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < per_thread; ++i) {
        Job j{"t" + std::to_string(t) + "-" + std::to_string(i), i % 4};
        jobs[t].push_back(j);
        covenant::call_options o;
        if (i % 10 == 9) o.stop = stop_all.get_token();  // cancelled below, unless already done
        if (i % 10 == 8) o.timeout = 10s;                 // a deadline that does not pass
        auto f = i % 2 == 0 ? c.run_async(j, o) : c.stream(j, [](const covenant::stream_update<Echo>&) {}, o);
        if (i % 10 == 7) f.cancel();
        futures[t].push_back(std::move(f));
      }
    });
  }
  std::thread reader([&] {
    for (int i = 0; i < 50; ++i) (void)c.stats().table();
  });
  for (auto& th : pool) th.join();
  stop_all.request_stop();
  reader.join();

  int succeeded = 0;
  int cancelled = 0;
  for (int t = 0; t < threads; ++t) {
    for (int i = 0; i < per_thread; ++i) {
      const Job& j = jobs[t][i];
      result r = futures[t][i].get();
      const covenant::outcome_base& o = r.outcome;
      if (o.success) {
        ++succeeded;
        EXPECT_EQ(r.value, j.id);
        EXPECT_TRUE(j.kind == 0 || j.kind == 1) << j.id;
        EXPECT_EQ(o.attempts.size(), j.kind == 1 ? 2u : 1u) << j.id;
        EXPECT_EQ(o.usage.input_tokens, 10u * o.attempts.size());
        continue;
      }
      EXPECT_EQ(r.value, "failed:" + j.id);
      if (o.failed_stage == covenant::stage::cancelled) {
        ++cancelled;
        EXPECT_TRUE(i % 10 == 7 || i % 10 == 9) << j.id;
        EXPECT_EQ(o.issues.at(0).code, covenant::issue_code::cancelled);
        continue;
      }
      if (j.kind == 2) {
        EXPECT_EQ(o.failed_stage, covenant::stage::engine) << j.id;
        EXPECT_EQ(o.issues.at(0).code, covenant::issue_code::engine_error);
      } else {
        EXPECT_EQ(j.kind, 3) << j.id;
        EXPECT_EQ(o.failed_stage, covenant::stage::post) << j.id;
        EXPECT_EQ(o.attempts.size(), 2u);
      }
      // Every attempt's text belongs to this job.
      for (const auto& a : o.attempts) {
        if (!a.engine_failed) {
          EXPECT_NE(a.text.find(j.id), std::string::npos) << j.id;
        }
      }
    }
  }
  EXPECT_GT(succeeded, 0);
  EXPECT_EQ(c.stats().of(covenant::perf_stage::total).count, static_cast<std::uint64_t>(threads * per_thread));
  (void)cancelled;
}

TEST(AsyncThreads, ABatchWithFaultsRateLimitsAndAStopDeliversEveryStartedRecord) {
  covenant::runtime rt{{.workers = 3}};
  covenant::testing::scripted_engine model{covenant::testing::scripted_engine::responder(reply)};
  model.stream_in_chunks(9).use_runtime(rt);
  auto options = covenant::testing::instant({.tries = 1});
  options.runtime = &rt;
  const covenant::contract<EchoBack> c{model, options};
  std::vector<Job> jobs;
  // Ids appended, not "b" + std::to_string(i): GCC 12 reports a false -Wrestrict on that in Release builds.
  for (int i = 0; i < 300; ++i) jobs.push_back({std::string("b").append(std::to_string(i)), i % 4});
  std::stop_source stop;
  covenant::batch_options o;
  o.concurrency = 40;
  o.requests_per_minute = 600'000;  // a limiter in the way, though a generous one
  o.stop = stop.get_token();
  o.order = covenant::batch_order::completion;
  std::vector<int> seen(jobs.size(), 0);
  std::size_t delivered = 0;
  auto summary = covenant::run_batch(c, jobs, [&](std::size_t index, covenant::contract<EchoBack>::call_result&& r) {
    ++seen.at(index);
    ++delivered;
    if (r.outcome.success) EXPECT_EQ(r.value, jobs[index].id);
    else EXPECT_EQ(r.value, "failed:" + jobs[index].id);
    if (delivered == 200) stop.request_stop();
  }, o);
  EXPECT_EQ(summary.done, summary.started);
  for (std::size_t i = 0; i < summary.started; ++i) EXPECT_LE(seen[i], 1);
  std::size_t total_seen = 0;
  for (int n : seen) total_seen += static_cast<std::size_t>(n);
  EXPECT_EQ(total_seen, summary.started);
}

}  // namespace
