// covenant::check_health: schema files (good, broken, missing, JSON Schema), a registry, and an
// endpoint served on 127.0.0.1 (2xx, a refused key, a hang, a closed port, invalid URLs), and
// the report's JSON and text forms.
#include <covenant/health.hpp>
#include <covenant/registry.hpp>

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
#include <memory>
#include <string>
#include <thread>
#include <vector>

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
    EXPECT_EQ(c.at("took_ms").to_number<std::int64_t>(), r.checks[i].took.count());
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
