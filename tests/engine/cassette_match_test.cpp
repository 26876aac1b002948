// Cassettes (covenant/engine/cassette.hpp), which recording a request matches: what is part of the
// match (the schema's content but not its key order, mode, temperature and max_tokens, tool results
// and tools) and what is not (the stream flag, the limiter); the messages of a request that was not
// recorded or was asked more often than recorded; the normalised form of older cassettes.
#include <covenant/engine/cassette.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "cassette_fixture.hpp"

namespace {

using namespace cassette_test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ------------------------------------------------------------------------------------------------
// Matching
// ------------------------------------------------------------------------------------------------

TEST(Cassette, TheStreamFlagIsNotPartOfTheMatch) {
  const std::string path = temp_path();
  {
    scripted_engine model{"streamed reply", "whole reply"};
    model.stream_in_chunks(4);
    cassette_engine tape{record_to(path), model};
    ASSERT_TRUE(run(tape, streamed(ask("a")))->ok());
    ASSERT_TRUE(run(tape, ask("b"))->ok());
  }
  cassette_engine replay{replay_from(path)};
  // A whole call answered by a streamed recording gets the whole text.
  auto a = run(replay, ask("a"));
  ASSERT_TRUE(a->ok());
  EXPECT_TRUE(a->texts().empty());
  EXPECT_EQ(a->reply().text, "streamed reply");
  // A streamed call answered by a whole recording gets the text as one chunk.
  auto b = run(replay, streamed(ask("b")));
  ASSERT_TRUE(b->ok());
  EXPECT_THAT(b->texts(), ElementsAre("whole reply"));
  EXPECT_EQ(b->reply().text, "whole reply");
}

TEST(Cassette, MatchingIgnoresTheKeyOrderOfTheSchemaButNotItsContent) {
  const std::string path = temp_path();
  auto with_schema = [](const char* schema) {
    chat_request r = ask("q");
    r.response_schema = std::make_shared<const json::value>(json::parse(schema));
    return r;
  };
  {
    scripted_engine model{"ok"};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(with_schema(R"({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "number"}}})"));
  }
  // Written canonically: keys sorted.
  EXPECT_EQ(json::serialize(read_lines(path)[1].at("request").at("schema")),
            R"({"properties":{"a":{"type":"number"},"b":{"type":"string"}},"type":"object"})");
  {
    cassette_engine replay{replay_from(path)};
    EXPECT_EQ(replay.complete(with_schema(R"({"properties": {"a": {"type": "number"}, "b": {"type": "string"}}, "type": "object"})")).text,
              "ok");
  }
  cassette_engine replay{replay_from(path)};
  const std::string err = engine_error_of(replay, with_schema(R"({"type": "object", "properties": {"b": {"type": "string"}}})"));
  EXPECT_THAT(err, HasSubstr("no recorded interaction matches"));
  EXPECT_THAT(err, HasSubstr("schema differ at byte"));
}

TEST(Cassette, MatchingComparesModeTemperatureAndMaxTokensButNotTheLimiter) {
  const std::string path = temp_path();
  chat_request r = ask("q");
  r.mode = covenant::output_mode::tools;
  r.temperature = 0.2;
  r.max_tokens = 64;
  {
    scripted_engine model{"ok"};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(r);
  }
  const json::object req = read_lines(path)[1].at("request").as_object();
  EXPECT_EQ(req.at("mode"), "tools");
  EXPECT_EQ(req.at("temperature").as_double(), 0.2);
  EXPECT_EQ(req.at("max_tokens").to_number<int>(), 64);

  for (auto change : std::vector<std::function<void(chat_request&)>>{
           [](chat_request& x) { x.mode = covenant::output_mode::json_object; },
           [](chat_request& x) { x.temperature = 0.3; }, [](chat_request& x) { x.max_tokens.reset(); },
           [](chat_request& x) { x.schema_name = "Other"; }}) {
    chat_request other = r;
    change(other);
    cassette_engine replay{replay_from(path)};
    EXPECT_THAT(engine_error_of(replay, other), HasSubstr("no recorded interaction matches"));
  }
  {
    chat_request warmer = r;
    warmer.temperature = 0.3;
    cassette_engine replay{replay_from(path)};
    EXPECT_THAT(engine_error_of(replay, warmer), HasSubstr("): temperature: recorded 0.2, requested 0.3"));
  }
  cassette_engine replay{replay_from(path)};
  EXPECT_EQ(cassette_engine::normalized(r), cassette_engine::normalized(streamed(r)));
  EXPECT_EQ(replay.complete(streamed(r)).text, "ok");
}

// ------------------------------------------------------------------------------------------------
// Requests that were not recorded
// ------------------------------------------------------------------------------------------------

TEST(Cassette, AnUnrecordedRequestFailsNamingTheClosestRecording) {
  const std::string path = temp_path();
  {
    scripted_engine model{"Paris", "Berlin", "Rome"};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(ask("What is the capital of France?"));
    (void)tape.complete(ask("What is the capital of Germany?"));
    (void)tape.complete(ask("Name a river.", "Be creative."));
  }
  cassette_engine replay{replay_from(path)};
  const std::string err = engine_error_of(replay, ask("What is the capital of Germany? Be precise."));
  EXPECT_THAT(err, HasSubstr("cassette_engine: " + path + ": no recorded interaction matches this request"));
  EXPECT_THAT(err, HasSubstr("closest recording: line 3"));
  EXPECT_THAT(err, HasSubstr("messages[1] (user) content differ at byte 31"));
  EXPECT_THAT(err, HasSubstr("recorded \"...s the capital of Germany?\""));
  EXPECT_THAT(err, HasSubstr("requested \"...s the capital of Germany? Be precise.\""));
  EXPECT_TRUE(replay.unused().size() == 3u);  // a failed lookup uses nothing

  // Through start(), the same error arrives at on_error.
  auto c = run(replay, ask("Something else entirely"));
  ASSERT_FALSE(c->ok());
  EXPECT_THAT(c->error().what(), HasSubstr("no recorded interaction matches"));
  EXPECT_FALSE(c->error().cancelled());

  // A different number of messages is described as such.
  chat_request longer = ask("Name a river.", "Be creative.");
  longer.messages.push_back({role::assistant, "The Nile."});
  EXPECT_THAT(engine_error_of(replay, longer),
              HasSubstr("closest recording: line 4 (Answer, 2 messages, last (user) \"Name a river.\"): recorded 2 "
                        "messages, requested 3 (requested messages[2] (assistant) \"The Nile.\")"));
}

TEST(Cassette, ARequestAskedMoreOftenThanRecordedFailsClearly) {
  const std::string path = temp_path();
  {
    scripted_engine model{"first", "second"};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(ask("again"));
    (void)tape.complete(ask("again"));
  }
  cassette_engine replay{replay_from(path)};
  EXPECT_EQ(replay.complete(ask("again")).text, "first");  // in recorded order
  EXPECT_EQ(replay.complete(ask("again")).text, "second");
  const std::string err = engine_error_of(replay, ask("again"));
  EXPECT_THAT(err, HasSubstr("this request was recorded 2 times (lines 2, 3) and asked 3 times"));
}

// ------------------------------------------------------------------------------------------------
// Tools and tool calls
// ------------------------------------------------------------------------------------------------

TEST(Cassette, ARequestDifferingOnlyInAToolResultDoesNotMatch) {
  const std::string path = temp_path();
  std::vector<covenant::tool_call> calls;
  {
    scripted_engine model(weather_agent());
    cassette_engine tape{record_to(path), model};
    calls = tape.complete(agent_request()).tool_calls;
    (void)tape.complete(agent_results(calls));
  }
  cassette_engine replay{replay_from(path)};
  (void)replay.complete(agent_request());

  const std::string other_result = engine_error_of(replay, agent_results(calls, "sunny, 20 C"));
  EXPECT_THAT(other_result, HasSubstr("no recorded interaction matches this request"));
  EXPECT_THAT(other_result, HasSubstr("messages[3] (tool) content differ at byte 0"));
  EXPECT_THAT(other_result, HasSubstr(R"(recorded "rain, 4 C", requested "sunny, 20 C")"));

  const std::string not_an_error = engine_error_of(replay, agent_results(calls, "rain, 4 C", false));
  EXPECT_THAT(not_an_error, HasSubstr("messages[4] (tool) is_error: recorded true, requested false"));

  std::vector<covenant::tool_call> other_ids = calls;
  other_ids[0].id = "call_xyz";
  const std::string other_id = engine_error_of(replay, agent_results(other_ids));
  EXPECT_THAT(other_id, HasSubstr("messages[2] (assistant) tool_calls differ"));

  std::vector<covenant::tool_call> other_arguments = calls;
  other_arguments[0].arguments = R"({"city": "Bergen"})";
  EXPECT_THAT(engine_error_of(replay, agent_results(other_arguments)), HasSubstr("tool_calls differ"));

  // the recorded one still answers
  EXPECT_EQ(replay.complete(agent_results(calls)).text, R"({"confidence": 0.8, "answer": "Rain in Oslo."})");
}

TEST(Cassette, RequestsDifferingOnlyInTheirToolsDoNotMatch) {
  const std::string path = temp_path();
  {
    scripted_engine model(weather_agent());
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(agent_request());
  }
  cassette_engine replay{replay_from(path)};
  const std::string described = engine_error_of(replay, agent_request(weather_tools("Today's weather.")));
  EXPECT_THAT(described, HasSubstr("tools differ at byte"));
  EXPECT_THAT(described, HasSubstr("The weather in a city."));
  EXPECT_THAT(engine_error_of(replay, ask("Weather in Oslo, time in Lima?")), HasSubstr("tools differ"));  // none
  // a list built anew with the same tools matches, whatever the key order of their schemas
  auto city = std::make_shared<const json::value>(
      json::parse(R"({"properties": {"city": {"type": "string"}}, "type": "object", "required": ["city"]})"));
  auto same = std::make_shared<const std::vector<covenant::tool_spec>>(std::vector<covenant::tool_spec>{
      {"get_weather", "The weather in a city.", city}, {"get_time", "The time in a city.", city}});
  EXPECT_EQ(replay.complete(agent_request(same)).tool_calls.size(), 2u);
}

TEST(Cassette, RequestsWithoutToolsKeepTheNormalisedFormOfOlderCassettes) {
  const std::string expected =
      R"({"messages":[{"role":"system","content":"Answer briefly."},{"role":"user","content":"q"}],)"
      R"("schema_name":"Answer","mode":"json_schema","schema":null,"temperature":null,"max_tokens":null})";
  EXPECT_EQ(cassette_engine::normalized(ask("q")), expected);
  chat_request empty_list = ask("q");
  empty_list.tools = std::make_shared<const std::vector<covenant::tool_spec>>();
  EXPECT_EQ(cassette_engine::normalized(empty_list), expected);  // an empty list is no tools

  // An old recording (no tool fields) replays; a request with tools does not match it.
  const std::string path = temp_path();
  write_file(path, R"({"covenant_cassette": 1, "created": "2025-01-31T12:00:00Z"})" "\n" +
                       std::string(R"({"request": {"messages": [{"role": "user", "content": "q"}]}, "response": {"text": "a"}})") +
                       "\n");
  cassette_engine replay{replay_from(path)};
  chat_request with_tools = user_only("q");
  with_tools.tools = weather_tools();
  EXPECT_THAT(engine_error_of(replay, with_tools), HasSubstr("no recorded interaction matches"));
  const chat_response old = replay.complete(user_only("q"));
  EXPECT_EQ(old.text, "a");
  EXPECT_THAT(old.tool_calls, ::testing::IsEmpty());
}

}  // namespace
