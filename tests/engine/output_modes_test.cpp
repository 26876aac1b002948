// Output modes over HTTP against the loopback server: the exact request body of each mode
// (json_schema, json_object, tools, prompt), the reply shapes each mode reads (a tool call's
// arguments, whole and streamed, malformed ones through the lenient reader), and output_mode::
// automatic falling back once when the server refuses a mode, remembered for the endpoint.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "loopback_server.hpp"
#include "qa_model.hpp"

namespace {

using namespace std::chrono_literals;
using namespace covenant_test::qa;
using covenant::output_mode;
using covenant_test::loopback_server;
using covenant_test::openai_completion;
using covenant_test::received_request;
using covenant_test::response_plan;
using ::testing::HasSubstr;
namespace json = boost::json;

const std::string answer_json = R"({"answer": "Paris", "confidence": 0.9})";

covenant::http_engine_options options_for(const loopback_server& server) {
  covenant::http_engine_options o;
  o.base_url = server.base_url();
  o.api_key = "sk-modes";
  o.model = "m";
  o.retry.tries = 0;
  return o;
}

covenant::chat_request request_in(output_mode mode, bool stream = false) {
  covenant::chat_request r;
  r.messages = {{covenant::role::system, "Reply with JSON."}, {covenant::role::user, "Capital of France?"}};
  r.response_schema = std::make_shared<const json::value>(covenant::openai_strict_schema_of<Answer>());
  r.schema_name = "Answer";
  r.mode = mode;
  r.stream = stream;
  return r;
}

/// A completion whose message is a call of `name` with `arguments` (text, possibly malformed).
std::string tool_call_completion(const std::string& name, const std::string& arguments) {
  json::object fn{{"name", name}, {"arguments", arguments}};
  json::object call{{"id", "call_1"}, {"type", "function"}, {"function", std::move(fn)}};
  json::object message{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array{std::move(call)}}};
  json::object choice{{"index", 0}, {"message", std::move(message)}, {"finish_reason", "tool_calls"}};
  json::object root{{"id", "x"}, {"object", "chat.completion"}, {"model", "m"}, {"choices", json::array{std::move(choice)}},
                    {"usage", json::object{{"prompt_tokens", 12}, {"completion_tokens", 8}}}};
  return json::serialize(root);
}

/// SSE chunks of a streamed tool call whose arguments arrive in `pieces`.
std::vector<std::string> tool_call_stream(const std::string& name, const std::vector<std::string>& pieces) {
  std::vector<std::string> out;
  auto event = [&](const json::object& delta, const json::value& finish) {
    json::object choice{{"index", 0}, {"delta", delta}, {"finish_reason", finish}};
    json::object root{{"id", "x"}, {"object", "chat.completion.chunk"}, {"model", "m"},
                      {"choices", json::array{std::move(choice)}}};
    out.push_back("data: " + json::serialize(root) + "\n\n");
  };
  json::object first_call{{"index", 0}, {"id", "call_1"}, {"type", "function"},
                          {"function", json::object{{"name", name}, {"arguments", ""}}}};
  event(json::object{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array{first_call}}}, nullptr);
  for (const std::string& p : pieces) {
    json::object call{{"index", 0}, {"function", json::object{{"arguments", p}}}};
    event(json::object{{"tool_calls", json::array{call}}}, nullptr);
  }
  event(json::object{}, "tool_calls");
  out.push_back(R"(data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":8}})"
                "\n\n");
  out.push_back("data: [DONE]\n\n");
  return out;
}

response_plan json_reply(std::string body, int status = 200) {
  response_plan p;
  p.status = status;
  p.body = std::move(body);
  return p;
}

json::object body_of(const loopback_server& server, std::size_t i) { return json::parse(server.request(i).body).as_object(); }

// ---------------------------------------------------------------------------------------------
// The request each mode sends

TEST(OutputModes, JsonSchemaSendsTheStrictSchemaAsResponseFormat) {
  loopback_server server([](const received_request&, std::size_t) { return json_reply(openai_completion(answer_json)); });
  covenant::http_engine engine(options_for(server));
  const covenant::chat_response r = engine.complete(request_in(output_mode::json_schema));
  EXPECT_EQ(r.text, answer_json);
  EXPECT_EQ(r.mode, output_mode::json_schema);
  const json::object body = body_of(server, 0);
  EXPECT_EQ(body.at("response_format"),
            (json::object{{"type", "json_schema"},
                          {"json_schema", json::object{{"name", "Answer"},
                                                       {"strict", true},
                                                       {"schema", covenant::openai_strict_schema_of<Answer>()}}}}));
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_FALSE(body.contains("tool_choice"));
}

TEST(OutputModes, JsonObjectSendsJsonModeAndNoSchema) {
  loopback_server server([](const received_request&, std::size_t) { return json_reply(openai_completion(answer_json)); });
  covenant::http_engine engine(options_for(server));
  EXPECT_EQ(engine.complete(request_in(output_mode::json_object)).text, answer_json);
  const json::object body = body_of(server, 0);
  EXPECT_EQ(body.at("response_format"), (json::object{{"type", "json_object"}}));
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_EQ(body.at("messages").as_array().size(), 2u);
}

TEST(OutputModes, ToolsSendsTheSchemaAsTheOneFunctionTheModelMustCall) {
  loopback_server server(
      [](const received_request&, std::size_t) { return json_reply(tool_call_completion("Answer", answer_json)); });
  covenant::http_engine engine(options_for(server));
  const covenant::chat_response r = engine.complete(request_in(output_mode::tools));
  EXPECT_EQ(r.text, answer_json);  // read from tool_calls[0].function.arguments
  EXPECT_EQ(r.finish_reason, "tool_calls");
  EXPECT_EQ(r.usage.input_tokens, 12u);
  EXPECT_EQ(r.mode, output_mode::tools);

  const json::object body = body_of(server, 0);
  EXPECT_FALSE(body.contains("response_format"));
  const json::array& tools = body.at("tools").as_array();
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0].at("type"), "function");
  const json::object& fn = tools[0].at("function").as_object();
  EXPECT_EQ(fn.at("name"), "Answer");
  EXPECT_EQ(fn.at("strict"), true);
  EXPECT_EQ(fn.at("parameters"), covenant::openai_strict_schema_of<Answer>());
  EXPECT_EQ(body.at("tool_choice"),
            (json::object{{"type", "function"}, {"function", json::object{{"name", "Answer"}}}}));
}

TEST(OutputModes, PromptSendsNothingButTheMessages) {
  loopback_server server([](const received_request&, std::size_t) { return json_reply(openai_completion(answer_json)); });
  covenant::http_engine engine(options_for(server));
  EXPECT_EQ(engine.complete(request_in(output_mode::prompt)).text, answer_json);
  const json::object body = body_of(server, 0);
  EXPECT_FALSE(body.contains("response_format"));
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_FALSE(body.contains("tool_choice"));
  EXPECT_EQ(body.at("model"), "m");
  EXPECT_EQ(body.at("messages").as_array().size(), 2u);
}

TEST(OutputModes, EachModeSendsExactlyItsBody) {
  loopback_server server([](const received_request&, std::size_t) { return json_reply(openai_completion(answer_json)); });
  covenant::http_engine engine(options_for(server));
  const json::value schema = covenant::openai_strict_schema_of<Answer>();
  const json::array messages{json::object{{"role", "system"}, {"content", "Reply with JSON."}},
                             json::object{{"role", "user"}, {"content", "Capital of France?"}}};
  const json::object base{{"model", "m"}, {"messages", messages}};
  auto with = [&](std::initializer_list<std::pair<json::string_view, json::value>> extra) {
    json::object o = base;
    for (const auto& [k, v] : extra) o[k] = v;
    return o;
  };
  const std::vector<std::pair<output_mode, json::object>> expected{
      {output_mode::json_schema,
       with({{"response_format",
              json::object{{"type", "json_schema"},
                           {"json_schema", json::object{{"name", "Answer"}, {"strict", true}, {"schema", schema}}}}}})},
      {output_mode::json_object, with({{"response_format", json::object{{"type", "json_object"}}}})},
      {output_mode::tools,
       with({{"tools", json::array{json::object{
                           {"type", "function"},
                           {"function", json::object{{"name", "Answer"},
                                                     {"description", "Reply with the result as this function's arguments."},
                                                     {"parameters", schema},
                                                     {"strict", true}}}}}},
             {"tool_choice", json::object{{"type", "function"}, {"function", json::object{{"name", "Answer"}}}}}})},
      {output_mode::prompt, base},
  };
  for (std::size_t i = 0; i < expected.size(); ++i) {
    (void)engine.complete(request_in(expected[i].first));
    EXPECT_EQ(body_of(server, i), expected[i].second) << to_string(expected[i].first);
  }
}

TEST(OutputModes, RequestBodyShowsWhatEachModeSends) {
  loopback_server server([](const received_request&, std::size_t) { return json_reply(openai_completion(answer_json)); });
  covenant::http_engine engine(options_for(server));
  EXPECT_TRUE(engine.request_body(request_in(output_mode::json_schema)).contains("response_format"));
  EXPECT_TRUE(engine.request_body(request_in(output_mode::tools)).contains("tool_choice"));
  EXPECT_FALSE(engine.request_body(request_in(output_mode::prompt)).contains("response_format"));
  // automatic starts with the engine's best mode: structured outputs.
  EXPECT_EQ(engine.request_body(request_in(output_mode::automatic)).at("response_format").at("type"), "json_schema");
  EXPECT_EQ(engine.request_body(request_in(output_mode::tools, true)).at("stream"), true);
}

// ---------------------------------------------------------------------------------------------
// Reading tool calls

TEST(OutputModes, StreamedToolCallArgumentsArriveAsTheReplyText) {
  const std::vector<std::string> pieces{R"({"answer": )", R"("Par)", R"(is", "confidence")", R"(: 0.9})"};
  loopback_server server([&](const received_request&, std::size_t) {
    response_plan p;
    p.content_type = "text/event-stream";
    p.chunks = tool_call_stream("Answer", pieces);
    return p;
  });
  covenant::http_engine engine(options_for(server));
  struct collect final : covenant::reply_receiver {
    std::mutex m;
    std::vector<std::string> deltas;
    void on_text(std::string_view d) noexcept override {
      std::lock_guard lock(m);
      deltas.emplace_back(d);
    }
    void on_reply(covenant::chat_response) noexcept override {}
    void on_error(const covenant::engine_error&) noexcept override {}
  };
  auto deltas = std::make_shared<collect>();
  // complete() waits for start(); a second, asynchronous call collects the deltas.
  const covenant::chat_response r = engine.complete(request_in(output_mode::tools, true));
  EXPECT_EQ(r.text, R"({"answer": "Paris", "confidence": 0.9})");
  EXPECT_EQ(r.finish_reason, "tool_calls");
  EXPECT_EQ(r.usage.output_tokens, 8u);
  EXPECT_FALSE(r.cut_off);
  EXPECT_EQ(body_of(server, 0).at("stream"), true);

  std::promise<void> done;
  struct waiter final : covenant::reply_receiver {
    std::shared_ptr<collect> c;
    std::promise<void>* done;
    void on_text(std::string_view d) noexcept override { c->on_text(d); }
    void on_reply(covenant::chat_response) noexcept override { done->set_value(); }
    void on_error(const covenant::engine_error&) noexcept override { done->set_value(); }
  };
  auto w = std::make_shared<waiter>();
  w->c = deltas;
  w->done = &done;
  engine.start(request_in(output_mode::tools, true), w, {});
  ASSERT_EQ(done.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(deltas->deltas, pieces);
}

TEST(OutputModes, AContractStreamsTypedPartialsFromAToolCall) {
  loopback_server server([](const received_request&, std::size_t) {
    response_plan p;
    p.content_type = "text/event-stream";
    p.chunks = tool_call_stream("Answer", {R"({"answer": "Pa)", R"(ris", "confid)", R"(ence": 0.9})"});
    p.chunk_delay = 2ms;
    return p;
  });
  covenant::http_engine engine(options_for(server));
  covenant::contract_options opts = covenant::testing::instant();
  opts.mode = output_mode::tools;
  covenant::contract<QA> qa{engine, opts};
  std::vector<std::string> texts;
  auto r = qa.stream(Question{"Capital of France?"}, [&](const covenant::stream_update<Answer>& u) {
               if (u.what == covenant::stream_update<Answer>::kind::partial) texts.emplace_back(u.text);
             }).get();
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_EQ(r.value.answer, "Paris");
  ASSERT_GE(texts.size(), 2u);  // partial values shown while the arguments arrived
  EXPECT_EQ(texts.back(), R"({"answer": "Paris", "confidence": 0.9})");
  EXPECT_EQ(body_of(server, 0).at("stream"), true);
  EXPECT_TRUE(body_of(server, 0).contains("tool_choice"));
}

TEST(OutputModes, MalformedToolArgumentsGoThroughTheLenientReader) {
  // Single quotes and a trailing comma: not JSON, repaired like any reply.
  loopback_server server([](const received_request&, std::size_t) {
    return json_reply(tool_call_completion("Answer", "{'answer': 'Paris', 'confidence': 0.9,}"));
  });
  covenant::http_engine engine(options_for(server));
  covenant::contract_options opts = covenant::testing::instant();
  opts.mode = output_mode::tools;
  covenant::contract<QA> qa{engine, opts};
  const auto [value, outcome] = qa.run(Question{"Capital of France?"});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(value.answer, "Paris");
  EXPECT_DOUBLE_EQ(value.confidence, 0.9);
  EXPECT_EQ(outcome.attempts.size(), 1u);
  EXPECT_FALSE(outcome.notes.empty());  // what was repaired is recorded
  ASSERT_EQ(server.requests(), 1u);
  EXPECT_TRUE(body_of(server, 0).contains("tool_choice"));  // the contract's mode reached the engine
}

TEST(OutputModes, EveryModeKeepsTheConstraintsInThePrompt) {
  for (output_mode mode : {output_mode::json_schema, output_mode::json_object, output_mode::tools, output_mode::prompt}) {
    covenant::testing::scripted_engine model{answer_json};
    covenant::contract_options opts = covenant::testing::instant();
    opts.mode = mode;
    covenant::contract<QA> qa{model, opts};
    ASSERT_TRUE(qa.run(Question{"q"}).outcome.success);
    const covenant::chat_request& r = model.request(0);
    EXPECT_EQ(r.mode, mode);
    std::string prompt;
    for (const auto& m : r.messages) prompt += m.content;
    EXPECT_THAT(prompt, HasSubstr("confidence")) << to_string(mode);
    EXPECT_THAT(prompt, HasSubstr("1")) << to_string(mode);
    ASSERT_TRUE(r.response_schema);  // the same schema in every mode; the engine decides what to send
  }
}

// ---------------------------------------------------------------------------------------------
// automatic: fall back once when the server refuses a mode

TEST(OutputModes, AutomaticFallsBackWhenTheServerRefusesTheModeAndRemembersIt) {
  loopback_server server([](const received_request& r, std::size_t) {
    if (r.body.find("response_format") != std::string::npos)
      return json_reply(R"({"error": {"message": "Unsupported parameter: 'response_format' of type json_schema", "type": "invalid_request_error"}})",
                        400);
    return json_reply(tool_call_completion("Answer", answer_json));
  });
  covenant::testing::log_capture log;
  covenant::http_engine engine(options_for(server));
  covenant::contract_options opts = covenant::testing::instant();
  opts.mode = output_mode::automatic;
  covenant::contract<QA> qa{engine, opts};

  const auto [value, outcome] = qa.run(Question{"Capital of France?"});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(value.answer, "Paris");
  EXPECT_EQ(outcome.attempts.size(), 1u);  // the fallback is not a remedy attempt
  ASSERT_EQ(server.requests(), 2u);
  EXPECT_TRUE(body_of(server, 0).contains("response_format"));
  EXPECT_TRUE(body_of(server, 1).contains("tool_choice"));
  EXPECT_FALSE(body_of(server, 1).contains("response_format"));
  EXPECT_THAT(log.text(), HasSubstr("refused output mode json_schema"));
  EXPECT_THAT(log.text(), HasSubstr("using tools"));

  // Remembered for the endpoint: the next call starts with tools.
  ASSERT_TRUE(qa.run(Question{"again"}).outcome.success);
  ASSERT_EQ(server.requests(), 3u);
  EXPECT_TRUE(body_of(server, 2).contains("tool_choice"));
  EXPECT_EQ(engine.request_body(request_in(output_mode::automatic)).count("response_format"), 0u);
  // A call that names its mode is not affected.
  EXPECT_TRUE(engine.request_body(request_in(output_mode::json_schema)).contains("response_format"));
}

TEST(OutputModes, AutomaticWalksDownToPromptWhenEveryModeIsRefused) {
  loopback_server server([](const received_request& r, std::size_t) {
    if (r.body.find("\"tools\"") != std::string::npos)
      return json_reply(R"({"error": {"message": "tools are not supported by this model"}})", 400);
    if (r.body.find("response_format") != std::string::npos)
      return json_reply(R"({"detail": "response_format is not supported"})", 422);
    return json_reply(openai_completion(answer_json));
  });
  covenant::http_engine engine(options_for(server));
  const covenant::chat_response r = engine.complete(request_in(output_mode::automatic));
  EXPECT_EQ(r.text, answer_json);
  EXPECT_EQ(r.mode, output_mode::prompt);
  ASSERT_EQ(server.requests(), 4u);  // json_schema, tools, json_object, prompt: each refused once
  EXPECT_EQ(body_of(server, 2).at("response_format").at("type"), "json_object");
  const json::object last = body_of(server, 3);
  EXPECT_FALSE(last.contains("response_format"));
  EXPECT_FALSE(last.contains("tools"));
}

TEST(OutputModes, OtherClientErrorsAndNamedModesNeverFallBack) {
  loopback_server server([](const received_request&, std::size_t) {
    return json_reply(R"({"error": {"message": "Invalid value for 'response_format': json_schema"}})", 400);
  });
  covenant::http_engine engine(options_for(server));
  // A named mode: the refusal is the caller's answer.
  try {
    (void)engine.complete(request_in(output_mode::json_schema));
    ADD_FAILURE() << "expected an engine_error";
  } catch (const covenant::engine_error& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_THAT(e.what(), HasSubstr("response_format"));
  }
  EXPECT_EQ(server.requests(), 1u);

  loopback_server other([](const received_request&, std::size_t) {
    return json_reply(R"({"error": {"message": "messages: too long"}})", 400);
  });
  covenant::http_engine engine2(options_for(other));
  EXPECT_THROW((void)engine2.complete(request_in(output_mode::automatic)), covenant::engine_error);
  EXPECT_EQ(other.requests(), 1u);  // not a refusal of the mode
}

TEST(OutputModes, ModeNamesRoundTrip) {
  for (output_mode m : {output_mode::json_schema, output_mode::json_object, output_mode::tools, output_mode::prompt,
                        output_mode::automatic})
    EXPECT_EQ(covenant::parse_output_mode(covenant::to_string(m)), m);
  EXPECT_EQ(covenant::parse_output_mode("automatic"), output_mode::automatic);
  EXPECT_EQ(covenant::to_string(output_mode::automatic), "auto");
  EXPECT_FALSE(covenant::parse_output_mode("json"));
}

}  // namespace
