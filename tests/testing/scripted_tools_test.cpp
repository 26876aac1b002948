// The scripted engine's tool calls (covenant/testing/testing.hpp): a step that calls tools, whole
// and streamed (each call's arguments through on_tool_text() in pieces, before the text), the ids
// it gives calls without one, and a responder's tool calls.
#include <covenant/engine/engine.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "reply_collector.hpp"

namespace {

using namespace std::chrono_literals;
using covenant::chat_request;
using covenant::chat_response;
using covenant::engine_error;
using covenant::role;
using covenant::tool_call;
using covenant::tool_spec;
using covenant::testing::scripted_engine;
using covenant::testing::step;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

/// A request offering get_weather and get_time.
chat_request with_tools(const std::string& question, bool stream = false) {
  chat_request r;
  r.messages = {{role::system, "Answer with the tools' help."}, {role::user, question}};
  r.schema_name = "Forecast";
  auto object = std::make_shared<const boost::json::value>(
      boost::json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})"));
  r.tools = std::make_shared<const std::vector<tool_spec>>(std::vector<tool_spec>{
      {"get_weather", "The weather in a city.", object},
      {"get_time", "The time in a city.", object},
  });
  r.stream = stream;
  return r;
}

using event = covenant_test::reply_collector::event;
using collector = covenant_test::reply_collector;

std::shared_ptr<collector> run(covenant::engine& e, const chat_request& r, std::shared_ptr<collector> c = nullptr) {
  if (!c) c = std::make_shared<collector>();
  e.start(r, c, c->stop.get_token());
  EXPECT_TRUE(c->wait());
  return c;
}

const std::string weather_args = R"({"city": "Oslo"})";
const std::string time_args = R"({"city": "Lima"})";

TEST(ScriptedTools, AStepCallsToolsAndTheNextStepAnswersWithTheirResults) {
  scripted_engine model{step::calls({{.id = "", .name = "get_weather", .arguments = weather_args},
                                     {.id = "mine", .name = "get_time", .arguments = time_args}},
                                    {50, 7}),
                        R"({"forecast": "rain", "celsius": 4})"};
  const chat_response first = model.complete(with_tools("Weather in Oslo, time in Lima?"));
  EXPECT_EQ(first.text, "");
  EXPECT_EQ(first.finish_reason, "tool_calls");
  EXPECT_EQ(first.usage, (covenant::usage{50, 7}));
  EXPECT_EQ(first.model, "scripted");
  EXPECT_THAT(first.tool_calls, ElementsAre(tool_call{"call_0_0", "get_weather", weather_args},
                                            tool_call{"mine", "get_time", time_args}));  // a given id is kept

  // The conversation goes on with the calls and their results.
  chat_request next = with_tools("Weather in Oslo, time in Lima?");
  next.messages.push_back({.role = role::assistant, .content = "", .tool_calls = first.tool_calls});
  next.messages.push_back({.role = role::tool, .content = R"({"sky": "rain", "celsius": 4})", .tool_call_id = "call_0_0"});
  next.messages.push_back({.role = role::tool, .content = "unknown city", .tool_call_id = "mine", .is_error = true});
  const chat_response answer = model.complete(next);
  EXPECT_EQ(answer.text, R"({"forecast": "rain", "celsius": 4})");
  EXPECT_THAT(answer.tool_calls, IsEmpty());
  EXPECT_EQ(answer.finish_reason, "stop");

  ASSERT_EQ(model.calls(), 2u);
  const chat_request seen = model.request(1);
  ASSERT_EQ(seen.messages.size(), 5u);
  EXPECT_EQ(seen.messages[2].tool_calls, first.tool_calls);
  EXPECT_EQ(seen.messages[3].tool_call_id, "call_0_0");
  EXPECT_TRUE(seen.messages[4].is_error);
  ASSERT_TRUE(seen.tools);
  EXPECT_EQ(seen.tools->size(), 2u);
}

TEST(ScriptedTools, CallsWithoutAnIdGetOneNamingTheEngineCallAndTheirPlace) {
  scripted_engine model{"no tools",
                        step::calls({{.id = "", .name = "get_weather", .arguments = weather_args},
                                     {.id = "", .name = "get_weather", .arguments = R"({"city": "Bergen"})"}}),
                        step::calls({{.id = "", .name = "get_time", .arguments = time_args}})};
  EXPECT_THAT(model.complete(with_tools("a")).tool_calls, IsEmpty());
  const auto second = model.complete(with_tools("b")).tool_calls;
  const auto third = model.complete(with_tools("c")).tool_calls;
  ASSERT_EQ(second.size(), 2u);
  ASSERT_EQ(third.size(), 1u);
  EXPECT_EQ(second[0].id, "call_1_0");
  EXPECT_EQ(second[1].id, "call_1_1");
  EXPECT_EQ(third[0].id, "call_2_0");
  // rewinding the script numbers them again from the first call
  model.reset();
  (void)model.complete(with_tools("a"));
  EXPECT_EQ(model.complete(with_tools("b")).tool_calls[0].id, "call_1_0");
}

TEST(ScriptedTools, AnAsynchronousCallThatDoesNotStreamGetsTheCallsInItsReplyOnly) {
  scripted_engine model{step::calls({{.id = "", .name = "get_weather", .arguments = weather_args}})};
  model.stream_in_chunks(4);
  auto c = run(model, with_tools("Weather?"));
  ASSERT_TRUE(c->ok()) << c->error().what();
  EXPECT_TRUE(c->events().empty());
  EXPECT_THAT(c->reply().tool_calls, ElementsAre(tool_call{"call_0_0", "get_weather", weather_args}));
}

TEST(ScriptedTools, AStreamedReplyDeliversEachCallsArgumentsInPiecesBeforeItsText) {
  step s = step::calls({{.id = "", .name = "get_weather", .arguments = weather_args},
                        {.id = "", .name = "get_time", .arguments = ""},
                        {.id = "", .name = "get_time", .arguments = time_args}});
  s.text = "Checking.";
  scripted_engine model{s};
  model.stream_in_chunks(4, 1ms);
  auto c = run(model, with_tools("Weather?", true));
  ASSERT_TRUE(c->ok()) << c->error().what();
  const chat_response reply = c->reply();
  ASSERT_EQ(reply.tool_calls.size(), 3u);
  EXPECT_EQ(reply.text, "Checking.");

  const std::vector<event> events = c->events();
  std::vector<std::string> args(3);
  std::vector<std::vector<std::string>> names(3);
  std::string text;
  std::size_t last_index = 0;
  bool text_started = false;
  for (const event& e : events) {
    if (e.kind == event::text) {
      text_started = true;
      EXPECT_LE(e.delta.size(), 4u);
      text += e.delta;
      continue;
    }
    EXPECT_FALSE(text_started) << "a tool piece after the text";
    ASSERT_LT(e.index, 3u);
    EXPECT_GE(e.index, last_index) << "the calls come one after the other";
    last_index = e.index;
    EXPECT_LE(e.delta.size(), 4u);
    // the name comes with the first piece of each call only
    EXPECT_EQ(e.name, names[e.index].empty() ? reply.tool_calls[e.index].name : std::string());
    names[e.index].push_back(e.name);
    args[e.index] += e.delta;
  }
  EXPECT_EQ(args[0], weather_args);
  EXPECT_EQ(names[0].size(), (weather_args.size() + 3) / 4);
  EXPECT_EQ(args[1], "");
  EXPECT_EQ(names[1].size(), 1u);  // empty arguments: one empty piece, with the name
  EXPECT_EQ(args[2], time_args);
  EXPECT_EQ(text, "Checking.");
  EXPECT_EQ(model.streamed_bytes(0), reply.text.size());  // the text's bytes; arguments not counted

  // The pieces in order: the first ones of get_weather, exactly.
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events[0].kind, event::tool_text);
  EXPECT_EQ(events[0].index, 0u);
  EXPECT_EQ(events[0].name, "get_weather");
  EXPECT_EQ(events[0].delta, R"({"ci)");
  EXPECT_EQ(events[1].delta, R"(ty":)");
}

TEST(ScriptedTools, AStreamWithoutChunkSizeDeliversEachCallsArgumentsAsOnePiece) {
  scripted_engine model{step::calls({{.id = "", .name = "get_weather", .arguments = weather_args},
                                     {.id = "", .name = "get_time", .arguments = time_args}})};
  auto c = run(model, with_tools("Weather?", true));
  ASSERT_TRUE(c->ok()) << c->error().what();
  const auto events = c->events();
  ASSERT_EQ(events.size(), 2u);  // no text piece for an empty text
  EXPECT_EQ(events[0].index, 0u);
  EXPECT_EQ(events[0].name, "get_weather");
  EXPECT_EQ(events[0].delta, weather_args);
  EXPECT_EQ(events[1].index, 1u);
  EXPECT_EQ(events[1].name, "get_time");
  EXPECT_EQ(events[1].delta, time_args);
}

TEST(ScriptedTools, AStopRequestBetweenToolPiecesEndsTheStreamWithACancellation) {
  scripted_engine model{step::calls({{.id = "", .name = "get_weather", .arguments = weather_args}})};
  model.stream_in_chunks(2);
  auto c = std::make_shared<collector>();
  c->stop_at_first_tool_piece = true;
  run(model, with_tools("Weather?", true), c);
  ASSERT_FALSE(c->ok());
  EXPECT_TRUE(c->error().cancelled());
  ASSERT_EQ(c->events().size(), 1u);
  EXPECT_EQ(c->events()[0].delta, R"({")");
  EXPECT_TRUE(model.stopped(0));
}

TEST(ScriptedTools, AResponderReturnsToolCallsAsItMakesThem) {
  scripted_engine model([](const chat_request& request, std::size_t i) {
    chat_response r;
    if (i == 0) {
      for (const tool_spec& t : *request.tools) r.tool_calls.push_back({"toolu_" + t.name, t.name, weather_args});
      r.finish_reason = "tool_calls";
    } else {
      r.text = "done";
    }
    return r;
  });
  model.stream_in_chunks(5);
  const chat_response whole = model.complete(with_tools("Weather?"));
  EXPECT_THAT(whole.tool_calls, ElementsAre(tool_call{"toolu_get_weather", "get_weather", weather_args},
                                            tool_call{"toolu_get_time", "get_time", weather_args}));
  EXPECT_EQ(whole.finish_reason, "tool_calls");

  model.reset();
  auto c = run(model, with_tools("Weather?", true));
  ASSERT_TRUE(c->ok()) << c->error().what();
  EXPECT_EQ(c->reply().tool_calls, whole.tool_calls);  // ids untouched
  std::string first, second;
  for (const event& e : c->events()) {
    ASSERT_EQ(e.kind, event::tool_text);
    (e.index == 0 ? first : second) += e.delta;
  }
  EXPECT_EQ(first, weather_args);
  EXPECT_EQ(second, weather_args);
  EXPECT_EQ(model.complete(with_tools("Weather?")).text, "done");
}

}  // namespace
