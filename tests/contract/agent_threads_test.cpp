// Agents under concurrency (also run under ThreadSanitizer): many calls at once whose steps run
// tools side by side on the runtime's workers, with blocking and asynchronous acts, tools past
// their timeout, calls cancelled while their tools run, and blocking calls from several threads.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <utility>
#include <mutex>
#include <thread>
#include <vector>

#include "covenant/contract/contract.hpp"
#include "covenant/testing/testing.hpp"

#include "act_threads.hpp"

namespace agent_threads_test {

using covenant_test::live_act;
using covenant_test::live_acts;
using covenant_test::start_act_thread;

struct Args {
  int delay_ms = 0;
  bool fail = false;
};
struct Result {
  int value = 0;
};

struct Slow {
  static constexpr std::string_view name = "slow";
  static constexpr std::string_view description = "Waits, then answers.";
  std::atomic<int>* runs = nullptr;
  Result act(const Args& a) const {
    const live_act live;
    if (runs != nullptr) runs->fetch_add(1);
    std::this_thread::sleep_for(std::chrono::milliseconds(a.delay_ms));
    if (a.fail) throw std::runtime_error("failed on purpose");
    return {a.delay_ms};
  }
};

struct Later {
  static constexpr std::string_view name = "later";
  static constexpr std::string_view description = "Answers from another thread.";
  covenant::future<Result> act(const Args& a) const {
    covenant::promise<Result> p;
    auto f = p.get_future();
    ++live_acts;
    start_act_thread([p, a] {
      const live_act live;
      --live_acts;
      const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(a.delay_ms);
      while (std::chrono::steady_clock::now() < until && !p.stop_token().stop_requested())
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (a.fail) p.set_exception(std::make_exception_ptr(std::runtime_error("failed on purpose")));
      else p.set_value(Result{a.delay_ms});
    });
    return f;
  }
};

struct Quick {
  static constexpr std::string_view name = "quick";
  static constexpr std::string_view description = "Answers at once.";
  static constexpr bool quick = true;
  Result act(const Args& a) const { return {a.delay_ms + 1}; }
};

struct Job {
  int n = 0;
};
struct Report {
  int total = 0;
};
struct Worker {
  static constexpr std::string_view prompt = "Run the tools, then report.";
  covenant::toolset<Slow, Later, Quick> tools;
  Report forward(const Job&, const covenant::outcome<Report>& o) const { return o.result.value_or(Report{-1}); }
};

}  // namespace agent_threads_test

namespace {

using namespace agent_threads_test;
using covenant::chat_request;
using covenant::chat_response;

/// Two steps (four calls side by side, then one), then the answer, for every call.
covenant::testing::scripted_engine::responder loop(int slow_ms) {
  return [slow_ms](const chat_request& r, std::size_t) {
    int steps = 0;
    for (const auto& m : r.messages) steps += m.tool_calls.empty() ? 0 : 1;
    chat_response out;
    const std::string slow = R"({"delay_ms": )" + std::to_string(slow_ms) + R"(, "fail": false})";
    if (steps == 0) {
      out.tool_calls = {{"a", "slow", slow},
                        {"b", "later", slow},
                        {"c", "quick", R"({"delay_ms": 1, "fail": false})"},
                        {"d", "slow", R"({"delay_ms": 0, "fail": true})"}};
    } else if (steps == 1) {
      out.tool_calls = {{"e", "later", R"({"delay_ms": 0, "fail": true})"}};
    } else {
      out.text = R"({"total": 7})";
    }
    return out;
  };
}

TEST(AgentThreads, ManyCallsAtOnceRunTheirToolsSideBySide) {
  covenant::testing::scripted_engine model{loop(2)};
  covenant::contract<Worker> worker{model};
  std::vector<covenant::future<covenant::contract<Worker>::call_result>> calls;
  for (int i = 0; i < 64; ++i) calls.push_back(worker.run_async(Job{i}));
  for (auto& f : calls) {
    auto r = f.get();
    ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
    ASSERT_EQ(r.outcome.steps.size(), 2u);
    const auto& first = r.outcome.steps[0].tools;
    EXPECT_EQ(first.at(0).status, covenant::tool_status::ok);
    EXPECT_EQ(first.at(1).status, covenant::tool_status::ok);
    EXPECT_EQ(first.at(2).status, covenant::tool_status::ok);
    EXPECT_EQ(first.at(3).status, covenant::tool_status::failed);
    EXPECT_EQ(r.outcome.steps[1].tools.at(0).status, covenant::tool_status::failed);
  }
}

TEST(AgentThreads, TimeoutsAndCancellationsWhileToolsRun) {
  covenant::testing::scripted_engine model{loop(200)};
  covenant::contract_options opts;
  opts.agent.tool_timeout = std::chrono::milliseconds(20);
  covenant::contract<Worker> worker{model, opts};
  std::vector<covenant::future<covenant::contract<Worker>::call_result>> calls;
  for (int i = 0; i < 32; ++i) calls.push_back(worker.run_async(Job{i}));
  for (std::size_t i = 0; i < calls.size(); i += 2) calls[i].cancel();  // half of them, mid-way
  int timed_out = 0;
  int cancelled = 0;
  for (auto& f : calls) {
    auto r = f.get();
    if (r.outcome.failed_stage == covenant::stage::cancelled) {
      ++cancelled;
      continue;
    }
    ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
    timed_out += r.outcome.steps.at(0).tools.at(0).status == covenant::tool_status::timeout ? 1 : 0;
  }
  EXPECT_GT(cancelled, 0);
  EXPECT_GT(timed_out, 0);
}

TEST(AgentThreads, BlockingCallsFromSeveralThreads) {
  covenant::testing::scripted_engine model{loop(1)};
  covenant::contract<Worker> worker{model};
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) ok += worker.run(Job{i}).outcome.success ? 1 : 0;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 60);
}

}  // namespace
