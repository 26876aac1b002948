// covenant::future's members as docs/contracts.md's reference table states them: wait_for()'s bool,
// get() once (and an exception on every get()), copies sharing one call, then() on the calling or
// the completing thread, co_await as the continuation, cancel() after the end, a future without a
// call, and a call whose futures are all dropped.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/future.hpp>
#include <covenant/contract/observer.hpp>
#include <covenant/testing/gtest.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <coroutine>
#include <exception>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>

namespace future_test {

struct Question {
  std::string text;
};
struct Answer {
  std::string answer;
};

struct Ask {
  static constexpr std::string_view prompt = "Answer the question.";
  std::promise<std::string>* forwarded = nullptr;  // told when forward runs
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const {
    Answer a = o.result.value_or(Answer{"I don't know."});
    if (forwarded != nullptr) forwarded->set_value(a.answer);
    return a;
  }
};

}  // namespace future_test

namespace {

using namespace future_test;
using namespace std::chrono_literals;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using covenant::testing::Succeeded;

const std::string good = R"({"answer": "Paris"})";

TEST(Future, WaitForReturnsABoolThatSaysWhetherTheResultIsThere) {
  auto [f, state] = covenant::detail::make_future<int>();
  static_assert(std::is_same_v<decltype(f.wait_for(1ms)), bool>);
  EXPECT_FALSE(f.wait_for(1ms));  // timed out
  EXPECT_FALSE(f.wait_for(0ms));
  EXPECT_FALSE(f.wait_for(-5ms));
  EXPECT_FALSE(f.ready());
  state->set_value(7);
  EXPECT_TRUE(f.wait_for(0ms));
  EXPECT_TRUE(f.wait_for(1h));  // returns at once
  EXPECT_TRUE(f.ready());
  EXPECT_EQ(f.get(), 7);
}

TEST(Future, GetMovesTheResultOutOnceAndTheFutureStaysValid) {
  auto [f, state] = covenant::detail::make_future<std::string>();
  state->set_value(std::string("once"));
  f.wait();
  EXPECT_EQ(f.get(), "once");
  EXPECT_TRUE(f.valid());
  EXPECT_TRUE(f.ready());
  EXPECT_THROW((void)f.get(), std::logic_error);
}

TEST(Future, CopiesShareOneResultOneGetAndOneContinuation) {
  auto [f, state] = covenant::detail::make_future<int>();
  covenant::future<int> copy = f;
  copy.then([](covenant::future<int>) {});
  EXPECT_THROW(f.then([](covenant::future<int>) {}), std::logic_error);
  state->set_value(3);
  EXPECT_EQ(copy.get(), 3);
  EXPECT_THROW((void)f.get(), std::logic_error);
}

TEST(Future, AnExceptionIsRethrownOnEveryGet) {
  auto [f, state] = covenant::detail::make_future<int>();
  state->set_exception(std::make_exception_ptr(std::runtime_error("forward threw")));
  EXPECT_THROW((void)f.get(), std::runtime_error);
  EXPECT_THROW((void)f.get(), std::runtime_error);
}

TEST(Future, WithoutACallOnlyValidAndCancelDoNotThrow) {
  covenant::future<int> none;
  EXPECT_FALSE(none.valid());
  none.cancel();  // nothing to cancel
  EXPECT_THROW((void)none.ready(), std::logic_error);
  EXPECT_THROW(none.wait(), std::logic_error);
  EXPECT_THROW((void)none.wait_for(1ms), std::logic_error);
  EXPECT_THROW((void)none.get(), std::logic_error);
  EXPECT_THROW(none.then([](covenant::future<int>) {}), std::logic_error);

  auto [f, state] = covenant::detail::make_future<int>();
  covenant::future<int> moved = std::move(f);
  EXPECT_FALSE(f.valid());  // NOLINT(bugprone-use-after-move): what a moved-from future says
  EXPECT_TRUE(moved.valid());
}

TEST(Future, ThenRunsAtOnceOnTheCallingThreadWhenTheResultIsThere) {
  auto [f, state] = covenant::detail::make_future<int>();
  state->set_value(1);
  std::thread::id ran_on;
  int got = 0;
  f.then([&](covenant::future<int> done) {
    ran_on = std::this_thread::get_id();
    got = done.get();
  });
  EXPECT_EQ(ran_on, std::this_thread::get_id());  // before then() returned
  EXPECT_EQ(got, 1);
}

TEST(Future, ThenRunsOnTheCompletingThreadAfterWaitersWereWoken) {
  auto [f, state] = covenant::detail::make_future<int>();
  std::thread::id ran_on;
  f.then([&](covenant::future<int> done) {
    ran_on = std::this_thread::get_id();
    EXPECT_TRUE(done.ready());
  });
  EXPECT_EQ(ran_on, std::thread::id{});  // not yet
  std::thread::id completer;
  std::thread t([&, s = state] {
    completer = std::this_thread::get_id();
    s->set_value(2);
  });
  t.join();
  EXPECT_EQ(ran_on, completer);
}

struct task {
  struct promise_type {
    task get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
};

task await_into(covenant::future<int> f, std::promise<int>& out, std::promise<bool>& threw) {
  try {
    out.set_value(co_await f);
    threw.set_value(false);
  } catch (const std::logic_error&) {
    threw.set_value(true);
  }
}

TEST(Future, CoAwaitIsTheContinuationAndGivesGetsResult) {
  {
    auto [f, state] = covenant::detail::make_future<int>();
    std::promise<int> out;
    std::promise<bool> threw;
    await_into(f, out, threw);  // suspends: no result yet
    EXPECT_THROW(f.then([](covenant::future<int>) {}), std::logic_error);
    state->set_value(5);
    EXPECT_EQ(out.get_future().get(), 5);
    EXPECT_FALSE(threw.get_future().get());
    EXPECT_THROW((void)f.get(), std::logic_error);  // co_await took it
  }
  {
    auto [f, state] = covenant::detail::make_future<int>();
    f.then([](covenant::future<int>) {});
    std::promise<int> out;
    std::promise<bool> threw;
    await_into(f, out, threw);  // after then(), on a call not yet over
    EXPECT_TRUE(threw.get_future().get());
    state->set_value(0);
  }
}

TEST(Future, CancelAfterTheCallEndedChangesNothing) {
  scripted_engine model{good};
  const covenant::contract<Ask> c{model, instant()};
  auto f = c.run_async(Question{"Capital of France?"});
  f.wait();
  f.cancel();
  f.cancel();
  auto r = f.get();
  EXPECT_THAT(r.outcome, Succeeded());
  EXPECT_EQ(r.value.answer, "Paris");
}

TEST(Future, DroppingEveryFutureNeitherWaitsForNorCancelsTheCall) {
  scripted_engine model{good};
  model.stream_in_chunks(2, 2ms);  // the reply takes a while
  std::promise<std::string> forwarded;
  // Told when the call has finished everything after forward (its statistics and its log line),
  // so that the test does not end, and the process exit, under a call still running.
  struct finish_watch final : covenant::observer {
    std::promise<void> finished;
    void on_finished(const covenant::finished_event&) override { finished.set_value(); }
  };
  auto watch = std::make_shared<finish_watch>();
  covenant::contract_options options = instant();
  options.observers.push_back(watch);
  const covenant::contract<Ask> c{model, options, Ask{&forwarded}};
  const auto before = std::chrono::steady_clock::now();
  (void)c.stream(Question{"Capital of France?"}, [](const covenant::stream_update<Answer>&) {});
  EXPECT_LT(std::chrono::steady_clock::now() - before, 2s);
  auto answer = forwarded.get_future();
  ASSERT_EQ(answer.wait_for(30s), std::future_status::ready);
  EXPECT_EQ(answer.get(), "Paris");  // the call ran to its end, not cancelled
  EXPECT_EQ(watch->finished.get_future().wait_for(30s), std::future_status::ready);
}

}  // namespace
