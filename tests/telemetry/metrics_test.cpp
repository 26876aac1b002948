// Contract metrics (covenant/telemetry/metrics.hpp): what each call adds, field paths as labels, bounded
// label values, and the rendered text through `promtool check metrics`.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/prices.hpp>
#include <covenant/telemetry/metrics.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "lookup_tool.hpp"

namespace metrics_test {

struct Question {
  std::string text;
};

struct Source {
  std::string url;
};

struct Answer {
  std::string answer;
  double confidence = 0;
  std::vector<Source> sources;
};

struct QA {
  static constexpr std::string_view prompt = "Answer.";
  void post(const Answer& a) const {
    if (a.answer == "?") throw covenant::violation("answer", "must not be a question mark");
  }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

using covenant_test::lookup::Lookup;

struct Researcher {
  static constexpr std::string_view prompt = "Answer from what the lookups find.";
  covenant::toolset<Lookup> tools;
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

}  // namespace metrics_test

template <>
struct covenant::describe<metrics_test::Source> {
  static constexpr auto fields =
      covenant::fields<metrics_test::Source>(covenant::field<&metrics_test::Source::url>("Address.", covenant::url{}));
};

template <>
struct covenant::describe<metrics_test::Answer> {
  static constexpr auto fields = covenant::fields<metrics_test::Answer>(
      covenant::field<&metrics_test::Answer::answer>("The answer."),
      covenant::field<&metrics_test::Answer::confidence>("Confidence.", covenant::on_fail::fix(covenant::range{0.0, 1.0})),
      covenant::field<&metrics_test::Answer::sources>("Sources."));
};

namespace {

using namespace metrics_test;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using covenant::testing::step;
using ::testing::HasSubstr;

covenant::contract_options observed(const std::shared_ptr<covenant::metrics>& m, int tries = 2) {
  covenant::contract_options o = instant({.tries = tries});
  o.observers.push_back(m);
  return o;
}

// The value of the sample line that starts with `series` ("name{labels}"), or -1.
double sample(const std::string& text, const std::string& series) {
  std::size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') return std::stod(text.substr(at + series.size() + 1));
    at += series.size();
  }
  return -1;
}

TEST(Metrics, EachCallAddsItsCallsAttemptsTokensIssuesAndActions) {
  auto m = std::make_shared<covenant::metrics>();
  scripted_engine model{step(R"({"answer": "?", "confidence": 0.5, "sources": [{"url": "nope"}]})", {100, 20}),
                        step(R"({"answer": "Paris", "confidence": 1.5, "sources": []})", {120, 10})};
  covenant::contract<QA> qa{model, observed(m, 1)};
  ASSERT_TRUE(qa.run(Question{"a"}).outcome.success);
  // A second contract of the same name, without remedy: one model call, failed at post.
  scripted_engine other{step(R"({"answer": "?", "confidence": 0.5, "sources": []})", {10, 1})};
  covenant::contract_options once = observed(m);
  once.post_remedy = false;
  covenant::contract<QA> qa2{other, once};
  ASSERT_FALSE(qa2.run(Question{"b"}).outcome.success);
  const std::string text = m->render();
  EXPECT_EQ(sample(text, R"(covenant_calls_total{contract="QA"})"), 2);
  EXPECT_EQ(sample(text, R"(covenant_call_successes_total{contract="QA"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_call_failures_total{contract="QA",stage="post"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_call_failure_issues_total{code="postcondition_violation",contract="QA"})"), -1)
      << "labels are written in declaration order";
  EXPECT_EQ(sample(text, R"(covenant_call_failure_issues_total{contract="QA",code="postcondition_violation"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_call_failure_fields_total{contract="QA",field="answer"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_model_calls_total{contract="QA"})"), 3);
  EXPECT_EQ(sample(text, R"(covenant_retries_total{contract="QA"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_input_tokens_total{contract="QA"})"), 230);
  EXPECT_EQ(sample(text, R"(covenant_output_tokens_total{contract="QA"})"), 31);
  // The first reply's schema issue: sources[0].url, a path with its index dropped.
  EXPECT_EQ(sample(text, R"(covenant_attempt_issue_fields_total{contract="QA",field="sources[].url"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_attempt_issues_total{contract="QA",code="constraint_violation"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_actions_total{contract="QA",action="fix"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_notes_total{contract="QA",kind="fixed"})"), 1);
  // Attempts per call: 2 for the first call, 1 for the second.
  EXPECT_EQ(sample(text, R"(covenant_call_attempts_bucket{contract="QA",le="1"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_call_attempts_bucket{contract="QA",le="2"})"), 2);
  EXPECT_EQ(sample(text, R"(covenant_call_attempts_sum{contract="QA"})"), 3);
  EXPECT_EQ(sample(text, R"(covenant_model_call_duration_seconds_count{contract="QA"})"), 3);
  EXPECT_EQ(sample(text, R"(covenant_call_duration_seconds_count{contract="QA"})"), 2);
  EXPECT_THAT(text, HasSubstr("# TYPE covenant_call_duration_seconds histogram\n"));
  // Seed figures: retries per call (distribution and average), success rate.
  EXPECT_EQ(sample(text, R"(covenant_call_retries_bucket{contract="QA",le="0"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_call_retries_bucket{contract="QA",le="1"})"), 2);
  EXPECT_EQ(sample(text, R"(covenant_call_retries_average{contract="QA"})"), 0.5);
  EXPECT_EQ(sample(text, R"(covenant_call_success_ratio{contract="QA"})"), 0.5);
}

TEST(Metrics, CostIsCountedByTheModelThatAnsweredWithTheCachedAndReasoningTokens) {
  auto m = std::make_shared<covenant::metrics>();
  scripted_engine model{step(R"({"answer": "?", "confidence": 0.5, "sources": []})", covenant::usage{1000, 100, 400, 0, 60}),
                        step(R"({"answer": "Paris", "confidence": 0.9, "sources": []})", covenant::usage{1000, 50, 900, 0, 0})};
  covenant::contract_options o = observed(m);
  auto prices = std::make_shared<covenant::price_table>();
  prices->set("scripted", covenant::token_price{1, 4});
  o.prices = prices;
  covenant::contract<QA> qa{model, o};
  const covenant::outcome<Answer> outcome = qa.run(Question{"a"}).outcome;
  ASSERT_TRUE(outcome.success);
  const std::string text = m->render();
  EXPECT_DOUBLE_EQ(sample(text, R"(covenant_cost_usd_total{contract="QA",model="scripted"})"), *outcome.cost_usd);
  EXPECT_DOUBLE_EQ(*outcome.cost_usd, (2000 * 1.0 + 150 * 4.0) / 1e6);
  EXPECT_EQ(sample(text, R"(covenant_cached_input_tokens_total{contract="QA"})"), 1300);
  EXPECT_EQ(sample(text, R"(covenant_reasoning_tokens_total{contract="QA"})"), 60);
}

TEST(Metrics, QueueTimeHasItsOwnHistogramApartFromModelCallLatency) {
  auto m = std::make_shared<covenant::metrics>();
  // The first reply waited 1.5 s between the engine's exchanges (a Retry-After, say) and is
  // rejected; the second waited for nothing.
  scripted_engine model([](const covenant::chat_request&, std::size_t i) {
    covenant::chat_response r;
    r.text = i == 0 ? R"({"answer": "?", "confidence": 0.5, "sources": []})"
                    : R"({"answer": "Paris", "confidence": 0.5, "sources": []})";
    if (i == 0) r.queued = std::chrono::milliseconds(1500);
    return r;
  });
  covenant::contract<QA> qa{model, observed(m)};
  const auto r = qa.run(Question{"a"});
  ASSERT_TRUE(r.outcome.success);
  EXPECT_EQ(r.outcome.attempts[0].queued, std::chrono::milliseconds(1500));
  const std::string text = m->render();
  EXPECT_THAT(text, HasSubstr("# TYPE covenant_queue_seconds histogram\n"));
  EXPECT_THAT(text, HasSubstr("# HELP covenant_queue_seconds "));
  EXPECT_EQ(sample(text, R"(covenant_queue_seconds_count{contract="QA"})"), 2);  // one per attempt
  EXPECT_EQ(sample(text, R"(covenant_queue_seconds_sum{contract="QA"})"), 1.5);
  EXPECT_EQ(sample(text, R"(covenant_queue_seconds_bucket{contract="QA",le="0.05"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_queue_seconds_bucket{contract="QA",le="1"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_queue_seconds_bucket{contract="QA",le="2"})"), 2);
  EXPECT_EQ(sample(text, R"(covenant_queue_seconds_bucket{contract="QA",le="+Inf"})"), 2);
  // The wait is not the model's latency.
  EXPECT_EQ(sample(text, R"(covenant_model_call_duration_seconds_count{contract="QA"})"), 2);
  EXPECT_LT(sample(text, R"(covenant_model_call_duration_seconds_sum{contract="QA"})"), 1.0);
}

// An agent's replies: step 1 looks up "Paris", an empty topic (pre refuses it) and calls a tool
// that does not exist; step 2 looks up "France"; then the answer.
scripted_engine research_script() {
  return scripted_engine([](const covenant::chat_request&, std::size_t i) {
    covenant::chat_response r;
    if (i == 0) {
      r.tool_calls = {{"c1", "lookup", R"({"topic": "Paris"})"}, {"c2", "lookup", R"({"topic": ""})"},
                      {"c3", "search", R"({"q": "Paris"})"}};
      r.usage = {100, 10};
    } else if (i == 1) {
      r.tool_calls = {{"c4", "lookup", R"({"topic": "France"})"}};
      r.usage = {150, 5};
    } else {
      r.text = R"({"answer": "Paris", "confidence": 0.9, "sources": []})";
      r.usage = {200, 20};
    }
    return r;
  });
}

TEST(Metrics, ToolCallsAreCountedByToolAndResultWithTheirDuration) {
  auto m = std::make_shared<covenant::metrics>();
  scripted_engine model = research_script();
  covenant::contract<Researcher> research{model, observed(m)};
  const auto r = research.run(Question{"capital?"});
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  ASSERT_EQ(r.outcome.steps.size(), 2u);
  const std::string text = m->render();
  EXPECT_THAT(text, HasSubstr("# TYPE covenant_tool_calls_total counter\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE covenant_tool_duration_seconds histogram\n"));
  EXPECT_EQ(sample(text, R"(covenant_tool_calls_total{contract="Researcher",tool="lookup",result="ok"})"), 2);
  EXPECT_EQ(sample(text, R"(covenant_tool_calls_total{contract="Researcher",tool="lookup",result="pre"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_tool_calls_total{contract="Researcher",tool="search",result="unknown_tool"})"), 1);
  // Durations of the calls that ran (a refused pre ran too); an unknown tool never runs.
  EXPECT_EQ(sample(text, R"(covenant_tool_duration_seconds_count{contract="Researcher",tool="lookup"})"), 3);
  EXPECT_EQ(sample(text, R"(covenant_tool_duration_seconds_bucket{contract="Researcher",tool="lookup",le="+Inf"})"), 3);
  EXPECT_GE(sample(text, R"(covenant_tool_duration_seconds_sum{contract="Researcher",tool="lookup"})"), 0);
  EXPECT_THAT(text, HasSubstr(R"(covenant_tool_duration_seconds_bucket{contract="Researcher",tool="lookup",le="0.001"})"));
  EXPECT_EQ(sample(text, R"(covenant_tool_duration_seconds_count{contract="Researcher",tool="search"})"), -1);
  // The steps are model calls with tokens: counted beside the answer's.
  EXPECT_EQ(sample(text, R"(covenant_input_tokens_total{contract="Researcher"})"), 450);
  EXPECT_EQ(sample(text, R"(covenant_output_tokens_total{contract="Researcher"})"), 35);
  EXPECT_EQ(sample(text, R"(covenant_model_calls_total{contract="Researcher"})"), 1);  // attempts
}

TEST(Metrics, ToolCallsAreFedFromTheToolEndEvent) {
  auto m = std::make_shared<covenant::metrics>();
  const covenant::call_info info{"C", "id", ""};
  covenant::tool_run run;
  run.call = {"c1", "fetch", "{}"};
  run.status = covenant::tool_status::timeout;
  run.elapsed = std::chrono::milliseconds(1500);
  m->on_tool_end(covenant::tool_end_event{info, 1, run});
  run.status = covenant::tool_status::refused;
  run.elapsed = {};
  m->on_tool_end(covenant::tool_end_event{info, 2, run});
  const std::string text = m->render();
  EXPECT_EQ(sample(text, R"(covenant_tool_calls_total{contract="C",tool="fetch",result="timeout"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_tool_calls_total{contract="C",tool="fetch",result="refused"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_tool_duration_seconds_count{contract="C",tool="fetch"})"), 1);  // refused: not run
  EXPECT_EQ(sample(text, R"(covenant_tool_duration_seconds_sum{contract="C",tool="fetch"})"), 1.5);
  EXPECT_EQ(sample(text, R"(covenant_tool_duration_seconds_bucket{contract="C",tool="fetch",le="1"})"), 0);
  EXPECT_EQ(sample(text, R"(covenant_tool_duration_seconds_bucket{contract="C",tool="fetch",le="2.5"})"), 1);
}

TEST(Metrics, ToolNamesAreBoundedLabelValues) {
  auto m = std::make_shared<covenant::metrics>(covenant::metrics_options{.max_label_values = 2});
  const covenant::call_info info{"C", "id", ""};
  for (const char* name : {"a", "b", "made_up_1", "made_up_2"}) {
    covenant::tool_run run;
    run.call = {"c", name, "{}"};
    run.status = covenant::tool_status::unknown_tool;
    m->on_tool_end(covenant::tool_end_event{info, 1, run});
  }
  const std::string text = m->render();
  EXPECT_EQ(sample(text, R"(covenant_tool_calls_total{contract="C",tool="a",result="unknown_tool"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_tool_calls_total{contract="C",tool="other",result="unknown_tool"})"), 2);
}

TEST(Metrics, FieldPathsDropListIndices) {
  EXPECT_EQ(covenant::metric_path(covenant::path::parse("sources[17].url")), "sources[].url");
  EXPECT_EQ(covenant::metric_path(covenant::path::parse("a.b[2][3].c")), "a.b[][].c");
  EXPECT_EQ(covenant::metric_path(covenant::path{}), "(root)");
}

TEST(Metrics, LabelValuesAreBounded) {
  auto m = std::make_shared<covenant::metrics>(covenant::metrics_options{.max_label_values = 2});
  for (const char* name : {"one", "two", "three", "four"}) {
    covenant::outcome_base o;
    covenant::issue i;
    i.path = covenant::path::parse(name);
    o.issues.push_back(i);
    covenant::call_timings t;
    covenant::call_info info{"C", "id", ""};
    m->on_finished(covenant::finished_event{info, o, t});
  }
  const std::string text = m->render();
  EXPECT_EQ(sample(text, R"(covenant_call_failure_fields_total{contract="C",field="one"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_call_failure_fields_total{contract="C",field="two"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_call_failure_fields_total{contract="C",field="other"})"), 2);
}

TEST(Metrics, TheRenderedTextPassesPromtool) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "promtool is not on PATH (Debian package `prometheus`)";
  auto m = std::make_shared<covenant::metrics>();
  scripted_engine model{R"({"answer": "?", "confidence": 0.5, "sources": [{"url": "x"}]})",
                        R"({"answer": "Paris \"the\" city", "confidence": 2, "sources": []})"};
  covenant::contract<QA> qa{model, observed(m)};
  (void)qa.run(Question{"q"});
  // An agent: its tool series, and a call its loop ended (covenant_call_failures_total{stage="tool"}).
  scripted_engine agent = research_script();
  covenant::contract<Researcher> research{agent, observed(m)};
  ASSERT_TRUE(research.run(Question{"q"}).outcome.success);
  scripted_engine looping([](const covenant::chat_request&, std::size_t) {
    covenant::chat_response r;
    r.tool_calls = {{"", "lookup", R"({"topic": "again"})"}};
    return r;
  });
  covenant::contract_options limited = observed(m);
  limited.agent.max_steps = 1;
  covenant::contract<Researcher> research2{looping, limited};
  ASSERT_EQ(research2.run(Question{"q"}).outcome.failed_stage, covenant::stage::tool);
  const std::string text = m->render();
  EXPECT_EQ(sample(text, R"(covenant_call_failures_total{contract="Researcher",stage="tool"})"), 1);
  EXPECT_EQ(sample(text, R"(covenant_tool_calls_total{contract="Researcher",tool="lookup",result="ok"})"), 3);
  const auto file = std::filesystem::temp_directory_path() / ("covenant_metrics_" + std::to_string(::getpid()) + ".txt");
  std::ofstream(file) << text;
  const std::string cmd = "promtool check metrics < '" + file.string() + "' 2>&1";
  std::string output;
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) output += buf;
  const int status = pclose(p);
  std::filesystem::remove(file);
  EXPECT_EQ(status, 0) << output;
  EXPECT_EQ(output, "");
}

}  // namespace
