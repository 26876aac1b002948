// Lifetimes under stress (also run under ThreadSanitizer; under AddressSanitizer in the clang
// tree): a few thousand calls, blocking and asynchronous, with deadlines, stop requests, hooks,
// tools, sinks and observers that throw, against a loopback server that fails in every way a
// gateway does, while contracts and engines are destroyed as soon as the API allows. Every call
// ends exactly once for observers, and no call is left in an engine that outlives its calls.
#include <covenant/contract/agent.hpp>
#include <covenant/contract/batch.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/testing/testing.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "fault_server.hpp"

namespace lifetime_stress_test {

struct Record {
  int id = 0;
};
struct Label {
  std::string label;
};

/// Hooks that throw now and then: pre (an exception, not a violation), post, forward.
struct Label_ {
  static constexpr std::string_view prompt = "Label the record.";
  void pre(const Record& r) const {
    if (r.id % 13 == 5) throw std::runtime_error("pre failed");
  }
  void post(const Label&, const Record& r) const {
    if (r.id % 17 == 3) throw std::runtime_error("post failed");
  }
  Label forward(const Record& r, const covenant::outcome<Label>& o) const {
    if (r.id % 19 == 7) throw std::runtime_error("forward failed");
    return o.result.value_or(Label{"-"});
  }
};

struct WorkArgs {
  int n = 0;
};
struct WorkResult {
  int n = 0;
};

/// A tool that throws for some arguments and takes a while for others.
struct Work {
  static constexpr std::string_view name = "work";
  static constexpr std::string_view description = "Works on n.";
  std::string state = std::string(64, 's');  // read after the call may have ended
  WorkResult act(const WorkArgs& a) const {
    if (a.n % 3 == 1) throw std::runtime_error("the tool failed");
    if (a.n % 3 == 2) std::this_thread::sleep_for(std::chrono::milliseconds(a.n % 20));
    return {static_cast<int>(state.size()) + a.n};
  }
};

struct Agent {
  static constexpr std::string_view prompt = "Work, then label.";
  covenant::toolset<Work> tools;
  Label forward(const Record& r, const covenant::outcome<Label>& o) const {
    if (r.id % 23 == 11) throw std::runtime_error("forward failed");
    return o.result.value_or(Label{"-"});
  }
};

/// Counts each call's end by its id; throws from every fifth event it sees.
struct ledger final : covenant::observer {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<std::string, int> ended;
  std::atomic<int> events{0};
  void on_attempt(const covenant::attempt_event&) override {
    if (++events % 5 == 0) throw std::runtime_error("the observer failed");
  }
  void on_finished(const covenant::finished_event& e) override {
    {
      std::lock_guard lock(mutex);
      ++ended[std::string(e.call.query_id)];
    }
    changed.notify_all();
    if (++events % 5 == 0) throw std::runtime_error("the observer failed");
  }
  /// Waits until `n` calls ended (or a minute passed); true when they did.
  bool wait_for(std::size_t n) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, std::chrono::minutes(1), [&] { return ended.size() >= n; });
  }
  /// Ids that ended more than once.
  std::vector<std::string> twice() {
    std::lock_guard lock(mutex);
    std::vector<std::string> out;
    for (const auto& [id, n] : ended)
      if (n != 1) out.push_back(id);
    return out;
  }
  std::size_t size() {
    std::lock_guard lock(mutex);
    return ended.size();
  }
};

}  // namespace lifetime_stress_test

template <>
struct covenant::describe<lifetime_stress_test::Label> {
  static constexpr auto fields = covenant::fields<lifetime_stress_test::Label>(
      covenant::field<&lifetime_stress_test::Label::label>("The label.", covenant::non_empty{}));
};

namespace {

using namespace lifetime_stress_test;
using namespace std::chrono_literals;

covenant::call_options with_id(const std::string& id) {
  covenant::call_options o;
  o.query_id = id;
  return o;
}

// Calls over HTTP against a server failing a third of its requests in every way, blocking and
// asynchronous and in batches, with deadlines and stops; the engine each round uses first is
// destroyed while its calls are in flight, the contract as soon as its calls are started.
TEST(LifetimeStress, CallsOverHttpEndOnceWhateverIsDestroyedFirst) {
  covenant_test::fault_options fo;
  fo.seed = 7;
  fo.fault_rate = 0.35;
  fo.answer = [](const std::string&) { return std::string(R"({"label": "ok"})"); };
  covenant_test::fault_server server(fo);
  auto seen = std::make_shared<ledger>();
  std::atomic<std::size_t> started{0};
  std::mt19937 rng(11);
  for (int round = 0; round < 3; ++round) {
    covenant::http_engine_options eo;
    eo.base_url = server.base_url();
    eo.model = "m";
    eo.retry.tries = 1;
    eo.retry.delay = 5ms;
    eo.request_timeout = 400ms;  // (a held request ends here, when no deadline came first)
    eo.stream_idle_timeout = 200ms;
    auto doomed = std::make_unique<covenant::http_engine>(eo);  // destroyed with calls in flight
    auto kept = std::make_unique<covenant::http_engine>(eo);    // outlives its calls
    covenant::contract_options co = covenant::testing::instant({.tries = 1});
    co.observers = {seen};
    auto on_doomed = std::make_shared<covenant::contract<Label_>>(*doomed, co);
    auto on_kept = std::make_shared<covenant::contract<Label_>>(*kept, co);
    std::vector<covenant::future<covenant::contract<Label_>::call_result>> futures;
    std::vector<std::stop_source> stops;
    // Asynchronous calls: deadlines, stop requests, futures dropped at once.
    for (int i = 0; i < 200; ++i) {
      const int id = round * 1000 + i;
      covenant::call_options o = with_id("a" + std::to_string(id));
      if (i % 3 == 0) o.timeout = std::chrono::milliseconds(5 + rng() % 200);
      if (i % 4 == 0) o.stop = stops.emplace_back().get_token();
      auto& c = i % 2 == 0 ? *on_doomed : *on_kept;
      auto f = i % 5 == 0 ? c.stream(Record{id}, [](const auto&) { throw std::runtime_error("display failed"); }, o)
                          : c.run_async(Record{id}, o);
      ++started;
      if (i % 7 != 0) futures.push_back(std::move(f));  // (the others are dropped: the call goes on)
    }
    // Blocking calls from two threads, and a batch whose sink throws, on the engine kept.
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([&, t, c = on_kept] {
        for (int i = 0; i < 40; ++i) {
          const int id = round * 1000 + 500 + t * 100 + i;
          covenant::call_options o = with_id("b" + std::to_string(id));
          if (i % 4 != 0) o.timeout = std::chrono::milliseconds(20 + (i * 7) % 150);
          ++started;
          try {
            (void)c->run(Record{id}, o);
          } catch (const std::runtime_error&) {  // forward's exception
          }
        }
      });
    threads.emplace_back([&, c = on_kept] {
      std::vector<Record> in;
      for (int i = 0; i < 80; ++i) in.push_back(Record{round * 1000 + 800 + i});
      covenant::batch_options bo;
      bo.concurrency = 16;
      bo.query_id = [&, round](std::size_t index) {
        ++started;
        return covenant::call_id("c" + std::to_string(round * 1000 + 800 + static_cast<int>(index)));
      };
      bo.on_exception = [](std::size_t, std::exception_ptr) {};
      try {
        (void)covenant::run_batch(*c, in, [&](std::size_t index, auto&&) {
          if (index == 30) throw std::runtime_error("the sink failed");
        }, bo);
      } catch (const std::runtime_error&) {
      }
    });
    // The contracts go as soon as their calls are started; stops come at random; then the first
    // engine goes with its calls in flight.
    on_doomed.reset();
    on_kept.reset();
    for (std::size_t i = 0; i < stops.size(); i += 2) stops[i].request_stop();
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 50));
    doomed.reset();
    for (auto& t : threads) t.join();
    for (auto& f : futures) {
      try {
        (void)f.get();
      } catch (const std::runtime_error&) {
      }
    }
    ASSERT_TRUE(seen->wait_for(started)) << seen->size() << " of " << started << " calls ended";
    EXPECT_EQ(kept->calls_in_flight(), 0u);
    kept.reset();
    for (auto& s : stops) s.request_stop();
  }
  EXPECT_EQ(seen->size(), started.load());
  EXPECT_TRUE(seen->twice().empty()) << seen->twice().front() << " ended more than once";
}

// Agents whose tools throw or take their time, their contracts destroyed as soon as the calls
// started, their engines destroyed while tools may still run; blocking and asynchronous.
TEST(LifetimeStress, AgentsWhoseToolsOutliveTheirCallsEndOnce) {
  auto seen = std::make_shared<ledger>();
  std::size_t started = 0;
  for (int round = 0; round < 5; ++round) {
    auto responder = [](const covenant::chat_request& r, std::size_t) {
      covenant::chat_response out;
      // The first step calls the tool with the record's id; the next answers.
      if (r.messages.back().role != covenant::role::tool) {
        const std::string& input = r.messages.at(1).content;
        const auto at = input.find("\"id\":");
        const int id = at == std::string::npos ? 0 : std::stoi(input.substr(at + 5));
        out.tool_calls = {{"", "work", R"({"n": )" + std::to_string(id) + "}"}};
        out.finish_reason = "tool_calls";
      } else {
        out.text = R"({"label": "done"})";
      }
      return out;
    };
    auto model = std::make_unique<covenant::testing::scripted_engine>(responder);
    covenant::contract_options co = covenant::testing::instant({.tries = 1});
    co.observers = {seen};
    co.agent.tool_timeout = 15ms;
    auto agent = std::make_unique<covenant::contract<Agent>>(*model, co);
    std::vector<covenant::future<covenant::contract<Agent>::call_result>> futures;
    for (int i = 0; i < 150; ++i) {
      covenant::call_options o = with_id("t" + std::to_string(round * 1000 + i));
      if (i % 2 == 0) o.timeout = std::chrono::milliseconds(1 + i % 10);
      futures.push_back(agent->run_async(Record{i}, o));
      ++started;
    }
    std::thread blocking([&, round, c = agent.get()] {
      for (int i = 0; i < 40; ++i) {
        covenant::call_options o = with_id("u" + std::to_string(round * 1000 + i));
        o.timeout = std::chrono::milliseconds(2 + i % 15);
        try {
          (void)c->run(Record{i}, o);
        } catch (const std::runtime_error&) {
        }
      }
    });
    started += 40;
    blocking.join();
    agent.reset();  // the asynchronous calls (and their tools) go on without it
    model.reset();  // and the engine: calls still asking it end cancelled
    for (auto& f : futures) {
      try {
        (void)f.get();
      } catch (const std::runtime_error&) {
      }
    }
    ASSERT_TRUE(seen->wait_for(started)) << seen->size() << " of " << started << " calls ended";
  }
  EXPECT_EQ(seen->size(), started);
  EXPECT_TRUE(seen->twice().empty()) << seen->twice().front() << " ended more than once";
}

}  // namespace
