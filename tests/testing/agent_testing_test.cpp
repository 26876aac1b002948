// GoogleTest helpers for agents (covenant/testing/gtest.hpp): tool_arguments, CalledTool and TookSteps,
// their descriptions and failure messages, on outcomes of a scripted agent.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/gtest.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "trip_planner.hpp"

namespace agent_testing_test {

using covenant_test::trip::Advice;
using covenant_test::trip::Time;
using covenant_test::trip::TimeArgs;
using covenant_test::trip::Trip;
using covenant_test::trip::WeatherArgs;

// Without the sky of the other agent tests' weather.
struct Weather {
  double celsius = 0;
};

struct GetWeather {
  static constexpr std::string_view name = "get_weather";
  static constexpr std::string_view description = "The current weather of a city.";
  void pre(const WeatherArgs& a) const {
    if (a.city.empty()) throw covenant::violation("city", "must name a city");
  }
  Weather act(const WeatherArgs& a) const { return {a.city == "Paris" ? 21.5 : 3.0}; }
};

struct GetTime {
  static constexpr std::string_view name = "get_time";
  static constexpr std::string_view description = "The local time of a time zone.";
  Time act(const TimeArgs&) const { return {"14:00"}; }
};

struct Planner {
  static constexpr std::string_view prompt = "Advise what to wear for the trip.";
  covenant::toolset<GetWeather, GetTime> tools;
  Advice forward(const Trip&, const covenant::outcome<Advice>& o) const { return o.result.value_or(Advice{}); }
};

}  // namespace agent_testing_test

namespace {

using namespace agent_testing_test;
using covenant::chat_response;
using covenant::tool_call;
using covenant::testing::CalledTool;
using covenant::testing::TookSteps;
using ::testing::DescribeMatcher;
using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

chat_response calls(std::vector<tool_call> c) {
  chat_response r;
  r.tool_calls = std::move(c);
  r.finish_reason = "tool_calls";
  return r;
}
chat_response answer(std::string text) {
  chat_response r;
  r.text = std::move(text);
  r.finish_reason = "stop";
  return r;
}

covenant::testing::scripted_engine script(std::vector<chat_response> replies) {
  return covenant::testing::scripted_engine([replies](const covenant::chat_request&, std::size_t i) {
    if (i >= replies.size()) throw covenant::engine_error("script exhausted");
    return replies[i];
  });
}

// Step 1: get_weather with an empty city (refused by pre), get_weather with unreadable arguments,
// get_time; step 2: get_weather for Paris; then the answer.
covenant::contract_result<Advice, Advice> run_trip() {
  auto model = script({calls({{"c1", "get_weather", R"({"city": ""})"},
                              {"c2", "get_weather", R"({"town": 3})"},
                              {"c3", "get_time", R"({"zone": "Europe/Paris"})"}}),
                       calls({{"c4", "get_weather", R"({"city": "Paris"})"}}), answer(R"({"advice": "sunglasses"})")});
  covenant::contract<Planner> planner{model, covenant::testing::instant()};
  return planner.run(Trip{"Paris"});
}

// The explanation `m` gives for `value`, and whether it matched.
template <class M, class T>
std::pair<bool, std::string> explain(const M& m, const T& value) {
  ::testing::StringMatchResultListener listener;
  const bool matched = ::testing::ExplainMatchResult(m, value, &listener);
  return {matched, listener.str()};
}

TEST(AgentTesting, ToolArgumentsDecodesEveryReadCallOfTheToolInOrder) {
  const auto r = run_trip();
  ASSERT_THAT(r.outcome, covenant::testing::Succeeded());
  // c1 was read and refused by pre (kept), c2 could not be read (left out), c4 ran.
  EXPECT_THAT(covenant::testing::tool_arguments<WeatherArgs>(r.outcome, "get_weather"),
              ElementsAre(WeatherArgs{""}, WeatherArgs{"Paris"}));
  const std::vector<TimeArgs> times = covenant::testing::tool_arguments<TimeArgs>(r.outcome, "get_time");
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].zone, "Europe/Paris");
  EXPECT_TRUE(covenant::testing::tool_arguments<TimeArgs>(r.outcome, "get_stock").empty());
}

TEST(AgentTesting, ToolArgumentsOfTheWrongTypeThrowNamingTheCall) {
  const auto r = run_trip();
  try {
    (void)covenant::testing::tool_arguments<TimeArgs>(r.outcome, "get_weather");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(std::string(e.what()), HasSubstr("get_weather call c1"));
    EXPECT_THAT(std::string(e.what()), HasSubstr("zone"));
  }
}

TEST(AgentTesting, CalledToolMatchesTheArgumentsAsRead) {
  const auto r = run_trip();
  EXPECT_THAT(r.outcome, CalledTool<WeatherArgs>("get_weather", Field(&WeatherArgs::city, "Paris")));
  EXPECT_THAT(r, CalledTool<WeatherArgs>("get_weather", WeatherArgs{"Paris"}));  // a run() result, an Args value
  EXPECT_THAT(r.outcome, CalledTool<TimeArgs>("get_time", Field(&TimeArgs::zone, StartsWith("Europe/"))));
  EXPECT_THAT(r.outcome, Not(CalledTool<WeatherArgs>("get_weather", Field(&WeatherArgs::city, "Oslo"))));
  EXPECT_THAT(r.outcome, CalledTool("get_time"));
  EXPECT_THAT(r.outcome, Not(CalledTool("get_stock")));

  const auto [matched, why] = explain(CalledTool<WeatherArgs>("get_weather", Field(&WeatherArgs::city, "Paris")), r.outcome);
  EXPECT_TRUE(matched);
  EXPECT_EQ(why, R"(step 2 calls it with {"city":"Paris"} (ok))");
}

TEST(AgentTesting, CalledToolDescribesItselfAndListsTheCallsWhenItFails) {
  const auto r = run_trip();
  const auto oslo = CalledTool<WeatherArgs>("get_weather", Field(&WeatherArgs::city, "Oslo"));
  EXPECT_EQ(DescribeMatcher<covenant::outcome_base>(oslo),
            "called the tool \"get_weather\" with arguments that is an object whose given field is equal to \"Oslo\"");
  EXPECT_EQ(DescribeMatcher<covenant::outcome_base>(oslo, true),
            "did not call the tool \"get_weather\" with arguments that is an object whose given field is equal to "
            "\"Oslo\"");
  const auto [matched, why] = explain(oslo, static_cast<const covenant::outcome_base&>(r.outcome));
  EXPECT_FALSE(matched);
  EXPECT_EQ(why,
            "the arguments of its calls of \"get_weather\":\n"
            "  step 1: {\"city\":\"\"} do not match, whose given field is \"\"\n"
            "  step 1: {\"town\": 3} were not read (arguments)\n"
            "  step 2: {\"city\":\"Paris\"} do not match, whose given field is \"Paris\"");

  // Arguments that are not the type asked for.
  const auto [matched2, why2] = explain(CalledTool<TimeArgs>("get_weather", Field(&TimeArgs::zone, "UTC")), r.outcome);
  EXPECT_FALSE(matched2);
  EXPECT_THAT(why2, HasSubstr("step 2: {\"city\":\"Paris\"} do not decode: "));

  // A tool never called: every call made is listed.
  const auto [matched3, why3] = explain(CalledTool<TimeArgs>("get_stock", Field(&TimeArgs::zone, "UTC")), r.outcome);
  EXPECT_FALSE(matched3);
  EXPECT_EQ(why3,
            "it never called \"get_stock\"; the tool calls made:\n"
            "  step 1: get_weather {\"city\":\"\"} (pre)\n"
            "  step 1: get_weather {\"town\": 3} (arguments)\n"
            "  step 1: get_time {\"zone\":\"Europe/Paris\"} (ok)\n"
            "  step 2: get_weather {\"city\":\"Paris\"} (ok)");

  EXPECT_EQ(DescribeMatcher<covenant::outcome_base>(CalledTool("get_stock")), "called the tool \"get_stock\"");
  EXPECT_EQ(DescribeMatcher<covenant::outcome_base>(CalledTool("get_stock"), true),
            "did not call the tool \"get_stock\"");
  const auto [matched4, why4] = explain(CalledTool("get_stock"), r.outcome);
  EXPECT_FALSE(matched4);
  EXPECT_THAT(why4, StartsWith("the tool calls made:\n  step 1: get_weather {\"city\":\"\"} (pre)\n"));
  EXPECT_EQ(explain(CalledTool("get_time"), r.outcome).second,
            R"(step 1 calls it with {"zone":"Europe/Paris"} (ok))");

  // An outcome without steps.
  covenant::outcome_base none;
  EXPECT_EQ(explain(CalledTool("get_time"), none).second, "no tool was called");
  EXPECT_EQ(explain(CalledTool<TimeArgs>("get_time", ::testing::_), none).second,
            "it never called \"get_time\"; no tool was called");
}

TEST(AgentTesting, TookStepsCountsTheRepliesThatCalledTools) {
  const auto r = run_trip();
  EXPECT_THAT(r.outcome, TookSteps(2));
  EXPECT_THAT(r, Not(TookSteps(1)));
  EXPECT_EQ(DescribeMatcher<covenant::outcome_base>(TookSteps(2)), "took 2 agent steps");
  EXPECT_EQ(DescribeMatcher<covenant::outcome_base>(TookSteps(1)), "took 1 agent step");
  const auto [matched, why] = explain(TookSteps(3), r.outcome);
  EXPECT_FALSE(matched);
  EXPECT_THAT(why, StartsWith("it took 2 steps; the tool calls made:\n  step 1: get_weather"));
  covenant::outcome_base none;
  EXPECT_THAT(none, TookSteps(0));
  EXPECT_EQ(explain(TookSteps(1), none).second, "it took 0 steps");
}

}  // namespace
