// The Anthropic Messages dialect (src/engine/anthropic_wire.cpp): request bodies, endpoint and headers,
// whole replies and streamed events, without a server.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

// A private header of the library (src/ is on the tests' include path, not on a user's).
#include "engine/wire_dialect.hpp"
#include "anthropic_replies.hpp"

namespace {

namespace json = boost::json;
using covenant::chat_request;
using covenant::chat_response;
using covenant::engine_error;
using covenant::http_engine_options;
using covenant::message;
using covenant::output_mode;
using covenant::role;
using covenant::detail::wire_event;
using testing::ElementsAre;
using testing::HasSubstr;

const covenant::detail::wire_dialect& dialect() {
  static const std::unique_ptr<covenant::detail::wire_dialect> d = covenant::detail::anthropic_dialect();
  return *d;
}

std::shared_ptr<const json::value> schema() {
  return std::make_shared<const json::value>(json::parse(R"({"type":"object","properties":{"city":{"type":"string"},
      "temp":{"type":"number"}},"required":["city","temp"],"additionalProperties":false})"));
}

chat_request request_of(std::vector<message> messages) {
  chat_request r;
  r.messages = std::move(messages);
  return r;
}

json::object body_of(const chat_request& r, output_mode mode = output_mode::prompt, http_engine_options o = {}) {
  return dialect().body(r, mode, o);
}

/// The "role"/"content" pairs of a body's messages, as "role: content".
std::vector<std::string> turns(const json::object& body) {
  std::vector<std::string> out;
  for (const json::value& m : body.at("messages").as_array())
    out.push_back(std::string(m.at("role").as_string()) + ": " + std::string(m.at("content").as_string()));
  return out;
}

/// Splits one SSE chunk "event: X\ndata: Y\n\n" into its type and data.
std::pair<std::string, std::string> split_event(const std::string& chunk) {
  std::string type;
  std::string data;
  std::size_t at = 0;
  while (at < chunk.size()) {
    std::size_t end = chunk.find('\n', at);
    if (end == std::string::npos) end = chunk.size();
    const std::string_view line(chunk.data() + at, end - at);
    if (line.starts_with("event: ")) type = std::string(line.substr(7));
    if (line.starts_with("data: ")) data = std::string(line.substr(6));
    at = end + 1;
  }
  return {type, data};
}

/// What a transport makes of a whole stream: the text, the last finish reason and usage, done.
struct replay {
  std::string text;
  std::string finish_reason;
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  std::string model;
  std::string error;
  bool done = false;
  int malformed = 0;
};

replay replay_stream(const std::vector<std::string>& chunks, output_mode mode, bool with_event_lines = true) {
  replay out;
  for (const std::string& chunk : chunks) {
    auto [type, data] = split_event(chunk);
    const wire_event e = dialect().parse_event(with_event_lines ? type : "", data, mode);
    out.text += e.text;
    if (e.finish_reason) out.finish_reason = *e.finish_reason;
    if (e.usage.input) out.input_tokens = *e.usage.input;
    if (e.usage.output) out.output_tokens = *e.usage.output;
    if (!e.model.empty()) out.model = e.model;
    if (e.error) out.error = *e.error;
    out.done = out.done || e.done;
    out.malformed += e.malformed ? 1 : 0;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// name, modes, endpoint, headers

TEST(AnthropicWire, NameIsAnthropic) { EXPECT_EQ(dialect().name(), "anthropic"); }

TEST(AnthropicWire, ModesAreToolsThenPrompt) {
  EXPECT_THAT(dialect().modes(), ElementsAre(output_mode::tools, output_mode::prompt));
}

TEST(AnthropicWire, NearestModeMapsSchemaToToolsAndJsonObjectToPrompt) {
  EXPECT_EQ(dialect().nearest(output_mode::json_schema), output_mode::tools);
  EXPECT_EQ(dialect().nearest(output_mode::tools), output_mode::tools);
  EXPECT_EQ(dialect().nearest(output_mode::json_object), output_mode::prompt);
  EXPECT_EQ(dialect().nearest(output_mode::prompt), output_mode::prompt);
}

TEST(AnthropicWire, EndpointAppendsV1MessagesToTheRoot) {
  EXPECT_EQ(dialect().endpoint("https://api.anthropic.com"), "https://api.anthropic.com/v1/messages");
  EXPECT_EQ(dialect().endpoint("https://api.anthropic.com/"), "https://api.anthropic.com/v1/messages");
  EXPECT_EQ(dialect().endpoint("http://proxy:8080/anthropic"), "http://proxy:8080/anthropic/v1/messages");
}

TEST(AnthropicWire, EndpointDoesNotRepeatV1OrTheWholePath) {
  EXPECT_EQ(dialect().endpoint("http://127.0.0.1:1234/v1"), "http://127.0.0.1:1234/v1/messages");
  EXPECT_EQ(dialect().endpoint("http://127.0.0.1:1234/v1/"), "http://127.0.0.1:1234/v1/messages");
  EXPECT_EQ(dialect().endpoint("https://api.anthropic.com/v1/messages"), "https://api.anthropic.com/v1/messages");
}

TEST(AnthropicWire, AuthHeadersCarryTheKeyAndTheVersion) {
  http_engine_options o;
  o.api_key = "sk-ant-secret";
  EXPECT_THAT(dialect().auth_headers(o, false), ElementsAre("x-api-key: sk-ant-secret", "anthropic-version: 2023-06-01"));
  EXPECT_EQ(dialect().auth_header_name(), "x-api-key");
}

TEST(AnthropicWire, AuthHeadersWithoutKeyOrWithOwnAuthSendOnlyTheVersion) {
  http_engine_options o;
  EXPECT_THAT(dialect().auth_headers(o, false), ElementsAre("anthropic-version: 2023-06-01"));
  o.api_key = "sk-ant-secret";
  o.anthropic_version = "2024-01-01";
  EXPECT_THAT(dialect().auth_headers(o, true), ElementsAre("anthropic-version: 2024-01-01"));
}

TEST(AnthropicWire, AuthHeadersLeaveAnApplicationsOwnVersionHeaderAlone) {
  http_engine_options o;
  o.api_key = "k";
  o.headers = {{"Anthropic-Version", "2099-01-01"}};
  EXPECT_THAT(dialect().auth_headers(o, false), ElementsAre("x-api-key: k"));
}

// ---------------------------------------------------------------------------------------------
// body

TEST(AnthropicWireBody, SystemMessagesGoIntoTheTopLevelSystemString) {
  const json::object b = body_of(request_of({{role::system, "You are terse."},
                                             {role::user, "Hi"},
                                             {role::system, "Answer in JSON."}}));
  EXPECT_EQ(b.at("system"), "You are terse.\n\nAnswer in JSON.");
  EXPECT_THAT(turns(b), ElementsAre("user: Hi"));
}

TEST(AnthropicWireBody, NoSystemFieldWithoutSystemMessages) {
  const json::object b = body_of(request_of({{role::user, "Hi"}}));
  EXPECT_FALSE(b.contains("system"));
}

TEST(AnthropicWireBody, ConsecutiveSameRoleTurnsAreMerged) {
  const json::object b = body_of(request_of({{role::user, "a"},
                                             {role::user, "b"},
                                             {role::assistant, "c"},
                                             {role::system, "s"},
                                             {role::assistant, "d"},
                                             {role::user, "e"}}));
  EXPECT_THAT(turns(b), ElementsAre("user: a\n\nb", "assistant: c\n\nd", "user: e"));
}

TEST(AnthropicWireBody, ConversationStartingWithAssistantGetsAUserTurnFirst) {
  const json::object b = body_of(request_of({{role::system, "s"}, {role::assistant, "Hello"}, {role::user, "Hi"}}));
  EXPECT_THAT(turns(b), ElementsAre("user: (continue)", "assistant: Hello", "user: Hi"));
}

TEST(AnthropicWireBody, EmptyConversationGetsAUserTurn) {
  EXPECT_THAT(turns(body_of(request_of({}))), ElementsAre("user: (continue)"));
  EXPECT_THAT(turns(body_of(request_of({{role::system, "only a system prompt"}}))), ElementsAre("user: (continue)"));
}

TEST(AnthropicWireBody, LastAssistantTurnIsKeptAsAPrefill) {
  const json::object b = body_of(request_of({{role::user, "Give JSON"}, {role::assistant, "{"}}));
  EXPECT_THAT(turns(b), ElementsAre("user: Give JSON", "assistant: {"));
}

TEST(AnthropicWireBody, MaxTokensDefaultsToTheOptions) {
  http_engine_options o;
  EXPECT_EQ(body_of(request_of({{role::user, "x"}}), output_mode::prompt, o).at("max_tokens"), 4096);
  o.default_max_tokens = 1000;
  EXPECT_EQ(body_of(request_of({{role::user, "x"}}), output_mode::prompt, o).at("max_tokens"), 1000);
}

TEST(AnthropicWireBody, MaxTokensOfTheRequestWins) {
  chat_request r = request_of({{role::user, "x"}});
  r.max_tokens = 256;
  http_engine_options o;
  o.max_tokens_field = "max_completion_tokens";  // an OpenAI setting: not used here
  const json::object b = body_of(r, output_mode::prompt, o);
  EXPECT_EQ(b.at("max_tokens"), 256);
  EXPECT_FALSE(b.contains("max_completion_tokens"));
}

TEST(AnthropicWireBody, ModelAndTemperatureOnlyWhenSet) {
  chat_request r = request_of({{role::user, "x"}});
  json::object b = body_of(r);
  EXPECT_FALSE(b.contains("model"));
  EXPECT_FALSE(b.contains("temperature"));
  r.temperature = 0.25;
  http_engine_options o;
  o.model = "claude-test";
  b = body_of(r, output_mode::prompt, o);
  EXPECT_EQ(b.at("model"), "claude-test");
  EXPECT_EQ(b.at("temperature"), 0.25);
}

TEST(AnthropicWireBody, ToolsModeForcesTheOneTool) {
  chat_request r = request_of({{role::user, "Weather?"}});
  r.response_schema = schema();
  r.schema_name = "Weather";
  const json::object b = body_of(r, output_mode::tools);
  ASSERT_TRUE(b.contains("tools"));
  const json::array& tools = b.at("tools").as_array();
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0].at("name"), "Weather");
  EXPECT_EQ(tools[0].at("description"), "Reply with the result as this tool's input.");
  EXPECT_EQ(tools[0].at("input_schema"), *r.response_schema);
  EXPECT_EQ(b.at("tool_choice"), json::parse(R"({"type":"tool","name":"Weather"})"));
  EXPECT_FALSE(b.contains("response_format"));
}

TEST(AnthropicWireBody, ToolsModeWithoutAnObjectSchemaSendsNoTool) {
  chat_request r = request_of({{role::user, "x"}});
  EXPECT_FALSE(body_of(r, output_mode::tools).contains("tools"));
  r.response_schema = std::make_shared<const json::value>(json::parse(R"(true)"));
  EXPECT_FALSE(body_of(r, output_mode::tools).contains("tool_choice"));
}

TEST(AnthropicWireBody, PromptModeSendsNoTools) {
  chat_request r = request_of({{role::user, "x"}});
  r.response_schema = schema();
  r.schema_name = "Weather";
  const json::object b = body_of(r, output_mode::prompt);
  EXPECT_FALSE(b.contains("tools"));
  EXPECT_FALSE(b.contains("tool_choice"));
}

TEST(AnthropicWireBody, SchemaNameIsSanitisedForTheToolName) {
  chat_request r = request_of({{role::user, "x"}});
  r.response_schema = schema();
  r.schema_name = "my::Type<int> v2";
  json::object b = body_of(r, output_mode::tools);
  EXPECT_EQ(b.at("tools").as_array()[0].at("name"), "my__Type_int__v2");
  EXPECT_EQ(b.at("tool_choice").at("name"), "my__Type_int__v2");
  r.schema_name = std::string(100, 'a');
  b = body_of(r, output_mode::tools);
  EXPECT_EQ(b.at("tools").as_array()[0].at("name").as_string(), std::string(64, 'a'));
  r.schema_name.clear();
  b = body_of(r, output_mode::tools);
  EXPECT_EQ(b.at("tools").as_array()[0].at("name"), "output");
}

TEST(AnthropicWireBody, StreamFlagOnlyWhenStreaming) {
  chat_request r = request_of({{role::user, "x"}});
  EXPECT_FALSE(body_of(r).contains("stream"));
  r.stream = true;
  EXPECT_EQ(body_of(r).at("stream"), true);
  EXPECT_FALSE(body_of(r).contains("stream_options"));  // an OpenAI field
}

TEST(AnthropicWireBody, ExtraBodyComesFirstAndRequestFieldsWin) {
  chat_request r = request_of({{role::system, "sys"}, {role::user, "x"}});
  r.temperature = 0.5;
  r.max_tokens = 100;
  r.response_schema = schema();
  r.schema_name = "Weather";
  http_engine_options o;
  o.model = "claude-real";
  o.extra_body = {{"top_k", 5},
                  {"metadata", {{"user_id", "u1"}}},
                  {"model", "claude-extra"},
                  {"temperature", 1.0},
                  {"max_tokens", 9},
                  {"system", "extra system"},
                  {"messages", json::array{}},
                  {"tools", json::array{}},
                  {"stream", true}};
  const json::object b = body_of(r, output_mode::tools, o);
  EXPECT_EQ(b.at("top_k"), 5);
  EXPECT_EQ(b.at("metadata").at("user_id"), "u1");
  EXPECT_EQ(b.at("model"), "claude-real");
  EXPECT_EQ(b.at("temperature"), 0.5);
  EXPECT_EQ(b.at("max_tokens"), 100);
  EXPECT_EQ(b.at("system"), "sys");
  EXPECT_THAT(turns(b), ElementsAre("user: x"));
  EXPECT_EQ(b.at("tools").as_array().size(), 1u);
  EXPECT_FALSE(b.contains("stream"));  // the request does not stream: the transport reads one body
}

TEST(AnthropicWireBody, ExtraBodySystemStaysWhenTheRequestHasNone) {
  http_engine_options o;
  o.extra_body = {{"system", "from options"}};
  EXPECT_EQ(body_of(request_of({{role::user, "x"}}), output_mode::prompt, o).at("system"), "from options");
}

// ---------------------------------------------------------------------------------------------
// parse_reply

TEST(AnthropicWireReply, TextMessage) {
  const chat_response r = dialect().parse_reply(covenant_test::anthropic_message("Hello", 12, 7), output_mode::prompt);
  EXPECT_EQ(r.text, "Hello");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.usage.input_tokens, 12u);
  EXPECT_EQ(r.usage.output_tokens, 7u);
  EXPECT_EQ(r.model, "loopback");
  EXPECT_EQ(r.mode, output_mode::prompt);
}

TEST(AnthropicWireReply, ToolUseInputIsTheText) {
  const chat_response r = dialect().parse_reply(
      covenant_test::anthropic_tool_message("Weather", R"({"city":"Oslo","temp":-3.5})"), output_mode::tools);
  EXPECT_EQ(json::parse(r.text), json::parse(R"({"city":"Oslo","temp":-3.5})"));
  EXPECT_EQ(r.finish_reason, "tool_use");
  EXPECT_EQ(r.mode, output_mode::tools);
}

TEST(AnthropicWireReply, ToolUseNumbersAreWrittenAsShortAsTheyReadBack) {
  // Boost.JSON writes 15.5 as 1.55E1; the reply text keeps the form a reader (and a person reading
  // a log or a cassette) expects, and every number reads back as the same value.
  const chat_response r = dialect().parse_reply(
      covenant_test::anthropic_tool_message("Invoice", R"({"total":15.5,"tax":0.1,"n":3,"big":1e300,"neg":-2.25,"u":18446744073709551615,"s":"1.5E1","l":[0.5,{"x":100.0}]})"),
      output_mode::tools);
  EXPECT_EQ(r.text, R"({"total":15.5,"tax":0.1,"n":3,"big":1e+300,"neg":-2.25,"u":18446744073709551615,"s":"1.5E1","l":[0.5,{"x":100.0}]})");
  EXPECT_EQ(json::parse(r.text), json::parse(R"({"total":15.5,"tax":0.1,"n":3,"big":1e300,"neg":-2.25,"u":18446744073709551615,"s":"1.5E1","l":[0.5,{"x":100.0}]})"));
}

TEST(AnthropicWireReply, ToolsModePrefersTheToolOverText) {
  const std::string body = R"({"type":"message","role":"assistant","model":"m","stop_reason":"tool_use",
      "content":[{"type":"text","text":"Let me answer."},
                 {"type":"tool_use","id":"t1","name":"Weather","input":{"city":"Rome","temp":20}},
                 {"type":"tool_use","id":"t2","name":"Weather","input":{"city":"Second","temp":0}}],
      "usage":{"input_tokens":1,"output_tokens":2}})";
  EXPECT_EQ(json::parse(dialect().parse_reply(body, output_mode::tools).text), json::parse(R"({"city":"Rome","temp":20})"));
  // Other modes read the text, and the tool input only when there is no text.
  EXPECT_EQ(dialect().parse_reply(body, output_mode::prompt).text, "Let me answer.");
  const std::string tool_only = covenant_test::anthropic_tool_message("x", R"({"a":1})");
  EXPECT_EQ(dialect().parse_reply(tool_only, output_mode::prompt).text, R"({"a":1})");
}

TEST(AnthropicWireReply, ToolsModeFallsBackToText) {
  const chat_response r = dialect().parse_reply(covenant_test::anthropic_message(R"({"city":"Oslo"})"), output_mode::tools);
  EXPECT_EQ(r.text, R"({"city":"Oslo"})");
}

TEST(AnthropicWireReply, TextBlocksAreConcatenatedAndOtherBlocksIgnored) {
  const std::string body = R"({"type":"message","content":[{"type":"thinking","thinking":"hmm"},
      {"type":"text","text":"ab"},{"type":"text","text":"cd"},{"type":"text"},42,null],"stop_reason":"end_turn"})";
  const chat_response r = dialect().parse_reply(body, output_mode::prompt);
  EXPECT_EQ(r.text, "abcd");
  EXPECT_EQ(r.usage, covenant::usage{});
  EXPECT_EQ(r.model, "");
}

TEST(AnthropicWireReply, ToolUseWithoutInputIsAnEmptyObject) {
  const std::string body = R"({"type":"message","content":[{"type":"tool_use","id":"t","name":"n"}]})";
  EXPECT_EQ(dialect().parse_reply(body, output_mode::tools).text, "{}");
}

TEST(AnthropicWireReply, StopReasonsMapToFinishReasons) {
  auto finish = [](const std::string& stop) {
    return dialect().parse_reply(covenant_test::anthropic_message("x", 1, 1, stop), output_mode::prompt).finish_reason;
  };
  EXPECT_EQ(finish("end_turn"), "stop");
  EXPECT_EQ(finish("stop_sequence"), "stop");
  EXPECT_EQ(finish("max_tokens"), "length");
  EXPECT_EQ(finish("tool_use"), "tool_use");
  EXPECT_EQ(finish("refusal"), "refusal");
  EXPECT_EQ(finish(""), "");  // stop_reason null
}

TEST(AnthropicWireReply, ErrorObjectBodyThrowsNamingTheError) {
  try {
    (void)dialect().parse_reply(covenant_test::anthropic_error("overloaded_error", "Overloaded"), output_mode::tools);
    FAIL() << "no exception";
  } catch (const engine_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("overloaded_error: Overloaded"));
    EXPECT_EQ(e.status(), 200);
    EXPECT_FALSE(e.retryable());
    EXPECT_FALSE(e.cancelled());
  }
}

TEST(AnthropicWireReply, NotAMessageThrowsSayingWhat) {
  auto message_of = [](std::string_view body) {
    try {
      (void)dialect().parse_reply(body, output_mode::prompt);
    } catch (const engine_error& e) {
      EXPECT_EQ(e.status(), 200);
      EXPECT_FALSE(e.retryable());
      return std::string(e.what());
    }
    return std::string("(no exception)");
  };
  EXPECT_THAT(message_of(""), HasSubstr("empty"));
  EXPECT_THAT(message_of(" \n"), HasSubstr("empty"));
  EXPECT_THAT(message_of("<html>502</html>"), HasSubstr("not JSON"));
  EXPECT_THAT(message_of("[1,2]"), HasSubstr("not a JSON object"));
  EXPECT_THAT(message_of(R"({"type":"completion","completion":"x"})"), HasSubstr("not a message"));
  EXPECT_THAT(message_of(R"({"type":"message"})"), HasSubstr("no \"content\""));
  EXPECT_THAT(message_of(R"({"type":"message","content":"text"})"), HasSubstr("not an array"));
  EXPECT_THAT(message_of(R"({"error":"boom"})"), HasSubstr("boom"));
  EXPECT_THAT(message_of(R"({"type":"error"})"), HasSubstr("server reported an error"));
}

TEST(AnthropicWireReply, MalformedBodiesNeverCrash) {
  const std::vector<std::string> bodies = {
      "",
      "null",
      "true",
      "42",
      "\"text\"",
      "{",
      "{\"type\":\"message\",\"content\":[",
      "{}",
      R"({"type":7,"content":[]})",
      R"({"type":"message","content":null})",
      R"({"type":"message","content":{}})",
      R"({"type":"message","content":[[],{},{"type":null},{"type":"text","text":7}]})",
      R"({"type":"message","content":[{"type":"tool_use","input":null}]})",
      R"({"type":"message","content":[{"type":"tool_use","input":"a string"}]})",
      R"({"type":"message","content":[],"usage":"lots","stop_reason":5,"model":["m"]})",
      R"({"type":"message","content":[],"usage":{"input_tokens":-4,"output_tokens":"9"}})",
      R"({"type":"message","content":[],"usage":{"input_tokens":1e300,"output_tokens":null}})",
      R"({"type":"error","error":{"type":null,"message":{"nested":true}}})",
      R"({"type":"error","error":[]})",
      std::string(10000, '[') + std::string(10000, ']'),
      std::string("{\"type\":\"message\",\"content\":[{\"type\":\"text\",\"text\":\"\xff\xfe\"}]}"),
      std::string("\0\0\0", 3),
  };
  for (const std::string& body : bodies) {
    for (output_mode mode : {output_mode::tools, output_mode::prompt}) {
      try {
        const chat_response r = dialect().parse_reply(body, mode);
        EXPECT_EQ(r.mode, mode);
      } catch (const engine_error& e) {
        EXPECT_EQ(e.status(), 200) << body;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not an engine_error for " << body << ": " << e.what();
      }
    }
  }
}

TEST(AnthropicWireReply, TokenCountsBeyondRangeAreClampedNotUndefined) {
  const chat_response r = dialect().parse_reply(
      R"({"type":"message","content":[{"type":"text","text":"x"}],"usage":{"input_tokens":1e300,"output_tokens":2.5}})",
      output_mode::prompt);
  EXPECT_EQ(r.usage.input_tokens, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(r.usage.output_tokens, 2u);
}

// ---------------------------------------------------------------------------------------------
// parse_event

TEST(AnthropicWireEvent, MessageStartReportsModelAndUsage) {
  const wire_event e = dialect().parse_event(
      "message_start",
      R"({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],
          "model":"claude-x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}})",
      output_mode::tools);
  EXPECT_FALSE(e.malformed);
  EXPECT_EQ(e.model, "claude-x");
  EXPECT_EQ(e.usage.input, 25u);
  EXPECT_EQ(e.usage.output, 1u);
  EXPECT_EQ(e.text, "");
  EXPECT_FALSE(e.done);
  EXPECT_FALSE(e.finish_reason.has_value());
}

TEST(AnthropicWireEvent, MessageStartWithoutOutputTokensReportsNone) {
  const wire_event e = dialect().parse_event(
      "message_start", R"({"type":"message_start","message":{"model":"m","usage":{"input_tokens":3}}})", output_mode::prompt);
  EXPECT_EQ(e.usage.input, 3u);
  EXPECT_FALSE(e.usage.output.has_value());
}

TEST(AnthropicWireEvent, ContentBlockStartOfTextEmitsItsInitialTextOutsideToolsMode) {
  const std::string data = R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":"He"}})";
  EXPECT_EQ(dialect().parse_event("content_block_start", data, output_mode::prompt).text, "He");
  EXPECT_EQ(dialect().parse_event("content_block_start", data, output_mode::tools).text, "");
}

TEST(AnthropicWireEvent, ContentBlockStartOfToolUseEmitsNothing) {
  const wire_event e = dialect().parse_event(
      "content_block_start",
      R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"W","input":{}}})",
      output_mode::tools);
  EXPECT_FALSE(e.malformed);
  EXPECT_EQ(e.text, "");
}

TEST(AnthropicWireEvent, TextDeltaIsTextOutsideToolsMode) {
  const std::string data = R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"llo"}})";
  EXPECT_EQ(dialect().parse_event("content_block_delta", data, output_mode::prompt).text, "llo");
  const wire_event in_tools = dialect().parse_event("content_block_delta", data, output_mode::tools);
  EXPECT_EQ(in_tools.text, "");
  EXPECT_FALSE(in_tools.malformed);
}

TEST(AnthropicWireEvent, InputJsonDeltaIsTextInToolsMode) {
  const std::string data =
      R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"ci"}})";
  EXPECT_EQ(dialect().parse_event("content_block_delta", data, output_mode::tools).text, "{\"ci");
  EXPECT_EQ(dialect().parse_event("content_block_delta", data, output_mode::prompt).text, "");
}

TEST(AnthropicWireEvent, OtherDeltasAreNotReplyText) {
  for (const char* data : {R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"x"}})",
                           R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}})"}) {
    for (output_mode mode : {output_mode::tools, output_mode::prompt}) {
      const wire_event e = dialect().parse_event("content_block_delta", data, mode);
      EXPECT_EQ(e.text, "");
      EXPECT_FALSE(e.malformed);
    }
  }
}

TEST(AnthropicWireEvent, ContentBlockStopAndPingSayNothing) {
  for (const auto& [type, data] : std::vector<std::pair<std::string, std::string>>{
           {"content_block_stop", R"({"type":"content_block_stop","index":0})"}, {"ping", R"({"type": "ping"})"}}) {
    const wire_event e = dialect().parse_event(type, data, output_mode::tools);
    EXPECT_FALSE(e.malformed) << type;
    EXPECT_EQ(e.text, "");
    EXPECT_FALSE(e.done);
    EXPECT_FALSE(e.error.has_value());
    EXPECT_FALSE(e.finish_reason.has_value());
    EXPECT_FALSE(e.usage.input.has_value());
  }
}

TEST(AnthropicWireEvent, MessageDeltaReportsFinishReasonAndOutputTokens) {
  wire_event e = dialect().parse_event(
      "message_delta",
      R"({"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":15}})",
      output_mode::prompt);
  EXPECT_EQ(e.finish_reason, "length");
  EXPECT_EQ(e.usage.output, 15u);
  EXPECT_FALSE(e.usage.input.has_value());
  e = dialect().parse_event("message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{}})",
                            output_mode::prompt);
  EXPECT_EQ(e.finish_reason, "stop");
  EXPECT_FALSE(e.usage.output.has_value());
  e = dialect().parse_event("message_delta", R"({"type":"message_delta","delta":{"stop_reason":null}})", output_mode::prompt);
  EXPECT_FALSE(e.finish_reason.has_value());
  EXPECT_FALSE(e.malformed);
}

TEST(AnthropicWireEvent, MessageStopIsTheEnd) {
  const wire_event e = dialect().parse_event("message_stop", R"({"type":"message_stop"})", output_mode::tools);
  EXPECT_TRUE(e.done);
  EXPECT_FALSE(e.malformed);
}

TEST(AnthropicWireEvent, ErrorEventNamesTypeAndMessage) {
  const wire_event e = dialect().parse_event(
      "error", R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})", output_mode::tools);
  EXPECT_EQ(e.error, "overloaded_error: Overloaded");
  EXPECT_FALSE(e.done);
  auto [type, data] = split_event(covenant_test::anthropic_error_event("api_error", "Internal\nserver error"));
  EXPECT_EQ(dialect().parse_event(type, data, output_mode::prompt).error, "api_error: Internal server error");
  EXPECT_EQ(dialect().parse_event("error", R"({"type":"error"})", output_mode::prompt).error, "unknown error");
}

TEST(AnthropicWireEvent, TypeComesFromTheDataWithoutAnEventLine) {
  EXPECT_TRUE(dialect().parse_event("", R"({"type":"message_stop"})", output_mode::tools).done);
  EXPECT_EQ(dialect()
                .parse_event("", R"({"type":"content_block_delta","delta":{"type":"text_delta","text":"x"}})",
                             output_mode::prompt)
                .text,
            "x");
}

TEST(AnthropicWireEvent, UnparseableOrUnknownEventsAreMalformed) {
  const std::vector<std::pair<std::string, std::string>> events = {
      {"message_start", ""},
      {"message_start", "not json"},
      {"message_start", "[1]"},
      {"message_start", R"({"type":"message_start"})"},
      {"message_start", R"({"type":"message_start","message":"m"})"},
      {"content_block_start", R"({"type":"content_block_start","index":0})"},
      {"content_block_delta", R"({"type":"content_block_delta","delta":[]})"},
      {"", R"({"no_type":1})"},
      {"", "{}"},
      {"surprise", R"({"type":"surprise"})"},
      {"", "[DONE]"},
      {"ping", "{\"type\":\"ping\""},
  };
  for (const auto& [type, data] : events) {
    const wire_event e = dialect().parse_event(type, data, output_mode::tools);
    EXPECT_TRUE(e.malformed) << type << " " << data;
    EXPECT_EQ(e.text, "");
    EXPECT_FALSE(e.done);
  }
}

TEST(AnthropicWireEvent, OddShapesNeverThrow) {
  const std::vector<std::string> datas = {
      R"({"type":"message_delta","delta":"x","usage":7})",
      R"({"type":"message_delta","delta":{"stop_reason":3},"usage":{"output_tokens":"many"}})",
      R"({"type":"content_block_delta","delta":{"type":"text_delta","text":null}})",
      R"({"type":"content_block_delta","delta":{"type":"input_json_delta","partial_json":{}}})",
      R"({"type":"message_start","message":{"usage":{"input_tokens":-1,"output_tokens":1.5e3},"model":1}})",
      R"({"type":"error","error":7})",
      R"({"type":["error"]})",
      std::string(5000, '{'),
      std::string("\xc3\x28", 2),
  };
  for (const std::string& data : datas)
    for (std::string_view type : {std::string_view(), std::string_view("message_delta"), std::string_view("error")})
      for (output_mode mode : {output_mode::tools, output_mode::prompt})
        EXPECT_NO_THROW((void)dialect().parse_event(type, data, mode)) << data;
}

TEST(AnthropicWireStream, ToolStreamReassemblesTheInputJson) {
  const std::string input = R"({"city": "San Francisco", "temp": 14.5, "notes": ["fog", "wind"]})";
  const std::vector<std::string> pieces = {"", "{\"city\": \"San", " Francisco\", \"te", "mp\": 14.5, \"notes\": [\"fo",
                                           "g\", \"wind\"]", "}"};
  const std::vector<std::string> chunks = covenant_test::anthropic_stream(pieces, true, "tool_use", 40, 21, "Weather");
  const replay r = replay_stream(chunks, output_mode::tools);
  EXPECT_EQ(json::parse(r.text), json::parse(input));
  EXPECT_EQ(r.finish_reason, "tool_use");
  EXPECT_EQ(r.input_tokens, 40u);
  EXPECT_EQ(r.output_tokens, 21u);
  EXPECT_EQ(r.model, "loopback");
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.malformed, 0);
  EXPECT_EQ(r.error, "");
  // The same without `event:` lines (the data's own "type").
  EXPECT_EQ(replay_stream(chunks, output_mode::tools, false).text, r.text);
}

TEST(AnthropicWireStream, TextStreamReassemblesTheText) {
  const std::vector<std::string> chunks =
      covenant_test::anthropic_stream({"Hel", "lo, ", "world"}, false, "max_tokens", 8, 3);
  const replay r = replay_stream(chunks, output_mode::prompt);
  EXPECT_EQ(r.text, "Hello, world");
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(r.input_tokens, 8u);
  EXPECT_EQ(r.output_tokens, 3u);
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.malformed, 0);
}

// A stream as the API writes it when the model explains itself before calling a tool: a text
// block, then a tool_use block (index 1), usage in message_start and cumulative in message_delta.
const std::vector<std::string> mixed_stream = {
    "event: message_start\ndata: "
    R"({"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet",)"
    R"("content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_read_input_tokens":0,"output_tokens":2}}})"
    "\n\n",
    "event: content_block_start\ndata: "
    R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"
    "\n\n",
    "event: ping\ndata: {\"type\": \"ping\"}\n\n",
    "event: content_block_delta\ndata: "
    R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Checking the weather."}})"
    "\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\ndata: "
    R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01","name":"Weather","input":{}}})"
    "\n\n",
    "event: content_block_delta\ndata: "
    R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}})"
    "\n\n",
    "event: content_block_delta\ndata: "
    R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}})"
    "\n\n",
    "event: content_block_delta\ndata: "
    R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ris\", \"temp\": 9}"}})"
    "\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: message_delta\ndata: "
    R"({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":472,"output_tokens":89}})"
    "\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
};

TEST(AnthropicWireStream, MixedStreamInToolsModeYieldsOnlyTheToolInput) {
  const replay r = replay_stream(mixed_stream, output_mode::tools);
  EXPECT_EQ(json::parse(r.text), json::parse(R"({"city":"Paris","temp":9})"));
  EXPECT_EQ(r.finish_reason, "tool_use");
  EXPECT_EQ(r.input_tokens, 472u);
  EXPECT_EQ(r.output_tokens, 89u);
  EXPECT_EQ(r.model, "claude-sonnet");
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.malformed, 0);
}

TEST(AnthropicWireStream, MixedStreamInPromptModeYieldsOnlyTheText) {
  EXPECT_EQ(replay_stream(mixed_stream, output_mode::prompt).text, "Checking the weather.");
}

TEST(AnthropicWireStream, ErrorMidStreamIsReported) {
  std::vector<std::string> chunks = covenant_test::anthropic_stream({"{\"a\":"}, true);
  chunks.resize(4);  // message_start, content_block_start, ping, one delta
  chunks.push_back(covenant_test::anthropic_error_event("overloaded_error", "Overloaded"));
  const replay r = replay_stream(chunks, output_mode::tools);
  EXPECT_EQ(r.text, "{\"a\":");
  EXPECT_EQ(r.error, "overloaded_error: Overloaded");
  EXPECT_FALSE(r.done);
  EXPECT_EQ(r.finish_reason, "");
}

// ---------------------------------------------------------------------------------------------
// the test helpers' bodies are what the dialect reads

TEST(AnthropicReplies, HelpersProduceTheDocumentedShapes) {
  const json::value m = json::parse(covenant_test::anthropic_message("hi", 3, 4, "max_tokens"));
  EXPECT_EQ(m.at("type"), "message");
  EXPECT_EQ(m.at("content").at(0).at("type"), "text");
  EXPECT_EQ(m.at("stop_reason"), "max_tokens");
  EXPECT_EQ(m.at("usage").at("output_tokens"), 4);
  const json::value t = json::parse(covenant_test::anthropic_tool_message("W", "not json"));
  EXPECT_EQ(t.at("content").at(0).at("input"), "not json");
  const json::value e = json::parse(covenant_test::anthropic_error("rate_limit_error", "slow down"));
  EXPECT_EQ(e.at("error").at("type"), "rate_limit_error");
  const std::vector<std::string> s = covenant_test::anthropic_stream({"a", "b"}, false);
  ASSERT_EQ(s.size(), 8u);
  for (const std::string& chunk : s) {
    EXPECT_TRUE(chunk.starts_with("event: ")) << chunk;
    EXPECT_TRUE(chunk.ends_with("\n\n")) << chunk;
    auto [type, data] = split_event(chunk);
    EXPECT_EQ(json::parse(data).at("type").as_string(), type);
  }
}

}  // namespace
