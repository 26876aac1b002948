// Cassettes (covenant/engine/cassette.hpp), redaction: redacted strings never reach the file, in
// messages, replies and tool fields alike, and an HTTP engine's API key and headers are never
// written.
#include <covenant/engine/cassette.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/testing/cassette_gtest.hpp>
#include <covenant/testing/gtest.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <string>
#include <vector>

#include "loopback_server.hpp"

#include "cassette_fixture.hpp"

namespace {

using namespace cassette_test;
using ::testing::HasSubstr;
using ::testing::Not;

// ------------------------------------------------------------------------------------------------
// Secrets
// ------------------------------------------------------------------------------------------------

TEST(Cassette, RedactedStringsNeverReachTheFile) {
  const std::string path = temp_path();
  const std::string secret = "sk-live-5ecr3t";
  const std::vector<std::string> redact{secret, "Alice Example"};
  {
    scripted_engine model{[&](const chat_request&, std::size_t i) -> chat_response {
      if (i == 1) throw engine_error("HTTP 401: invalid key " + secret, 401, false);
      chat_response r;
      r.text = "your key is " + secret + " and your name is Alice Example";
      r.model = "m";
      return r;
    }};
    model.stream_in_chunks(5);  // the secret is split over several chunks
    cassette_engine tape{{.path = path, .mode = cassette_mode::record, .redact = redact}, model};
    chat_request r = streamed(ask("My key is " + secret + ". I am Alice Example."));
    r.response_schema = std::make_shared<const json::value>(json::parse(R"({"description": "for Alice Example"})"));
    auto c = run(tape, r);
    ASSERT_TRUE(c->ok());
    EXPECT_THAT(c->reply().text, HasSubstr(secret));  // the live call is untouched
    EXPECT_THROW((void)tape.complete(ask(secret)), engine_error);
  }
  const std::string file = read_file(path);
  EXPECT_THAT(file, Not(HasSubstr(secret)));
  EXPECT_THAT(file, Not(HasSubstr("5ecr3t")));
  EXPECT_THAT(file, Not(HasSubstr("Alice")));
  EXPECT_THAT(file, HasSubstr("My key is [redacted]. I am [redacted]."));
  const auto lines = read_lines(path);
  std::string joined;
  for (const auto& c : lines[1].at("chunks").as_array()) joined += c.at("text").as_string();
  EXPECT_EQ(joined, "your key is [redacted] and your name is [redacted]");
  EXPECT_EQ(lines[1].at("response").at("text"), "your key is [redacted] and your name is [redacted]");
  EXPECT_EQ(lines[2].at("error").at("message"), "HTTP 401: invalid key [redacted]");

  // Replayed with the same redact list, the requests holding the secret match.
  cassette_engine replay{{.path = path, .redact = redact}};
  chat_request r = ask("My key is " + secret + ". I am Alice Example.");
  r.response_schema = std::make_shared<const json::value>(json::parse(R"({"description": "for Alice Example"})"));
  EXPECT_EQ(replay.complete(r).text, "your key is [redacted] and your name is [redacted]");
  EXPECT_THROW((void)replay.complete(ask(secret)), engine_error);
  EXPECT_TRUE(replay.unused().empty());
}

TEST(Cassette, TheApiKeyAndHeadersOfAnHttpEngineAreNeverWritten) {
  const std::string path = temp_path();
  const std::string key = "sk-test-NEVER-WRITTEN-123";
  covenant_test::loopback_server server([](const covenant_test::received_request&, std::size_t) {
    covenant_test::response_plan p;
    p.body = covenant_test::openai_completion(R"({"confidence": 0.9, "answer": "Paris", "reasoning": "atlas"})");
    return p;
  });
  {
    covenant::http_engine_options o;
    o.base_url = server.base_url();
    o.api_key = key;
    o.model = "loopback";
    o.headers = {{"OpenAI-Organization", "org-hidden-456"}};
    o.retry.tries = 0;
    covenant::http_engine http{o};
    cassette_engine tape{{.path = path, .mode = cassette_mode::record, .redact = {key}}, http};
    covenant::contract<QA> qa{tape, instant()};
    auto [answer, outcome] = qa.run(Question{"capital of France?"});
    ASSERT_THAT(outcome, covenant::testing::Succeeded());
  }
  ASSERT_EQ(server.requests(), 1u);
  EXPECT_EQ(server.request(0).headers.at("authorization"), "Bearer " + key);  // it was sent
  const std::string file = read_file(path);
  EXPECT_THAT(file, Not(HasSubstr(key)));
  EXPECT_THAT(file, Not(HasSubstr("org-hidden")));
  EXPECT_THAT(file, Not(HasSubstr("Bearer")));
  EXPECT_THAT(file, HasSubstr("\"model\":\"loopback\""));

  auto model = covenant::testing::replay_cassette(path, {key});
  covenant::contract<QA> qa{*model, instant()};
  auto [answer, outcome] = qa.run(Question{"capital of France?"});
  EXPECT_THAT(outcome, covenant::testing::Succeeded());
  EXPECT_EQ(answer.answer, "Paris");
  EXPECT_EQ(server.requests(), 1u);
}

// ------------------------------------------------------------------------------------------------
// Tool fields
// ------------------------------------------------------------------------------------------------

TEST(Cassette, RedactedStringsInToolFieldsNeverReachTheFile) {
  const std::string path = temp_path();
  const std::string secret = "s3cr3t-token";
  auto secret_tools = [&] {
    auto params = std::make_shared<const json::value>(json::parse(R"({"type": "object", "description": "s3cr3t-token"})"));
    return std::make_shared<const std::vector<covenant::tool_spec>>(
        std::vector<covenant::tool_spec>{{"lookup", "Uses s3cr3t-token.", params}});
  };
  auto request = [&](const std::vector<covenant::tool_call>& calls) {
    chat_request r = ask("Look it up.");
    r.tools = secret_tools();
    if (!calls.empty()) {
      r.messages.push_back({.role = role::assistant, .content = "", .tool_calls = calls});
      r.messages.push_back({.role = role::tool, .content = "found s3cr3t-token", .tool_call_id = calls[0].id});
    }
    return r;
  };
  std::vector<covenant::tool_call> calls;
  {
    scripted_engine model{step::calls({{.id = "id-s3cr3t-token", .name = "lookup", .arguments = R"({"key": "s3cr3t-token"})"}}),
                          "done"};
    model.stream_in_chunks(3);
    cassette_engine tape{{.path = path, .mode = cassette_mode::record, .redact = {secret}}, model};
    auto c = run(tape, streamed(request({})));
    ASSERT_TRUE(c->ok()) << c->error().what();
    calls = c->reply().tool_calls;
    EXPECT_EQ(calls[0].arguments, R"({"key": "s3cr3t-token"})");  // the caller gets the real reply
    EXPECT_EQ(tape.complete(request(calls)).text, "done");
  }
  const std::string file = read_file(path);
  EXPECT_EQ(file.find(secret), std::string::npos) << file;
  EXPECT_NE(file.find(R"({\"key\": \"[redacted]\"})"), std::string::npos) << file;  // also across pieces
  // Replaying with the same redact list matches the redacted request.
  cassette_engine replay{{.path = path, .mode = cassette_mode::replay, .redact = {secret}}};
  const chat_response first = replay.complete(request({}));
  EXPECT_EQ(first.tool_calls[0].arguments, R"({"key": "[redacted]"})");
  EXPECT_EQ(replay.complete(request(calls)).text, "done");
}

}  // namespace
