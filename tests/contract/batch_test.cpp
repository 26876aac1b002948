// Batch runs: order and completeness, bounded concurrency, lazy sources, failures, the batch's
// rate limiter (the limiter itself: tests/engine/rate_limiter_test.cpp), cancellation, deadlines,
// progress, threads.
#include <covenant/contract/batch.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/engine/rate_limiter.hpp>
#include <covenant/engine/runtime.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dirent.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "finish_counter.hpp"

namespace batch_test {

struct Record {
  int id = 0;
  int delay_ms = 0;
  bool fail = false;
};

struct Label {
  int id = 0;
  std::string label;
};

struct Classify {
  static constexpr std::string_view prompt = "Label the record.";
  Label forward(const Record& r, const covenant::outcome<Label>& o) const {
    return o.success ? *o.result : Label{r.id, "failed"};
  }
};

// Records the threads its hooks run on.
struct Traced {
  static constexpr std::string_view prompt = "Label the record.";
  std::mutex* mutex = nullptr;
  std::set<std::thread::id>* threads = nullptr;
  void note() const {
    std::lock_guard lock(*mutex);
    threads->insert(std::this_thread::get_id());
  }
  void pre(const Record&) const { note(); }
  void post(const Label&) const { note(); }
  Label forward(const Record& r, const covenant::outcome<Label>& o) const {
    note();
    return o.success ? *o.result : Label{r.id, "failed"};
  }
};

struct Throws {
  static constexpr std::string_view prompt = "Label the record.";
  Label forward(const Record& r, const covenant::outcome<Label>& o) const {
    if (r.id == 3) throw std::runtime_error("forward failed for record 3");
    return o.result.value_or(Label{});
  }
};

}  // namespace batch_test

namespace {

using namespace batch_test;
using namespace std::chrono_literals;
using covenant::testing::instant;

int field(const std::string& text, const std::string& key) {
  const auto at = text.find("\"" + key + "\":");
  if (at == std::string::npos) return 0;
  return std::stoi(text.substr(at + key.size() + 3));
}

/// Answers each request after the delay its record asks for (a runtime timer), echoing the id;
/// fails the records marked so; counts calls in flight; honours stop requests.
class delayed_engine final : public covenant::engine {
 public:
  ~delayed_engine() override { close(); }

  void start(const covenant::chat_request& request, std::shared_ptr<covenant::reply_receiver> receiver,
             std::stop_token stop) override {
    const std::string& input = request.messages.at(1).content;
    const int id = field(input, "id");
    const int delay = field(input, "delay_ms");
    const bool fail = input.find("\"fail\":true") != std::string::npos;
    {
      std::lock_guard lock(mutex_);
      ++calls_;
      ++in_flight_;
      max_in_flight_ = std::max(max_in_flight_, in_flight_);
    }
    auto state = std::make_shared<call>();
    state->receiver = std::move(receiver);
    state->owner = this;
    std::weak_ptr<call> weak = state;  // not the state itself: it would own itself
    state->watch.emplace(stop, [weak] {
      if (auto s = weak.lock()) s->end(covenant::engine_error::cancellation(), nullptr);
    });
    covenant::runtime::shared().schedule(std::chrono::milliseconds(delay), [state, id, fail] {
      if (fail) return state->end(covenant::engine_error("record failed on purpose", 500, true), nullptr);
      covenant::chat_response r;
      r.text = R"({"id": )" + std::to_string(id) + R"(, "label": "ok"})";
      r.usage = {20, 5};
      state->end(std::nullopt, &r);
    });
  }
  [[nodiscard]] covenant::engine_capabilities capabilities() const noexcept override { return {true, false}; }

  int max_in_flight() {
    std::lock_guard lock(mutex_);
    return max_in_flight_;
  }
  int calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  int in_flight() {
    std::lock_guard lock(mutex_);
    return in_flight_;
  }

 private:
  struct call {
    std::shared_ptr<covenant::reply_receiver> receiver;
    delayed_engine* owner = nullptr;
    std::atomic<bool> ended{false};
    std::optional<std::stop_callback<std::function<void()>>> watch;
    void end(std::optional<covenant::engine_error> error, covenant::chat_response* reply) {
      if (ended.exchange(true)) return;
      {
        std::lock_guard lock(owner->mutex_);
        --owner->in_flight_;
      }
      if (reply != nullptr) receiver->on_reply(std::move(*reply));
      else receiver->on_error(*error);
    }
  };
  std::mutex mutex_;
  int calls_ = 0;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
};

std::vector<Record> records(int n, int delay_mod = 7) {
  std::vector<Record> out;
  for (int i = 0; i < n; ++i) out.push_back({i, (i * 5) % delay_mod, false});
  return out;
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

// Application code that throws on the batch's thread (the sink, on_progress, query_id, the source)
// stops the batch: no call starts after it, the calls in flight are cancelled and waited for, and
// only then does run_batch rethrow it. Every call that started ended exactly once for observers,
// and none is left in the engine (the calls' continuations never outlive run_batch's frame).
TEST(Batch, ApplicationCodeThatThrowsEndsEveryCallBeforeTheBatchRethrows) {
  using counting = covenant_test::finish_counter;
  for (const std::string what : {"sink", "progress", "query_id", "source"}) {
    SCOPED_TRACE(what);
    delayed_engine model;
    auto seen = std::make_shared<counting>();
    covenant::contract_options options = instant();
    options.observers = {seen};
    const covenant::contract<Classify> c{model, options};
    // Record 0 answers at once; the others would take a minute: they are in flight when it throws.
    int taken = 0;
    auto source = [&]() -> std::optional<Record> {
      if (what == "source" && taken == 3) throw std::runtime_error("source failed");
      if (taken == 8) return std::nullopt;
      const int id = taken++;
      return Record{id, id == 0 ? 0 : 60'000, false};
    };
    covenant::batch_options o;
    o.concurrency = 4;
    if (what == "progress") {
      o.progress_every = 1ms;
      o.on_progress = [&](const covenant::batch_progress&) {
        if (model.calls() >= 4) throw std::runtime_error("progress failed");
      };
    }
    if (what == "query_id")
      o.query_id = [](std::size_t index) -> covenant::call_id {
        if (index == 2) throw std::runtime_error("query_id failed");
        return covenant::call_id("record-" + std::to_string(index));
      };
    int delivered = 0;
    try {
      (void)covenant::run_batch(c, source, [&](std::size_t, auto&&) {
        ++delivered;
        if (what == "sink") throw std::runtime_error("sink failed");
      }, o);
      ADD_FAILURE() << "run_batch returned";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), what + " failed");
    }
    // Every input taken was started, but the one whose query_id threw.
    const int started = taken - (what == "query_id" ? 1 : 0);
    EXPECT_GE(started, 2);                // (calls were in flight when it threw)
    EXPECT_EQ(model.in_flight(), 0);      // every call ended (cancelled) before run_batch threw
    EXPECT_EQ(seen->finished, started);   // each call that started finished once for observers
    EXPECT_LE(delivered, 1);              // nothing is delivered after the sink threw
  }
}

TEST(Batch, ResultsInInputOrderEachOnce) {
  delayed_engine model;
  const covenant::contract<Classify> c{model, instant()};
  std::vector<int> seen;
  auto summary = covenant::run_batch(c, records(200), [&](std::size_t index, auto&& r) {
    EXPECT_EQ(static_cast<int>(index), r.value.id);
    seen.push_back(r.value.id);
  }, {.concurrency = 20});
  ASSERT_EQ(seen.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(seen[static_cast<std::size_t>(i)], i);
  EXPECT_EQ(summary.done, 200u);
  EXPECT_EQ(summary.succeeded, 200u);
  EXPECT_EQ(summary.started, 200u);
  EXPECT_EQ(summary.in_flight, 0u);
  EXPECT_EQ(summary.total, 200u);
  EXPECT_EQ(summary.tokens_in, 200u * 20u);
  EXPECT_LE(model.max_in_flight(), 20);
  EXPECT_GT(model.max_in_flight(), 1);
}

TEST(Batch, ResultsAsTheyFinishEachOnce) {
  delayed_engine model;
  const covenant::contract<Classify> c{model, instant()};
  std::set<std::size_t> seen;
  bool out_of_order = false;
  std::size_t last = 0;
  covenant::batch_options o;
  o.concurrency = 30;
  o.order = covenant::batch_order::completion;
  auto summary = covenant::run_batch(c, records(150, 13), [&](std::size_t index, auto&& r) {
    EXPECT_TRUE(seen.insert(index).second);
    EXPECT_EQ(static_cast<int>(index), r.value.id);
    if (index < last) out_of_order = true;
    last = index;
  }, o);
  EXPECT_EQ(seen.size(), 150u);
  EXPECT_TRUE(out_of_order);  // records with shorter delays overtook earlier ones
  EXPECT_EQ(summary.done, 150u);
}

TEST(Batch, AGeneratorIsReadLazilyWithinTheWindow) {
  delayed_engine model;
  const covenant::contract<Classify> c{model, instant()};
  int produced = 0;
  std::size_t delivered = 0;
  int max_ahead = 0;
  auto generator = [&]() -> std::optional<Record> {
    if (produced == 500) return std::nullopt;
    max_ahead = std::max(max_ahead, produced - static_cast<int>(delivered));
    return Record{produced++, 1, false};
  };
  auto summary = covenant::run_batch(c, generator, [&](std::size_t, auto&&) { ++delivered; }, {.concurrency = 8});
  EXPECT_EQ(delivered, 500u);
  EXPECT_LE(max_ahead, 8);  // never more than the window taken ahead of what was delivered
  EXPECT_FALSE(summary.total.has_value());
}

TEST(Batch, AFailedRecordNeverStopsTheBatch) {
  delayed_engine model;
  const covenant::contract<Classify> c{model, instant()};
  auto in = records(40);
  for (auto& r : in)
    if (r.id % 10 == 3) r.fail = true;
  std::vector<std::string> labels;
  auto summary = covenant::run_batch(c, in, [&](std::size_t i, auto&& r) {
    labels.push_back(r.value.label);
    if (i % 10 == 3) {
      EXPECT_FALSE(r.outcome.success);
      EXPECT_EQ(r.outcome.failed_stage, covenant::stage::engine);
    }
  }, {.concurrency = 5});
  EXPECT_EQ(labels.size(), 40u);
  EXPECT_EQ(summary.failed, 4u);
  EXPECT_EQ(summary.succeeded, 36u);
  EXPECT_EQ(std::count(labels.begin(), labels.end(), "failed"), 4);
}

TEST(Batch, EachInputsCallsCarryTheQueryIdGivenForIt) {
  delayed_engine model;
  const covenant::contract<Classify> c{model, instant()};
  covenant::batch_options o;
  o.concurrency = 4;
  o.order = covenant::batch_order::completion;
  o.query_id = [](std::size_t index) {
    return index == 5 ? covenant::call_id() : covenant::call_id("record-" + std::to_string(index));
  };
  std::map<std::size_t, std::string> ids;
  covenant::run_batch(c, records(10), [&](std::size_t index, auto&& r) { ids[index] = r.outcome.query_id; }, o);
  ASSERT_EQ(ids.size(), 10u);
  for (std::size_t i = 0; i < 10; ++i) {
    if (i == 5) EXPECT_THAT(ids[i], ::testing::MatchesRegex("[0-9a-f]{16}"));  // empty: one is generated
    else EXPECT_EQ(ids[i], "record-" + std::to_string(i));
  }
}

TEST(Batch, EveryCallWaitsItsTurnUnderTheBatchsLimiter) {
  delayed_engine model;
  const covenant::contract<Classify> c{model, instant()};
  auto clock = std::make_shared<covenant::testing::manual_clock>();
  covenant::batch_options o;
  o.concurrency = 50;
  o.order = covenant::batch_order::completion;
  o.limiter = std::make_shared<covenant::rate_limiter>(covenant::rate_limiter_options{
      .requests_per_minute = 1200, .clock = [clock] { return (*clock)(); }});  // a burst of 20
  o.timeout = 60s;  // only so that a failure cannot hang: the clock decides, not the timeout
  std::size_t delivered = 0;
  int calls_at_the_burst = -1;
  auto summary = covenant::run_batch(c, records(40, 1), [&](std::size_t, auto&& r) {
    EXPECT_TRUE(r.outcome.success);
    if (++delivered == 20) {
      calls_at_the_burst = model.calls();
      clock->advance(1s);  // a second's worth: 20 more
    }
  }, o);
  EXPECT_EQ(calls_at_the_burst, 20);  // the 21st waited for the clock, with 30 slots free
  EXPECT_EQ(summary.done, 40u);
  EXPECT_EQ(summary.succeeded, 40u);
  EXPECT_EQ(model.calls(), 40);
  EXPECT_EQ(o.limiter->stats().granted, 40u);
}

TEST(Batch, RequestsPerMinuteGiveTheBatchALimiter) {
  delayed_engine model;
  const covenant::contract<Classify> c{model, instant()};
  std::stop_source stop;
  covenant::batch_options o;
  o.concurrency = 3;
  o.order = covenant::batch_order::completion;
  o.requests_per_minute = 1;  // one now, the next in a minute
  o.stop = stop.get_token();
  std::size_t cancelled = 0;
  auto summary = covenant::run_batch(c, records(3, 1), [&](std::size_t, auto&& r) {
    if (r.outcome.failed_stage == covenant::stage::cancelled) ++cancelled;
    stop.request_stop();  // the first result: the others are still waiting for their turn
  }, o);
  EXPECT_EQ(summary.started, 3u);  // the window is filled before anything is delivered
  EXPECT_EQ(model.calls(), 1);
  EXPECT_EQ(summary.succeeded, 1u);
  EXPECT_EQ(cancelled, 2u);
  EXPECT_EQ(summary.done, 3u);
}

TEST(Batch, CancelMidBatchDeliversEveryStartedRecord) {
  delayed_engine model;
  const covenant::contract<Classify> c{model, instant()};
  std::stop_source stop;
  std::size_t delivered = 0;
  std::size_t cancelled = 0;
  covenant::batch_options o;
  o.concurrency = 10;
  o.stop = stop.get_token();
  auto in = records(1000, 1);
  for (auto& r : in) r.delay_ms = r.id < 20 ? 1 : 5000;
  auto summary = covenant::run_batch(c, in, [&](std::size_t, auto&& r) {
    ++delivered;
    if (r.outcome.failed_stage == covenant::stage::cancelled) ++cancelled;
    if (delivered == 15) stop.request_stop();
  }, o);
  EXPECT_TRUE(summary.stopped);
  EXPECT_EQ(summary.started, delivered);  // nothing taken is lost
  EXPECT_EQ(summary.done, delivered);
  EXPECT_LT(summary.started, 1000u);
  EXPECT_GT(cancelled, 0u);
  EXPECT_EQ(summary.failed, cancelled);
}

TEST(Batch, TheDeadlineEndsCallsInFlightAndStopsReading) {
  delayed_engine model;
  const covenant::contract<Classify> c{model, instant()};
  auto in = records(100, 1);
  for (auto& r : in) r.delay_ms = 10'000;
  std::size_t deadline_hits = 0;
  covenant::batch_options o;
  o.concurrency = 10;
  o.timeout = 150ms;
  const auto t0 = std::chrono::steady_clock::now();
  auto summary = covenant::run_batch(c, in, [&](std::size_t, auto&& r) {
    if (r.outcome.failed_stage == covenant::stage::deadline) ++deadline_hits;
  }, o);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_TRUE(summary.stopped);
  EXPECT_EQ(summary.started, 10u);
  EXPECT_EQ(deadline_hits, 10u);
}

TEST(Batch, ProgressIsReportedAndTheLastReportIsTheSummary) {
  delayed_engine model;
  const covenant::contract<Classify> c{model, instant()};
  std::vector<covenant::batch_progress> reports;
  covenant::batch_options o;
  o.concurrency = 4;
  o.progress_every = 20ms;
  o.on_progress = [&](const covenant::batch_progress& p) { reports.push_back(p); };
  auto in = records(40, 1);
  for (auto& r : in) r.delay_ms = 10;
  auto summary = covenant::run_batch(c, in, [](std::size_t, auto&&) {}, o);
  ASSERT_GE(reports.size(), 2u);
  EXPECT_EQ(reports.back().done, summary.done);
  for (std::size_t i = 1; i < reports.size(); ++i) EXPECT_GE(reports[i].done, reports[i - 1].done);
  EXPECT_GT(summary.rate(), 0.0);
  EXPECT_THAT(summary.line(), ::testing::HasSubstr("40/40 done"));
}

TEST(Batch, ThreadsDoNotGrowWithConcurrency) {
  delayed_engine model;
  const covenant::contract<Classify> c{model, instant()};
  (void)covenant::run_batch(c, records(10, 1), [](std::size_t, auto&&) {}, {.concurrency = 2});  // warm up
  const std::size_t before = thread_count();
  std::size_t during = 0;
  auto in = records(400, 1);
  for (auto& r : in) r.delay_ms = 20;
  (void)covenant::run_batch(c, in, [&](std::size_t, auto&&) { during = std::max(during, thread_count()); },
                            {.concurrency = 200});
  EXPECT_GE(model.max_in_flight(), 100);
  EXPECT_LE(during, before + 1);
}

TEST(Batch, TheCallsWorkRunsOnTheBatchsThreadUnlessAskedOtherwise) {
  delayed_engine model;
  std::mutex m;
  std::set<std::thread::id> threads;
  const covenant::contract<Traced> c{model, instant(), Traced{&m, &threads}};
  auto in = records(60, 1);
  std::size_t delivered = 0;
  auto summary = covenant::run_batch(c, in, [&](std::size_t, auto&&) { ++delivered; }, {.concurrency = 20});
  EXPECT_EQ(summary.succeeded, 60u);
  EXPECT_EQ(delivered, 60u);
  EXPECT_EQ(threads, std::set<std::thread::id>{std::this_thread::get_id()});

  // On the runtime's workers instead.
  threads.clear();
  covenant::batch_options o;
  o.concurrency = 20;
  o.work_on_batch_thread = false;
  summary = covenant::run_batch(c, in, [](std::size_t, auto&&) {}, o);
  EXPECT_EQ(summary.succeeded, 60u);
  EXPECT_FALSE(threads.empty());
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
}

TEST(Batch, DynamicContractsBatchToo) {
  auto types = covenant::schema_set::parse("class Label {\n  id int\n  label string\n}\n");
  delayed_engine model;
  covenant::dynamic_contract c{model, {.name = "label", .prompt = "Label.", .output = types.model("Label")},
                               instant()};
  std::vector<boost::json::value> in;
  for (int i = 0; i < 30; ++i) in.push_back(boost::json::object{{"id", i}, {"delay_ms", i % 3}});
  std::vector<std::int64_t> ids;
  auto summary = covenant::run_batch(c, in, [&](std::size_t, covenant::dynamic_contract::call_result&& r) {
    ids.push_back(r.value.at("id").as_int64());
  });
  EXPECT_EQ(summary.succeeded, 30u);
  for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], static_cast<std::int64_t>(i));
}

TEST(Batch, AForwardExceptionIsRethrownAfterTheBatchOrHandedOver) {
  delayed_engine model;
  const covenant::contract<Throws> c{model, instant()};
  std::size_t delivered = 0;
  EXPECT_THROW((void)covenant::run_batch(c, records(10, 1), [&](std::size_t, auto&&) { ++delivered; }),
               std::runtime_error);
  EXPECT_EQ(delivered, 9u);
  std::vector<std::size_t> failed;
  covenant::batch_options o;
  o.on_exception = [&](std::size_t index, std::exception_ptr) { failed.push_back(index); };
  auto summary = covenant::run_batch(c, records(10, 1), [](std::size_t, auto&&) {}, o);
  EXPECT_THAT(failed, ::testing::ElementsAre(3u));
  EXPECT_EQ(summary.failed, 1u);
}

}  // namespace
