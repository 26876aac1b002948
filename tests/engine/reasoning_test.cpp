// Reasoning models against a loopback server: the reasoning a server returns apart from the
// answer (OpenAI-style reasoning_content, Anthropic thinking blocks), whole and streamed, is kept
// and never read as the answer; what the requests say (reasoning_effort and max_completion_tokens,
// extended thinking with its budget and an unforced tool); a reply cut off while still reasoning.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/cassette.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/telemetry/audit_log.hpp>
#include <covenant/testing/testing.hpp>
#include <covenant/types/json_schema.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "anthropic_replies.hpp"
#include "loopback_engine.hpp"
#include "loopback_server.hpp"
#include "qa_model.hpp"

namespace {

using namespace std::chrono_literals;
using namespace covenant_test::qa;
using covenant::output_mode;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;
using ::testing::HasSubstr;
namespace json = boost::json;

const std::string answer_json = R"({"answer": "Paris", "confidence": 0.9})";
const std::string thought = "The capital of France is Paris; {\"answer\": \"Lyon\"} would be wrong.";

response_plan whole(std::string body) { return covenant_test::whole_reply(std::move(body)); }
response_plan streamed(std::vector<std::string> events) { return covenant_test::streamed_reply(std::move(events)); }

covenant::http_engine_options openai_options(const loopback_server& s) {
  return covenant_test::loopback_engine_options(s, covenant::provider::openai, "o3-mini");
}
covenant::http_engine_options anthropic_options(const loopback_server& s) {
  return covenant_test::loopback_engine_options(s, covenant::provider::anthropic, "claude-test");
}

covenant::chat_request request(output_mode mode, bool stream) {
  covenant::chat_request r;
  r.messages = {{covenant::role::system, "Reply with JSON."}, {covenant::role::user, "Capital of France?"}};
  r.response_schema = std::make_shared<const json::value>(covenant::openai_strict_schema_of<Answer>());
  r.schema_name = "Answer";
  r.mode = mode;
  r.stream = stream;
  r.temperature = 0.2;
  r.max_tokens = 500;
  return r;
}

// An OpenAI-style completion with reasoning_content beside the content.
std::string openai_reasoning_body(const std::string& content, const std::string& finish = "stop") {
  json::object message{{"role", "assistant"}, {"content", content}, {"reasoning_content", thought}};
  json::object o{{"id", "c"},
                 {"object", "chat.completion"},
                 {"model", "deepseek-reasoner"},
                 {"choices", json::array{json::object{{"index", 0}, {"message", message}, {"finish_reason", finish}}}},
                 {"usage", json::object{{"prompt_tokens", 20},
                                        {"completion_tokens", 60},
                                        {"completion_tokens_details", json::object{{"reasoning_tokens", 50}}}}}};
  return json::serialize(o);
}

std::vector<std::string> openai_reasoning_events() {
  auto chunk = [](const json::object& delta, const json::value& finish) {
    json::object o{{"id", "c"},
                   {"object", "chat.completion.chunk"},
                   {"model", "deepseek-reasoner"},
                   {"choices", json::array{json::object{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
    return "data: " + json::serialize(o) + "\n\n";
  };
  const std::size_t half = thought.size() / 2;
  return {chunk({{"role", "assistant"}, {"content", ""}, {"reasoning_content", thought.substr(0, half)}}, nullptr),
          chunk({{"reasoning_content", thought.substr(half)}, {"content", nullptr}}, nullptr),
          chunk({{"content", answer_json.substr(0, 10)}}, nullptr),
          chunk({{"content", answer_json.substr(10)}}, nullptr),
          chunk({}, "stop"),
          "data: [DONE]\n\n"};
}

TEST(Reasoning, OpenAiStyleReasoningIsKeptApartFromTheAnswerWholeAndStreamed) {
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "whole");
    loopback_server server([&](const received_request&, std::size_t) {
      return stream ? streamed(openai_reasoning_events()) : whole(openai_reasoning_body(answer_json));
    });
    covenant::http_engine engine(openai_options(server));
    const covenant::chat_response r = engine.complete(request(output_mode::json_schema, stream));
    EXPECT_EQ(r.text, answer_json);
    EXPECT_EQ(r.reasoning, thought);
  }
}

TEST(Reasoning, AContractReadsTheAnswerNotTheReasoningAndKeepsItInTheAttempt) {
  loopback_server server([](const received_request&, std::size_t) { return streamed(openai_reasoning_events()); });
  covenant::http_engine engine(openai_options(server));
  const covenant::contract<QA> qa{engine, covenant::testing::instant()};
  auto f = qa.stream(Question{"Capital?"}, [&](const covenant::stream_update<Answer>&) {});
  const auto [value, outcome] = f.get();
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(value.answer, "Paris");  // the reasoning's "Lyon" was never read
  EXPECT_EQ(outcome.attempts.at(0).reasoning, thought);
}

TEST(Reasoning, AReasoningEffortSendsMaxCompletionTokensAndNoTemperature) {
  loopback_server server([](const received_request&, std::size_t) { return whole(openai_reasoning_body(answer_json)); });
  covenant::http_engine_options o = openai_options(server);
  o.reasoning_effort = "high";
  covenant::http_engine engine(o);
  (void)engine.complete(request(output_mode::json_schema, false));
  const json::object body = json::parse(server.request(0).body).as_object();
  EXPECT_EQ(body.at("reasoning_effort"), "high");
  EXPECT_EQ(body.at("max_completion_tokens"), 500);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_FALSE(body.contains("temperature"));
  // without it: as before
  covenant::http_engine plain(openai_options(server));
  (void)plain.complete(request(output_mode::json_schema, false));
  const json::object before = json::parse(server.request(1).body).as_object();
  EXPECT_EQ(before.at("max_tokens"), 500);
  EXPECT_TRUE(before.contains("temperature"));
  EXPECT_FALSE(before.contains("reasoning_effort"));
}

TEST(Reasoning, AReplyCutOffWhileStillReasoningSaysSo) {
  loopback_server server([](const received_request&, std::size_t) { return whole(openai_reasoning_body("", "length")); });
  covenant::http_engine engine(openai_options(server));
  const covenant::contract<QA> qa{engine, covenant::testing::instant({.tries = 0})};
  const auto outcome = qa.run(Question{"Capital?"}).outcome;
  ASSERT_FALSE(outcome.success);
  EXPECT_EQ(outcome.failed_stage, covenant::stage::parse);
  ASSERT_EQ(outcome.issues.size(), 1u);
  EXPECT_THAT(outcome.issues[0].message, HasSubstr("cut off by the token limit while the model was still reasoning"));
  EXPECT_EQ(outcome.attempts.at(0).usage.reasoning_tokens, 50u);
}

// ---------------------------------------------------------------------------------------------
// Anthropic extended thinking

std::string anthropic_thinking_message() {
  json::object m{{"id", "msg_1"},
                 {"type", "message"},
                 {"role", "assistant"},
                 {"model", "claude-test"},
                 {"content", json::array{json::object{{"type", "thinking"}, {"thinking", thought}, {"signature", "sig"}},
                                         json::object{{"type", "redacted_thinking"}, {"data", "opaque"}},
                                         json::object{{"type", "tool_use"},
                                                      {"id", "t1"},
                                                      {"name", "Answer"},
                                                      {"input", json::parse(answer_json)}}}},
                 {"stop_reason", "tool_use"},
                 {"usage", json::object{{"input_tokens", 30}, {"output_tokens", 90}}}};
  return json::serialize(m);
}

std::vector<std::string> anthropic_thinking_events() {
  auto event = [](const std::string& type, const json::object& data) {
    return "event: " + type + "\ndata: " + json::serialize(data) + "\n\n";
  };
  const std::size_t half = thought.size() / 2;
  return {event("message_start", {{"type", "message_start"},
                                  {"message", json::object{{"model", "claude-test"},
                                                           {"usage", json::object{{"input_tokens", 30}, {"output_tokens", 1}}}}}}),
          event("content_block_start",
                {{"type", "content_block_start"}, {"index", 0}, {"content_block", json::object{{"type", "thinking"}, {"thinking", ""}}}}),
          event("content_block_delta", {{"type", "content_block_delta"},
                                        {"index", 0},
                                        {"delta", json::object{{"type", "thinking_delta"}, {"thinking", thought.substr(0, half)}}}}),
          event("content_block_delta", {{"type", "content_block_delta"},
                                        {"index", 0},
                                        {"delta", json::object{{"type", "thinking_delta"}, {"thinking", thought.substr(half)}}}}),
          event("content_block_delta",
                {{"type", "content_block_delta"}, {"index", 0}, {"delta", json::object{{"type", "signature_delta"}, {"signature", "s"}}}}),
          event("content_block_stop", {{"type", "content_block_stop"}, {"index", 0}}),
          event("content_block_start", {{"type", "content_block_start"},
                                        {"index", 1},
                                        {"content_block", json::object{{"type", "tool_use"}, {"id", "t"}, {"name", "Answer"}, {"input", json::object{}}}}}),
          event("content_block_delta", {{"type", "content_block_delta"},
                                        {"index", 1},
                                        {"delta", json::object{{"type", "input_json_delta"}, {"partial_json", answer_json}}}}),
          event("content_block_stop", {{"type", "content_block_stop"}, {"index", 1}}),
          event("message_delta", {{"type", "message_delta"},
                                  {"delta", json::object{{"stop_reason", "tool_use"}}},
                                  {"usage", json::object{{"output_tokens", 90}}}}),
          event("message_stop", {{"type", "message_stop"}})};
}

TEST(Reasoning, AnthropicThinkingIsKeptApartFromTheAnswerWholeAndStreamed) {
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "whole");
    loopback_server server([&](const received_request&, std::size_t) {
      return stream ? streamed(anthropic_thinking_events()) : whole(anthropic_thinking_message());
    });
    covenant::http_engine_options o = anthropic_options(server);
    o.thinking_budget = 2048;
    covenant::http_engine engine(o);
    const covenant::chat_response r = engine.complete(request(output_mode::tools, stream));
    EXPECT_EQ(json::parse(r.text), json::parse(answer_json));
    EXPECT_EQ(r.reasoning, stream ? thought : thought + "[redacted thinking]");
  }
}

TEST(Reasoning, ExtendedThinkingSendsItsBudgetAnUnforcedToolAndNoTemperature) {
  loopback_server server([](const received_request&, std::size_t) { return whole(anthropic_thinking_message()); });
  covenant::http_engine_options o = anthropic_options(server);
  o.thinking_budget = 2048;
  covenant::http_engine engine(o);
  // automatic mode picks a mode the API takes with thinking: the tool, not forced
  const covenant::chat_response r = engine.complete(request(output_mode::automatic, false));
  EXPECT_EQ(json::parse(r.text), json::parse(answer_json));
  ASSERT_EQ(server.requests(), 1u);
  const json::object body = json::parse(server.request(0).body).as_object();
  EXPECT_EQ(body.at("thinking"), json::parse(R"({"type": "enabled", "budget_tokens": 2048})"));
  EXPECT_EQ(body.at("max_tokens"), 2048 + 500);  // the thinking, then the answer's allowance
  EXPECT_FALSE(body.contains("temperature"));
  EXPECT_EQ(body.at("tool_choice"), json::parse(R"({"type": "auto"})"));
  EXPECT_EQ(body.at("tools").at(0).at("name"), "Answer");
}

TEST(Reasoning, AnUnforcedToolAnsweredInTextIsReadFromTheText) {
  loopback_server server([](const received_request&, std::size_t) {
    json::value m = json::parse(anthropic_thinking_message());
    m.at("content").as_array().back() = json::object{{"type", "text"}, {"text", answer_json}};
    m.as_object()["stop_reason"] = "end_turn";
    return whole(json::serialize(m));
  });
  covenant::http_engine_options o = anthropic_options(server);
  o.thinking_budget = 1024;
  covenant::http_engine engine(o);
  const covenant::contract<QA> qa{engine, covenant::testing::instant()};
  const auto [value, outcome] = qa.run(Question{"Capital?"});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(value.answer, "Paris");
  EXPECT_THAT(outcome.attempts.at(0).reasoning, HasSubstr("capital of France"));
}

// ---------------------------------------------------------------------------------------------
// Where the reasoning is kept

TEST(Reasoning, CassettesAndTheAuditLogWithRepliesKeepIt) {
  const auto dir = std::filesystem::temp_directory_path() / ("covenant_reasoning_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  covenant::testing::scripted_engine inner([](const covenant::chat_request&, std::size_t) {
    covenant::chat_response r;
    r.text = answer_json;
    r.reasoning = thought;
    r.model = "m";
    return r;
  });
  {
    covenant::cassette_engine rec{{.path = dir / "c.jsonl", .mode = covenant::cassette_mode::record}, inner};
    (void)rec.complete(request(output_mode::prompt, false));
  }
  covenant::cassette_engine play{{.path = dir / "c.jsonl", .mode = covenant::cassette_mode::replay}};
  EXPECT_EQ(play.complete(request(output_mode::prompt, false)).reasoning, thought);

  for (const bool include_reply : {false, true}) {
    auto audit = std::make_shared<covenant::audit_log>(
        covenant::audit_log_options{.directory = dir / (include_reply ? "with" : "without"), .include_reply = include_reply});
    covenant::contract_options o = covenant::testing::instant();
    o.observers.push_back(audit);
    const covenant::contract<QA> qa{inner, o};
    ASSERT_TRUE(qa.run(Question{"q"}).outcome.success);
    audit->flush();
    std::ifstream in(audit->current_file());
    std::string line;
    std::getline(in, line);
    const json::object a = json::parse(line).as_object();
    EXPECT_EQ(a.contains("reasoning"), include_reply);
    if (include_reply) {
      EXPECT_EQ(a.at("reasoning").as_string(), thought);
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
