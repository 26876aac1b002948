// The OpenAI-compatible HTTP engine against a local cpp-httplib server on 127.0.0.1 (no other
// network): request bodies, reply parsing, transport retries, secrets, threads, and a contract's
// remedy loop over HTTP. No test really sleeps between retries (the sleep is injected).
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/wire_dialect.hpp"
#include "fault_server.hpp"
#include "qa_model.hpp"

namespace http_engine_test {

using covenant_test::qa::Answer;
using covenant_test::qa::Question;

// The shared model's question and answer; post() refuses a guess.
struct QA {
  static constexpr std::string_view prompt = "Answer the question.";
  void post(const Answer& a) const {
    if (a.answer == "I guess") throw covenant::violation("answer", "must not be a guess");
  }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

}  // namespace http_engine_test

namespace {

using namespace std::chrono_literals;
using namespace http_engine_test;
using covenant::engine_error;
using covenant::http_engine;
using covenant::http_engine_options;
using covenant::testing::fake_sleeper;
using covenant::testing::log_capture;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
namespace json = boost::json;

constexpr const char* secret_key = "sk-test-SECRET-7f3a9c0e1b2d";

/// One request as the server saw it.
struct seen_request {
  std::string body;
  httplib::Headers headers;
  std::chrono::steady_clock::time_point at{};  ///< when it arrived
  [[nodiscard]] json::object json() const { return json::parse(body).as_object(); }
  [[nodiscard]] std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

/// A Chat Completions endpoint at http://127.0.0.1:<port>/v1, answering with `handler`.
class local_server {
 public:
  using handler = std::function<void(const httplib::Request&, httplib::Response&, std::size_t index)>;

  explicit local_server(handler h) : handler_(std::move(h)) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(24); };
    server_.set_tcp_nodelay(true);  // no Nagle delay between the header and body writes
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      std::size_t index = 0;
      {
        std::lock_guard lock(mutex_);
        index = requests_.size();
        requests_.push_back({req.body, req.headers, std::chrono::steady_clock::now()});
      }
      handler_(req, res, index);
    });
    int listening = -1;
    server_.set_socket_options([&listening](socket_t sock) {
      httplib::default_socket_options(sock);
      listening = sock;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) throw std::runtime_error("local_server: cannot bind 127.0.0.1");
    // The library listens with a backlog of 5: simultaneous connects beyond that would wait for a
    // SYN retransmission (1 s). Linux lets a second listen() raise the backlog.
    ::listen(listening, 128);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~local_server() {
    server_.stop();
    thread_.join();
  }
  local_server(const local_server&) = delete;
  local_server& operator=(const local_server&) = delete;

  [[nodiscard]] std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  [[nodiscard]] std::size_t calls() const {
    std::lock_guard lock(mutex_);
    return requests_.size();
  }
  [[nodiscard]] seen_request request(std::size_t i) const {
    std::lock_guard lock(mutex_);
    return requests_.at(i);
  }

 private:
  handler handler_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<seen_request> requests_;
};

/// A chat.completion body replying `content`.
std::string completion(const std::string& content, int prompt_tokens = 12, int completion_tokens = 5,
                       const std::string& finish = "stop") {
  json::object message{{"role", "assistant"}, {"content", content}};
  json::object choice{{"index", 0}, {"message", message}, {"finish_reason", finish}};
  json::object usage{{"prompt_tokens", prompt_tokens},
                     {"completion_tokens", completion_tokens},
                     {"total_tokens", prompt_tokens + completion_tokens}};
  json::object body{{"id", "chatcmpl-1"},         {"object", "chat.completion"}, {"model", "test-model-0613"},
                    {"choices", json::array{choice}}, {"usage", usage}};
  return json::serialize(body);
}

void reply(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

std::string error_body(const std::string& message) {
  return json::serialize(json::object{
      {"error", json::object{{"message", message}, {"type", "invalid_request_error"}, {"code", nullptr}}}});
}

http_engine_options options_for(const local_server& server, fake_sleeper& sleeper) {
  http_engine_options o;
  o.base_url = server.base_url();
  o.api_key = secret_key;
  o.model = "test-model";
  o.connect_timeout = 2s;
  o.request_timeout = 5s;
  o.retry.delay = 10ms;
  o.retry.max_delay = 200ms;
  // Each wait the engine decides, as it decides it; the waits themselves are real timers.
  o.on_retry = [&sleeper](const covenant::transport_retry& r) { sleeper(r.wait); };
  o.random = [] { return 0.5; };  // no jitter: u = 0
  return o;
}

covenant::chat_request simple_request(const std::string& text = "Hello?") {
  covenant::chat_request r;
  r.messages = {{covenant::role::system, "Be brief."}, {covenant::role::user, text}};
  return r;
}

template <class F>
engine_error expect_engine_error(F&& f) {
  try {
    f();
  } catch (const engine_error& e) {
    return e;
  }
  ADD_FAILURE() << "expected covenant::engine_error";
  return engine_error("no error");
}

// ---------------------------------------------------------------------------------------------

TEST(HttpEngine, SendsModelMessagesAndSchemaAndParsesTheReply) {
  local_server server([](const httplib::Request&, httplib::Response& res, std::size_t) {
    reply(res, 200, completion(R"({"answer": "Paris", "confidence": 0.9})", 31, 7, "stop"));
  });
  fake_sleeper sleeper;
  http_engine engine(options_for(server, sleeper));

  covenant::chat_request request = simple_request("Capital of France?");
  request.response_schema = std::make_shared<const json::value>(covenant::openai_strict_schema_of<Answer>());
  request.schema_name = "Answer";
  request.temperature = 0.25;
  request.max_tokens = 300;
  const covenant::chat_response r = engine.complete(request);

  EXPECT_EQ(r.text, R"({"answer": "Paris", "confidence": 0.9})");
  EXPECT_EQ(r.usage.input_tokens, 31u);
  EXPECT_EQ(r.usage.output_tokens, 7u);
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.model, "test-model-0613");

  ASSERT_EQ(server.calls(), 1u);
  const seen_request seen = server.request(0);
  const json::object body = seen.json();
  EXPECT_EQ(body.at("model"), "test-model");
  const json::array& messages = body.at("messages").as_array();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0], (json::object{{"role", "system"}, {"content", "Be brief."}}));
  EXPECT_EQ(messages[1], (json::object{{"role", "user"}, {"content", "Capital of France?"}}));
  EXPECT_EQ(body.at("temperature").to_number<double>(), 0.25);
  EXPECT_EQ(body.at("max_tokens").to_number<int>(), 300);
  const json::object& rf = body.at("response_format").as_object();
  EXPECT_EQ(rf.at("type"), "json_schema");
  const json::object& js = rf.at("json_schema").as_object();
  EXPECT_EQ(js.at("name"), "Answer");
  EXPECT_EQ(js.at("strict"), true);
  EXPECT_EQ(js.at("schema"), covenant::openai_strict_schema_of<Answer>());

  EXPECT_EQ(seen.header("Authorization"), std::string("Bearer ") + secret_key);
  EXPECT_THAT(seen.header("Content-Type"), HasSubstr("application/json"));
  EXPECT_THAT(seen.header("User-Agent"), HasSubstr("covenant/"));
  EXPECT_TRUE(sleeper.sleeps().empty());
}

TEST(HttpEngine, LeavesOutResponseFormatWithoutSchemaOrWhenStructuredOutputsAreOff) {
  local_server server([](const httplib::Request&, httplib::Response& res, std::size_t) {
    reply(res, 200, completion("plain text"));
  });
  fake_sleeper sleeper;
  http_engine engine(options_for(server, sleeper));
  EXPECT_EQ(engine.complete(simple_request()).text, "plain text");

  http_engine_options off = options_for(server, sleeper);
  off.structured_outputs = false;
  off.model.clear();
  off.headers = {{"X-Trace", "abc"}};
  http_engine plain(std::move(off));
  covenant::chat_request with_schema = simple_request();
  with_schema.response_schema = std::make_shared<const json::value>(covenant::openai_strict_schema_of<Answer>());
  (void)plain.complete(with_schema);

  ASSERT_EQ(server.calls(), 2u);
  const json::object first = server.request(0).json();
  EXPECT_FALSE(first.contains("response_format"));
  EXPECT_FALSE(first.contains("temperature"));
  EXPECT_FALSE(first.contains("max_tokens"));
  const json::object second = server.request(1).json();
  EXPECT_FALSE(second.contains("response_format"));
  EXPECT_FALSE(second.contains("model"));
  EXPECT_EQ(server.request(1).header("X-Trace"), "abc");
}

TEST(HttpEngine, RetriesA429OnceWaitingWhatRetryAfterSays) {
  local_server server([](const httplib::Request&, httplib::Response& res, std::size_t i) {
    if (i == 0) {
      res.set_header("Retry-After", "0.05");
      reply(res, 429, error_body("Rate limit reached for requests"));
    } else {
      reply(res, 200, completion("ok"));
    }
  });
  fake_sleeper sleeper;
  log_capture log;
  http_engine engine(options_for(server, sleeper));
  EXPECT_EQ(engine.complete(simple_request()).text, "ok");
  EXPECT_EQ(server.calls(), 2u);
  EXPECT_THAT(sleeper.sleeps(), ElementsAre(std::chrono::nanoseconds(50ms)));
  EXPECT_GE(server.request(1).at - server.request(0).at, 50ms);  // the wait really happened
  const std::string logged = log.text();
  EXPECT_THAT(logged, HasSubstr("[warning] http_engine: POST " + server.base_url() + "/chat/completions failed (HTTP 429"));
  EXPECT_THAT(logged, HasSubstr("transport retry 1/4 in 0.050 s"));
  EXPECT_THAT(logged, HasSubstr("-> HTTP 429"));
  EXPECT_THAT(logged, HasSubstr("(attempt 2/5)"));
}

TEST(HttpEngine, RetryAfterMsAndLongRetryAfterAreCappedAtMaxBackoff) {
  local_server server([](const httplib::Request&, httplib::Response& res, std::size_t i) {
    if (i == 0) {
      res.set_header("retry-after-ms", "25");
      reply(res, 503, "busy");
    } else if (i == 1) {
      res.set_header("Retry-After", "120");
      reply(res, 429, "slow down");
    } else {
      reply(res, 200, completion("ok"));
    }
  });
  fake_sleeper sleeper;
  http_engine engine(options_for(server, sleeper));  // retry.max_delay 200 ms
  EXPECT_EQ(engine.complete(simple_request()).text, "ok");
  EXPECT_THAT(sleeper.sleeps(), ElementsAre(std::chrono::nanoseconds(25ms), std::chrono::nanoseconds(200ms)));
}

TEST(HttpEngine, GivesUpOn503AfterTheRetryBudgetWithExponentialBackoff) {
  local_server server([](const httplib::Request&, httplib::Response& res, std::size_t) {
    reply(res, 503, error_body("The server is overloaded"));
  });
  fake_sleeper sleeper;
  http_engine_options o = options_for(server, sleeper);
  o.retry.tries = 3;
  http_engine engine(std::move(o));
  const engine_error e = expect_engine_error([&] { (void)engine.complete(simple_request()); });
  EXPECT_EQ(e.status(), 503);
  EXPECT_TRUE(e.retryable());
  EXPECT_THAT(e.what(), HasSubstr("HTTP 503: The server is overloaded"));
  EXPECT_THAT(e.what(), HasSubstr("gave up after 4 attempts"));
  EXPECT_EQ(server.calls(), 4u);
  EXPECT_THAT(sleeper.sleeps(), ElementsAre(std::chrono::nanoseconds(10ms), std::chrono::nanoseconds(20ms),
                                            std::chrono::nanoseconds(40ms)));
}

TEST(HttpEngine, BackoffIsCappedThenJittered) {
  local_server server([](const httplib::Request&, httplib::Response& res, std::size_t) { reply(res, 502, "bad gateway"); });
  fake_sleeper sleeper;
  http_engine_options o = options_for(server, sleeper);
  o.retry.tries = 3;
  o.retry.delay = 100ms;
  o.retry.max_delay = 150ms;
  o.retry.jitter = 0.5;
  o.random = [] { return 0.0; };  // u = -jitter: x 0.5
  http_engine engine(std::move(o));
  const engine_error e = expect_engine_error([&] { (void)engine.complete(simple_request()); });
  EXPECT_EQ(e.status(), 502);
  EXPECT_THAT(sleeper.sleeps(), ElementsAre(std::chrono::nanoseconds(50ms), std::chrono::nanoseconds(75ms),
                                            std::chrono::nanoseconds(75ms)));
}

TEST(HttpEngine, ClientErrorFailsAtOnceWithTheServersMessage) {
  local_server server([](const httplib::Request&, httplib::Response& res, std::size_t) {
    reply(res, 400, error_body("Invalid schema for response_format 'Answer': 'additionalProperties' is required\n\n"));
  });
  fake_sleeper sleeper;
  http_engine engine(options_for(server, sleeper));
  const engine_error e = expect_engine_error([&] { (void)engine.complete(simple_request()); });
  EXPECT_EQ(e.status(), 400);
  EXPECT_FALSE(e.retryable());
  EXPECT_THAT(e.what(), HasSubstr("HTTP 400: Invalid schema for response_format 'Answer': 'additionalProperties' is required"));
  EXPECT_THAT(e.what(), Not(HasSubstr("\n")));
  EXPECT_EQ(server.calls(), 1u);
  EXPECT_TRUE(sleeper.sleeps().empty());
}

TEST(HttpEngine, LongNonJsonErrorBodiesAreTrimmedAndElided) {
  local_server server([](const httplib::Request&, httplib::Response& res, std::size_t) {
    res.status = 404;
    res.set_content("  <html>\n<body>Not Found " + std::string(5000, 'x') + "</body></html>\n", "text/html");
  });
  fake_sleeper sleeper;
  http_engine engine(options_for(server, sleeper));
  const engine_error e = expect_engine_error([&] { (void)engine.complete(simple_request()); });
  EXPECT_EQ(e.status(), 404);
  EXPECT_FALSE(e.retryable());
  const std::string what = e.what();
  EXPECT_THAT(what, HasSubstr("HTTP 404: <html> <body>Not Found xxx"));
  EXPECT_THAT(what, HasSubstr("..."));
  EXPECT_LT(what.size(), 500u);
}

TEST(HttpEngine, BodiesThatAreNotChatCompletionsAreEngineErrors) {
  struct bad_case {
    std::string body;
    std::string says;
  };
  const std::vector<bad_case> cases = {
      {"{not json", "not JSON"},
      {"", "empty"},
      {"[1, 2]", "not a JSON object"},
      {R"({"id": "x"})", "no \"choices\""},
      {R"({"choices": []})", "\"choices\" is empty"},
      {R"({"choices": [{"finish_reason": "stop"}]})", "choices[0].message is missing"},
      {R"({"choices": [{"message": {"role": "assistant"}}]})", "choices[0].message.content is missing"},
      {R"({"choices": [{"message": {"content": null, "refusal": "I can't help with that."}}]})",
       "the model refused: I can't help with that."},
      {R"({"error": {"message": "quota exceeded"}})", "the server reported an error: quota exceeded"},
  };
  std::atomic<std::size_t> which{0};
  local_server server([&](const httplib::Request&, httplib::Response& res, std::size_t) {
    reply(res, 200, cases[which.load()].body);
  });
  fake_sleeper sleeper;
  http_engine engine(options_for(server, sleeper));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    which = i;
    const engine_error e = expect_engine_error([&] { (void)engine.complete(simple_request()); });
    EXPECT_EQ(e.status(), 200) << cases[i].body;
    EXPECT_FALSE(e.retryable()) << cases[i].body;
    EXPECT_THAT(e.what(), HasSubstr(cases[i].says)) << cases[i].body;
  }
  EXPECT_EQ(server.calls(), cases.size());  // never retried
  EXPECT_TRUE(sleeper.sleeps().empty());
}

TEST(HttpEngine, ContentPartsAndMissingUsageAreAccepted) {
  const covenant::chat_response r = covenant::detail::parse_chat_completion(
      R"({"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                        "finish_reason": null}]})");
  EXPECT_EQ(r.text, "ab");
  EXPECT_EQ(r.usage, covenant::usage{});
  EXPECT_EQ(r.finish_reason, "");
}

TEST(HttpEngine, RequestTimeoutIsRetriedThenFails) {
  local_server server([](const httplib::Request&, httplib::Response& res, std::size_t) {
    std::this_thread::sleep_for(300ms);
    reply(res, 200, completion("too late"));
  });
  fake_sleeper sleeper;
  http_engine_options o = options_for(server, sleeper);
  o.request_timeout = 60ms;
  o.retry.tries = 1;
  http_engine engine(std::move(o));
  const engine_error e = expect_engine_error([&] { (void)engine.complete(simple_request()); });
  EXPECT_EQ(e.status(), 0);
  EXPECT_TRUE(e.retryable());
  EXPECT_THAT(e.what(), HasSubstr("timed out"));
  EXPECT_THAT(e.what(), HasSubstr("gave up after 2 attempts"));
  EXPECT_EQ(sleeper.sleeps().size(), 1u);
  EXPECT_EQ(server.calls(), 2u);
}

TEST(HttpEngine, ConnectionRefusedIsRetriedThenFails) {
  fake_sleeper sleeper;
  http_engine_options o;
  o.base_url = "http://127.0.0.1:" + std::to_string(covenant_test::refused_port()) + "/v1";
  o.retry.tries = 2;
  o.retry.delay = 10ms;
  o.on_retry = [&sleeper](const covenant::transport_retry& r) { sleeper(r.wait); };
  http_engine engine(std::move(o));
  const engine_error e = expect_engine_error([&] { (void)engine.complete(simple_request()); });
  EXPECT_EQ(e.status(), 0);
  EXPECT_TRUE(e.retryable());
  EXPECT_THAT(e.what(), HasSubstr("connection failed"));
  EXPECT_THAT(e.what(), HasSubstr("gave up after 3 attempts"));
  EXPECT_EQ(sleeper.sleeps().size(), 2u);
}

TEST(HttpEngine, ApiKeyOnlyTravelsInTheAuthorizationHeader) {
  const std::string key = secret_key;
  local_server server([&](const httplib::Request&, httplib::Response& res, std::size_t i) {
    if (i == 0) reply(res, 429, error_body("Rate limited for key " + key));
    else if (i == 1) reply(res, 200, completion("fine"));
    else if (i == 2) reply(res, 200, "not json, key " + key);
    else reply(res, 401, error_body("Incorrect API key provided: " + key + ". Find your key at ..."));
  });
  fake_sleeper sleeper;
  log_capture log;
  std::vector<std::string> errors;
  {
    http_engine engine(options_for(server, sleeper));
    EXPECT_EQ(engine.complete(simple_request()).text, "fine");
    for (int i = 0; i < 2; ++i) {
      try {
        (void)engine.complete(simple_request());
        ADD_FAILURE() << "expected an engine_error";
      } catch (const engine_error& e) {
        errors.emplace_back(e.what());
      }
    }
    // Credentials in the URL (user-info, query) stay out of messages and logs too.
    http_engine_options o = options_for(server, sleeper);
    o.base_url = "http://user:" + key + "@127.0.0.1:" + std::to_string(covenant_test::refused_port()) + "/v1?api-key=" + key;
    o.retry.tries = 1;
    http_engine refused(std::move(o));
    try {
      (void)refused.complete(simple_request());
      ADD_FAILURE() << "expected an engine_error";
    } catch (const engine_error& e) {
      errors.emplace_back(e.what());
    }
  }
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_THAT(errors[0], HasSubstr("[redacted]"));
  EXPECT_THAT(errors[1], HasSubstr("Incorrect API key provided: [redacted]"));
  for (const std::string& what : errors) EXPECT_THAT(what, Not(HasSubstr(key)));
  const std::string logged = log.text();
  EXPECT_THAT(logged, HasSubstr("[debug] http_engine: POST"));
  EXPECT_THAT(logged, HasSubstr("[warning] http_engine: POST"));
  EXPECT_THAT(logged, Not(HasSubstr(key)));

  ASSERT_EQ(server.calls(), 4u);
  for (std::size_t i = 0; i < server.calls(); ++i) {
    const seen_request seen = server.request(i);
    EXPECT_THAT(seen.body, Not(HasSubstr(key)));
    for (const auto& [name, value] : seen.headers) {
      if (name == "Authorization") EXPECT_EQ(value, "Bearer " + key);
      else EXPECT_THAT(value, Not(HasSubstr(key))) << name;
    }
  }
}

TEST(HttpEngine, InvalidOptionsAreRejectedWithoutShowingTheKey) {
  auto rejects = [](http_engine_options o, const std::string& says) {
    try {
      http_engine e(std::move(o));
      ADD_FAILURE() << "accepted options that should fail with: " << says;
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), HasSubstr(says));
      EXPECT_THAT(e.what(), Not(HasSubstr("SECRET")));
    }
  };
  rejects({}, "base_url is empty");
  rejects({.base_url = "ftp://example.com/v1"}, "must start with http:// or https://");
  rejects({.base_url = "http://localhost/v1", .api_key = "sk-SECRET\r\nX-Evil: 1"}, "api_key must not contain line breaks");
  rejects({.base_url = "http://localhost/v1", .retry = {.tries = -1}}, "retry.tries must be >= 0 (got -1)");
  http_engine_options bad_header{.base_url = "http://localhost/v1"};
  bad_header.headers = {{"X-Ok", "SECRET\nInjected: yes"}};
  rejects(bad_header, "must not contain line breaks");
  http_engine_options bad_jitter{.base_url = "http://localhost/v1"};
  bad_jitter.retry.jitter = 1.5;
  rejects(bad_jitter, "retry.jitter must be in [0, 1]");
  http_engine_options bad_ca{.base_url = "https://localhost/v1"};
  bad_ca.ca_file = "/nonexistent/ca.pem";
  rejects(bad_ca, "ca_file \"/nonexistent/ca.pem\" cannot be read");

  http_engine e({.base_url = "HTTP://localhost:8080/v1/"});
  EXPECT_EQ(e.endpoint(), "HTTP://localhost:8080/v1/chat/completions");
  http_engine full({.base_url = "http://localhost:8080/v1/chat/completions"});
  EXPECT_EQ(full.endpoint(), "http://localhost:8080/v1/chat/completions");
}

TEST(HttpEngine, ParsesRetryAfterSecondsAndHttpDates) {
  using covenant::detail::parse_retry_after;
  const auto now = std::chrono::system_clock::from_time_t(1445412450);  // Wed, 21 Oct 2015 07:27:30 GMT
  EXPECT_EQ(parse_retry_after("1", now), std::chrono::nanoseconds(1s));
  EXPECT_EQ(parse_retry_after(" 2.5 ", now), std::chrono::nanoseconds(2500ms));
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), std::chrono::nanoseconds(30s));
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), std::chrono::nanoseconds(0));
  EXPECT_EQ(parse_retry_after("soon", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("-3", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("", now), std::nullopt);
}

TEST(HttpEngine, FromEnvReadsTheVariablesAndNamesTheMissingOne) {
  struct env_guard {
    ~env_guard() {
      for (const char* n : {"COVENANT_BASE_URL", "COVENANT_API_KEY", "COVENANT_MODEL", "COVENANT_TIMEOUT_S", "COVENANT_CA_FILE"})
        ::unsetenv(n);
    }
  } guard;
  ::unsetenv("COVENANT_BASE_URL");
  try {
    (void)http_engine::from_env();
    ADD_FAILURE() << "from_env accepted a missing COVENANT_BASE_URL";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("COVENANT_BASE_URL is not set"));
  }
  ::setenv("COVENANT_BASE_URL", "http://127.0.0.1:9/v1", 1);
  ::setenv("COVENANT_API_KEY", secret_key, 1);
  ::setenv("COVENANT_MODEL", "local-model", 1);
  ::setenv("COVENANT_TIMEOUT_S", "2.5", 1);
  const http_engine e = http_engine::from_env({.retry = {.tries = 1}});
  EXPECT_EQ(e.options().base_url, "http://127.0.0.1:9/v1");
  EXPECT_EQ(e.options().api_key, secret_key);
  EXPECT_EQ(e.options().model, "local-model");
  EXPECT_EQ(e.options().request_timeout, 2500ms);
  EXPECT_EQ(e.options().retry.tries, 1);
  EXPECT_EQ(e.options().ca_file, "");
  ::setenv("COVENANT_CA_FILE", "/etc/hostname", 1);
  EXPECT_EQ(http_engine::options_from_env().ca_file, "/etc/hostname");
  ::setenv("COVENANT_TIMEOUT_S", "soon", 1);
  EXPECT_THROW((void)http_engine::options_from_env(), std::invalid_argument);
}

TEST(HttpEngine, ConcurrentCallsFromEightThreadsAllSucceed) {
  local_server server([](const httplib::Request& req, httplib::Response& res, std::size_t) {
    const json::object body = json::parse(req.body).as_object();
    const json::array& messages = body.at("messages").as_array();
    reply(res, 200, completion("echo: " + std::string(messages.back().at("content").as_string())));
  });
  fake_sleeper sleeper;
  http_engine engine(options_for(server, sleeper));
  constexpr int threads = 8;
  constexpr int calls_each = 4;
  std::atomic<int> ok{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int c = 0; c < calls_each; ++c) {
        const std::string text = "thread " + std::to_string(t) + " call " + std::to_string(c);
        try {
          if (engine.complete(simple_request(text)).text == "echo: " + text) ++ok;
        } catch (const std::exception&) {
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  EXPECT_EQ(ok.load(), threads * calls_each);
  EXPECT_EQ(server.calls(), static_cast<std::size_t>(threads * calls_each));
}

TEST(HttpEngine, ContractRemedyLoopRunsOverHttpAndTransportFailuresStayHidden) {
  // 503 (transport: retried by the engine), then an invalid answer, then a valid one.
  local_server server([](const httplib::Request&, httplib::Response& res, std::size_t i) {
    if (i == 0) reply(res, 503, error_body("overloaded"));
    else if (i == 1) reply(res, 200, completion(R"({"answer": "Paris", "confidence": 1.7})", 100, 10));
    else reply(res, 200, completion(R"({"answer": "Paris", "confidence": 0.9})", 150, 8));
  });
  fake_sleeper engine_sleeps;
  http_engine engine(options_for(server, engine_sleeps));
  fake_sleeper contract_sleeps;
  covenant::contract<QA> qa{engine, covenant::testing::instant({.tries = 2}, &contract_sleeps)};

  auto [value, outcome] = qa.run(Question{"What is the capital of France?"});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(value.answer, "Paris");
  EXPECT_EQ(value.confidence, 0.9);
  EXPECT_EQ(outcome.attempts.size(), 2u);  // the 503 is not an attempt
  EXPECT_EQ(outcome.usage, (covenant::usage{250, 18}));
  EXPECT_EQ(engine_sleeps.sleeps().size(), 1u);
  EXPECT_EQ(contract_sleeps.sleeps().size(), 1u);

  ASSERT_EQ(server.calls(), 3u);
  const json::object first = server.request(1).json();
  EXPECT_TRUE(first.contains("response_format"));
  EXPECT_EQ(first.at("messages").as_array().size(), 2u);
  const json::object second = server.request(2).json();
  const json::array& messages = second.at("messages").as_array();
  ASSERT_EQ(messages.size(), 4u);
  EXPECT_EQ(messages[2].at("role"), "assistant");
  EXPECT_EQ(messages[2].at("content"), R"({"answer": "Paris", "confidence": 1.7})");
  EXPECT_EQ(messages[3].at("role"), "user");
  const std::string correction(messages[3].at("content").as_string());
  EXPECT_THAT(correction, HasSubstr("confidence"));
  EXPECT_THAT(correction, HasSubstr("must be <= 1 (got 1.7)"));
  EXPECT_THAT(correction, Not(HasSubstr("503")));
  EXPECT_THAT(correction, Not(HasSubstr("overloaded")));
}

}  // namespace
