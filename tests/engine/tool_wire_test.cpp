// Tool calls on the wire (src/engine/openai_wire.cpp, anthropic_wire.cpp, http_engine.cpp): the
// request bodies of both dialects with tools in each output mode, with assistant tool-call messages
// and tools' results; whole replies with parallel calls (with and without content, with the answer
// tool's call in tools mode); streamed events; and the HTTP engine against a loopback server, where
// a streamed reply's parallel calls arrive in interleaved pieces.
#include <covenant/engine/http_engine.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

// A private header of the library (src/ is on the tests' include path, not on a user's).
#include "engine/wire_dialect.hpp"
#include "loopback_server.hpp"
#include "reply_collector.hpp"

namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using covenant::chat_request;
using covenant::chat_response;
using covenant::http_engine_options;
using covenant::message;
using covenant::output_mode;
using covenant::role;
using covenant::tool_call;
using covenant::tool_spec;
using covenant::detail::reply_form;
using covenant::detail::wire_event;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;
using ::testing::ElementsAre;

const covenant::detail::wire_dialect& openai() {
  static const std::unique_ptr<covenant::detail::wire_dialect> d = covenant::detail::openai_dialect();
  return *d;
}

const covenant::detail::wire_dialect& anthropic() {
  static const std::unique_ptr<covenant::detail::wire_dialect> d = covenant::detail::anthropic_dialect();
  return *d;
}

const json::value weather_schema = json::parse(
    R"({"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false})");
const json::value answer_schema = json::parse(
    R"({"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"],"additionalProperties":false})");
const json::value empty_parameters =
    json::parse(R"({"type":"object","properties":{},"required":[],"additionalProperties":false})");

/// Two tools: get_weather (with a schema) and now (without one).
std::shared_ptr<const std::vector<tool_spec>> two_tools() {
  return std::make_shared<const std::vector<tool_spec>>(std::vector<tool_spec>{
      {"get_weather", "The weather in a city.", std::make_shared<const json::value>(weather_schema)},
      {"now", "The current time.", nullptr}});
}

/// A request with the two tools, the answer's schema named "Answer", in `mode`.
chat_request agent_request(output_mode mode, bool stream = false) {
  chat_request r;
  r.messages = {{role::system, "Answer the question."}, {role::user, "Weather in Oslo and Rome?"}};
  r.response_schema = std::make_shared<const json::value>(answer_schema);
  r.schema_name = "Answer";
  r.mode = mode;
  r.tools = two_tools();
  r.stream = stream;
  return r;
}

/// The conversation after the model called both tools: its calls, their results (one an error),
/// and a user message after them.
std::vector<message> after_calls() {
  message assistant{role::assistant, ""};
  assistant.tool_calls = {{"call_1", "get_weather", R"({"city":"Oslo"})"}, {"call_2", "now", "not json"}};
  message first{role::tool, "12 degrees"};
  first.tool_call_id = "call_1";
  message second{role::tool, "the clock is broken"};
  second.tool_call_id = "call_2";
  second.is_error = true;
  return {{role::system, "Answer the question."}, {role::user, "Weather in Oslo?"}, assistant, first, second,
          {role::user, "Be brief."}};
}

reply_form agent_form(output_mode mode, std::string_view answer_tool) {
  reply_form f(mode);
  f.answer_tool = answer_tool;
  f.agent = true;
  return f;
}

/// The names of a body's tools.
std::vector<std::string> tool_names(const json::object& body, bool openai_shape) {
  std::vector<std::string> out;
  for (const json::value& t : body.at("tools").as_array())
    out.emplace_back(openai_shape ? t.at("function").at("name").as_string() : t.at("name").as_string());
  return out;
}

// ---------------------------------------------------------------------------------------------
// OpenAI request bodies

TEST(ToolWire, OpenAiBodyListsTheToolsInEveryMode) {
  const http_engine_options o;
  for (output_mode mode : {output_mode::json_schema, output_mode::json_object, output_mode::tools, output_mode::prompt}) {
    const chat_request r = agent_request(mode);
    const json::object body = openai().body(r, mode, o);
    EXPECT_EQ(openai().body_text(r, mode, o), json::serialize(body)) << to_string(mode);
    const json::array& tools = body.at("tools").as_array();
    ASSERT_GE(tools.size(), 2u);
    EXPECT_EQ(tools[0], json::parse(R"({"type":"function","function":{"name":"get_weather",
        "description":"The weather in a city.","parameters":)" + json::serialize(weather_schema) + R"(,"strict":true}})"));
    EXPECT_EQ(tools[1].at("function").at("parameters"), empty_parameters);  // a tool without a schema
    EXPECT_EQ(tools[1].at("function").at("strict"), true);
    if (mode == output_mode::tools) {
      EXPECT_THAT(tool_names(body, true), ElementsAre("get_weather", "now", "Answer"));
      EXPECT_EQ(tools[2].at("function").at("parameters"), answer_schema);
      EXPECT_EQ(body.at("tool_choice"), "required");  // free to call a tool, not forced to answer
    } else {
      EXPECT_THAT(tool_names(body, true), ElementsAre("get_weather", "now"));
      EXPECT_FALSE(body.contains("tool_choice")) << to_string(mode);
    }
  }
  EXPECT_EQ(openai().body(agent_request(output_mode::json_schema), output_mode::json_schema, o)
                .at("response_format")
                .at("json_schema")
                .at("name"),
            "Answer");
  EXPECT_EQ(openai().body(agent_request(output_mode::json_object), output_mode::json_object, o).at("response_format"),
            json::parse(R"({"type":"json_object"})"));
  EXPECT_FALSE(openai().body(agent_request(output_mode::prompt), output_mode::prompt, o).contains("response_format"));
}

TEST(ToolWire, OpenAiBodyWithoutToolsKeepsTheForcedAnswerFunction) {
  chat_request r = agent_request(output_mode::tools);
  r.tools.reset();
  const json::object body = openai().body(r, output_mode::tools, {});
  EXPECT_THAT(tool_names(body, true), ElementsAre("Answer"));
  EXPECT_EQ(body.at("tool_choice"), json::parse(R"({"type":"function","function":{"name":"Answer"}})"));
  r.tools = std::make_shared<const std::vector<tool_spec>>();  // empty: no tools either
  EXPECT_EQ(openai().body(r, output_mode::tools, {}), body);
  EXPECT_EQ(openai().body_text(r, output_mode::tools, {}), json::serialize(body));
}

TEST(ToolWire, OpenAiBodyCarriesToolCallsAndResults) {
  chat_request r = agent_request(output_mode::json_schema);
  r.messages = after_calls();
  r.messages[2].content = "Let me look.";
  const json::object body = openai().body(r, output_mode::json_schema, {});
  EXPECT_EQ(openai().body_text(r, output_mode::json_schema, {}), json::serialize(body));
  const json::array& m = body.at("messages").as_array();
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[2], json::parse(R"({"role":"assistant","content":"Let me look.","tool_calls":[
      {"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
      {"id":"call_2","type":"function","function":{"name":"now","arguments":"not json"}}]})"));
  EXPECT_EQ(m[3], json::parse(R"({"role":"tool","tool_call_id":"call_1","content":"12 degrees"})"));
  // is_error is not sent: the content says it.
  EXPECT_EQ(m[4], json::parse(R"({"role":"tool","tool_call_id":"call_2","content":"the clock is broken"})"));
  EXPECT_EQ(m[5], json::parse(R"({"role":"user","content":"Be brief."})"));

  // An assistant message with calls and no text has a null content; the body is the document's
  // text even without tools (a conversation that had them).
  r.messages = after_calls();
  r.tools.reset();
  const json::object plain = openai().body(r, output_mode::prompt, {});
  EXPECT_EQ(openai().body_text(r, output_mode::prompt, {}), json::serialize(plain));
  EXPECT_TRUE(plain.at("messages").at(2).at("content").is_null());
  EXPECT_EQ(plain.at("messages").at(2).at("tool_calls").as_array().size(), 2u);
  EXPECT_FALSE(plain.contains("tools"));
}

// ---------------------------------------------------------------------------------------------
// Anthropic request bodies

TEST(ToolWire, AnthropicBodyListsTheToolsAndLetsTheModelChoose) {
  http_engine_options o;
  json::object body = anthropic().body(agent_request(output_mode::tools), output_mode::tools, o);
  EXPECT_EQ(anthropic().body_text(agent_request(output_mode::tools), output_mode::tools, o), json::serialize(body));
  EXPECT_THAT(tool_names(body, false), ElementsAre("get_weather", "now", "Answer"));
  const json::array& tools = body.at("tools").as_array();
  EXPECT_EQ(tools[0], (json::object{{"name", "get_weather"}, {"description", "The weather in a city."},
                                    {"input_schema", weather_schema}}));
  EXPECT_EQ(tools[1].at("input_schema"), empty_parameters);
  EXPECT_EQ(tools[2].at("input_schema"), answer_schema);
  EXPECT_EQ(body.at("tool_choice"), json::parse(R"({"type":"any"})"));

  o.thinking_budget = 1024;  // a tool choice that forces a call is refused with thinking
  body = anthropic().body(agent_request(output_mode::tools), output_mode::tools, o);
  EXPECT_EQ(body.at("tool_choice"), json::parse(R"({"type":"auto"})"));

  body = anthropic().body(agent_request(output_mode::prompt), output_mode::prompt, {});
  EXPECT_THAT(tool_names(body, false), ElementsAre("get_weather", "now"));
  EXPECT_FALSE(body.contains("tool_choice"));

  chat_request alone = agent_request(output_mode::tools);
  alone.tools.reset();
  body = anthropic().body(alone, output_mode::tools, {});
  EXPECT_THAT(tool_names(body, false), ElementsAre("Answer"));
  EXPECT_EQ(body.at("tool_choice"), json::parse(R"({"type":"tool","name":"Answer"})"));
}

TEST(ToolWire, AnthropicBodyPutsCallsInToolUseBlocksAndResultsInTheUserTurn) {
  chat_request r = agent_request(output_mode::tools);
  r.messages = after_calls();
  const json::object body = anthropic().body(r, output_mode::tools, {});
  EXPECT_EQ(json::parse(anthropic().body_text(r, output_mode::tools, {})), body);
  EXPECT_EQ(body.at("system"), "Answer the question.");
  const json::array& m = body.at("messages").as_array();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0], json::parse(R"({"role":"user","content":"Weather in Oslo?"})"));  // a plain turn stays text
  // No text block for an empty content; arguments that are no JSON object go in as {}.
  EXPECT_EQ(m[1], json::parse(R"({"role":"assistant","content":[
      {"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Oslo"}},
      {"type":"tool_use","id":"call_2","name":"now","input":{}}]})"));
  // The results and the user message after them: one user turn, the results first.
  EXPECT_EQ(m[2], json::parse(R"({"role":"user","content":[
      {"type":"tool_result","tool_use_id":"call_1","content":"12 degrees"},
      {"type":"tool_result","tool_use_id":"call_2","content":"the clock is broken","is_error":true},
      {"type":"text","text":"Be brief."}]})"));

  // Text beside the calls is a text block before them.
  r.messages[2].content = "Let me look.";
  const json::object with_text = anthropic().body(r, output_mode::tools, {});
  EXPECT_EQ(with_text.at("messages").at(1).at("content").at(0), json::parse(R"({"type":"text","text":"Let me look."})"));
  EXPECT_EQ(with_text.at("messages").at(1).at("content").as_array().size(), 3u);
}

// ---------------------------------------------------------------------------------------------
// Whole replies

std::string openai_reply(const json::value& content, const json::array& calls, std::string_view finish = "tool_calls") {
  json::object message{{"role", "assistant"}, {"content", content}};
  if (!calls.empty()) message["tool_calls"] = calls;
  return json::serialize(json::object{
      {"model", "gpt-test"},
      {"choices", json::array{json::object{{"index", 0}, {"message", message}, {"finish_reason", finish}}}},
      {"usage", json::object{{"prompt_tokens", 30}, {"completion_tokens", 9}}}});
}

json::object openai_call(std::string_view id, std::string_view name, std::string_view arguments) {
  return json::object{{"id", id}, {"type", "function"}, {"function", json::object{{"name", name}, {"arguments", arguments}}}};
}

TEST(ToolWire, OpenAiReplyWithParallelCalls) {
  const json::array calls{openai_call("call_1", "get_weather", R"({"city":"Oslo"})"),
                          openai_call("call_2", "get_weather", R"({"city":"Rome"})"), openai_call("call_3", "now", "")};
  const std::vector<tool_call> expected{
      {"call_1", "get_weather", R"({"city":"Oslo"})"}, {"call_2", "get_weather", R"({"city":"Rome"})"}, {"call_3", "now", ""}};
  for (output_mode mode : {output_mode::json_schema, output_mode::tools, output_mode::prompt}) {
    // Without content: whole, the text empty.
    chat_response r = openai().parse_reply(openai_reply(nullptr, calls), agent_form(mode, "Answer"));
    EXPECT_EQ(r.tool_calls, expected) << to_string(mode);
    EXPECT_EQ(r.text, "");
    EXPECT_EQ(r.finish_reason, "tool_calls");
    EXPECT_EQ(r.mode, mode);
    EXPECT_EQ(r.usage.input_tokens, 30u);
    // With content: the content is the text, never a call's arguments.
    r = openai().parse_reply(openai_reply("Looking it up.", calls), agent_form(mode, "Answer"));
    EXPECT_EQ(r.tool_calls, expected);
    EXPECT_EQ(r.text, "Looking it up.");
  }
  // Without an agent the first call's arguments are the reply, as always.
  const chat_response plain = openai().parse_reply(openai_reply(nullptr, calls), output_mode::tools);
  EXPECT_EQ(plain.text, R"({"city":"Oslo"})");
  EXPECT_TRUE(plain.tool_calls.empty());
  // Neither content nor calls: not a reply.
  EXPECT_THROW((void)openai().parse_reply(openai_reply(nullptr, {}), agent_form(output_mode::tools, "Answer")),
               covenant::engine_error);
}

TEST(ToolWire, OpenAiReplyInToolsModeTakesTheFirstAnswerCallAsTheText) {
  const json::array calls{openai_call("call_1", "get_weather", R"({"city":"Oslo"})"),
                          openai_call("call_2", "Answer", R"({"answer":"sunny"})"),
                          openai_call("call_3", "Answer", R"({"answer":"again"})")};
  chat_response r = openai().parse_reply(openai_reply("ignored", calls), agent_form(output_mode::tools, "Answer"));
  EXPECT_EQ(r.text, R"({"answer":"sunny"})");
  EXPECT_EQ(r.tool_calls, (std::vector<tool_call>{{"call_1", "get_weather", R"({"city":"Oslo"})"},
                                                  {"call_3", "Answer", R"({"answer":"again"})"}}));
  // In another mode a call named like the answer is a tool call like any other.
  r = openai().parse_reply(openai_reply(nullptr, calls), agent_form(output_mode::json_schema, "Answer"));
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.tool_calls.size(), 3u);
  // Arguments sent as an object come as JSON text.
  const json::array object_arguments{json::object{
      {"id", "c"}, {"type", "function"}, {"function", json::object{{"name", "Answer"}, {"arguments", {{"n", 15.5}}}}}}};
  r = openai().parse_reply(openai_reply(nullptr, object_arguments), agent_form(output_mode::tools, "Answer"));
  EXPECT_EQ(r.text, R"({"n":15.5})");
  EXPECT_TRUE(r.tool_calls.empty());
}

std::string anthropic_reply(const json::array& content, std::string_view stop_reason = "tool_use") {
  return json::serialize(json::object{{"type", "message"},
                                      {"model", "claude-test"},
                                      {"content", content},
                                      {"stop_reason", stop_reason},
                                      {"usage", json::object{{"input_tokens", 40}, {"output_tokens", 12}}}});
}

json::object tool_use(std::string_view id, std::string_view name, const json::value& input) {
  return json::object{{"type", "tool_use"}, {"id", id}, {"name", name}, {"input", input}};
}

TEST(ToolWire, AnthropicReplyWithParallelCalls) {
  const json::array calls{tool_use("toolu_1", "get_weather", {{"city", "Oslo"}}),
                          tool_use("toolu_2", "get_weather", {{"city", "Rome"}}), tool_use("toolu_3", "now", nullptr)};
  const std::vector<tool_call> expected{{"toolu_1", "get_weather", R"({"city":"Oslo"})"},
                                        {"toolu_2", "get_weather", R"({"city":"Rome"})"},
                                        {"toolu_3", "now", "{}"}};
  for (output_mode mode : {output_mode::tools, output_mode::prompt}) {
    chat_response r = anthropic().parse_reply(anthropic_reply(calls), agent_form(mode, "Answer"));
    EXPECT_EQ(r.tool_calls, expected) << to_string(mode);
    EXPECT_EQ(r.text, "");
    EXPECT_EQ(r.finish_reason, "tool_use");  // as the server says
    EXPECT_EQ(r.mode, mode);
    json::array with_text{json::object{{"type", "text"}, {"text", "Looking it up."}}};
    for (const json::value& c : calls) with_text.push_back(c);
    r = anthropic().parse_reply(anthropic_reply(with_text), agent_form(mode, "Answer"));
    EXPECT_EQ(r.tool_calls, expected);
    EXPECT_EQ(r.text, "Looking it up.");
  }
  // Without an agent the first tool_use input is the reply, as always.
  EXPECT_EQ(anthropic().parse_reply(anthropic_reply(calls), output_mode::tools).text, R"({"city":"Oslo"})");
}

TEST(ToolWire, AnthropicReplyInToolsModeTakesTheFirstAnswerCallAsTheText) {
  const json::array content{json::object{{"type", "text"}, {"text", "Here."}},
                            tool_use("toolu_1", "get_weather", {{"city", "Oslo"}}),
                            tool_use("toolu_2", "Answer", {{"answer", "sunny"}, {"temp", 15.5}})};
  chat_response r = anthropic().parse_reply(anthropic_reply(content), agent_form(output_mode::tools, "Answer"));
  EXPECT_EQ(r.text, R"({"answer":"sunny","temp":15.5})");
  EXPECT_EQ(r.tool_calls, (std::vector<tool_call>{{"toolu_1", "get_weather", R"({"city":"Oslo"})"}}));
  r = anthropic().parse_reply(anthropic_reply(content), agent_form(output_mode::prompt, "Answer"));
  EXPECT_EQ(r.text, "Here.");
  EXPECT_EQ(r.tool_calls.size(), 2u);
}

TEST(ToolWire, AnswerToolNamesAreTheDialectsOwn) {
  EXPECT_EQ(openai().answer_tool_name("My Answer"), "My_Answer");
  EXPECT_EQ(openai().answer_tool_name(""), "response");
  EXPECT_EQ(anthropic().answer_tool_name("My Answer"), "My_Answer");
  EXPECT_EQ(anthropic().answer_tool_name(""), "output");
}

// ---------------------------------------------------------------------------------------------
// Streamed events

/// One Chat Completions chunk whose delta is `delta` (as SSE data, without "data: ").
std::string openai_chunk(json::object delta, json::value finish = nullptr) {
  return json::serialize(json::object{
      {"model", "gpt-test"},
      {"choices", json::array{json::object{{"index", 0}, {"delta", std::move(delta)}, {"finish_reason", std::move(finish)}}}}});
}

/// A tool_calls entry of a delta: its index, and its id and name when not empty.
json::object call_piece(int index, std::string_view id, std::string_view name, std::string_view arguments) {
  json::object fn{{"arguments", arguments}};
  if (!name.empty()) fn["name"] = name;
  json::object piece{{"index", index}};
  if (!id.empty()) {
    piece["id"] = id;
    piece["type"] = "function";
  }
  piece["function"] = std::move(fn);
  return piece;
}

TEST(ToolWire, OpenAiEventCarriesEveryCallPieceApartFromTheContent) {
  const std::string data = openai_chunk(json::object{
      {"content", "Hm."},
      {"tool_calls", json::array{call_piece(0, "call_1", "get_weather", ""), call_piece(1, "", "", R"({"ci)")}}});
  for (output_mode mode : {output_mode::json_schema, output_mode::tools}) {
    const wire_event e = openai().parse_event("", data, agent_form(mode, "Answer"));
    EXPECT_EQ(e.text, "Hm.");
    ASSERT_EQ(e.tools.size(), 2u);
    EXPECT_EQ(e.tools[0].index, 0u);
    EXPECT_EQ(e.tools[0].id, "call_1");
    EXPECT_EQ(e.tools[0].name, "get_weather");
    EXPECT_EQ(e.tools[0].arguments, "");
    EXPECT_EQ(e.tools[1].index, 1u);
    EXPECT_EQ(e.tools[1].id, "");
    EXPECT_EQ(e.tools[1].name, "");
    EXPECT_EQ(e.tools[1].arguments, R"({"ci)");
  }
  // Without an agent: the text as always, no pieces.
  const std::string args_only = openai_chunk(json::object{{"tool_calls", json::array{call_piece(0, "", "", "{\"a")}}});
  const wire_event plain = openai().parse_event("", args_only, output_mode::tools);
  EXPECT_EQ(plain.text, "{\"a");
  EXPECT_TRUE(plain.tools.empty());
  EXPECT_EQ(openai().parse_event("", args_only, agent_form(output_mode::tools, "Answer")).text, "");
}

std::string anthropic_data(const json::object& event) { return json::serialize(event); }

TEST(ToolWire, AnthropicEventsGiveToolBlocksAsPiecesAtTheirIndex) {
  const reply_form form = agent_form(output_mode::tools, "Answer");
  wire_event e = anthropic().parse_event(
      "content_block_start",
      anthropic_data({{"type", "content_block_start"}, {"index", 2}, {"content_block", tool_use("toolu_2", "now", json::object{})}}),
      form);
  ASSERT_EQ(e.tools.size(), 1u);
  EXPECT_EQ(e.tools[0].index, 2u);
  EXPECT_EQ(e.tools[0].id, "toolu_2");
  EXPECT_EQ(e.tools[0].name, "now");
  EXPECT_EQ(e.tools[0].arguments, "");
  EXPECT_EQ(e.text, "");

  const std::string delta = anthropic_data(
      {{"type", "content_block_delta"}, {"index", 2}, {"delta", {{"type", "input_json_delta"}, {"partial_json", "{\"x"}}}});
  e = anthropic().parse_event("content_block_delta", delta, form);
  ASSERT_EQ(e.tools.size(), 1u);
  EXPECT_EQ(e.tools[0].index, 2u);
  EXPECT_EQ(e.tools[0].arguments, "{\"x");
  EXPECT_EQ(e.text, "");  // not the text, even in tools mode
  EXPECT_EQ(anthropic().parse_event("content_block_delta", delta, output_mode::tools).text, "{\"x");  // without an agent

  // With an agent, text is text in tools mode too.
  const std::string text = anthropic_data(
      {{"type", "content_block_delta"}, {"index", 0}, {"delta", {{"type", "text_delta"}, {"text", "Let me see."}}}});
  e = anthropic().parse_event("content_block_delta", text, form);
  EXPECT_EQ(e.text, "Let me see.");
  EXPECT_TRUE(e.tools.empty());
  EXPECT_EQ(anthropic().parse_event("content_block_delta", text, output_mode::tools).text, "");
}

// ---------------------------------------------------------------------------------------------
// The HTTP engine against a loopback server

using collector = covenant_test::reply_collector;

response_plan sse(std::vector<std::string> events) {
  response_plan p;
  p.content_type = "text/event-stream";
  p.chunks = std::move(events);
  return p;
}

std::string data_line(const std::string& data) { return "data: " + data + "\n\n"; }

std::string anthropic_event(const json::object& event) {
  return "event: " + std::string(event.at("type").as_string()) + "\ndata: " + json::serialize(event) + "\n\n";
}

json::object anthropic_delta(int index, std::string_view partial_json) {
  return {{"type", "content_block_delta"},
          {"index", index},
          {"delta", {{"type", "input_json_delta"}, {"partial_json", partial_json}}}};
}

json::object anthropic_block_start(int index, const json::object& block) {
  return {{"type", "content_block_start"}, {"index", index}, {"content_block", block}};
}

http_engine_options openai_options(const loopback_server& server) {
  http_engine_options o;
  o.base_url = server.base_url();
  o.model = "loopback";
  o.retry.delay = 1ms;
  return o;
}

http_engine_options anthropic_options(const loopback_server& server) {
  http_engine_options o;
  o.provider = covenant::provider::anthropic;
  o.base_url = "http://127.0.0.1:" + std::to_string(server.port());
  o.api_key = "sk-ant-test";
  o.model = "claude-test";
  o.retry.delay = 1ms;
  return o;
}

/// Runs one streamed call and returns the collector.
std::shared_ptr<collector> run(covenant::http_engine& engine, const chat_request& r) {
  auto c = std::make_shared<collector>();
  engine.start(r, c, {});
  return c;
}

TEST(ToolWire, OpenAiEngineGathersInterleavedParallelCalls) {
  loopback_server server([](const received_request&, std::size_t) {
    return sse({data_line(openai_chunk({{"role", "assistant"}, {"content", nullptr}})),
                data_line(openai_chunk({{"tool_calls", json::array{call_piece(0, "call_1", "get_weather", "")}}})),
                data_line(openai_chunk({{"tool_calls", json::array{call_piece(1, "call_2", "now", "")}}})),
                data_line(openai_chunk({{"tool_calls", json::array{call_piece(0, "", "", R"({"city":)")}}})),
                data_line(openai_chunk({{"tool_calls", json::array{call_piece(1, "", "", "{}")}}})),
                data_line(openai_chunk({{"tool_calls", json::array{call_piece(0, "", "", R"("Oslo"})")}}})),
                data_line(openai_chunk(json::object{}, "tool_calls")), "data: [DONE]\n\n"});
  });
  covenant::http_engine engine(openai_options(server));
  const auto c = run(engine, agent_request(output_mode::json_schema, true));
  const chat_response r = c->reply();
  EXPECT_EQ(r.tool_calls, (std::vector<tool_call>{{"call_1", "get_weather", R"({"city":"Oslo"})"}, {"call_2", "now", "{}"}}));
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.finish_reason, "tool_calls");
  EXPECT_FALSE(r.cut_off);
  EXPECT_THAT(c->pieces(), ElementsAre(collector::piece{0, "get_weather", ""}, collector::piece{1, "now", ""},
                                       collector::piece{0, "", R"({"city":)"}, collector::piece{1, "", "{}"},
                                       collector::piece{0, "", R"("Oslo"})"}));
  EXPECT_TRUE(c->texts().empty());
  const json::value body = json::parse(server.request(0).body);
  EXPECT_EQ(body.at("tools").as_array().size(), 2u);
  EXPECT_TRUE(body.as_object().contains("response_format"));
}

TEST(ToolWire, OpenAiEngineStreamsTheAnswerCallAsText) {
  loopback_server server([](const received_request&, std::size_t) {
    return sse({data_line(openai_chunk({{"tool_calls", json::array{call_piece(0, "call_1", "get_weather", "")}}})),
                data_line(openai_chunk({{"tool_calls", json::array{call_piece(1, "call_2", "Answer", "")}}})),
                data_line(openai_chunk({{"tool_calls", json::array{call_piece(1, "", "", R"({"answer":)")}}})),
                data_line(openai_chunk({{"tool_calls", json::array{call_piece(0, "", "", R"({"city":"Oslo"})")}}})),
                data_line(openai_chunk({{"tool_calls", json::array{call_piece(1, "", "", R"("sunny"})")}}})),
                data_line(openai_chunk(json::object{}, "tool_calls")), "data: [DONE]\n\n"});
  });
  covenant::http_engine engine(openai_options(server));
  const auto c = run(engine, agent_request(output_mode::tools, true));
  const chat_response r = c->reply();
  EXPECT_EQ(r.text, R"({"answer":"sunny"})");
  EXPECT_EQ(r.mode, output_mode::tools);
  EXPECT_EQ(r.tool_calls, (std::vector<tool_call>{{"call_1", "get_weather", R"({"city":"Oslo"})"}}));
  EXPECT_THAT(c->texts(), ElementsAre(R"({"answer":)", R"("sunny"})"));
  EXPECT_THAT(c->pieces(),
              ElementsAre(collector::piece{0, "get_weather", ""}, collector::piece{0, "", R"({"city":"Oslo"})"}));
  const json::value body = json::parse(server.request(0).body);
  EXPECT_EQ(body.at("tool_choice"), "required");
}

TEST(ToolWire, OpenAiEngineReadsAWholeReplyWithCallsAndFallsBackWithTheForm) {
  // The server refuses structured outputs; output_mode::automatic goes on in tools mode, where the
  // answer call is the text.
  loopback_server server([](const received_request& req, std::size_t) {
    if (req.body.find("response_format") != std::string::npos) {
      response_plan p;
      p.status = 400;
      p.body = R"({"error":{"message":"response_format json_schema is not supported"}})";
      return p;
    }
    return covenant_test::whole_reply(openai_reply(
        nullptr, json::array{openai_call("call_1", "now", "{}"), openai_call("call_2", "Answer", R"({"answer":"x"})")}));
  });
  covenant::http_engine engine(openai_options(server));
  const auto c = run(engine, agent_request(output_mode::automatic, true));
  const chat_response r = c->reply();
  EXPECT_EQ(r.mode, output_mode::tools);
  EXPECT_EQ(r.text, R"({"answer":"x"})");
  EXPECT_EQ(r.tool_calls, (std::vector<tool_call>{{"call_1", "now", "{}"}}));
  // A reply that did not stream comes as one piece each.
  EXPECT_THAT(c->texts(), ElementsAre(R"({"answer":"x"})"));
  EXPECT_THAT(c->pieces(), ElementsAre(collector::piece{0, "now", "{}"}));
  ASSERT_EQ(server.requests(), 2u);
  EXPECT_EQ(json::parse(server.request(1).body).at("tool_choice"), "required");
}

TEST(ToolWire, AnthropicEngineGathersInterleavedParallelCalls) {
  loopback_server server([](const received_request&, std::size_t) {
    return sse({anthropic_event({{"type", "message_start"},
                                 {"message", {{"type", "message"}, {"model", "claude-test"}, {"content", json::array{}},
                                              {"usage", {{"input_tokens", 40}, {"output_tokens", 1}}}}}}),
                anthropic_event(anthropic_block_start(0, {{"type", "text"}, {"text", ""}})),
                anthropic_event({{"type", "content_block_delta"},
                                 {"index", 0},
                                 {"delta", {{"type", "text_delta"}, {"text", "Checking."}}}}),
                anthropic_event({{"type", "content_block_stop"}, {"index", 0}}),
                anthropic_event(anthropic_block_start(1, tool_use("toolu_1", "get_weather", json::object{}))),
                anthropic_event(anthropic_block_start(2, tool_use("toolu_2", "now", json::object{}))),
                anthropic_event(anthropic_delta(1, "")),
                anthropic_event(anthropic_delta(1, R"({"city":)")),
                anthropic_event(anthropic_delta(2, "{}")),
                anthropic_event(anthropic_delta(1, R"("Rome"})")),
                anthropic_event({{"type", "content_block_stop"}, {"index", 1}}),
                anthropic_event({{"type", "content_block_stop"}, {"index", 2}}),
                anthropic_event({{"type", "message_delta"},
                                 {"delta", {{"stop_reason", "tool_use"}}},
                                 {"usage", {{"output_tokens", 30}}}}),
                anthropic_event({{"type", "message_stop"}})});
  });
  covenant::http_engine engine(anthropic_options(server));
  const auto c = run(engine, agent_request(output_mode::prompt, true));
  const chat_response r = c->reply();
  EXPECT_EQ(r.tool_calls,
            (std::vector<tool_call>{{"toolu_1", "get_weather", R"({"city":"Rome"})"}, {"toolu_2", "now", "{}"}}));
  EXPECT_EQ(r.text, "Checking.");
  EXPECT_EQ(r.finish_reason, "tool_use");
  EXPECT_EQ(r.usage.output_tokens, 30u);
  EXPECT_THAT(c->texts(), ElementsAre("Checking."));
  EXPECT_THAT(c->pieces(), ElementsAre(collector::piece{0, "get_weather", ""}, collector::piece{1, "now", ""},
                                       collector::piece{0, "", R"({"city":)"}, collector::piece{1, "", "{}"},
                                       collector::piece{0, "", R"("Rome"})"}));
  const json::value body = json::parse(server.request(0).body);
  EXPECT_EQ(body.at("tools").as_array().size(), 2u);
  EXPECT_FALSE(body.as_object().contains("tool_choice"));
}

TEST(ToolWire, AnthropicEngineStreamsTheAnswerCallAsText) {
  loopback_server server([](const received_request&, std::size_t) {
    return sse({anthropic_event({{"type", "message_start"},
                                 {"message", {{"type", "message"}, {"model", "claude-test"}, {"content", json::array{}},
                                              {"usage", {{"input_tokens", 40}, {"output_tokens", 1}}}}}}),
                anthropic_event(anthropic_block_start(0, tool_use("toolu_1", "now", json::object{}))),
                anthropic_event(anthropic_block_start(1, tool_use("toolu_2", "Answer", json::object{}))),
                anthropic_event(anthropic_delta(1, R"({"answer":)")),
                anthropic_event(anthropic_delta(0, "{}")),
                anthropic_event(anthropic_delta(1, R"("sunny"})")),
                anthropic_event({{"type", "message_delta"},
                                 {"delta", {{"stop_reason", "tool_use"}}},
                                 {"usage", {{"output_tokens", 30}}}}),
                anthropic_event({{"type", "message_stop"}})});
  });
  covenant::http_engine engine(anthropic_options(server));
  const auto c = run(engine, agent_request(output_mode::tools, true));
  const chat_response r = c->reply();
  EXPECT_EQ(r.text, R"({"answer":"sunny"})");
  EXPECT_EQ(r.mode, output_mode::tools);
  EXPECT_EQ(r.tool_calls, (std::vector<tool_call>{{"toolu_1", "now", "{}"}}));
  EXPECT_THAT(c->texts(), ElementsAre(R"({"answer":)", R"("sunny"})"));
  EXPECT_THAT(c->pieces(), ElementsAre(collector::piece{0, "now", ""}, collector::piece{0, "", "{}"}));
  const json::value body = json::parse(server.request(0).body);
  EXPECT_EQ(body.at("tool_choice"), json::parse(R"({"type":"any"})"));
}

TEST(ToolWire, AnthropicEngineReadsAWholeReplyWithCalls) {
  loopback_server server([](const received_request&, std::size_t) {
    return covenant_test::whole_reply(anthropic_reply(
        json::array{tool_use("toolu_1", "get_weather", {{"city", "Oslo"}}), tool_use("toolu_2", "now", json::object{})}));
  });
  covenant::http_engine engine(anthropic_options(server));
  const chat_response r = engine.complete(agent_request(output_mode::tools));
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.tool_calls, (std::vector<tool_call>{{"toolu_1", "get_weather", R"({"city":"Oslo"})"}, {"toolu_2", "now", "{}"}}));
  EXPECT_EQ(r.finish_reason, "tool_use");
}

}  // namespace
