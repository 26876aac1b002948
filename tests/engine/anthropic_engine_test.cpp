// The HTTP engine speaking the Anthropic Messages API (provider::anthropic) against a loopback
// server that follows its documented wire format: the request (endpoint, headers, body in each
// mode), whole and streamed replies (text and tool_use), usage, a reply cut at max_tokens, and the
// faults the OpenAI engine is tested with (429 with retry-after, 500, 529 overloaded, an error
// event before and after content, a hang, a broken stream, a body that is not a message).
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <string>
#include <vector>

#include "anthropic_replies.hpp"
#include "loopback_server.hpp"
#include "qa_model.hpp"

namespace {

using namespace std::chrono_literals;
using namespace covenant_test::qa;
using covenant::output_mode;
using covenant_test::anthropic_error;
using covenant_test::anthropic_error_event;
using covenant_test::anthropic_message;
using covenant_test::anthropic_stream;
using covenant_test::anthropic_tool_message;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;
using ::testing::HasSubstr;
using ::testing::Not;
namespace json = boost::json;

constexpr const char* key = "sk-ant-test-SECRET-91b2";
const std::string answer_json = R"({"answer": "Paris", "confidence": 0.9})";

/// The loopback server's root without "/v1": the Anthropic engine adds "/v1/messages".
std::string root_of(const loopback_server& s) { return "http://127.0.0.1:" + std::to_string(s.port()); }

covenant::http_engine_options options_for(const loopback_server& s, covenant::testing::fake_sleeper* sleeper = nullptr) {
  covenant::http_engine_options o;
  o.provider = covenant::provider::anthropic;
  o.base_url = root_of(s);
  o.api_key = key;
  o.model = "claude-test";
  o.retry.tries = 2;
  o.request_timeout = 5s;
  o.stream_idle_timeout = 2s;
  o.retry.delay = 1ms;
  o.retry.max_delay = 100ms;
  // Each wait the engine decides, as it decides it; the waits themselves are real timers.
  if (sleeper != nullptr) o.on_retry = [sleeper](const covenant::transport_retry& r) { (*sleeper)(r.wait); };
  return o;
}

covenant::chat_request request_in(output_mode mode, bool stream = false) {
  covenant::chat_request r;
  r.messages = {{covenant::role::system, "Reply with JSON."},
                {covenant::role::user, "Capital of France?"},
                {covenant::role::user, "Be brief."}};
  r.response_schema = std::make_shared<const json::value>(covenant::openai_strict_schema_of<Answer>());
  r.schema_name = "Answer";
  r.mode = mode;
  r.stream = stream;
  return r;
}

response_plan whole(std::string body, int status = 200) {
  response_plan p;
  p.status = status;
  p.body = std::move(body);
  return p;
}

response_plan streamed(std::vector<std::string> chunks) {
  response_plan p;
  p.content_type = "text/event-stream";
  p.chunks = std::move(chunks);
  return p;
}

json::object body_of(const loopback_server& s, std::size_t i) { return json::parse(s.request(i).body).as_object(); }

TEST(AnthropicEngine, SendsAMessagesRequestWithTheKeyHeaderAndAForcedTool) {
  loopback_server server([](const received_request&, std::size_t) {
    return whole(anthropic_tool_message("Answer", answer_json, 31, 7));
  });
  covenant::http_engine engine(options_for(server));
  EXPECT_EQ(engine.endpoint(), root_of(server) + "/v1/messages");
  const covenant::chat_response r = engine.complete(request_in(output_mode::json_schema));
  EXPECT_EQ(json::parse(r.text), json::parse(answer_json));  // the tool_use block's input
  EXPECT_EQ(r.usage.input_tokens, 31u);
  EXPECT_EQ(r.usage.output_tokens, 7u);
  EXPECT_EQ(r.mode, output_mode::tools);  // json_schema is sent as a forced tool

  const received_request seen = server.request(0);
  EXPECT_EQ(seen.target, "/v1/messages");
  EXPECT_EQ(seen.headers.at("x-api-key"), key);
  EXPECT_EQ(seen.headers.at("anthropic-version"), "2023-06-01");
  EXPECT_EQ(seen.headers.count("authorization"), 0u);
  const json::object body = body_of(server, 0);
  EXPECT_EQ(body.at("model"), "claude-test");
  EXPECT_EQ(body.at("system"), "Reply with JSON.");
  EXPECT_EQ(body.at("max_tokens").to_number<int>(), 4096);  // the documented default
  const json::array& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 1u);  // the two user turns merged
  EXPECT_EQ(messages[0].at("role"), "user");
  EXPECT_THAT(std::string(messages[0].at("content").as_string()), HasSubstr("Capital of France?"));
  EXPECT_THAT(std::string(messages[0].at("content").as_string()), HasSubstr("Be brief."));
  EXPECT_EQ(body.at("tools").at(0).at("name"), "Answer");
  EXPECT_EQ(body.at("tools").at(0).at("input_schema"), covenant::openai_strict_schema_of<Answer>());
  EXPECT_EQ(body.at("tool_choice"), (json::object{{"type", "tool"}, {"name", "Answer"}}));
  EXPECT_FALSE(body.contains("response_format"));
}

TEST(AnthropicEngine, PromptModeReadsTheTextBlock) {
  loopback_server server([](const received_request&, std::size_t) { return whole(anthropic_message(answer_json)); });
  covenant::http_engine engine(options_for(server));
  covenant::chat_request r = request_in(output_mode::json_object);
  r.max_tokens = 300;
  EXPECT_EQ(engine.complete(r).text, answer_json);
  const json::object body = body_of(server, 0);
  EXPECT_FALSE(body.contains("tools"));
  EXPECT_FALSE(body.contains("tool_choice"));
  EXPECT_EQ(body.at("max_tokens").to_number<int>(), 300);
}

TEST(AnthropicEngine, StreamsTextAndToolInput) {
  const std::vector<std::string> pieces{R"({"answer": "Pa)", R"(ris", "confidence": 0.9})"};
  loopback_server server([&](const received_request& r, std::size_t) {
    const bool tool = r.body.find("tool_choice") != std::string::npos;
    return streamed(anthropic_stream(pieces, tool, tool ? "tool_use" : "end_turn", 40, 12, "Answer"));
  });
  covenant::http_engine engine(options_for(server));
  for (output_mode mode : {output_mode::tools, output_mode::prompt}) {
    const covenant::chat_response r = engine.complete(request_in(mode, true));
    EXPECT_EQ(r.text, answer_json) << to_string(mode);
    EXPECT_EQ(r.usage.input_tokens, 40u);
    EXPECT_EQ(r.usage.output_tokens, 12u);
    EXPECT_FALSE(r.cut_off);
  }
  EXPECT_EQ(body_of(server, 0).at("stream"), true);
}

TEST(AnthropicEngine, ToolsWithoutASchemaGoOutAsPromptAndStreamTheirText) {
  loopback_server server([](const received_request&, std::size_t) {
    return streamed(anthropic_stream({"plain ", "text"}, false));
  });
  covenant::http_engine engine(options_for(server));
  covenant::chat_request r = request_in(output_mode::tools, true);
  r.response_schema.reset();
  const covenant::chat_response reply = engine.complete(r);
  EXPECT_EQ(reply.text, "plain text");
  EXPECT_EQ(reply.mode, output_mode::prompt);
  EXPECT_FALSE(body_of(server, 0).contains("tools"));
}

TEST(AnthropicEngine, MaxTokensStopReasonIsACutOffReplyForTheContract) {
  loopback_server server([](const received_request&, std::size_t i) {
    if (i == 0) return whole(anthropic_tool_message("Answer", R"({"answer": "Par)", 10, 4096, "max_tokens"));
    return whole(anthropic_tool_message("Answer", answer_json));
  });
  covenant::http_engine engine(options_for(server));
  const covenant::chat_response first = engine.complete(request_in(output_mode::tools));
  EXPECT_EQ(first.finish_reason, "length");

  covenant::contract<QA> qa{engine, covenant::testing::instant({.tries = 2})};
  const auto [value, outcome] = qa.run(Question{"Capital of France?"});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(value.answer, "Paris");
}

TEST(AnthropicEngine, RetriesRateLimitsServerErrorsAndOverloadHonouringRetryAfter) {
  loopback_server server([](const received_request&, std::size_t i) {
    if (i == 0) {
      response_plan p = whole(anthropic_error("rate_limit_error", "Number of requests has exceeded your rate limit"), 429);
      p.headers = {{"retry-after", "0.03"}};
      return p;
    }
    if (i == 1) return whole(anthropic_error("overloaded_error", "Overloaded"), 529);
    if (i == 2) return whole(anthropic_error("api_error", "Internal server error"), 500);
    return whole(anthropic_message(answer_json));
  });
  covenant::testing::fake_sleeper sleeper;
  covenant::http_engine_options o = options_for(server, &sleeper);
  o.retry.tries = 3;
  covenant::http_engine engine(o);
  EXPECT_EQ(engine.complete(request_in(output_mode::prompt)).text, answer_json);
  ASSERT_EQ(server.requests(), 4u);
  ASSERT_GE(sleeper.sleeps().size(), 1u);
  EXPECT_EQ(sleeper.sleeps()[0], 30ms);  // retry-after
}

TEST(AnthropicEngine, GivesUpOnOverloadAfterTheBudgetAndFailsAtOnceOnAClientError) {
  loopback_server server([](const received_request& r, std::size_t) {
    if (r.body.find("overload") != std::string::npos) return whole(anthropic_error("overloaded_error", "Overloaded"), 529);
    return whole(anthropic_error("invalid_request_error", "max_tokens: Field required"), 400);
  });
  covenant::testing::fake_sleeper sleeper;
  covenant::http_engine engine(options_for(server, &sleeper));
  covenant::chat_request r = request_in(output_mode::prompt);
  r.messages.back().content = "overload";
  try {
    (void)engine.complete(r);
    ADD_FAILURE() << "expected an engine_error";
  } catch (const covenant::engine_error& e) {
    EXPECT_EQ(e.status(), 529);
    EXPECT_TRUE(e.retryable());
    EXPECT_THAT(e.what(), HasSubstr("Overloaded"));
  }
  EXPECT_EQ(server.requests(), 3u);
  try {
    (void)engine.complete(request_in(output_mode::prompt));
    ADD_FAILURE() << "expected an engine_error";
  } catch (const covenant::engine_error& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_FALSE(e.retryable());
    EXPECT_THAT(e.what(), HasSubstr("max_tokens: Field required"));
    EXPECT_THAT(e.what(), Not(HasSubstr(key)));
  }
  EXPECT_EQ(server.requests(), 4u);
}

TEST(AnthropicEngine, AnErrorEventBeforeContentIsRetriedAfterContentTheReplyIsCutOff) {
  loopback_server server([](const received_request&, std::size_t i) {
    if (i == 0) return streamed({anthropic_error_event("overloaded_error", "Overloaded")});
    if (i == 1) {
      std::vector<std::string> chunks = anthropic_stream({R"({"answer": "Pa)", R"(ris", )"}, false);
      chunks.resize(chunks.size() - 3);  // drop content_block_stop, message_delta, message_stop
      chunks.push_back(anthropic_error_event("overloaded_error", "Overloaded"));
      return streamed(chunks);
    }
    return streamed(anthropic_stream({answer_json}, false));
  });
  covenant::testing::fake_sleeper sleeper;
  covenant::http_engine engine(options_for(server, &sleeper));
  const covenant::chat_response r = engine.complete(request_in(output_mode::prompt, true));
  EXPECT_TRUE(r.cut_off);
  EXPECT_EQ(r.text, R"({"answer": "Paris", )");
  EXPECT_EQ(server.requests(), 2u);
}

TEST(AnthropicEngine, ABrokenOrSilentStreamAndABadBodyNeverCrash) {
  loopback_server server([](const received_request& r, std::size_t) {
    if (r.body.find("broken") != std::string::npos) {
      response_plan p = streamed(anthropic_stream({"{\"answer\": ", "\"Par"}, false));
      p.chunks.resize(4);  // message_start, content_block_start, ping, the first delta
      p.close_mid_stream = true;
      return p;
    }
    if (r.body.find("hang") != std::string::npos) {
      response_plan p;
      p.hang = true;
      return p;
    }
    return whole(R"({"type": "message", "content": "not a list"})");
  });
  covenant::testing::fake_sleeper sleeper;
  covenant::http_engine_options o = options_for(server, &sleeper);
  o.retry.tries = 0;
  o.request_timeout = 500ms;
  covenant::http_engine engine(o);

  covenant::chat_request broken = request_in(output_mode::prompt, true);
  broken.messages.back().content = "broken";
  const covenant::chat_response cut = engine.complete(broken);
  EXPECT_TRUE(cut.cut_off);
  EXPECT_EQ(cut.text, "{\"answer\": ");

  covenant::chat_request hang = request_in(output_mode::prompt);
  hang.messages.back().content = "hang";
  EXPECT_THROW((void)engine.complete(hang), covenant::engine_error);

  try {
    (void)engine.complete(request_in(output_mode::prompt));
    ADD_FAILURE() << "expected an engine_error";
  } catch (const covenant::engine_error& e) {
    EXPECT_EQ(e.status(), 200);
    EXPECT_FALSE(e.retryable());
  }
}

/// Collects what the engine reports for one asynchronous call.
class collector final : public covenant::reply_receiver {
 public:
  void on_text(std::string_view delta) noexcept override {
    std::lock_guard lock(mutex_);
    deltas_.emplace_back(delta);
  }
  void on_reply(covenant::chat_response r) noexcept override { set(std::move(r), {}); }
  void on_error(const covenant::engine_error& e) noexcept override { set({}, e); }
  bool wait(std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [this] { return done_; });
  }
  std::optional<covenant::chat_response> reply() {
    std::lock_guard lock(mutex_);
    return reply_;
  }
  std::optional<covenant::engine_error> error() {
    std::lock_guard lock(mutex_);
    return error_;
  }
  std::size_t deltas() {
    std::lock_guard lock(mutex_);
    return deltas_.size();
  }

 private:
  void set(std::optional<covenant::chat_response> r, std::optional<covenant::engine_error> e) {
    std::lock_guard lock(mutex_);
    reply_ = std::move(r);
    error_ = std::move(e);
    done_ = true;
    cv_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::vector<std::string> deltas_;
  std::optional<covenant::chat_response> reply_;
  std::optional<covenant::engine_error> error_;
};

TEST(AnthropicEngine, AnIdleStreamIsCutOffAndAStopRequestEndsTheTransferAtOnce) {
  loopback_server server([](const received_request& r, std::size_t) {
    std::vector<std::string> chunks = anthropic_stream(std::vector<std::string>(200, "x"), false);
    response_plan p = streamed(chunks);
    if (r.body.find("idle") != std::string::npos) {
      // message_start, content_block_start, ping and one delta at once, then silence.
      p.chunks = {chunks[0] + chunks[1] + chunks[2] + chunks[3], "event: ping\ndata: {\"type\": \"ping\"}\n\n"};
      p.chunk_delay = 1500ms;
    } else {
      p.chunk_delay = 20ms;
    }
    return p;
  });
  covenant::http_engine_options o = options_for(server);
  o.stream_idle_timeout = 150ms;
  covenant::http_engine engine(o);

  covenant::chat_request idle = request_in(output_mode::prompt, true);
  idle.messages.back().content = "idle";
  const covenant::chat_response cut = engine.complete(idle);
  EXPECT_TRUE(cut.cut_off);
  EXPECT_EQ(cut.text, "x");

  auto c = std::make_shared<collector>();
  std::stop_source stop;
  engine.start(request_in(output_mode::prompt, true), c, stop.get_token());
  while (c->deltas() < 3) std::this_thread::sleep_for(1ms);
  stop.request_stop();
  ASSERT_TRUE(c->wait(2s));
  ASSERT_TRUE(c->error());
  EXPECT_TRUE(c->error()->cancelled());
  for (int i = 0; i < 200 && !server.client_left_early(1); ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(server.client_left_early(1));
  EXPECT_LT(server.chunks_sent(1), 100u);
}

TEST(AnthropicEngine, DestroyingTheEngineEndsItsTransfersAndARefusedConnectionIsRetriedThenFails) {
  loopback_server server([](const received_request&, std::size_t) {
    response_plan p;
    p.hang = true;
    return p;
  });
  std::vector<std::shared_ptr<collector>> calls;
  {
    covenant::http_engine engine(options_for(server));
    for (int i = 0; i < 3; ++i) {
      calls.push_back(std::make_shared<collector>());
      engine.start(request_in(output_mode::tools, true), calls.back(), {});
    }
    ASSERT_TRUE(server.wait_for_requests(3, 5s));
  }
  for (auto& c : calls) {
    ASSERT_TRUE(c->wait(1s));
    ASSERT_TRUE(c->error());
    EXPECT_TRUE(c->error()->cancelled());
  }

  std::string closed_root;
  {
    loopback_server gone([](const received_request&, std::size_t) { return whole(anthropic_message("x")); });
    closed_root = root_of(gone);
  }
  covenant::testing::fake_sleeper sleeper;
  covenant::http_engine_options o = options_for(server, &sleeper);
  o.base_url = closed_root;
  covenant::http_engine engine(o);
  try {
    (void)engine.complete(request_in(output_mode::prompt));
    ADD_FAILURE() << "expected an engine_error";
  } catch (const covenant::engine_error& e) {
    EXPECT_TRUE(e.retryable());
    EXPECT_EQ(e.status(), 0);
    EXPECT_THAT(e.what(), HasSubstr("connection failed"));
  }
  EXPECT_EQ(sleeper.sleeps().size(), 2u);  // retry.tries = 2
}

TEST(AnthropicEngine, AContractRunsEndToEndAndAutomaticStartsWithTools) {
  loopback_server server([](const received_request& r, std::size_t) {
    if (r.body.find("tool_choice") == std::string::npos) return whole(anthropic_error("invalid_request_error", "no tool"), 400);
    return whole(anthropic_tool_message("Answer", R"({"answer": "Paris", "confidence": 1.7})"));
  });
  covenant::http_engine engine(options_for(server));
  covenant::contract_options opts = covenant::testing::instant({.tries = 1});
  opts.mode = output_mode::automatic;
  covenant::contract<QA> qa{engine, opts};
  const auto [value, outcome] = qa.run(Question{"Capital of France?"});
  EXPECT_FALSE(outcome.success);  // confidence 1.7 twice
  EXPECT_EQ(outcome.attempts.size(), 2u);
  ASSERT_EQ(server.requests(), 2u);
  // The corrective turn follows the assistant's reply: user, assistant, user.
  const json::object second = body_of(server, 1);
  const json::array& messages = second.at("messages").as_array();
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[1].at("role"), "assistant");
  EXPECT_EQ(messages[2].at("role"), "user");
  EXPECT_THAT(std::string(messages[2].at("content").as_string()), HasSubstr("confidence"));
}

TEST(AnthropicEngine, FromEnvPicksTheProvider) {
  ::setenv("COVENANT_PROVIDER", "anthropic", 1);
  ::setenv("COVENANT_BASE_URL", "https://api.anthropic.com", 1);
  const covenant::http_engine_options o = covenant::http_engine::options_from_env();
  EXPECT_EQ(o.provider, covenant::provider::anthropic);
  covenant::http_engine engine(o);
  EXPECT_EQ(engine.endpoint(), "https://api.anthropic.com/v1/messages");
  ::setenv("COVENANT_PROVIDER", "gemini", 1);
  try {
    (void)covenant::http_engine::options_from_env();
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("COVENANT_PROVIDER"));
  }
  ::unsetenv("COVENANT_PROVIDER");
  ::unsetenv("COVENANT_BASE_URL");
  EXPECT_EQ(covenant::to_string(covenant::provider::anthropic), "anthropic");
}

}  // namespace
