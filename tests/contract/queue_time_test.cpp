// Queue time apart from latency: an attempt's turn under the rate limiter and the engine's waits
// between its exchanges (transport-retry backoff, a server's Retry-After) are attempt::queued,
// not attempt::latency; remedy delays are attempt::waited, neither of the two. On the contract's
// own clock (exact figures), on the real clock with a limiter that holds a request, and through the
// HTTP engine against a loopback server that answers 429 with Retry-After.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/contract/observer.hpp>
#include <covenant/engine/rate_limiter.hpp>
#include <covenant/testing/testing.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loopback_server.hpp"

namespace queue_time_test {
struct Q {
  std::string text;
};
struct A {
  std::string answer;
};
struct Ask {
  static constexpr std::string_view prompt = "Answer.";
  void post(const A& a) const {
    if (a.answer == "?") throw covenant::violation("answer", "must be an answer");
  }
  A forward(const Q&, const covenant::outcome<A>& o) const { return o.result.value_or(A{}); }
};
}  // namespace queue_time_test

namespace {

using namespace queue_time_test;
using namespace std::chrono_literals;
using covenant::testing::manual_clock;
using covenant::testing::scripted_engine;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;
using ns = std::chrono::nanoseconds;

/// What observers were told of each attempt.
struct attempt_times final : covenant::observer {
  struct seen {
    ns latency;
    ns queued;
    ns waited;
  };
  std::mutex mutex;
  std::vector<seen> attempts;
  void on_attempt(const covenant::attempt_event& e) override {
    std::lock_guard lock(mutex);
    attempts.push_back({e.a.latency, e.a.queued, e.a.waited});
  }
};

/// Waits until `done()` or `timeout` passed; returns done().
template <class F>
bool eventually(F done, std::chrono::milliseconds timeout = 10s) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// On the contract's clock every figure is exact: the limiter holds the first attempt 300 ms, the
// engine takes 50 ms of which it spent 30 ms waiting between its exchanges (as the HTTP engine
// reports a Retry-After wait), the reply is rejected, the remedy delay is 200 ms.
TEST(ContractQueueTime, TheLimitersHoldAndTheEnginesWaitsAreQueueTimeNotLatencyNorRemedyDelay) {
  auto clock = std::make_shared<manual_clock>();
  auto limiter_reads = std::make_shared<std::atomic<int>>(0);
  covenant::rate_limiter_options limits;
  limits.clock = [clock, limiter_reads] {
    ++*limiter_reads;
    return (*clock)();
  };
  auto limiter = std::make_shared<covenant::rate_limiter>(limits);
  scripted_engine model([clock](const covenant::chat_request&, std::size_t i) {
    clock->advance(50ms);
    covenant::chat_response r;
    r.text = i == 0 ? R"({"answer": "?"})" : R"({"answer": "Paris"})";
    r.queued = 30ms;
    return r;
  });
  covenant::contract_options o = covenant::testing::instant({.tries = 1, .delay = 200ms, .jitter = 0});
  o.clock = [clock] { return (*clock)(); };
  o.sleep = [clock](ns d) { clock->advance(d); };
  auto seen = std::make_shared<attempt_times>();
  o.observers.push_back(seen);
  const covenant::contract<Ask> ask{model, o};

  limiter->back_off(300ms);  // nothing goes before 300 ms from now, on the shared clock
  const int reads_before = limiter_reads->load();
  covenant::call_options call;
  call.limiter = limiter;
  auto future = ask.run_async(Q{"capital of France?"}, call);
  // Once the limiter has read its clock for the call's request, the call is waiting for its turn.
  ASSERT_TRUE(eventually([&] { return limiter_reads->load() > reads_before; }));
  clock->advance(300ms);
  limiter->back_off(0ns);  // grants what the clock now lets go
  ASSERT_TRUE(future.wait_for(10s));
  const auto r = future.get();
  const covenant::outcome<A>& out = r.outcome;
  ASSERT_TRUE(out.success) << out.summary();
  ASSERT_EQ(out.attempts.size(), 2u);
  EXPECT_EQ(out.attempts[0].queued, 330ms);  // the limiter's 300 ms and the engine's 30 ms
  EXPECT_EQ(out.attempts[0].latency, 20ms);  // 350 ms from asking for a turn to the reply, less 330 ms
  EXPECT_EQ(out.attempts[0].waited, 0ms);
  EXPECT_EQ(out.attempts[1].waited, 200ms);  // the remedy delay: neither latency nor queue time
  EXPECT_EQ(out.attempts[1].queued, 30ms);   // its turn came at once
  EXPECT_EQ(out.attempts[1].latency, 20ms);
  EXPECT_EQ(out.queued(), 360ms);
  EXPECT_EQ(out.elapsed, 600ms);  // 300 + 50 + 200 + 50
  std::lock_guard lock(seen->mutex);
  ASSERT_EQ(seen->attempts.size(), 2u);
  EXPECT_EQ(seen->attempts[0].queued, 330ms);
  EXPECT_EQ(seen->attempts[0].latency, 20ms);
  EXPECT_EQ(seen->attempts[1].queued, 30ms);
  EXPECT_EQ(seen->attempts[1].waited, 200ms);
}

TEST(ContractQueueTime, AFailedEnginesWaitsAreQueueTimeToo) {
  auto clock = std::make_shared<manual_clock>();
  scripted_engine model([clock](const covenant::chat_request&, std::size_t) -> covenant::chat_response {
    clock->advance(450ms);
    covenant::engine_error e("HTTP 429 (gave up after 2 attempts)", 429, true);
    e.set_queued(400ms);
    throw e;
  });
  covenant::contract_options o = covenant::testing::instant({.tries = 0});
  o.clock = [clock] { return (*clock)(); };
  const covenant::contract<Ask> ask{model, o};
  // Blocking without call options (the engine's complete() on this thread), and asynchronous.
  const covenant::outcome<A> blocking = ask.run(Q{"q"}).outcome;
  const covenant::outcome<A> async = ask.run_async(Q{"q"}).get().outcome;
  for (const covenant::outcome<A>* out : {&blocking, &async}) {
    ASSERT_FALSE(out->success);
    EXPECT_EQ(out->failed_stage, covenant::stage::engine);
    ASSERT_EQ(out->attempts.size(), 1u);
    EXPECT_TRUE(out->attempts[0].engine_failed);
    EXPECT_EQ(out->attempts[0].queued, 400ms);
    EXPECT_EQ(out->attempts[0].latency, 50ms);
    EXPECT_EQ(out->queued(), 400ms);
  }
}

// On the real clock: a limiter that holds the request 300 ms, an engine that answers at once. (The
// split of an engine's time into queue time and latency is checked exactly on an injected clock
// above.)
TEST(ContractQueueTime, ARequestHeldByTheLimiterHasItsHoldAsQueueTime) {
  scripted_engine model([](const covenant::chat_request&, std::size_t) {
    covenant::chat_response r;
    r.text = R"({"answer": "Paris"})";
    return r;
  });
  auto seen = std::make_shared<attempt_times>();
  covenant::contract_options o = covenant::testing::instant();
  o.observers.push_back(seen);
  const covenant::contract<Ask> ask{model, o};
  auto limiter = std::make_shared<covenant::rate_limiter>();
  covenant::call_options call;
  call.limiter = limiter;

  limiter->back_off(300ms);
  const covenant::outcome<A> blocking = ask.run(Q{"q"}, call).outcome;
  limiter->back_off(300ms);
  const covenant::outcome<A> async = ask.run_async(Q{"q"}, call).get().outcome;
  for (const covenant::outcome<A>* out : {&blocking, &async}) {
    ASSERT_TRUE(out->success) << out->summary();
    ASSERT_EQ(out->attempts.size(), 1u);
    const covenant::attempt& a = out->attempts[0];
    EXPECT_GE(a.queued, 280ms);  // the back-off began a moment before the call asked for its turn
    EXPECT_EQ(out->queued(), a.queued);
    EXPECT_GE(out->elapsed, a.queued + a.latency);
  }
  std::lock_guard lock(seen->mutex);
  ASSERT_EQ(seen->attempts.size(), 2u);
  EXPECT_EQ(seen->attempts[0].queued, blocking.attempts[0].queued);
  EXPECT_EQ(seen->attempts[1].queued, async.attempts[0].queued);
}

covenant::http_engine_options options_for(const loopback_server& server) {
  covenant::http_engine_options o;
  o.base_url = server.base_url();
  o.model = "loopback";
  o.retry.tries = 2;
  return o;
}

/// 429 with `retry-after-ms: 300` for the requests in `refused`, else a good reply at once.
loopback_server::handler refusing(std::vector<std::size_t> refused) {
  return [refused](const received_request&, std::size_t i) {
    response_plan p;
    if (std::find(refused.begin(), refused.end(), i) != refused.end()) {
      p.status = 429;
      p.headers = {{"retry-after-ms", "300"}};
      p.body = R"({"error": {"message": "Rate limit reached"}})";
      return p;
    }
    p.body = covenant_test::openai_completion(R"({"answer": "Paris"})");
    return p;
  };
}

TEST(HttpEngineQueueTime, ARetryAfterWaitIsTheRepliesQueueTime) {
  loopback_server server(refusing({0}));
  covenant::http_engine engine(options_for(server));
  covenant::chat_request request;
  request.messages = {{covenant::role::user, "Hi"}};
  const auto started = std::chrono::steady_clock::now();
  const covenant::chat_response r = engine.complete(request);
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(server.requests(), 2u);
  EXPECT_GE(r.queued, 300ms);
  EXPECT_LE(r.queued, took);
  EXPECT_LT(took - r.queued, 150ms);  // the two exchanges themselves were instant
  // A call that never waited reports none.
  EXPECT_EQ(engine.complete(request).queued, 0ns);
}

TEST(HttpEngineQueueTime, AFailedCallCarriesItsWaitsOnTheError) {
  loopback_server server(refusing({0, 1, 2}));
  covenant::http_engine engine(options_for(server));
  covenant::chat_request request;
  request.messages = {{covenant::role::user, "Hi"}};
  try {
    (void)engine.complete(request);
    ADD_FAILURE() << "the engine did not give up";
  } catch (const covenant::engine_error& e) {
    EXPECT_EQ(e.status(), 429);
    EXPECT_TRUE(e.retryable());
    EXPECT_GE(e.queued(), 600ms);  // two waits of 300 ms before the two retries
    EXPECT_LT(e.queued(), 3s);
  }
  EXPECT_EQ(server.requests(), 3u);
}

TEST(HttpEngineQueueTime, AContractsAttemptHasTheRetryAfterWaitAsQueueTimeNotLatency) {
  for (const bool with_limiter : {false, true}) {
    SCOPED_TRACE(with_limiter ? "with a limiter" : "without a limiter");
    loopback_server server(refusing({0, 2}));
    covenant::http_engine engine(options_for(server));
    auto seen = std::make_shared<attempt_times>();
    covenant::contract_options o = covenant::testing::instant();
    o.observers.push_back(seen);
    const covenant::contract<Ask> ask{engine, o};
    covenant::call_options call;
    if (with_limiter) call.limiter = std::make_shared<covenant::rate_limiter>();  // backed off by the 429
    // Blocking (the limiter takes the call through the asynchronous driver), then asynchronous.
    const covenant::outcome<A> blocking = ask.run(Q{"q"}, call).outcome;
    const covenant::outcome<A> async = ask.run_async(Q{"q"}, call).get().outcome;
    EXPECT_EQ(server.requests(), 4u);
    for (const covenant::outcome<A>* out : {&blocking, &async}) {
      ASSERT_TRUE(out->success) << out->summary();
      ASSERT_EQ(out->attempts.size(), 1u);  // the 429 is the engine's business
      const covenant::attempt& a = out->attempts[0];
      EXPECT_GE(a.queued, 300ms);
      EXPECT_LT(a.queued, 3s);
      EXPECT_LT(a.latency, 150ms);  // two instant exchanges
      EXPECT_EQ(out->queued(), a.queued);
      EXPECT_GE(out->elapsed, a.queued + a.latency);
    }
    std::lock_guard lock(seen->mutex);
    ASSERT_EQ(seen->attempts.size(), 2u);
    EXPECT_EQ(seen->attempts[0].queued, blocking.attempts[0].queued);
  }
}

TEST(HttpEngineQueueTime, AnAttemptWhoseEngineGaveUpHasItsWaitsAsQueueTime) {
  loopback_server server(refusing({0, 1, 2}));
  auto eo = options_for(server);
  eo.retry.tries = 1;
  covenant::http_engine engine(eo);
  const covenant::contract<Ask> ask{engine, covenant::testing::instant()};
  const covenant::outcome<A> blocking = ask.run(Q{"q"}).outcome;
  ASSERT_FALSE(blocking.success);
  EXPECT_EQ(blocking.failed_stage, covenant::stage::engine);
  ASSERT_EQ(blocking.attempts.size(), 1u);
  EXPECT_GE(blocking.attempts[0].queued, 300ms);
  EXPECT_LT(blocking.attempts[0].latency, 150ms);
  EXPECT_EQ(server.requests(), 2u);
}

}  // namespace
