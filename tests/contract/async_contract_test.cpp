// Asynchronous and streamed contract calls: futures, continuations, coroutines, cancellation,
// deadlines, executors, streaming updates, and engines or contracts destroyed with calls in flight.
#include <covenant/contract/contract.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/testing/gtest.hpp>
#include <covenant/engine/runtime.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "qa_model.hpp"

namespace async_test {

using covenant_test::qa::Answer;
using covenant_test::qa::Question;

// The shared model's question and answer; post() wants a confidence of at least 0.5.
struct QA {
  static constexpr std::string_view prompt = "Answer the question.";
  void post(const Answer& a) const {
    if (a.confidence < 0.5) throw covenant::violation("confidence", "must be at least 0.5 for a final answer");
  }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const {
    return o.success ? *o.result : Answer{"I don't know.", 0};
  }
};

// Records the thread every hook runs on.
struct ThreadLog {
  std::mutex mutex;
  std::map<std::string, std::thread::id> where;
  void note(const std::string& hook) {
    std::lock_guard lock(mutex);
    where[hook] = std::this_thread::get_id();
  }
};

struct Traced {
  static constexpr std::string_view prompt = "Answer the question.";
  ThreadLog* log = nullptr;
  void pre(const Question&) const { log->note("pre"); }
  void post(const Answer&) const { log->note("post"); }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const {
    log->note("forward");
    return o.result.value_or(Answer{});
  }
};

struct Throws {
  static constexpr std::string_view prompt = "Answer the question.";
  Answer forward(const Question&, const covenant::outcome<Answer>&) const {
    throw std::runtime_error("forward failed on purpose");
  }
};

}  // namespace async_test

namespace {

using namespace async_test;
using namespace std::chrono_literals;
using covenant::testing::FailedAt;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using covenant::testing::Succeeded;
using ::testing::HasSubstr;

const std::string good = R"({"answer": "Paris", "confidence": 0.9})";
const std::string unsure = R"({"answer": "Paris?", "confidence": 0.2})";
const Question question{"What is the capital of France?"};

/// An engine that never answers on its own: a stop request ends the call with a cancellation;
/// destroying the engine ends every pending call with "the engine was destroyed".
class hanging_engine final : public covenant::engine {
 public:
  ~hanging_engine() override {
    refuse_calls();
    std::vector<std::shared_ptr<covenant::reply_receiver>> left;
    {
      std::lock_guard lock(mutex_);
      for (auto& [id, p] : pending_) {
        p->stop_watch.reset();
        if (!p->ended.exchange(true)) left.push_back(p->receiver);
      }
      pending_.clear();
    }
    for (auto& r : left) r->on_error(covenant::engine_error::cancellation("the engine was destroyed"));
    close();
  }

  void start(const covenant::chat_request&, std::shared_ptr<covenant::reply_receiver> receiver,
             std::stop_token stop) override {
    auto p = std::make_shared<pending>();
    p->receiver = std::move(receiver);
    std::size_t id = 0;
    {
      std::lock_guard lock(mutex_);
      id = next_++;
      pending_[id] = p;
      started_.notify_all();
    }
    p->stop_watch.emplace(stop, [p] {
      if (!p->ended.exchange(true)) p->receiver->on_error(covenant::engine_error::cancellation());
    });
    // The engine may have been destroyed between the two steps (it ended this call then): the
    // stop callback holds `p`, which holds the callback, so drop it or neither is ever freed.
    std::lock_guard lock(mutex_);
    if (pending_.count(id) == 0) p->stop_watch.reset();
  }
  [[nodiscard]] covenant::engine_capabilities capabilities() const noexcept override { return {true, false}; }

  /// Blocks until `n` calls have started.
  void wait_started(std::size_t n) {
    std::unique_lock lock(mutex_);
    started_.wait(lock, [&] { return next_ >= n; });
  }
  [[nodiscard]] std::size_t started() {
    std::lock_guard lock(mutex_);
    return next_;
  }

 private:
  struct stop_fn {
    std::function<void()> f;
    void operator()() const { f(); }
  };
  struct pending {
    std::shared_ptr<covenant::reply_receiver> receiver;
    std::atomic<bool> ended{false};
    std::optional<std::stop_callback<std::function<void()>>> stop_watch;
  };
  std::mutex mutex_;
  std::condition_variable started_;
  std::map<std::size_t, std::shared_ptr<pending>> pending_;
  std::size_t next_ = 0;
};

/// An engine that only implements the blocking complete().
class blocking_engine final : public covenant::engine {
 public:
  ~blocking_engine() override { close(); }
  covenant::chat_response complete(const covenant::chat_request&) override {
    ++calls;
    {
      std::unique_lock lock(mutex);
      released.wait(lock, [&] { return !held; });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    ++returned;
    covenant::chat_response r;
    r.text = good;
    return r;
  }
  /// Holds every complete() until release().
  void hold() {
    std::lock_guard lock(mutex);
    held = true;
  }
  void release() {
    {
      std::lock_guard lock(mutex);
      held = false;
    }
    released.notify_all();
  }
  std::atomic<int> calls{0};
  std::atomic<int> returned{0};
  int delay_ms = 0;

 private:
  std::mutex mutex;
  std::condition_variable released;
  bool held = false;
};

// A minimal coroutine type to co_await a covenant::future from.
struct task {
  struct promise_type {
    task get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
};

task ask(const covenant::contract<QA>& qa, std::promise<std::string>& out) {
  auto r = co_await qa.run_async(question);
  out.set_value(r.value.answer + (r.outcome.success ? " ok" : " failed"));
}

TEST(AsyncContract, RunAsyncGivesForwardsValueAndTheOutcome) {
  scripted_engine model{unsure, good};
  covenant::contract<QA> qa{model, instant({.tries = 2})};
  covenant::future<covenant::contract<QA>::call_result> f = qa.run_async(question);
  ASSERT_TRUE(f.valid());
  auto r = f.get();
  EXPECT_EQ(r.value.answer, "Paris");
  EXPECT_THAT(r.outcome, Succeeded());
  ASSERT_EQ(r.outcome.attempts.size(), 2u);
  EXPECT_THAT(r.outcome.attempts[0].issues.at(0).to_string(), HasSubstr("confidence: must be at least 0.5"));
  // The first violation was fed back in the second request, as in a blocking call.
  EXPECT_THAT(model.last_message(1), HasSubstr("confidence: must be at least 0.5 for a final answer"));
  EXPECT_EQ(qa.stats().of(covenant::perf_stage::total).count, 1u);
}

TEST(AsyncContract, SameOutcomeAsTheBlockingCall) {
  scripted_engine a{unsure, unsure, unsure};
  scripted_engine b{unsure, unsure, unsure};
  covenant::contract<QA> blocking{a, instant({.tries = 2})};
  covenant::contract<QA> async{b, instant({.tries = 2})};
  auto x = blocking.run(question);
  auto y = async.run_async(question).get();
  EXPECT_EQ(x.value.answer, y.value.answer);
  EXPECT_EQ(x.outcome.failed_stage, y.outcome.failed_stage);
  EXPECT_EQ(x.outcome.issues, y.outcome.issues);
  ASSERT_EQ(x.outcome.attempts.size(), y.outcome.attempts.size());
  for (std::size_t i = 0; i < x.outcome.attempts.size(); ++i) {
    EXPECT_EQ(x.outcome.attempts[i].text, y.outcome.attempts[i].text);
    EXPECT_EQ(x.outcome.attempts[i].issues, y.outcome.attempts[i].issues);
    EXPECT_EQ(x.outcome.attempts[i].waited, y.outcome.attempts[i].waited);
  }
  ASSERT_EQ(a.calls(), b.calls());
  for (std::size_t i = 0; i < a.calls(); ++i) EXPECT_EQ(a.request(i).messages, b.request(i).messages);
}

TEST(AsyncContract, ThenRunsOnceTheResultIsThere) {
  scripted_engine model{good};
  covenant::contract<QA> qa{model, instant()};
  std::promise<std::string> done;
  qa.run_async(question).then([&](covenant::future<covenant::contract<QA>::call_result> f) {
    done.set_value(f.get().value.answer);
  });
  EXPECT_EQ(done.get_future().get(), "Paris");
}

TEST(AsyncContract, ThenOnAReadyFutureRunsAtOnceAndTwiceIsAnError) {
  scripted_engine model{good};
  covenant::contract<QA> qa{model, instant()};
  auto f = qa.run_async(question);
  f.wait();
  EXPECT_TRUE(f.ready());
  bool ran = false;
  f.then([&](auto) { ran = true; });
  EXPECT_TRUE(ran);
  EXPECT_THROW(f.then([](auto) {}), std::logic_error);
}

TEST(AsyncContract, CoAwaitInACoroutine) {
  scripted_engine model{good};
  covenant::contract<QA> qa{model, instant()};
  std::promise<std::string> out;
  ask(qa, out);
  EXPECT_EQ(out.get_future().get(), "Paris ok");
}

TEST(AsyncContract, ForwardsExceptionGoesIntoTheFuture) {
  scripted_engine model{good};
  covenant::contract<Throws> c{model, instant()};
  auto f = c.run_async(question);
  EXPECT_THROW(
      {
        try {
          (void)f.get();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "forward failed on purpose");
          throw;
        }
      },
      std::runtime_error);
}

TEST(AsyncContract, HooksRunOnWorkersNotOnTheCallingThread) {
  ThreadLog log;
  scripted_engine model{good};
  covenant::contract<Traced> c{model, instant(), Traced{&log}};
  (void)c.run_async(question).get();
  ASSERT_EQ(log.where.size(), 3u);
  for (const auto& [hook, id] : log.where) EXPECT_NE(id, std::this_thread::get_id()) << hook;
}

TEST(AsyncContract, ACustomExecutorRunsEveryPieceOfTheCall) {
  ThreadLog log;
  scripted_engine model{unsure, good};
  covenant::contract<Traced> c{model, instant({.tries = 1}), Traced{&log}};
  std::atomic<int> posted{0};
  std::thread::id executor_thread;
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::function<void()>> queue;
  bool stop = false;
  std::thread worker([&] {
    executor_thread = std::this_thread::get_id();
    std::unique_lock lock(m);
    for (;;) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;
      auto f = std::move(queue.front());
      queue.erase(queue.begin());
      lock.unlock();
      f();
      lock.lock();
    }
  });
  covenant::call_options o;
  o.executor = [&](std::function<void()> f) {
    ++posted;
    std::lock_guard lock(m);
    queue.push_back(std::move(f));
    cv.notify_one();
  };
  auto r = c.run_async(question, o).get();
  {
    std::lock_guard lock(m);
    stop = true;
    cv.notify_one();
  }
  worker.join();
  EXPECT_THAT(r.outcome, Succeeded());
  EXPECT_GE(posted.load(), 1);
  for (const auto& [hook, id] : log.where) EXPECT_EQ(id, executor_thread) << hook;
}

/// An engine that keeps each call's receiver for the test to answer from a thread of its choice.
class handoff_engine final : public covenant::engine {
 public:
  ~handoff_engine() override { close(); }
  void start(const covenant::chat_request&, std::shared_ptr<covenant::reply_receiver> receiver,
             std::stop_token) override {
    std::lock_guard lock(mutex_);
    receivers_.push_back(std::move(receiver));
    cv_.notify_all();
  }
  [[nodiscard]] covenant::engine_capabilities capabilities() const noexcept override { return {true, false}; }
  std::shared_ptr<covenant::reply_receiver> take() {
    std::unique_lock lock(mutex_);
    cv_.wait(lock, [&] { return !receivers_.empty(); });
    auto r = std::move(receivers_.front());
    receivers_.erase(receivers_.begin());
    return r;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<covenant::reply_receiver>> receivers_;
};

TEST(AsyncContract, RunInlineRunsTheStartOnTheCallerAndTheRestOnTheThreadThatDeliversTheReply) {
  ThreadLog log;
  handoff_engine model;
  covenant::contract<Traced> c{model, instant({.tries = 1}), Traced{&log}};
  covenant::call_options o;
  o.executor = covenant::run_inline;
  auto f = c.run_async(question, o);
  // The start ran before run_async returned, here: the engine already has the call.
  ASSERT_EQ(log.where.count("pre"), 1u);
  EXPECT_EQ(log.where["pre"], std::this_thread::get_id());
  auto receiver = model.take();
  std::thread::id continuation_thread;
  f.then([&](covenant::future<covenant::contract<Traced>::call_result> done) {
    continuation_thread = std::this_thread::get_id();
    EXPECT_THAT(done.get().outcome, Succeeded());
  });
  std::thread::id deliverer_thread;
  std::thread deliverer([&] {
    deliverer_thread = std::this_thread::get_id();
    covenant::chat_response reply;
    reply.text = good;
    receiver->on_reply(std::move(reply));
  });
  deliverer.join();
  receiver.reset();
  // Reading, post, forward, the completion and the continuation all ran inside on_reply().
  EXPECT_EQ(log.where.at("post"), deliverer_thread);
  EXPECT_EQ(log.where.at("forward"), deliverer_thread);
  EXPECT_EQ(continuation_thread, deliverer_thread);
}

TEST(AsyncContract, RemedyWaitIsATimerThatBlocksNoWorker) {
  // One worker: a call waiting 30 s before its second attempt must not keep another call from
  // running and finishing on that worker.
  covenant::runtime rt{{.workers = 1}};
  scripted_engine slow_model{unsure, good};
  scripted_engine fast_model{good};
  covenant::contract_options waits;
  waits.retry = {.tries = 1, .delay = std::chrono::seconds(30), .jitter = 0.0};
  waits.runtime = &rt;
  covenant::contract<QA> slow{slow_model, waits};
  covenant::contract_options quick = instant();
  quick.runtime = &rt;
  covenant::contract<QA> fast{fast_model, quick};
  auto waiting = slow.run_async(question);
  auto other = fast.run_async(question);
  EXPECT_THAT(other.get().outcome, Succeeded());
  EXPECT_FALSE(waiting.ready());
  EXPECT_EQ(slow_model.calls(), 1u);
  waiting.cancel();
  auto r = waiting.get();
  EXPECT_THAT(r.outcome, FailedAt(covenant::stage::cancelled));
  EXPECT_EQ(slow_model.calls(), 1u);  // no call after the cancellation
  EXPECT_EQ(r.outcome.issues.at(0).code, covenant::issue_code::cancelled);
}

TEST(AsyncContract, CancelDuringTheTransferAbortsItAndForwardRuns) {
  hanging_engine model;
  covenant::contract<QA> qa{model, instant()};
  auto f = qa.run_async(question);
  model.wait_started(1);
  f.cancel();
  auto r = f.get();
  EXPECT_EQ(r.value.answer, "I don't know.");  // forward's fallback
  EXPECT_THAT(r.outcome, FailedAt(covenant::stage::cancelled));
  ASSERT_EQ(r.outcome.issues.size(), 1u);
  EXPECT_EQ(r.outcome.issues[0].code, covenant::issue_code::cancelled);
  ASSERT_EQ(r.outcome.attempts.size(), 1u);  // the interrupted attempt is recorded
  EXPECT_TRUE(r.outcome.attempts[0].engine_failed);
}

TEST(AsyncContract, AStopTokenCancelsToo) {
  hanging_engine model;
  covenant::contract<QA> qa{model, instant()};
  std::stop_source stop;
  auto f = qa.run_async(question, {.stop = stop.get_token()});
  model.wait_started(1);
  stop.request_stop();
  EXPECT_THAT(f.get().outcome, FailedAt(covenant::stage::cancelled));
}

TEST(AsyncContract, StoppedBeforeItStartsTheEngineIsNeverCalled) {
  scripted_engine model{good};
  covenant::contract<QA> qa{model, instant()};
  std::stop_source stop;
  stop.request_stop();
  auto r = qa.run_async(question, {.stop = stop.get_token()}).get();
  EXPECT_THAT(r.outcome, FailedAt(covenant::stage::cancelled));
  EXPECT_EQ(model.calls(), 0u);
  EXPECT_EQ(r.value.answer, "I don't know.");
}

TEST(AsyncContract, DeadlineDuringTheTransfer) {
  hanging_engine model;
  covenant::contract<QA> qa{model, instant()};
  auto r = qa.run_async(question, {.timeout = 50ms}).get();
  EXPECT_THAT(r.outcome, FailedAt(covenant::stage::deadline));
  ASSERT_EQ(r.outcome.issues.size(), 1u);
  EXPECT_EQ(r.outcome.issues[0].code, covenant::issue_code::deadline);
  EXPECT_THAT(r.outcome.issues[0].to_string(), HasSubstr("deadline passed"));
  EXPECT_THAT(r.outcome.summary(), HasSubstr("deadline"));
}

TEST(AsyncContract, DeadlineDuringTheRemedyWait) {
  scripted_engine model{unsure, good};
  covenant::contract_options o;
  o.retry = {.tries = 1, .delay = std::chrono::seconds(60), .jitter = 0.0};
  covenant::contract<QA> qa{model, o};
  const auto t0 = std::chrono::steady_clock::now();
  auto r = qa.run_async(question, {.timeout = 100ms}).get();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);
  EXPECT_THAT(r.outcome, FailedAt(covenant::stage::deadline));
  EXPECT_EQ(model.calls(), 1u);
  ASSERT_EQ(r.outcome.attempts.size(), 1u);  // the rejected attempt, kept
  EXPECT_FALSE(r.outcome.attempts[0].issues.empty());
}

TEST(AsyncContract, BlockingRunWithADeadlineStaysOnTheCallingThread) {
  ThreadLog log;
  hanging_engine model;
  covenant::contract<Traced> c{model, instant(), Traced{&log}};
  auto r = c.run(question, {.timeout = 50ms});
  EXPECT_THAT(r.outcome, FailedAt(covenant::stage::deadline));
  for (const auto& [hook, id] : log.where) EXPECT_EQ(id, std::this_thread::get_id()) << hook;
  EXPECT_EQ(log.where.count("forward"), 1u);
}

TEST(AsyncContract, BlockingRunWithAStopTokenSucceedsNormally) {
  scripted_engine model{unsure, good};
  covenant::contract<QA> qa{model, instant({.tries = 1})};
  std::stop_source stop;
  auto r = qa.run(question, {.stop = stop.get_token()});
  EXPECT_THAT(r.outcome, Succeeded());
  EXPECT_EQ(r.outcome.attempts.size(), 2u);
  // The call operator throws for a failed non-graceful contract, as without options.
  std::stop_source stopped;
  stopped.request_stop();
  EXPECT_THROW((void)qa(question, {.stop = stopped.get_token()}), covenant::contract_error);
}

TEST(AsyncContract, EngineDestroyedWithCallsInFlight) {
  auto model = std::make_unique<hanging_engine>();
  covenant::contract<QA> qa{*model, instant()};
  std::vector<covenant::future<covenant::contract<QA>::call_result>> calls;
  for (int i = 0; i < 5; ++i) calls.push_back(qa.run_async(question));
  model->wait_started(5);
  model.reset();
  for (auto& f : calls) {
    auto r = f.get();
    EXPECT_THAT(r.outcome, FailedAt(covenant::stage::cancelled));
    EXPECT_THAT(r.outcome.issues.at(0).to_string(), HasSubstr("the engine was destroyed"));
    EXPECT_EQ(r.value.answer, "I don't know.");
  }
}

TEST(AsyncContract, AnEngineDestroyedDuringTheWaitIsNotCalledAgain) {
  auto model = std::make_unique<scripted_engine>(std::initializer_list<covenant::testing::step>{unsure, good});
  covenant::contract_options o;
  o.retry = {.tries = 1, .delay = std::chrono::milliseconds(200), .jitter = 0.0};
  covenant::contract<QA> qa{*model, o};
  auto f = qa.run_async(question);
  while (model->calls() < 1) std::this_thread::sleep_for(1ms);
  model.reset();  // during the 0.2 s wait
  auto r = f.get();
  EXPECT_THAT(r.outcome, FailedAt(covenant::stage::cancelled));
  EXPECT_THAT(r.outcome.issues.at(0).to_string(), HasSubstr("the engine was destroyed"));
}

TEST(AsyncContract, ContractDestroyedWithCallsInFlightFinishesThem) {
  scripted_engine model{good};
  model.stream_in_chunks(4, 5ms);
  auto qa = std::make_unique<covenant::contract<QA>>(model, instant());
  auto f = qa->stream(question, [](const covenant::stream_update<Answer>&) {});
  qa.reset();
  auto r = f.get();
  EXPECT_THAT(r.outcome, Succeeded());
  EXPECT_EQ(r.value.answer, "Paris");
}

TEST(AsyncContract, AnEngineWithOnlyCompleteRunsOnThePoolAndCancelsPromptly) {
  blocking_engine model;
  covenant::contract<QA> qa{model, instant()};
  EXPECT_THAT(qa.run_async(question).get().outcome, Succeeded());
  model.hold();
  auto f = qa.run_async(question);
  while (model.calls < 2) std::this_thread::sleep_for(1ms);
  f.cancel();
  EXPECT_THAT(f.get().outcome, FailedAt(covenant::stage::cancelled));
  EXPECT_EQ(model.returned, 1);  // the call ended while the engine still held it
  model.release();
}

TEST(AsyncContract, AnEngineWithOnlyStartServesBlockingCalls) {
  scripted_engine inner{good};
  // An engine forwarding start() only: the base class's complete() waits for it.
  struct start_only final : covenant::engine {
    explicit start_only(covenant::engine& e) : inner(&e) {}
    ~start_only() override { close(); }
    void start(const covenant::chat_request& r, std::shared_ptr<covenant::reply_receiver> rec,
               std::stop_token s) override {
      inner->start(r, std::move(rec), std::move(s));
    }
    covenant::engine* inner;
  } model{inner};
  covenant::contract<QA> qa{model, instant()};
  EXPECT_THAT(qa.run(question).outcome, Succeeded());
}

TEST(AsyncContract, AnEngineWithNeitherFailsClearly) {
  struct nothing final : covenant::engine {
  } model;
  covenant::contract<QA> qa{model, instant()};
  auto r = qa.run(question);
  EXPECT_THAT(r.outcome, FailedAt(covenant::stage::engine));
  EXPECT_THAT(r.outcome.issues.at(0).to_string(), HasSubstr("implements neither complete() nor start()"));
}

TEST(StreamedContract, UpdatesFollowEachAttemptAndARejectionStartsAFreshOne) {
  scripted_engine model{unsure, good};
  model.stream_in_chunks(7);
  covenant::contract<QA> qa{model, instant({.tries = 1})};
  std::vector<std::string> log;
  std::string text1;
  std::string text2;
  auto r = qa.stream(question, [&](const covenant::stream_update<Answer>& u) {
               if (u.what == covenant::stream_update<Answer>::kind::attempt_started) {
                 log.push_back("start " + std::to_string(u.attempt) + (u.rejected ? " after rejection" : ""));
                 if (u.rejected) {
                   EXPECT_EQ(u.rejected->issues.size(), 1u);
                 }
               } else {
                 (u.attempt == 1 ? text1 : text2) = std::string(u.text);
               }
             }).get();
  EXPECT_THAT(r.outcome, Succeeded());
  EXPECT_THAT(log, ::testing::ElementsAre("start 1", "start 2 after rejection"));
  EXPECT_EQ(text1, unsure);
  EXPECT_EQ(text2, good);
  EXPECT_TRUE(model.request(0).stream);
  EXPECT_EQ(model.streamed_bytes(0), unsure.size());
}

TEST(StreamedContract, CancelMidStreamStopsTheTransfer) {
  const std::string long_reply = R"({"answer": ")" + std::string(400, 'x') + R"(", "confidence": 0.9})";
  scripted_engine model{long_reply};
  model.stream_in_chunks(8, 10ms);
  covenant::contract<QA> qa{model, instant()};
  std::atomic<int> updates{0};
  std::promise<void> first;
  auto f = qa.stream(question, [&](const covenant::stream_update<Answer>& u) {
    if (u.what == covenant::stream_update<Answer>::kind::partial && updates++ == 0) first.set_value();
  });
  first.get_future().wait();
  f.cancel();
  auto r = f.get();
  EXPECT_THAT(r.outcome, FailedAt(covenant::stage::cancelled));
  ASSERT_EQ(r.outcome.attempts.size(), 1u);
  EXPECT_FALSE(r.outcome.attempts[0].text.empty());  // what arrived is kept on the attempt
  EXPECT_LT(r.outcome.attempts[0].text.size(), long_reply.size());
  // The engine saw the stop and sent nothing more (a stream that ignored it would run to its end).
  for (int i = 0; i < 500 && !model.stopped(0); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(model.stopped(0));
  EXPECT_LT(model.streamed_bytes(0), long_reply.size());
}

TEST(StreamedContract, DynamicContractsStreamToo) {
  auto types = covenant::schema_set::parse("class Answer {\n  answer string\n  confidence float\n}\n");
  scripted_engine model{good};
  model.stream_in_chunks(5);
  covenant::dynamic_contract c{model, {.name = "qa", .prompt = "Answer.", .output = types.model("Answer")}};
  std::string seen;
  auto [value, o] = c.stream(boost::json::object{{"text", "capital of France?"}},
                             [&](const covenant::stream_update<boost::json::value>& u) { seen = std::string(u.text); })
                        .get();
  EXPECT_THAT(o, Succeeded());
  EXPECT_EQ(value, *o.result);  // run(), run_async() and stream() return the value beside the outcome
  EXPECT_EQ(seen, good);
  EXPECT_EQ(o.result->at("answer").as_string(), "Paris");
  auto o2 = c.run_async(boost::json::object{{"text", "again"}}).get();
  EXPECT_THAT(o2, covenant::testing::FailedAt(covenant::stage::engine));  // the script is exhausted
  EXPECT_TRUE(o2.value.is_null());  // a failed call has no value
}

}  // namespace
