// What a call touches lives as long as the call: tools that outlive their contract, observers of a
// call whose forward throws, an HTTP call stopped before it began, a stream reader's exceptions
// and its work on a long stream with streaming attributes. Under AddressSanitizer (the clang tree)
// the first would read freed memory without it.
#include <covenant/contract/agent.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "finish_counter.hpp"
#include "loopback_server.hpp"

namespace lifetime_test {

/// Holds a tool's act() until opened, and says when it started and what it read after.
struct gate {
  std::mutex mutex;
  std::condition_variable cv;
  bool started = false;
  bool open = false;
  bool finished = false;
  std::string read;

  void wait_started() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return started; });
  }
  void release() {
    {
      std::lock_guard lock(mutex);
      open = true;
    }
    cv.notify_all();
  }
  void wait_finished() {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return finished; });
  }
};

struct LookupArgs {
  std::string key;
};
struct Found {
  std::string text;
};

// A tool with state of its own (in the contract's Expression), read after the tool was released.
struct Lookup {
  static constexpr std::string_view name = "lookup";
  static constexpr std::string_view description = "Looks a key up.";
  std::shared_ptr<gate> g;
  std::string prefix = std::string(200, 'p');
  Found act(const LookupArgs& a) const {
    {
      std::unique_lock lock(g->mutex);
      g->started = true;
      g->cv.notify_all();
      g->cv.wait(lock, [&] { return g->open; });
    }
    Found f{prefix + ":" + a.key};  // the tool's own member, after the call ended
    {
      std::lock_guard lock(g->mutex);
      g->read = f.text;
      g->finished = true;
    }
    g->cv.notify_all();
    return f;
  }
};

struct Question {
  std::string text;
};
struct Answer {
  std::string answer;
};

struct Agent {
  static constexpr std::string_view prompt = "Answer, looking things up.";
  covenant::toolset<Lookup> tools;
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{"-"}); }
};

struct Plain {
  static constexpr std::string_view prompt = "Answer.";
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

struct ThrowingForward {
  static constexpr std::string_view prompt = "Answer.";
  Answer forward(const Question&, const covenant::outcome<Answer>&) const {
    throw std::runtime_error("forward failed");
  }
};

struct Checked {
  std::string answer;
};

// A check that cannot judge some values: it throws.
inline bool cannot_judge_boom(const std::string& s) {
  if (s.find("boom") != std::string::npos) throw std::runtime_error("the check cannot judge boom");
  return true;
}

struct Picky {
  static constexpr std::string_view prompt = "Answer.";
  Checked forward(const Question&, const covenant::outcome<Checked>& o) const { return o.result.value_or(Checked{}); }
};

using counting = covenant_test::finish_counter;

}  // namespace lifetime_test

template <>
struct covenant::describe<lifetime_test::Checked> {
  static constexpr auto fields = covenant::fields<lifetime_test::Checked>(covenant::field<&lifetime_test::Checked::answer>(
      "The answer.", covenant::predicate{lifetime_test::cannot_judge_boom, "must be judged"}.streaming_safe()));
};

namespace {

using namespace lifetime_test;
using namespace std::chrono_literals;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using covenant::testing::step;

// An agent's tool still running when the call's deadline ends the call keeps what it uses alive:
// the contract (and its Expression, with the tool's state) may be destroyed at once, and the tool
// still reads its own state when it goes on. Blocking (run with a timeout) and asynchronous alike.
TEST(Lifetime, AToolStillRunningAfterTheDeadlineKeepsItsContractAlive) {
  for (const bool blocking : {true, false}) {
    SCOPED_TRACE(blocking ? "run()" : "run_async()");
    auto g = std::make_shared<gate>();
    scripted_engine model{step::calls({{"c1", "lookup", R"({"key": "k"})"}}), R"({"answer": "late"})"};
    {
      covenant::contract_options options = instant();
      options.agent.tool_timeout = 0ms;  // no tool timeout: the call's deadline decides
      Agent agent;
      agent.tools = covenant::toolset<Lookup>{Lookup{g}};
      auto c = std::make_unique<covenant::contract<Agent>>(model, options, std::move(agent));
      covenant::call_options call;
      call.timeout = 100ms;
      covenant::outcome<Answer> o;
      if (blocking) {
        o = c->run(Question{"q"}, call).outcome;
      } else {
        auto f = c->run_async(Question{"q"}, call);
        g->wait_started();
        o = f.get().outcome;
      }
      EXPECT_FALSE(o.success);
      EXPECT_EQ(o.failed_stage, covenant::stage::deadline);
      c.reset();  // the contract goes while its tool still runs
    }
    g->release();
    g->wait_finished();
    EXPECT_EQ(g->read, std::string(200, 'p') + ":k");
  }
}

// A forward that throws ends the call for observers, statistics and the log exactly as a forward
// that returns: once, whichever way the call was made; the caller gets forward's exception.
TEST(Lifetime, ACallWhoseForwardThrowsIsRecordedOnceWhicheverWayItWasMade) {
  for (const std::string via : {"run", "operator()", "run_async", "run with options"}) {
    SCOPED_TRACE(via);
    scripted_engine model{R"({"answer": "a"})"};
    auto seen = std::make_shared<counting>();
    covenant::contract_options options = instant();
    options.observers = {seen};
    const covenant::contract<ThrowingForward> c{model, options};
    try {
      if (via == "run") (void)c.run(Question{"q"});
      else if (via == "operator()") (void)c(Question{"q"});
      else if (via == "run_async") (void)c.run_async(Question{"q"}).get();
      else (void)c.run(Question{"q"}, covenant::call_options{.timeout = 10s});
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "forward failed");
    }
    EXPECT_EQ(seen->finished, 1);
    EXPECT_EQ(c.stats().of(covenant::perf_stage::total).count, 1u);
  }
}

// A call whose stop was requested before it began ends (cancelled) and leaves nothing in the HTTP
// engine: a thousand of them, then no call is left in its table.
TEST(Lifetime, CallsStoppedBeforeTheyBeganLeaveNothingInTheEngine) {
  covenant_test::loopback_server server(
      [](const covenant_test::received_request&, std::size_t) {
        return covenant_test::whole_reply(covenant_test::openai_completion(R"({"answer": "a"})"));
      });
  covenant::http_engine_options eo;
  eo.base_url = server.base_url();
  eo.model = "m";
  eo.retry.tries = 0;
  covenant::http_engine engine{eo};
  std::stop_source stopped;
  stopped.request_stop();
  struct waiter final : covenant::reply_receiver {
    std::mutex mutex;
    std::condition_variable cv;
    int ended = 0;
    int cancelled = 0;
    void on_reply(covenant::chat_response) noexcept override { end(false); }
    void on_error(const covenant::engine_error& e) noexcept override { end(e.cancelled()); }
    void end(bool c) {
      {
        std::lock_guard lock(mutex);
        ++ended;
        cancelled += c ? 1 : 0;
      }
      cv.notify_all();
    }
  };
  auto w = std::make_shared<waiter>();
  covenant::chat_request r;
  r.messages = {{covenant::role::user, "q"}};
  for (int i = 0; i < 1000; ++i) engine.start(r, w, stopped.get_token());
  {
    std::unique_lock lock(w->mutex);
    w->cv.wait(lock, [&] { return w->ended == 1000; });
  }
  EXPECT_EQ(w->cancelled, 1000);
  EXPECT_EQ(engine.calls_in_flight(), 0u);
  EXPECT_EQ(server.requests(), 0u);
  // A live call still works, and leaves nothing either.
  const covenant::contract<Plain> c{engine};
  EXPECT_EQ(c.run(Question{"q"}).outcome.success, true);
  EXPECT_EQ(server.requests(), 1u);
  EXPECT_EQ(engine.calls_in_flight(), 0u);
  // (the live call's work ran after the stopped calls' on the engine's loop: they are all gone)
  EXPECT_EQ(w.use_count(), 1);  // no call of the engine holds the stopped calls' receiver any more
}

// An engine with state of its own whose destructor does not close() first, destroyed while a call
// is inside its complete(): the program stops with a message saying what to do, instead of running
// the call on freed memory.
TEST(LifetimeDeathTest, AnEngineDestroyedWithACallInsideThatDidNotCloseFirstStopsTheProgram) {
  ::testing::GTEST_FLAG(death_test_style) = "threadsafe";
  EXPECT_DEATH(
      {
        struct forgetful final : covenant::engine {
          std::mutex mutex;
          std::condition_variable cv;
          bool inside = false;
          covenant::chat_response complete(const covenant::chat_request&) override {
            {
              std::lock_guard lock(mutex);
              inside = true;
            }
            cv.notify_all();
            std::this_thread::sleep_for(std::chrono::seconds(30));
            return {};
          }
        };
        auto e = std::make_unique<forgetful>();
        const covenant::contract<Plain> c{*e};
        std::thread t([&] { (void)c.run(Question{"q"}); });
        {
          std::unique_lock lock(e->mutex);
          e->cv.wait(lock, [&] { return e->inside; });
        }
        e.reset();
        t.join();
      },
      "destroyed while 1 call\\(s\\) were inside its start\\(\\) or complete\\(\\); the destructor of a class "
      "derived from covenant::engine must call close\\(\\) first");
}

// ---------------------------------------------------------------------------------------------
// The stream reader

// A streaming-safe predicate that throws while the reply streams is not swallowed: it is logged,
// the stream is no longer judged, and the final reading runs it again, which ends the call with
// the exception as an issue. A streaming callback (on_update) that throws is logged and ignored:
// what a stream shows never decides a call.
TEST(Lifetime, AStreamingCheckThatThrowsDecidesTheCallAndACallbackThatThrowsDoesNot) {
  {
    covenant::testing::log_capture log;
    scripted_engine model{R"({"answer": "boom and more"})"};
    model.stream_in_chunks(4);
    const covenant::contract<Picky> c{model, instant()};
    auto r = c.stream(Question{"q"}, [](const covenant::stream_update<Checked>&) {}).get();
    EXPECT_FALSE(r.outcome.success);
    EXPECT_EQ(r.outcome.failed_stage, covenant::stage::validate);
    EXPECT_THAT(r.outcome.summary(), ::testing::HasSubstr("the check cannot judge boom"));
    EXPECT_THAT(log.text(), ::testing::HasSubstr("a check threw while the reply streamed (the check cannot judge boom)"));
  }
  {
    covenant::testing::log_capture log;
    scripted_engine model{R"({"answer": "fine"})"};
    model.stream_in_chunks(4);
    const covenant::contract<Picky> c{model, instant()};
    int updates = 0;
    auto r = c.stream(Question{"q"}, [&](const covenant::stream_update<Checked>&) {
                ++updates;
                throw std::runtime_error("display failed");
              }).get();
    EXPECT_TRUE(r.outcome.success) << r.outcome.summary();
    EXPECT_GE(updates, 2);  // the attempt's start and at least one partial: each threw
    EXPECT_THAT(log.text(), ::testing::HasSubstr("the streaming callback (on_update) threw (display failed); ignored"));
  }
}

}  // namespace
