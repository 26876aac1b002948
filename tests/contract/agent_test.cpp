// Agents (covenant/contract/agent.hpp): the loop of tool calls and the answer, its limits, its
// trace, tool failures and timeouts, blocking and asynchronous, with a scripted engine.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>
#include <thread>

#include "covenant/contract/contract.hpp"
#include "covenant/engine/rate_limiter.hpp"
#include "covenant/engine/future.hpp"
#include "covenant/testing/testing.hpp"

#include "act_threads.hpp"
#include "trip_planner.hpp"

namespace agent_test {

using covenant_test::live_act;
using covenant_test::live_acts;
using covenant_test::start_act_thread;

using covenant_test::trip::Advice;
using covenant_test::trip::Time;
using covenant_test::trip::TimeArgs;
using covenant_test::trip::Trip;
using covenant_test::trip::Weather;
using covenant_test::trip::WeatherArgs;

struct GetWeather {
  static constexpr std::string_view name = "get_weather";
  static constexpr std::string_view description = "The current weather of a city.";
  std::atomic<int>* runs = nullptr;
  void pre(const WeatherArgs& a) const {
    if (a.city.empty()) throw covenant::violation("city", "must name a city");
  }
  Weather act(const WeatherArgs& a) const {
    const live_act live;
    if (runs != nullptr) ++*runs;
    if (a.city == "Atlantis") throw std::runtime_error("no station there");
    if (a.city == "Slowtown") std::this_thread::sleep_for(std::chrono::milliseconds(400));
    return {a.city == "Paris" ? 21.5 : 3.0, "clear"};
  }
};

struct GetTime {
  static constexpr std::string_view name = "get_time";
  static constexpr std::string_view description = "The local time of a time zone.";
  Time act(const TimeArgs& a) const { return {a.zone == "Europe/Paris" ? "14:00" : "08:00"}; }
  void post(const TimeArgs&, const Time& t) const {
    if (t.time.size() != 5) throw covenant::violation("time", "must be HH:MM");
  }
};

// A tool whose act() works asynchronously: it completes a promise on a thread of its own, or
// never (then its timeout cancels it, which it sees on the promise's stop token).
struct PollArgs {
  int delay_ms = 0;
  bool never = false;
};
struct Poll {
  bool ready = false;
};
struct PollTool {
  static constexpr std::string_view name = "poll";
  static constexpr std::string_view description = "Polls a job.";
  std::atomic<bool>* cancelled = nullptr;
  covenant::future<Poll> act(const PollArgs& a) const {
    covenant::promise<Poll> p;
    auto f = p.get_future();
    if (a.never) {
      ++live_acts;
      start_act_thread([p, flag = cancelled] {
        const live_act live;
        --live_acts;
        while (!p.stop_token().stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        if (flag != nullptr) *flag = true;
      });
      return f;
    }
    ++live_acts;
    start_act_thread([p, ms = a.delay_ms] {
      const live_act live;
      --live_acts;
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      p.set_value(Poll{true});
    });
    return f;
  }
};

struct Planner {
  static constexpr std::string_view prompt = "Advise what to wear for the trip.";
  covenant::toolset<GetWeather, GetTime> tools;
  Advice forward(const Trip&, const covenant::outcome<Advice>& o) const {
    return o.result.value_or(Advice{"(no advice)"});
  }
};

struct Poller {
  static constexpr std::string_view prompt = "Wait for the job.";
  covenant::toolset<PollTool> tools;
  Advice forward(const Trip&, const covenant::outcome<Advice>& o) const {
    return o.result.value_or(Advice{"(no advice)"});
  }
};

}  // namespace agent_test

namespace {

using namespace agent_test;
using covenant::chat_request;
using covenant::chat_response;
using covenant::tool_call;
using covenant::tool_status;
using ::testing::HasSubstr;

chat_response calls(std::vector<tool_call> c) {
  chat_response r;
  r.tool_calls = std::move(c);
  r.finish_reason = "tool_calls";
  r.usage = {100, 10};
  return r;
}
chat_response answer(std::string text) {
  chat_response r;
  r.text = std::move(text);
  r.finish_reason = "stop";
  r.usage = {120, 12};
  return r;
}

/// An engine that replies from a list of responses in order.
covenant::testing::scripted_engine script(std::vector<chat_response> replies) {
  return covenant::testing::scripted_engine([replies](const chat_request&, std::size_t i) {
    if (i >= replies.size()) throw covenant::engine_error("script exhausted");
    return replies[i];
  });
}

TEST(Agent, RunsParallelToolCallsAndFeedsTheResultsBack) {
  auto model = script({calls({{"c1", "get_weather", R"({"city": "Paris"})"}, {"c2", "get_time", R"({"zone": "Europe/Paris"})"}}),
                       answer(R"({"advice": "a light jacket"})")});
  covenant::contract<Planner> planner{model, covenant::testing::instant()};
  auto [value, o] = planner.run(Trip{"Paris"});
  ASSERT_TRUE(o.success) << o.summary();
  EXPECT_EQ(value.advice, "a light jacket");
  ASSERT_EQ(o.steps.size(), 1u);
  ASSERT_EQ(o.steps[0].tools.size(), 2u);
  const covenant::tool_run& w = o.steps[0].tools[0];
  EXPECT_EQ(w.status, tool_status::ok);
  EXPECT_EQ(w.call.id, "c1");
  EXPECT_EQ(boost::json::parse(w.arguments), boost::json::parse(R"({"city":"Paris"})"));
  EXPECT_EQ(boost::json::parse(w.result), boost::json::parse(R"({"celsius":21.5,"sky":"clear"})"));
  EXPECT_EQ(o.steps[0].tools[1].status, tool_status::ok);
  EXPECT_EQ(o.attempts.size(), 1u);
  EXPECT_EQ(o.calls(), 2u);
  EXPECT_EQ(o.usage.input_tokens, 220u);
  EXPECT_THAT(o.summary(), HasSubstr("1 step, 2 tool calls"));

  // The first request offers the tools; the second carries the calls and one result per call.
  ASSERT_EQ(model.calls(), 2u);
  const chat_request first = model.request(0);
  ASSERT_TRUE(first.tools);
  ASSERT_EQ(first.tools->size(), 2u);
  EXPECT_EQ((*first.tools)[0].name, "get_weather");
  EXPECT_EQ((*first.tools)[0].description, "The current weather of a city.");
  ASSERT_TRUE((*first.tools)[0].parameters);
  const chat_request second = model.request(1);
  ASSERT_EQ(second.messages.size(), first.messages.size() + 3);
  const covenant::message& asked = second.messages[first.messages.size()];
  EXPECT_EQ(asked.role, covenant::role::assistant);
  ASSERT_EQ(asked.tool_calls.size(), 2u);
  EXPECT_EQ(asked.tool_calls[1].name, "get_time");
  const covenant::message& r1 = second.messages[first.messages.size() + 1];
  EXPECT_EQ(r1.role, covenant::role::tool);
  EXPECT_EQ(r1.tool_call_id, "c1");
  EXPECT_FALSE(r1.is_error);
  EXPECT_THAT(r1.content, HasSubstr("21.5"));
  EXPECT_EQ(second.messages.back().tool_call_id, "c2");
  EXPECT_THAT(second.messages.back().content, HasSubstr("14:00"));
}

TEST(Agent, ArgumentsThatBreakPreAreAnErrorResultTheModelCorrects) {
  auto model = script({calls({{"c1", "get_weather", R"({"city": ""})"}}),
                       calls({{"c2", "get_weather", R"({"city": "Paris"})"}}), answer(R"({"advice": "sunglasses"})")});
  covenant::contract<Planner> planner{model, covenant::testing::instant()};
  auto [value, o] = planner.run(Trip{"Paris"});
  ASSERT_TRUE(o.success) << o.summary();
  ASSERT_EQ(o.steps.size(), 2u);
  const covenant::tool_run& bad = o.steps[0].tools[0];
  EXPECT_EQ(bad.status, tool_status::pre);
  ASSERT_EQ(bad.issues.size(), 1u);
  EXPECT_EQ(bad.issues[0].path.to_string(), "city");
  const covenant::chat_request second = model.request(1);
  const covenant::message& fed = second.messages.back();
  EXPECT_EQ(fed.role, covenant::role::tool);
  EXPECT_TRUE(fed.is_error);
  EXPECT_THAT(fed.content, HasSubstr("city: must name a city"));
  EXPECT_EQ(o.steps[1].tools[0].status, tool_status::ok);
}

TEST(Agent, MalformedArgumentsAreReadLenientlyAndBadOnesReported) {
  auto model = script({calls({{"c1", "get_weather", "```json\n{city: 'Paris',}\n```"}, {"c2", "get_weather", R"({"town": 3})"}}),
                       answer(R"({"advice": "a coat"})")});
  covenant::contract<Planner> planner{model, covenant::testing::instant()};
  auto [value, o] = planner.run(Trip{"Paris"});
  ASSERT_TRUE(o.success) << o.summary();
  const auto& runs = o.steps.at(0).tools;
  EXPECT_EQ(runs[0].status, tool_status::ok);
  EXPECT_FALSE(runs[0].notes.empty());  // the repairs are noted
  EXPECT_EQ(runs[1].status, tool_status::arguments);
  EXPECT_THAT(model.request(1).messages.back().content, HasSubstr("city"));
}

TEST(Agent, AThrowingToolIsAnErrorResultOrEndsTheCall) {
  auto model = script({calls({{"c1", "get_weather", R"({"city": "Atlantis"})"}}), answer(R"({"advice": "unknown"})")});
  covenant::contract<Planner> planner{model, covenant::testing::instant()};
  auto [value, o] = planner.run(Trip{"Atlantis"});
  ASSERT_TRUE(o.success) << o.summary();
  const covenant::tool_run& r = o.steps.at(0).tools.at(0);
  EXPECT_EQ(r.status, tool_status::failed);
  EXPECT_THAT(r.result, HasSubstr("no station there"));
  EXPECT_TRUE(model.request(1).messages.back().is_error);

  auto model2 = script({calls({{"c1", "get_weather", R"({"city": "Atlantis"})"}}), answer(R"({"advice": "unknown"})")});
  covenant::contract_options opts = covenant::testing::instant();
  opts.agent.on_tool_error = covenant::tool_errors::end_call;
  covenant::contract<Planner> strict{model2, opts};
  auto [value2, o2] = strict.run(Trip{"Atlantis"});
  EXPECT_FALSE(o2.success);
  EXPECT_EQ(o2.failed_stage, covenant::stage::tool);
  EXPECT_EQ(o2.reason, "tool_error");
  EXPECT_EQ(value2.advice, "(no advice)");  // forward ran
  EXPECT_EQ(model2.calls(), 1u);
}

TEST(Agent, UnknownToolsAndLimitsAreToldToTheModel) {
  auto model = script({calls({{"c1", "get_stock", "{}"}, {"c2", "get_weather", R"({"city":"Oslo"})"},
                              {"c3", "get_weather", R"({"city":"Rome"})"}}),
                       answer(R"({"advice": "layers"})")});
  covenant::contract_options opts = covenant::testing::instant();
  opts.agent.max_calls_per_tool = {{"get_weather", 1}};
  covenant::contract<Planner> planner{model, opts};
  auto [value, o] = planner.run(Trip{"Oslo"});
  ASSERT_TRUE(o.success) << o.summary();
  const auto& runs = o.steps.at(0).tools;
  EXPECT_EQ(runs[0].status, tool_status::unknown_tool);
  EXPECT_THAT(runs[0].result, HasSubstr("the tools are: get_weather, get_time"));
  EXPECT_EQ(runs[1].status, tool_status::ok);
  EXPECT_EQ(runs[2].status, tool_status::refused);
  EXPECT_THAT(runs[2].result, HasSubstr("max_calls_per_tool"));
}

TEST(Agent, TheStepLimitEndsTheCallAndForwardRuns) {
  std::vector<chat_response> replies;
  for (int i = 0; i < 5; ++i) replies.push_back(calls({{"", "get_weather", R"({"city":"Paris"})"}}));
  auto model = script(replies);
  covenant::contract_options opts = covenant::testing::instant();
  opts.agent.max_steps = 3;
  covenant::contract<Planner> planner{model, opts};
  auto [value, o] = planner.run(Trip{"Paris"});
  EXPECT_FALSE(o.success);
  EXPECT_EQ(o.failed_stage, covenant::stage::tool);
  EXPECT_EQ(o.reason, "max_steps");
  EXPECT_EQ(value.advice, "(no advice)");
  ASSERT_EQ(o.steps.size(), 4u);
  EXPECT_EQ(o.steps[3].tools.at(0).status, tool_status::refused);
  EXPECT_EQ(o.issues.at(0).code, covenant::issue_code::limit_reached);
  EXPECT_EQ(model.calls(), 4u);
  // ids the server did not give are made, one per call
  EXPECT_EQ(o.steps[0].tools[0].call.id, "call_1_1");
  EXPECT_EQ(o.steps[1].tools[0].call.id, "call_2_1");
}

TEST(Agent, AToolPastItsTimeoutIsReportedAndTheLoopGoesOn) {
  auto model = script({calls({{"c1", "get_weather", R"({"city":"Slowtown"})"}, {"c2", "get_time", R"({"zone":"UTC"})"}}),
                       answer(R"({"advice": "patience"})")});
  covenant::contract_options opts = covenant::testing::instant();
  opts.agent.tool_timeout = std::chrono::milliseconds(50);
  covenant::contract<Planner> planner{model, opts};
  auto [value, o] = planner.run(Trip{"Slowtown"});
  ASSERT_TRUE(o.success) << o.summary();
  const auto& runs = o.steps.at(0).tools;
  EXPECT_EQ(runs[0].status, tool_status::timeout);
  EXPECT_THAT(runs[0].result, HasSubstr("did not finish within 50 ms"));
  EXPECT_EQ(runs[1].status, tool_status::ok);
}

TEST(Agent, AsynchronousCallsRunTheSameLoop) {
  auto model = script({calls({{"c1", "get_weather", R"({"city": "Paris"})"}}), answer(R"({"advice": "a hat"})")});
  covenant::contract<Planner> planner{model, covenant::testing::instant()};
  auto f = planner.run_async(Trip{"Paris"});
  auto r = f.get();
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_EQ(r.value.advice, "a hat");
  EXPECT_EQ(r.outcome.steps.size(), 1u);
}

TEST(Agent, AnAnswerRejectedAfterToolsKeepsTheToolExchangeInTheConversation) {
  auto model = script({calls({{"c1", "get_weather", R"({"city": "Paris"})"}}), answer(R"({"advise": "x"})"),
                       answer(R"({"advice": "a scarf"})")});
  covenant::contract<Planner> planner{model, covenant::testing::instant({.tries = 2})};
  auto [value, o] = planner.run(Trip{"Paris"});
  ASSERT_TRUE(o.success) << o.summary();
  EXPECT_EQ(o.attempts.size(), 2u);
  const chat_request third = model.request(2);
  bool results = false;
  for (const auto& m : third.messages) results = results || m.role == covenant::role::tool;
  EXPECT_TRUE(results);
  EXPECT_THAT(third.messages.back().content, HasSubstr("rejected"));
}

TEST(Agent, AnAsynchronousActIsAwaitedAndOnePastItsTimeoutIsCancelled) {
  auto model = script({calls({{"c1", "poll", R"({"delay_ms": 20, "never": false})"}}), answer(R"({"advice": "done"})")});
  covenant::contract<Poller> poller{model, covenant::testing::instant()};
  auto [value, o] = poller.run(Trip{"x"});
  ASSERT_TRUE(o.success) << o.summary();
  EXPECT_EQ(o.steps.at(0).tools.at(0).status, tool_status::ok);
  EXPECT_THAT(o.steps[0].tools[0].result, HasSubstr("true"));

  std::atomic<bool> cancelled{false};
  auto model2 = script({calls({{"c1", "poll", R"({"delay_ms": 0, "never": true})"}}), answer(R"({"advice": "gave up"})")});
  covenant::contract_options opts = covenant::testing::instant();
  opts.agent.tool_timeout = std::chrono::milliseconds(30);
  Poller slow;
  slow.tools = covenant::toolset<PollTool>{PollTool{&cancelled}};
  covenant::contract<Poller> waiting{model2, opts, slow};
  auto f = waiting.run_async(Trip{"x"});  // the asynchronous driver: its own timer and wake-up
  auto r = f.get();
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_EQ(r.outcome.steps.at(0).tools.at(0).status, tool_status::timeout);
  for (int i = 0; i < 500 && !cancelled; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_TRUE(cancelled);
}

TEST(Agent, TheCallsDeadlineEndsAStepWhoseToolStillRuns) {
  auto model = script({calls({{"c1", "get_weather", R"({"city":"Slowtown"})"}}), answer(R"({"advice": "late"})")});
  covenant::contract_options opts = covenant::testing::instant();
  opts.agent.tool_timeout = std::chrono::milliseconds(0);  // no tool timeout: the call's deadline decides
  covenant::contract<Planner> planner{model, opts};
  covenant::call_options call;
  call.timeout = std::chrono::milliseconds(60);
  auto [value, o] = planner.run(Trip{"Slowtown"}, call);
  EXPECT_FALSE(o.success);
  EXPECT_EQ(o.failed_stage, covenant::stage::deadline);
  ASSERT_EQ(o.steps.size(), 1u);
  EXPECT_EQ(o.steps[0].tools.at(0).status, tool_status::failed);
  EXPECT_EQ(o.steps[0].tools[0].issues.at(0).code, covenant::issue_code::deadline);
  EXPECT_EQ(value.advice, "(no advice)");
  EXPECT_EQ(model.calls(), 1u);
}

TEST(Agent, ObserversSeeEachToolStartAndEnd) {
  struct tool_log : covenant::observer {
    std::mutex m;
    std::vector<std::string> seen;
    void on_tool_start(const covenant::tool_start_event& e) override {
      std::lock_guard l(m);
      seen.push_back("start " + e.tool.name + " step " + std::to_string(e.step));
    }
    void on_tool_end(const covenant::tool_end_event& e) override {
      std::lock_guard l(m);
      seen.push_back("end " + e.run.call.name + " " + std::string(covenant::to_string(e.run.status)));
    }
  };
  auto log = std::make_shared<tool_log>();
  auto model = script({calls({{"c1", "get_weather", R"({"city":"Paris"})"}, {"c2", "nope", "{}"}}),
                       answer(R"({"advice": "ok"})")});
  covenant::contract_options opts = covenant::testing::instant();
  opts.observers.push_back(log);
  covenant::contract<Planner> planner{model, opts};
  auto [value, o] = planner.run(Trip{"Paris"});
  ASSERT_TRUE(o.success);
  EXPECT_THAT(log->seen, ::testing::ElementsAre("start get_weather step 1", "end get_weather ok", "end nope unknown_tool"));
  EXPECT_GT(planner.stats().of(covenant::perf_stage::tool).count, 0u);
}

TEST(Agent, TheCallsTokenBudgetBoundsTheWholeLoop) {
  std::vector<chat_response> replies;
  for (int i = 0; i < 6; ++i) replies.push_back(calls({{"", "get_time", R"({"zone":"UTC"})"}}));  // 110 tokens each
  auto model = script(replies);
  covenant::contract_options opts = covenant::testing::instant();
  opts.budget.max_tokens = 300;
  covenant::contract<Planner> planner{model, opts};
  auto [value, o] = planner.run(Trip{"Paris"});
  EXPECT_FALSE(o.success);
  EXPECT_EQ(o.failed_stage, covenant::stage::tool);
  EXPECT_EQ(o.reason, "budget");
  EXPECT_EQ(o.steps.size(), 3u);  // 330 tokens spent after the third step: no fourth model call
  EXPECT_EQ(model.calls(), 3u);
  EXPECT_EQ(o.usage.total(), 330u);
  EXPECT_EQ(o.issues.at(0).code, covenant::issue_code::limit_reached);
  EXPECT_EQ(value.advice, "(no advice)");
}

}  // namespace

namespace {

TEST(Promise, ALastCopyGoneWithoutAValueCompletesTheFutureWithAnError) {
  covenant::future<int> f;
  bool continued = false;
  {
    covenant::promise<int> p;
    f = p.get_future();
    const covenant::promise<int> copy = p;  // copies share the one result
    f.then([&](covenant::future<int>) { continued = true; });
    EXPECT_FALSE(f.ready());
  }
  EXPECT_TRUE(continued);
  EXPECT_THROW((void)f.get(), std::runtime_error);

  covenant::promise<int> kept;
  covenant::future<int> g = kept.get_future();
  kept.set_value(7);
  { const covenant::promise<int> gone = kept; }
  EXPECT_EQ(g.get(), 7);  // a value set before stays
}

}  // namespace

// The waits around a step, on the real path: one call, nothing else in flight, real timers and
// sleeps (no injected sleeper), blocking and asynchronous.
namespace {

using namespace agent_test;

covenant::testing::scripted_engine step_then_answers() {
  return covenant::testing::scripted_engine([](const covenant::chat_request&, std::size_t i) {
    covenant::chat_response r;
    r.usage = {50, 5};
    if (i == 0) r.tool_calls = {{"c1", "get_time", R"({"zone": "UTC"})"}};
    else if (i == 1) r.text = R"({"advise": "typo"})";  // rejected: the answer is asked again
    else r.text = R"({"advice": "a hat"})";
    return r;
  });
}

covenant::contract_options real_waits() {
  covenant::contract_options o;  // (no sleep, clock or random injected)
  o.retry.tries = 1;
  o.retry.delay = std::chrono::milliseconds(40);
  o.retry.jitter = 0;
  return o;
}

void expect_waited_after_a_step(const covenant::outcome<Advice>& o) {
  ASSERT_TRUE(o.success) << o.summary();
  ASSERT_EQ(o.steps.size(), 1u);
  ASSERT_EQ(o.attempts.size(), 2u);
  EXPECT_EQ(o.attempts[0].waited, std::chrono::nanoseconds(0));
  EXPECT_EQ(o.attempts[1].waited, std::chrono::milliseconds(40));
  EXPECT_GE(o.elapsed, std::chrono::milliseconds(40));  // the wait was real
}

TEST(AgentWaits, ARejectedAnswerAfterAStepWaitsItsRetryDelayBlocking) {
  auto model = step_then_answers();
  covenant::contract<Planner> planner{model, real_waits()};
  auto [value, o] = planner.run(Trip{"Paris"});
  expect_waited_after_a_step(o);
  EXPECT_EQ(value.advice, "a hat");
  EXPECT_EQ(model.calls(), 3u);
}

TEST(AgentWaits, ARejectedAnswerAfterAStepWaitsItsRetryDelayAsynchronously) {
  auto model = step_then_answers();
  covenant::contract<Planner> planner{model, real_waits()};
  auto r = planner.run_async(Trip{"Paris"}).get();  // the wait is a runtime timer
  expect_waited_after_a_step(r.outcome);
  EXPECT_EQ(model.calls(), 3u);
}

TEST(AgentWaits, EachRequestOfTheLoopTakesItsTurnUnderTheLimiter) {
  // One request a tenth of a second, no burst beyond it: the step's request goes at once, the
  // answer's waits its turn.
  auto limiter = std::make_shared<covenant::rate_limiter>(
      covenant::rate_limiter_options{.requests_per_minute = 600, .burst = std::chrono::milliseconds(100)});
  for (const bool async : {false, true}) {
    auto model = step_then_answers();
    covenant::contract_options o = real_waits();
    o.retry.tries = 0;
    covenant::contract<Planner> planner{model, o};
    covenant::call_options call;
    call.limiter = limiter;
    std::this_thread::sleep_for(std::chrono::milliseconds(150));  // a full bucket for each call
    const auto delayed = limiter->stats().delayed;
    auto r = async ? planner.run_async(Trip{"Paris"}, call).get() : planner.run(Trip{"Paris"}, call);
    ASSERT_EQ(r.outcome.steps.size(), 1u) << r.outcome.summary();
    ASSERT_EQ(r.outcome.attempts.size(), 1u);  // the typo'd answer, not asked again (tries = 0)
    // One of the call's two requests waited (the limiter delayed one), and it was the answer's.
    EXPECT_EQ(limiter->stats().delayed, delayed + 1);
    EXPECT_GE(r.outcome.attempts[0].queued, std::chrono::milliseconds(50)) << (async ? "async" : "blocking");
    EXPECT_LT(r.outcome.steps[0].queued, r.outcome.attempts[0].queued);
  }
}

}  // namespace
