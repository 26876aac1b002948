// covenant::check_health: schema files (good, broken, missing, JSON Schema), a registry, and an
// endpoint served on 127.0.0.1 (2xx, a refused key, a hang, a closed port, invalid URLs) checked
// through the HTTP engine's probe for each provider (OpenAI-compatible and Anthropic: the URL and
// headers asked, refused keys, timeouts, an existing engine's own connections), and the report's
// JSON and text forms.
#include <covenant/telemetry/health.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/runtime/registry.hpp>
#include <covenant/engine/runtime.hpp>

#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "anthropic_replies.hpp"
#include "loopback_server.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

const char* good_baml = R"(enum Priority {
  LOW
  HIGH
}

class Tag {
  name string
}

class Ticket {
  title string @assert({{ this|length > 0 }})
  priority Priority
  tags Tag[]
}
)";

const char* broken_baml = R"(class Answer {
  text string
  source Sourc
  text int
}
)";

const char* review_json_schema = R"({
  "title": "Review",
  "type": "object",
  "properties": {
    "approved": {"type": "boolean"},
    "issues": {"type": "array", "items": {"$ref": "#/$defs/Issue"}}
  },
  "required": ["approved", "issues"],
  "$defs": {
    "Issue": {"type": "object", "properties": {"line": {"type": "integer"}}, "required": ["line"]}
  }
})";

const char* models_body = R"({"object": "list", "data": [{"id": "test-model", "object": "model"}]})";

class Health : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("covenant_health_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  fs::path write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    std::ofstream f(p, std::ios::binary);
    f << content;
    return p;
  }

  /// A server answering every request with `status` and `body`.
  static std::unique_ptr<covenant_test::loopback_server> server(int status, std::string body) {
    return std::make_unique<covenant_test::loopback_server>(
        [status, body](const covenant_test::received_request&, std::size_t) {
          covenant_test::response_plan p;
          p.status = status;
          p.body = body;
          return p;
        });
  }

  static covenant::health_check endpoint_check(const std::string& url, const std::string& key = {},
                                               std::chrono::milliseconds timeout = 2000ms) {
    covenant::health_options o;
    o.endpoint = url;
    o.api_key = key;
    o.endpoint_timeout = timeout;
    const covenant::health_report r = covenant::check_health(o);
    EXPECT_EQ(r.checks.size(), 1u);
    EXPECT_EQ(r.healthy, !r.checks.empty() && r.checks.front().ok);
    return r.checks.empty() ? covenant::health_check{} : r.checks.front();
  }

  fs::path dir_;
};

// ---- schema files ----------------------------------------------------------------------------------

TEST_F(Health, AGoodSchemaFileIsHealthy) {
  const fs::path file = write("ticket.baml", good_baml);
  const auto start = std::chrono::steady_clock::now();
  const covenant::health_report r = covenant::check_health({.schema_files = {file}});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(r.healthy);
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_EQ(r.checks[0].name, "schema:" + file.string());
  EXPECT_TRUE(r.checks[0].ok);
  EXPECT_EQ(r.checks[0].detail, "3 types loaded");
  EXPECT_LE(r.checks[0].took, elapsed);  // part of the call
}

TEST_F(Health, ASchemaChecksTimeCoversReadingTheFile) {
  // A named pipe: the writer's open waits for the check to open it for reading, then the schema
  // comes 100 ms later, and ends when the writer closes it.
  const fs::path file = dir_ / "ticket.baml";
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
  std::thread writer([file] {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    std::this_thread::sleep_for(100ms);
    const std::string text = good_baml;
    EXPECT_EQ(::write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
    ::close(fd);
  });
  const covenant::health_report r = covenant::check_health({.schema_files = {file}});
  // Had the check not opened the pipe, this open lets the writer's go (it never waits).
  const int unblock = ::open(file.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  writer.join();
  if (unblock >= 0) ::close(unblock);
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].ok) << r.checks[0].detail;
  EXPECT_EQ(r.checks[0].detail, "3 types loaded");
  EXPECT_GE(r.checks[0].took, 100ms);  // the file could not be read sooner
}

TEST_F(Health, ABrokenSchemaFileIsUnhealthyWithEveryErrorInTheDetail) {
  const fs::path good = write("ticket.baml", good_baml);
  const fs::path broken = write("answer.baml", broken_baml);
  const covenant::health_report r = covenant::check_health({.schema_files = {good, broken}});
  EXPECT_FALSE(r.healthy);
  ASSERT_EQ(r.checks.size(), 2u);
  EXPECT_TRUE(r.checks[0].ok);
  EXPECT_FALSE(r.checks[1].ok);
  EXPECT_EQ(r.checks[1].name, "schema:" + broken.string());
  EXPECT_THAT(r.checks[1].detail, AllOf(StartsWith("2 problems: "), HasSubstr("3:10: unknown type 'Sourc' [unknown_type]"),
                                        HasSubstr("[duplicate_field]")));
}

TEST_F(Health, MissingFilesAndDirectoriesAreFailedChecks) {
  const covenant::health_report r =
      covenant::check_health({.schema_files = {dir_ / "nope.baml", dir_, fs::path()}});
  EXPECT_FALSE(r.healthy);
  ASSERT_EQ(r.checks.size(), 3u);
  EXPECT_EQ(r.checks[0].detail, "cannot read the file: no such file");
  EXPECT_EQ(r.checks[1].detail, "cannot read the file: is a directory");
  EXPECT_FALSE(r.checks[2].ok);
}

TEST_F(Health, JsonSchemaDocumentsLoadAsTheToolLoadsThem) {
  const fs::path doc = write("review.json", review_json_schema);
  const fs::path braced = write("review.schema", review_json_schema);  // starts with '{'
  const fs::path bad = write("bad.json", R"({"type": "object", "properties": {"a": {"type": "integer", "minimum": "x"}, "b": {"type": "frob"}}})");
  const fs::path not_json = write("broken.json", "{\"type\": ");
  const covenant::health_report r = covenant::check_health({.schema_files = {doc, braced, bad, not_json}});
  ASSERT_EQ(r.checks.size(), 4u);
  EXPECT_TRUE(r.checks[0].ok) << r.checks[0].detail;
  EXPECT_THAT(r.checks[0].detail, HasSubstr("JSON Schema, root Review"));
  EXPECT_TRUE(r.checks[1].ok) << r.checks[1].detail;
  EXPECT_FALSE(r.checks[2].ok);
  EXPECT_THAT(r.checks[2].detail, AllOf(StartsWith("2 problems: "), HasSubstr("/properties/a/minimum: "),
                                        HasSubstr("/properties/b/type: unknown type 'frob' [invalid_json_schema]")));
  EXPECT_FALSE(r.checks[3].ok);
  EXPECT_FALSE(r.checks[3].detail.empty());
  EXPECT_FALSE(r.healthy);
}

TEST_F(Health, NoChecksIsHealthy) {
  const covenant::health_report r = covenant::check_health({});
  EXPECT_TRUE(r.healthy);
  EXPECT_TRUE(r.checks.empty());
  EXPECT_EQ(r.to_text(), "");
}

// ---- registry --------------------------------------------------------------------------------------

TEST_F(Health, ARegistryWithTwoSchemasIsOk) {
  covenant::schema_registry registry;
  registry.add_schema_file("Ticket", "v1", good_baml);
  registry.add_json_schema("Review", "v2", json::parse(review_json_schema));
  const covenant::health_report r = covenant::check_health({.registry = &registry});
  EXPECT_TRUE(r.healthy);
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_EQ(r.checks[0].name, "registry");
  EXPECT_TRUE(r.checks[0].ok);
  EXPECT_EQ(r.checks[0].detail, "2 schemas resolve (Review@v2, Ticket@v1)");
}

TEST_F(Health, AnEmptyRegistryIsOkAndSaysSo) {
  covenant::schema_registry registry;
  const covenant::health_report r = covenant::check_health({.registry = &registry});
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].ok);
  EXPECT_EQ(r.checks[0].detail, "no schemas registered");
}

// ---- endpoint --------------------------------------------------------------------------------------

TEST_F(Health, AnEndpointAnswering200IsOk) {
  const auto s = server(200, models_body);
  const covenant::health_check c = endpoint_check(s->base_url(), "sk-test-123");
  EXPECT_EQ(c.name, "endpoint");
  EXPECT_TRUE(c.ok) << c.detail;
  EXPECT_THAT(c.detail, StartsWith("HTTP 200 in "));
  ASSERT_EQ(s->requests(), 1u);
  const covenant_test::received_request req = s->request(0);
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.target, "/v1/models");
  EXPECT_EQ(req.headers.at("authorization"), "Bearer sk-test-123");
}

TEST_F(Health, ATrailingSlashAndNoKeyAreFine) {
  const auto s = server(204, "");
  const covenant::health_check c = endpoint_check(s->base_url() + "/");
  EXPECT_TRUE(c.ok) << c.detail;
  ASSERT_EQ(s->requests(), 1u);
  EXPECT_EQ(s->request(0).target, "/v1/models");
  EXPECT_EQ(s->request(0).headers.count("authorization"), 0u);
}

TEST_F(Health, A401SaysTheKeyWasRefusedWithoutPrintingIt) {
  const std::string key = "sk-secret-value-42";
  const auto s = server(401, R"({"error": {"message": "Incorrect API key provided: sk-secret-value-42"}})");
  const covenant::health_check c = endpoint_check(s->base_url(), key);
  EXPECT_FALSE(c.ok);
  EXPECT_THAT(c.detail, AllOf(StartsWith("HTTP 401 in "), HasSubstr("the server answers but refused the API key"),
                              HasSubstr("Incorrect API key provided"), Not(HasSubstr(key))));
}

TEST_F(Health, A403WithoutAKeySaysOneIsNeeded) {
  const auto s = server(403, "forbidden");
  const covenant::health_check c = endpoint_check(s->base_url());
  EXPECT_FALSE(c.ok);
  EXPECT_THAT(c.detail, HasSubstr("requires an API key (none was given)"));
}

TEST_F(Health, OtherStatusesFailWithTheServersMessage) {
  const auto s = server(404, R"({"error": {"message": "no such route"}})");
  const covenant::health_check c = endpoint_check(s->base_url());
  EXPECT_FALSE(c.ok);
  EXPECT_THAT(c.detail, AllOf(StartsWith("HTTP 404 in "), HasSubstr("API root"), HasSubstr("no such route")));
  const auto e = server(503, "overloaded");
  const covenant::health_check d = endpoint_check(e->base_url());
  EXPECT_FALSE(d.ok);
  EXPECT_THAT(d.detail, AllOf(StartsWith("HTTP 503 in "), HasSubstr("overloaded")));
}

TEST_F(Health, AHangingEndpointTimesOut) {
  covenant_test::loopback_server s([](const covenant_test::received_request&, std::size_t) {
    covenant_test::response_plan p;
    p.hang = true;
    return p;
  });
  const auto start = std::chrono::steady_clock::now();
  const covenant::health_check c = endpoint_check(s.base_url(), {}, 300ms);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(c.ok);
  EXPECT_THAT(c.detail, StartsWith("timed out after 300 ms"));
  EXPECT_GE(c.took, 250ms);
  EXPECT_LT(took, 2s);
}

TEST_F(Health, AClosedPortFailsWithTheReason) {
  unsigned short port = 0;
  {
    const auto s = server(200, models_body);
    port = s->port();
  }
  const covenant::health_check c = endpoint_check("http://127.0.0.1:" + std::to_string(port) + "/v1");
  EXPECT_FALSE(c.ok);
  EXPECT_THAT(c.detail, StartsWith("GET http://127.0.0.1:" + std::to_string(port) + "/v1/models failed"));
}

TEST_F(Health, BadUrlsAndOptionsAreFailedChecksNotCrashes) {
  for (const std::string& url : std::vector<std::string>{"", "   ", "not a url", "http://[::1", "ftp://127.0.0.1/v1", "://x", "http://",
                                std::string("http://127.0.0.1:1/v1\0x", 23), "http://exa mple.com/v1"}) {
    const covenant::health_check c = endpoint_check(url, {}, 300ms);
    EXPECT_FALSE(c.ok) << url;
    EXPECT_FALSE(c.detail.empty()) << url;
  }
  EXPECT_THAT(endpoint_check("ftp://127.0.0.1/v1").detail, HasSubstr("unsupported scheme 'ftp'"));
  EXPECT_THAT(endpoint_check("").detail, HasSubstr("no URL given"));
  EXPECT_THAT(endpoint_check("http://127.0.0.1:1/v1", "sk-1\r\nX-Evil: 1").detail,
              AllOf(HasSubstr("line break"), Not(HasSubstr("sk-1"))));
  EXPECT_THAT(endpoint_check("http://127.0.0.1:1/v1", {}, 0ms).detail, HasSubstr("timeout must be positive"));
}

TEST_F(Health, UrlsInDetailsLoseUserInfoAndQuery) {
  unsigned short port = 0;
  {
    const auto s = server(200, models_body);
    port = s->port();
  }
  const covenant::health_check c =
      endpoint_check("http://user:hunter2@127.0.0.1:" + std::to_string(port) + "/v1?key=abc");
  EXPECT_FALSE(c.ok);
  EXPECT_THAT(c.detail, AllOf(Not(HasSubstr("hunter2")), Not(HasSubstr("key=abc"))));
}

// ---- the endpoint through the engine's probe, per provider -----------------------------------------

const char* anthropic_models_body =
    R"({"data": [{"type": "model", "id": "claude-test", "display_name": "Claude Test", "created_at": "2025-01-01T00:00:00Z"}], "has_more": false, "first_id": "claude-test", "last_id": "claude-test"})";

/// The server's root without the "/v1" base_url() ends with: Anthropic's API root.
std::string root_of(const covenant_test::loopback_server& s) { return "http://127.0.0.1:" + std::to_string(s.port()); }

covenant::health_check engine_check(const covenant::http_engine_options& o, std::chrono::milliseconds timeout = 2000ms) {
  covenant::health_options h;
  h.engine_options = o;
  h.endpoint_timeout = timeout;
  const covenant::health_report r = covenant::check_health(h);
  EXPECT_EQ(r.checks.size(), 1u);
  EXPECT_EQ(r.healthy, !r.checks.empty() && r.checks.front().ok);
  return r.checks.empty() ? covenant::health_check{} : r.checks.front();
}

TEST_F(Health, TheProbeEndpointIsEachProvidersModelList) {
  auto probe_url = [](covenant::provider p, const std::string& base) {
    return covenant::http_engine({.provider = p, .base_url = base}).probe_endpoint();
  };
  using covenant::provider;
  EXPECT_EQ(probe_url(provider::openai, "http://127.0.0.1:8080/v1"), "http://127.0.0.1:8080/v1/models");
  EXPECT_EQ(probe_url(provider::openai, "http://127.0.0.1:8080/v1/"), "http://127.0.0.1:8080/v1/models");
  EXPECT_EQ(probe_url(provider::openai, "https://api.openai.com/v1/chat/completions"), "https://api.openai.com/v1/models");
  EXPECT_EQ(probe_url(provider::anthropic, "https://api.anthropic.com"), "https://api.anthropic.com/v1/models");
  EXPECT_EQ(probe_url(provider::anthropic, "https://api.anthropic.com/"), "https://api.anthropic.com/v1/models");
  EXPECT_EQ(probe_url(provider::anthropic, "https://gateway.example/v1"), "https://gateway.example/v1/models");
  EXPECT_EQ(probe_url(provider::anthropic, "https://api.anthropic.com/v1/messages"), "https://api.anthropic.com/v1/models");
}

TEST_F(Health, TheAnthropicProbeAsksV1ModelsWithXApiKeyAndVersion) {
  const auto s = server(200, anthropic_models_body);
  const std::string key = "sk-ant-test-123";
  const covenant::health_check c =
      engine_check({.provider = covenant::provider::anthropic, .base_url = root_of(*s), .api_key = key});
  EXPECT_EQ(c.name, "endpoint");
  EXPECT_TRUE(c.ok) << c.detail;
  EXPECT_THAT(c.detail, StartsWith("HTTP 200 in "));
  ASSERT_EQ(s->requests(), 1u);
  const covenant_test::received_request req = s->request(0);
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.target, "/v1/models");
  EXPECT_EQ(req.headers.at("x-api-key"), key);
  EXPECT_EQ(req.headers.at("anthropic-version"), "2023-06-01");
  EXPECT_EQ(req.headers.count("authorization"), 0u);
  EXPECT_THAT(req.headers.at("user-agent"), StartsWith("covenant/"));
  EXPECT_TRUE(req.body.empty());

  // A root that already ends with /v1 (an OpenAI-style root), and the engine's own options: a
  // version and an extra header of the application's.
  const covenant::health_check d = engine_check({.provider = covenant::provider::anthropic,
                                                 .base_url = s->base_url() + "/",
                                                 .api_key = key,
                                                 .anthropic_version = "2024-01-01",
                                                 .headers = {{"anthropic-beta", "test-beta"}}});
  EXPECT_TRUE(d.ok) << d.detail;
  ASSERT_EQ(s->requests(), 2u);
  const covenant_test::received_request again = s->request(1);
  EXPECT_EQ(again.target, "/v1/models");
  EXPECT_EQ(again.headers.at("anthropic-version"), "2024-01-01");
  EXPECT_EQ(again.headers.at("anthropic-beta"), "test-beta");
  EXPECT_EQ(again.headers.count("authorization"), 0u);
}

TEST_F(Health, TheOpenAiProbeThroughEngineOptionsAsksModelsWithBearer) {
  const auto s = server(200, models_body);
  const covenant::health_check c = engine_check({.base_url = s->base_url(),
                                                 .api_key = "sk-openai-1",
                                                 .headers = {{"OpenAI-Organization", "org-7"}},
                                                 .user_agent = "probe-test/1"});
  EXPECT_TRUE(c.ok) << c.detail;
  ASSERT_EQ(s->requests(), 1u);
  const covenant_test::received_request req = s->request(0);
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.target, "/v1/models");
  EXPECT_EQ(req.headers.at("authorization"), "Bearer sk-openai-1");
  EXPECT_EQ(req.headers.at("openai-organization"), "org-7");
  EXPECT_EQ(req.headers.at("user-agent"), "probe-test/1");
  EXPECT_EQ(req.headers.count("x-api-key"), 0u);
  EXPECT_EQ(req.headers.count("anthropic-version"), 0u);
}

TEST_F(Health, A401FromEitherProviderIsARefusedKeyNeverPrinted) {
  const std::string key = "sk-secret-key-0042";
  const auto anthropic =
      server(401, covenant_test::anthropic_error("authentication_error", "invalid x-api-key " + key));
  const covenant::health_check a =
      engine_check({.provider = covenant::provider::anthropic, .base_url = root_of(*anthropic), .api_key = key});
  EXPECT_FALSE(a.ok);
  EXPECT_THAT(a.detail, AllOf(StartsWith("HTTP 401 in "), HasSubstr("the server answers but refused the API key"),
                              HasSubstr("the server said: invalid x-api-key [redacted]"), Not(HasSubstr(key))));

  const auto openai = server(401, R"({"error": {"message": "Incorrect API key provided: )" + key + R"("}})");
  const covenant::health_check o = engine_check({.base_url = openai->base_url(), .api_key = key});
  EXPECT_FALSE(o.ok);
  EXPECT_THAT(o.detail, AllOf(StartsWith("HTTP 401 in "), HasSubstr("the server answers but refused the API key"),
                              HasSubstr("Incorrect API key provided: [redacted]"), Not(HasSubstr(key))));

  // A key the application sends in its own header is a key, and as secret.
  const auto own = server(403, "denied for sk-own-header-key");
  const covenant::health_check h = engine_check({.provider = covenant::provider::anthropic,
                                                 .base_url = root_of(*own),
                                                 .headers = {{"X-Api-Key", "sk-own-header-key"}}});
  EXPECT_FALSE(h.ok);
  EXPECT_THAT(h.detail, AllOf(HasSubstr("refused the API key"), Not(HasSubstr("sk-own-header-key"))));
  ASSERT_EQ(own->requests(), 1u);
  EXPECT_EQ(own->request(0).headers.at("x-api-key"), "sk-own-header-key");
}

TEST_F(Health, AHeldRequestTimesOutByTheTimeoutForEitherProvider) {
  covenant_test::loopback_server s([](const covenant_test::received_request&, std::size_t) {
    covenant_test::response_plan p;
    p.hang = true;
    return p;
  });
  for (const covenant::provider p : {covenant::provider::anthropic, covenant::provider::openai}) {
    const auto start = std::chrono::steady_clock::now();
    // The engine's own request timeout is far longer: the check's timeout bounds the probe.
    const covenant::health_check c =
        engine_check({.provider = p, .base_url = s.base_url(), .request_timeout = 60'000ms}, 300ms);
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_FALSE(c.ok);
    EXPECT_EQ(c.detail, "timed out after 300 ms waiting for GET " + s.base_url() + "/models") << to_string(p);
    EXPECT_GE(c.took, 250ms);
    EXPECT_LT(took, 2s);
  }
  EXPECT_TRUE(s.wait_for_requests(2, 2s));
}

TEST_F(Health, AnExistingEngineIsProbedOnItsOwnConnectionsAndStillCallsAfter) {
  covenant_test::loopback_server s([](const covenant_test::received_request& req, std::size_t) {
    covenant_test::response_plan p;
    p.body = req.method == "GET" ? models_body : covenant_test::openai_completion("hello");
    return p;
  });
  covenant::http_engine engine({.base_url = s.base_url(), .api_key = "sk-engine", .model = "m1"});
  covenant::chat_request request;
  request.messages = {{covenant::role::user, "hi"}};
  EXPECT_EQ(engine.complete(request).text, "hello");
  covenant::health_options o;
  o.engine = &engine;
  o.endpoint = "http://127.0.0.1:1/v1";  // the engine comes first
  const covenant::health_report r = covenant::check_health(o);
  ASSERT_EQ(r.checks.size(), 1u);
  EXPECT_TRUE(r.checks[0].ok) << r.checks[0].detail;
  // The probe's handle does not go back to the pool: the next call is a POST of its own.
  EXPECT_EQ(engine.complete(request).text, "hello");
  ASSERT_EQ(s.requests(), 3u);
  EXPECT_EQ(s.request(0).method, "POST");
  EXPECT_EQ(s.request(1).method, "GET");
  EXPECT_EQ(s.request(1).target, "/v1/models");
  EXPECT_EQ(s.request(1).headers.at("authorization"), "Bearer sk-engine");
  EXPECT_EQ(s.request(1).on_connection, 1u);  // the engine's kept-alive connection
  EXPECT_EQ(s.request(2).method, "POST");
  EXPECT_EQ(s.request(2).target, "/v1/chat/completions");
  EXPECT_THAT(s.request(2).body, HasSubstr(R"("model":"m1")"));
  EXPECT_EQ(s.request(2).on_connection, 2u);
  EXPECT_EQ(s.connections(), 1u);
}

TEST_F(Health, TheProbesResultCarriesStatusLatencyAndTheServersMessage) {
  covenant_test::loopback_server s([](const covenant_test::received_request&, std::size_t) {
    covenant_test::response_plan p;
    p.status = 503;
    p.delay = 50ms;
    p.body = R"({"error": {"message": "overloaded, key sk-probe-9"}})";
    return p;
  });
  const covenant::http_engine engine({.base_url = s.base_url() + "?token=abc", .api_key = "sk-probe-9"});
  const covenant::probe_result r = engine.probe(2s);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.status, 503);
  EXPECT_FALSE(r.timed_out);
  EXPECT_GE(r.latency, 50ms);
  EXPECT_EQ(r.message, "overloaded, key [redacted]");
  EXPECT_EQ(r.url, s.base_url());  // no query
  EXPECT_EQ(s.requests(), 1u);     // no retry of a 503

  const covenant::probe_result none = engine.probe(0ms);
  EXPECT_FALSE(none.ok);
  EXPECT_THAT(none.message, HasSubstr("timeout must be positive"));
  EXPECT_EQ(s.requests(), 1u);
}

TEST_F(Health, AProbeOnTheIoLoopsThreadFailsInsteadOfBlockingIt) {
  const covenant::http_engine engine({.base_url = "http://127.0.0.1:1/v1"});
  std::promise<covenant::probe_result> done;
  covenant::runtime::shared().post_io([&] { done.set_value(engine.probe(1s)); });
  auto answer = done.get_future();
  ASSERT_EQ(answer.wait_for(5s), std::future_status::ready);
  const covenant::probe_result r = answer.get();
  EXPECT_FALSE(r.ok);
  EXPECT_THAT(r.message, HasSubstr("I/O loop's thread"));
}

TEST_F(Health, EngineOptionsTheEngineRefusesAreFailedChecks) {
  EXPECT_THAT(engine_check({.base_url = "http://127.0.0.1:1/v1", .ca_file = (dir_ / "nope.pem").string()}).detail,
              AllOf(StartsWith("the engine's options are invalid: "), HasSubstr("ca_file")));
  EXPECT_THAT(engine_check({.base_url = "http://127.0.0.1:1/v1", .retry = {.tries = -1}}).detail,
              HasSubstr("retry.tries must be >= 0"));
  EXPECT_THAT(engine_check({.provider = covenant::provider::anthropic, .base_url = "http://127.0.0.1:1",
                            .api_key = "sk-ant-1\nX: y"})
                  .detail,
              AllOf(HasSubstr("line break"), Not(HasSubstr("sk-ant-1"))));
  EXPECT_THAT(engine_check({.provider = covenant::provider::anthropic, .base_url = ""}).detail, HasSubstr("no URL given"));
  EXPECT_THAT(engine_check({.provider = covenant::provider::anthropic, .base_url = "ftp://127.0.0.1"}).detail,
              HasSubstr("unsupported scheme 'ftp'"));
  EXPECT_THAT(engine_check({.provider = covenant::provider::anthropic, .base_url = "http://[::1"}).detail,
              AllOf(StartsWith("invalid URL: "), HasSubstr("https://api.anthropic.com")));
}

// ---- the report --------------------------------------------------------------------------------------

TEST_F(Health, ToJsonParsesAndHasTheFields) {
  const auto s = server(200, models_body);
  covenant::health_options o;
  o.schema_files = {write("ticket.baml", good_baml), write("answer.baml", broken_baml)};
  o.endpoint = s->base_url();
  const covenant::health_report r = covenant::check_health(o);
  const json::value v = json::parse(r.to_json());
  EXPECT_EQ(v.at("healthy").as_bool(), false);
  const json::array& checks = v.at("checks").as_array();
  ASSERT_EQ(checks.size(), 3u);
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const json::object& c = checks[i].as_object();
    EXPECT_EQ(c.size(), 4u);
    EXPECT_EQ(c.at("name").as_string(), r.checks[i].name);
    EXPECT_EQ(c.at("ok").as_bool(), r.checks[i].ok);
    EXPECT_EQ(c.at("detail").as_string(), r.checks[i].detail);
    EXPECT_EQ(c.at("took_ms").to_number<std::int64_t>(),
              std::chrono::duration_cast<std::chrono::milliseconds>(r.checks[i].took).count());
  }
  EXPECT_EQ(checks[2].at("name").as_string(), "endpoint");
  EXPECT_TRUE(checks[2].at("ok").as_bool());
}

TEST_F(Health, ToJsonIsValidUtf8AndToTextIsPrintable) {
  covenant::health_report r;
  r.checks.push_back({.name = "schema:bad\xff.baml", .ok = false, .detail = "line\nbreak", .took = 3ms});
  const std::string j = r.to_json();
  EXPECT_EQ(json::parse(j).at("checks").at(0).at("name").as_string(), "schema:bad\xEF\xBF\xBD.baml");
  EXPECT_EQ(r.to_text(), "FAIL  schema:bad\\xff.baml  line\\x0abreak (3 ms)\n");
}

TEST_F(Health, ToTextHasOneAlignedLinePerCheck) {
  covenant::health_report r;
  r.healthy = false;
  r.checks.push_back({.name = "schema:answer.baml", .ok = true, .detail = "3 types loaded", .took = 1ms});
  r.checks.push_back({.name = "endpoint", .ok = false, .detail = "timed out after 2000 ms", .took = 2001ms});
  EXPECT_EQ(r.to_text(),
            "ok    schema:answer.baml  3 types loaded (1 ms)\n"
            "FAIL  endpoint            timed out after 2000 ms (2001 ms)\n");
}

}  // namespace
