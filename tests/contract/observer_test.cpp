// Observers: every event of a call, in order, with the call's id; a throwing observer changes
// nothing; per-attempt stage figures.
#include <covenant/contract/contract.hpp>
#include <covenant/contract/observer.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace observer_test {

struct Question {
  std::string text;
};

struct Answer {
  std::string answer;
  double confidence = 0;
};

struct QA {
  static constexpr std::string_view prompt = "Answer.";
  void post(const Answer& a) const {
    if (a.answer == "?") throw covenant::violation("answer", "must not be a question mark");
  }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

}  // namespace observer_test

template <>
struct covenant::describe<observer_test::Answer> {
  static constexpr auto fields = covenant::fields<observer_test::Answer>(
      covenant::field<&observer_test::Answer::answer>("The answer."),
      covenant::field<&observer_test::Answer::confidence>("Confidence.", covenant::on_fail::fix(covenant::range{0.0, 1.0})));
};

namespace {

using namespace observer_test;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using ::testing::ElementsAre;

// Records each event as one line.
struct recorder : covenant::observer {
  std::mutex m;
  std::vector<std::string> lines;
  std::vector<std::string> ids;
  void add(std::string line, std::string_view id) {
    std::lock_guard lock(m);
    lines.push_back(std::move(line));
    ids.emplace_back(id);
  }
  void on_request(const covenant::request_event& e) override {
    add("request " + std::to_string(e.attempt) + " (" + std::to_string(e.request.messages.size()) + " messages)",
        e.call.query_id);
  }
  void on_stream(const covenant::stream_event& e) override { add("stream " + std::string(e.delta), e.call.query_id); }
  void on_attempt(const covenant::attempt_event& e) override {
    add("attempt " + std::to_string(e.a.number) + " " + std::string(covenant::to_string(e.verdict)) + " issues " +
            std::to_string(e.a.issues.size()) + " retries " + std::to_string(e.retries),
        e.call.query_id);
  }
  void on_action(const covenant::action_event& e) override {
    add("action " + std::string(covenant::to_string(e.action)) + " " + (e.note ? e.note->path.to_string() : "-"),
        e.call.query_id);
  }
  void on_retry(const covenant::retry_event& e) override {
    add("retry " + std::to_string(e.next_attempt) + " after " +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(e.wait).count()) + " ms about " +
            std::to_string(e.issues.size()) + " issue",
        e.call.query_id);
  }
  void on_finished(const covenant::finished_event& e) override {
    add(std::string("finished ") + (e.outcome.success ? "ok" : "failed") + " calls " +
            std::to_string(e.outcome.calls()) + " contract " + std::string(e.call.contract),
        e.call.query_id);
  }
};

struct thrower : covenant::observer {
  void on_request(const covenant::request_event&) override { throw std::runtime_error("observer broke"); }
  void on_finished(const covenant::finished_event&) override { throw 42; }
};

covenant::contract_options with(std::vector<std::shared_ptr<covenant::observer>> observers) {
  covenant::contract_options o = instant({.tries = 3, .delay = std::chrono::milliseconds(250), .jitter = 0});
  o.observers = std::move(observers);
  return o;
}

TEST(Observer, SeesEveryEventOfACallInOrderWithItsId) {
  auto rec = std::make_shared<recorder>();
  scripted_engine model{R"({"answer": "?", "confidence": 0.5})", R"({"answer": "Paris", "confidence": 1.5})"};
  covenant::contract<QA> qa{model, with({rec})};
  covenant::call_options call;
  call.query_id = "q-17";
  auto r = qa.run(Question{"capital?"}, call);
  ASSERT_TRUE(r.outcome.success);
  EXPECT_EQ(r.outcome.query_id, "q-17");
  EXPECT_THAT(rec->lines, ElementsAre("request 1 (2 messages)", "attempt 1 rejected issues 1 retries 0",
                                      "retry 2 after 250 ms about 1 issue", "request 2 (4 messages)",
                                      "action fix confidence", "attempt 2 accepted issues 0 retries 1",
                                      "finished ok calls 2 contract QA"));
  for (const auto& id : rec->ids) EXPECT_EQ(id, "q-17");
}

TEST(Observer, ACallWithoutAnIdGetsOneGenerated) {
  auto rec = std::make_shared<recorder>();
  scripted_engine model{R"({"answer": "Paris", "confidence": 0.5})", R"({"answer": "Rome", "confidence": 0.5})"};
  covenant::contract<QA> qa{model, with({rec})};
  auto first = qa.run(Question{"a"});
  auto second = qa.run(Question{"b"});
  EXPECT_EQ(first.outcome.query_id.size(), 16u);
  EXPECT_NE(first.outcome.query_id, second.outcome.query_id);
  ASSERT_FALSE(rec->ids.empty());
  EXPECT_EQ(rec->ids.front(), first.outcome.query_id);
  EXPECT_EQ(rec->ids.back(), second.outcome.query_id);
}

TEST(Observer, FailuresAndStreamsAreReported) {
  auto rec = std::make_shared<recorder>();
  scripted_engine model{R"({"answer": "?", "confidence": 0.5})"};
  covenant::contract_options o = with({rec});
  o.post_remedy = false;
  covenant::contract<QA> qa{model, o};
  (void)qa.run(Question{"q"});
  EXPECT_THAT(rec->lines, ElementsAre("request 1 (2 messages)", "attempt 1 failed issues 1 retries 0",
                                      "finished failed calls 1 contract QA"));

  auto streamed = std::make_shared<recorder>();
  scripted_engine chunks{R"({"answer": "Paris", "confidence": 0.5})"};
  chunks.stream_in_chunks(16);
  covenant::contract<QA> sqa{chunks, with({streamed})};
  auto r = sqa.stream(Question{"q"}, [](const auto&) {}).get();
  ASSERT_TRUE(r.outcome.success);
  std::string text;
  for (const auto& l : streamed->lines)
    if (l.rfind("stream ", 0) == 0) text += l.substr(7);
  EXPECT_EQ(text, R"({"answer": "Paris", "confidence": 0.5})");
}

TEST(Observer, OneThatThrowsIsIgnoredAndTheOthersStillSeeEverything) {
  auto rec = std::make_shared<recorder>();
  scripted_engine model{R"({"answer": "Paris", "confidence": 0.5})"};
  covenant::contract<QA> qa{model, with({std::make_shared<thrower>(), rec})};
  auto r = qa.run(Question{"q"});
  EXPECT_TRUE(r.outcome.success);
  EXPECT_EQ(r.value.answer, "Paris");
  EXPECT_THAT(rec->lines, ElementsAre("request 1 (2 messages)", "attempt 1 accepted issues 0 retries 0",
                                      "finished ok calls 1 contract QA"));
}

TEST(PerAttemptStats, EngineParseAndValidateAreCountedOncePerModelCall) {
  scripted_engine model{R"({"answer": "?", "confidence": 0.5})", R"({"answer": "?", "confidence": 0.5})",
                        R"({"answer": "Paris", "confidence": 0.5})"};
  covenant::contract_options o = with({});
  o.clock = [t = std::chrono::steady_clock::time_point{}]() mutable { return t += std::chrono::milliseconds(1); };
  covenant::contract<QA> qa{model, o};
  (void)qa.run(Question{"q"});
  const auto& stats = qa.stats();
  EXPECT_EQ(stats.of(covenant::perf_stage::engine).count, 1u);
  EXPECT_EQ(stats.per_attempt(covenant::perf_stage::engine).count, 3u);
  EXPECT_EQ(stats.per_attempt(covenant::perf_stage::validate).count, 3u);
  EXPECT_EQ(stats.per_attempt(covenant::perf_stage::engine).total, stats.of(covenant::perf_stage::engine).total);
  // (means are rounded to whole nanoseconds)
  EXPECT_NEAR(static_cast<double>((stats.per_attempt(covenant::perf_stage::engine).mean * 3).count()),
              static_cast<double>(stats.of(covenant::perf_stage::engine).mean.count()), 3.0);
  EXPECT_EQ(stats.per_attempt(covenant::perf_stage::post).count, 0u);
  EXPECT_THAT(stats.table(), ::testing::HasSubstr("per attempt (one model call each):"));
  EXPECT_EQ(stats.to_json().at("per_attempt").at("engine").at("count").as_uint64(), 3u);
}

}  // namespace
