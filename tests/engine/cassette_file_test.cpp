// Cassettes (covenant/engine/cassette.hpp), the file and its errors: malformed files give clear
// errors with line numbers, new_episodes appends after a file without a final newline, and tool
// fields written by hand are read (malformed ones give clear errors).
#include <covenant/engine/cassette.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "cassette_fixture.hpp"

namespace {

using namespace cassette_test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string runtime_error_of(const cassette_options& o) {
  try {
    cassette_engine e{o};
  } catch (const std::runtime_error& err) {
    return err.what();
  }
  ADD_FAILURE() << "no std::runtime_error";
  return {};
}

// ------------------------------------------------------------------------------------------------
// Malformed cassettes
// ------------------------------------------------------------------------------------------------

TEST(Cassette, MalformedFilesGiveClearErrorsWithLineNumbers) {
  const std::string path = temp_path();
  const std::string header = R"({"covenant_cassette": 1, "created": "2025-01-31T12:00:00Z"})";
  const std::string ok_line =
      R"({"request": {"messages": [{"role": "user", "content": "q"}]}, "response": {"text": "a"}})";

  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ": cannot open the cassette for replay: No such file"));

  write_file(path, "");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr("the cassette is empty"));

  write_file(path, header + "\n" + ok_line + "\n{\"request\": oops}\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":3: not valid JSON"));

  write_file(path, R"({"covenant_cassette": 2, "created": "2030-01-01T00:00:00Z"})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":1: unknown cassette version 2 (this covenant reads version 1)"));

  write_file(path, ok_line + "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":1: not a cassette header"));

  write_file(path, header + "\n" + R"({"request": {"messages": [{"role": "robot", "content": "q"}]}, "response": {"text": "a"}})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.messages[0].role: unknown role \"robot\""));

  write_file(path, header + "\n" + R"({"request": {"messages": []}})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: an interaction needs exactly one of \"response\" and \"error\""));

  write_file(path, header + "\n" + R"({"request": {"messages": []}, "response": {"text": 7}})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: response.text must be a string"));

  write_file(path, header + "\n" + R"({"request": {"messages": [], "max_tokens": -3}, "response": {"text": ""}})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.max_tokens must be an integer"));

  write_file(path, header + "\n" + R"({"request": {"messages": [], "mode": "telepathy"}, "response": {"text": ""}})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.mode: unknown output mode \"telepathy\""));

  write_file(path, header + "\n" + ok_line + "\n" + R"({"request": {"messages": [], "chunks": 3}, "response": {"text": ""}, "chunks": 3})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":3: \"chunks\" must be an array"));

  // An interrupted recording: the last line is cut off.
  write_file(path, header + "\n" + ok_line + "\n" + ok_line.substr(0, 30));
  const std::string cut = runtime_error_of(replay_from(path));
  EXPECT_THAT(cut, HasSubstr(path + ":3: not valid JSON"));
  EXPECT_THAT(cut, HasSubstr("the last line is incomplete"));

  // new_episodes reads the file too.
  scripted_engine model;
  EXPECT_THROW(cassette_engine({.path = path, .mode = cassette_mode::new_episodes}, model), std::runtime_error);

  // Hand-written files: any key order, optional fields, blank lines, CRLF.
  write_file(path, header + "\r\n\r\n" +
                       R"({"response": {"text": "a", "usage": {"output_tokens": 2}}, "request": {"max_tokens": null, "messages": [{"content": "q", "role": "user"}]}})" "\r\n");
  cassette_engine replay{replay_from(path)};
  chat_request r;
  r.messages = {{role::user, "q"}};
  const chat_response reply = replay.complete(r);
  EXPECT_EQ(reply.text, "a");
  EXPECT_EQ(reply.usage.output_tokens, 2u);
  EXPECT_EQ(reply.mode, covenant::output_mode::json_schema);
}

TEST(Cassette, NewEpisodesAppendsAfterAFileWithoutAFinalNewline) {
  const std::string path = temp_path();
  write_file(path, R"({"covenant_cassette": 1, "created": "2025-01-31T12:00:00Z"})" "\n" +
                       std::string(R"({"request": {"messages": [{"role": "user", "content": "old"}]}, "response": {"text": "a"}})"));
  {
    scripted_engine model{"b"};
    cassette_engine tape{{.path = path, .mode = cassette_mode::new_episodes}, model};
    EXPECT_EQ(tape.complete(user_only("old")).text, "a");
    EXPECT_EQ(tape.complete(user_only("new")).text, "b");
  }
  ASSERT_EQ(read_lines(path).size(), 3u);
  cassette_engine replay{replay_from(path)};
  EXPECT_EQ(replay.complete(user_only("new")).text, "b");
}

// ------------------------------------------------------------------------------------------------
// Tool fields
// ------------------------------------------------------------------------------------------------

TEST(Cassette, HandWrittenToolFieldsAreReadAndMalformedOnesGiveClearErrors) {
  const std::string path = temp_path();
  const std::string header = R"({"covenant_cassette": 1, "created": "2025-01-31T12:00:00Z"})" "\n";
  auto line = [&](const std::string& request, const std::string& response = R"({"text": ""})",
                  const std::string& rest = "") {
    write_file(path, header + R"({"request": )" + request + R"(, "response": )" + response + rest + "}\n");
  };

  line(R"({"messages": [{"role": "tool", "content": "r", "tool_calls": 3}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: request.messages[0].tool_calls must be an array of tool calls"));
  line(R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"id": "c", "arguments": "{}"}]}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: request.messages[0].tool_calls[0] has no \"name\""));
  line(R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"name": "f", "arguments": {}}]}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: request.messages[0].tool_calls[0].arguments must be a string"));
  line(R"({"messages": [{"role": "tool", "content": "r", "tool_call_id": 5}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.messages[0].tool_call_id must be a string"));
  line(R"({"messages": [{"role": "tool", "content": "r", "is_error": "yes"}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: request.messages[0].is_error must be true or false"));
  line(R"({"messages": [], "tools": {"name": "f"}})");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.tools must be an array of tools"));
  line(R"({"messages": [], "tools": [{"description": "d"}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.tools[0] has no \"name\""));
  line(R"({"messages": [], "tools": [{"name": "f", "parameters": "object"}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: request.tools[0].parameters must be a JSON Schema (an object) or null"));
  line(R"({"messages": []})", R"({"text": "", "tool_calls": [{"name": 7}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: response.tool_calls[0].name must be a string"));
  line(R"({"messages": []})", R"({"text": "", "tool_calls": {}})");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: response.tool_calls must be an array"));
  line(R"({"messages": []})", R"({"text": ""})", R"(, "chunks": [{"tool": -1, "text": ""}])");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: chunks[0].tool must be an integer in range"));

  // Well-formed, in any key order, with optional fields left out.
  line(R"({"tools": [{"parameters": null, "name": "get_weather"}], "messages": [)"
       R"({"role": "user", "content": "q"},)"
       R"({"role": "assistant", "content": "", "tool_calls": [{"name": "get_weather", "id": "c1"}]},)"
       R"({"tool_call_id": "c1", "content": "rain", "role": "tool", "is_error": false}]})",
       R"({"text": "", "tool_calls": [{"arguments": "{}", "name": "get_weather"}]})",
       R"(, "chunks": [{"text": "{", "tool": 0, "name": "get_weather"}, {"tool": 0, "text": "}"}])");
  cassette_engine replay{replay_from(path)};
  chat_request r;
  r.messages = {{role::user, "q"},
                {.role = role::assistant, .content = "", .tool_calls = {{"c1", "get_weather", ""}}},
                {.role = role::tool, .content = "rain", .tool_call_id = "c1"}};
  r.tools = std::make_shared<const std::vector<covenant::tool_spec>>(
      std::vector<covenant::tool_spec>{{.name = "get_weather", .description = "", .parameters = nullptr}});
  auto c = run(replay, streamed(r));
  ASSERT_TRUE(c->ok()) << c->error().what();
  EXPECT_THAT(c->reply().tool_calls, ElementsAre(covenant::tool_call{"", "get_weather", "{}"}));
  EXPECT_THAT(c->pieces(), ElementsAre(piece{0, "get_weather", "{"}, piece{0, "", "}"}));
}

}  // namespace
