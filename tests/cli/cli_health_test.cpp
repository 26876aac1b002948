// `covenant health`, run as the built binary: exit statuses (0 healthy, 1 unhealthy, 2 usage),
// the text and --json reports, --endpoint with and without URL (COVENANT_BASE_URL,
// COVENANT_API_KEY, COVENANT_PROVIDER and COVENANT_CA_FILE from the environment) against a
// loopback server speaking either provider, --timeout, and help.
#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "loopback_server.hpp"


namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

using covenant_test::run_result;

const char* good_baml = R"(class Ticket {
  title string
  tags string[]
}
)";

const char* broken_baml = R"(class Answer {
  source Sourc
}
)";

covenant_test::response_plan answer(int status, std::string body) {
  covenant_test::response_plan p;
  p.status = status;
  p.body = std::move(body);
  return p;
}

class CliHealth : public covenant_test::cli_fixture {
 protected:
  CliHealth() : cli_fixture("covenant_cli_health_test") {}
  void SetUp() override {
    cli_fixture::SetUp();
    if (IsSkipped()) return;
    write("good.baml", good_baml);
    write("broken.baml", broken_baml);
  }

  [[nodiscard]] std::string file(const std::string& name) const { return path(name); }

  /// Runs the tool with `args`; the environment is this process's without COVENANT_* and API
  /// keys, plus `env`.
  run_result run(std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> entries;
    for (const auto& [name, value] : env) entries.push_back(name + "=" + value);
    return run_tool(std::move(args), entries);
  }
};

TEST_F(CliHealth, GoodSchemasExitZero) {
  const auto r = run({"health", "--schema", file("good.baml"), "--schema=" + file("good.baml")});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  const std::string line = "ok    schema:" + file("good.baml") + "  1 type loaded (";
  ASSERT_THAT(r.out, StartsWith(line));
  EXPECT_EQ(r.out.find(line, line.size()), r.out.find('\n') + 1);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2);
  EXPECT_THAT(r.err, IsEmpty());
}

TEST_F(CliHealth, ABrokenSchemaExitsOneWithTheError) {
  const auto r = run({"health", "--schema", file("good.baml"), "--schema", file("broken.baml")});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("ok    schema:" + file("good.baml")));
  EXPECT_THAT(r.out, HasSubstr("FAIL  schema:" + file("broken.baml") + "  2:10: unknown type 'Sourc' [unknown_type]"));
  const auto missing = run({"health", "--schema", file("nope.baml")});
  EXPECT_EQ(missing.status, 1);
  EXPECT_THAT(missing.out, HasSubstr("no such file"));
}

TEST_F(CliHealth, JsonReport) {
  const auto r = run({"health", "--schema", file("good.baml"), "--schema", file("broken.baml"), "--json"});
  EXPECT_EQ(r.status, 1);
  const json::value v = json::parse(r.out);
  EXPECT_FALSE(v.at("healthy").as_bool());
  const json::array& checks = v.at("checks").as_array();
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_EQ(checks[0].at("name").as_string(), "schema:" + file("good.baml"));
  EXPECT_TRUE(checks[0].at("ok").as_bool());
  EXPECT_FALSE(checks[1].at("ok").as_bool());
  EXPECT_THAT(std::string(checks[1].at("detail").as_string()), HasSubstr("unknown type 'Sourc'"));
  EXPECT_TRUE(checks[1].at("took_ms").is_int64());
  EXPECT_EQ(r.out.back(), '\n');
}

TEST_F(CliHealth, EndpointWithUrlAndKeyFromTheEnvironment) {
  covenant_test::loopback_server server(
      [](const covenant_test::received_request&, std::size_t) { return answer(200, R"({"data": []})"); });
  const auto r = run({"health", "--endpoint", server.base_url(), "--schema", file("good.baml")},
                     {{"COVENANT_API_KEY", "sk-cli-key"}});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("ok    endpoint"));
  EXPECT_THAT(r.out, HasSubstr("HTTP 200 in "));
  ASSERT_EQ(server.requests(), 1u);
  EXPECT_EQ(server.request(0).target, "/v1/models");
  EXPECT_EQ(server.request(0).headers.at("authorization"), "Bearer sk-cli-key");
}

TEST_F(CliHealth, EndpointWithoutUrlTakesCovenantBaseUrl) {
  covenant_test::loopback_server server(
      [](const covenant_test::received_request&, std::size_t) { return answer(200, R"({"data": []})"); });
  const auto r = run({"health", "--endpoint", "--json"}, {{"COVENANT_BASE_URL", server.base_url()}});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  const json::value v = json::parse(r.out);
  EXPECT_TRUE(v.at("healthy").as_bool());
  EXPECT_EQ(v.at("checks").at(0).at("name").as_string(), "endpoint");
  EXPECT_EQ(server.requests(), 1u);

  const auto unset = run({"health", "--endpoint"});
  EXPECT_EQ(unset.status, 2);
  EXPECT_THAT(unset.err, AllOf(HasSubstr("COVENANT_BASE_URL is not set"), HasSubstr("--endpoint URL"),
                               HasSubstr("usage: covenant health")));
  EXPECT_THAT(unset.out, IsEmpty());
}

TEST_F(CliHealth, ARefusedKeyExitsOneAndIsNeverPrinted) {
  covenant_test::loopback_server server([](const covenant_test::received_request&, std::size_t) {
    return answer(401, R"({"error": {"message": "Incorrect API key provided: sk-very-secret"}})");
  });
  const auto r = run({"health", "--endpoint=" + server.base_url()}, {{"COVENANT_API_KEY", "sk-very-secret"}});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, AllOf(HasSubstr("FAIL  endpoint  HTTP 401"), HasSubstr("refused the API key")));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("sk-very-secret")));
}

TEST_F(CliHealth, AHangingEndpointTimesOutAfterTimeout) {
  covenant_test::loopback_server server([](const covenant_test::received_request&, std::size_t) {
    covenant_test::response_plan p;
    p.hang = true;
    return p;
  });
  const auto start = std::chrono::steady_clock::now();
  const auto r = run({"health", "--endpoint", server.base_url(), "--timeout", "300"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("FAIL  endpoint  timed out after 300 ms"));
}

TEST_F(CliHealth, AnthropicProviderChecksTheAnthropicModelList) {
  covenant_test::loopback_server server([](const covenant_test::received_request&, std::size_t) {
    return answer(200, R"({"data": [{"type": "model", "id": "claude-test"}], "has_more": false})");
  });
  const std::string root = "http://127.0.0.1:" + std::to_string(server.port());
  const auto r = run({"health", "--endpoint", root},
                     {{"COVENANT_PROVIDER", "anthropic"}, {"COVENANT_API_KEY", "sk-ant-cli-key"}});
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("ok    endpoint  HTTP 200 in "));
  ASSERT_EQ(server.requests(), 1u);
  const covenant_test::received_request req = server.request(0);
  EXPECT_EQ(req.method, "GET");
  EXPECT_EQ(req.target, "/v1/models");
  EXPECT_EQ(req.headers.at("x-api-key"), "sk-ant-cli-key");
  EXPECT_EQ(req.headers.at("anthropic-version"), "2023-06-01");
  EXPECT_EQ(req.headers.count("authorization"), 0u);

  // The URL from COVENANT_BASE_URL, as `covenant run` takes it.
  const auto from_env = run({"health", "--endpoint", "--json"}, {{"COVENANT_PROVIDER", "anthropic"},
                                                                 {"COVENANT_BASE_URL", root + "/"},
                                                                 {"COVENANT_API_KEY", "sk-ant-cli-key"}});
  EXPECT_EQ(from_env.status, 0) << from_env.out << from_env.err;
  EXPECT_TRUE(json::parse(from_env.out).at("healthy").as_bool());
  ASSERT_EQ(server.requests(), 2u);
  EXPECT_EQ(server.request(1).target, "/v1/models");
  EXPECT_EQ(server.request(1).headers.at("x-api-key"), "sk-ant-cli-key");
}

TEST_F(CliHealth, AnthropicRefusedKeyExitsOneAndIsNeverPrinted) {
  covenant_test::loopback_server server([](const covenant_test::received_request&, std::size_t) {
    return answer(401, R"({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key sk-ant-very-secret"}})");
  });
  const auto r = run({"health", "--endpoint", server.base_url()},
                     {{"COVENANT_PROVIDER", "anthropic"}, {"COVENANT_API_KEY", "sk-ant-very-secret"}});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, AllOf(HasSubstr("FAIL  endpoint  HTTP 401"), HasSubstr("refused the API key"),
                           HasSubstr("invalid x-api-key [redacted]")));
  EXPECT_THAT(r.out + r.err, Not(HasSubstr("sk-ant-very-secret")));
  ASSERT_EQ(server.requests(), 1u);
  EXPECT_EQ(server.request(0).target, "/v1/models");
}

TEST_F(CliHealth, AnthropicHeldRequestTimesOutAfterTimeout) {
  covenant_test::loopback_server server([](const covenant_test::received_request&, std::size_t) {
    covenant_test::response_plan p;
    p.hang = true;
    return p;
  });
  const auto start = std::chrono::steady_clock::now();
  const auto r = run({"health", "--endpoint", server.base_url(), "--timeout", "300"},
                     {{"COVENANT_PROVIDER", "anthropic"}, {"COVENANT_TIMEOUT_S", "60"}});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("FAIL  endpoint  timed out after 300 ms waiting for GET " + server.base_url() + "/models"));
}

TEST_F(CliHealth, TheEnvironmentsCaFileAndProviderAreTheEngines) {
  const auto unreadable = run({"health", "--endpoint", "https://127.0.0.1:1/v1"},
                              {{"COVENANT_CA_FILE", path("missing-ca.pem")}});
  EXPECT_EQ(unreadable.status, 1) << unreadable.out << unreadable.err;
  EXPECT_THAT(unreadable.out, AllOf(HasSubstr("FAIL  endpoint"), HasSubstr("ca_file"), HasSubstr("cannot be read")));
  const auto bad_provider = run({"health", "--endpoint", "http://127.0.0.1:1/v1"}, {{"COVENANT_PROVIDER", "bard"}});
  EXPECT_EQ(bad_provider.status, 2);
  EXPECT_THAT(bad_provider.err, HasSubstr("COVENANT_PROVIDER must be openai or anthropic"));
}

TEST_F(CliHealth, AnInvalidUrlExitsOne) {
  const auto r = run({"health", "--endpoint", "ftp://127.0.0.1/v1"});
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, HasSubstr("unsupported scheme 'ftp'"));
}

TEST_F(CliHealth, UsageErrorsExitTwo) {
  struct bad {
    std::vector<std::string> args;
    const char* message;
  };
  const std::vector<bad> cases = {
      {{"health"}, "nothing to check"},
      {{"health", "--bogus"}, "unknown option '--bogus'"},
      {{"health", "--schema"}, "option '--schema' needs a value"},
      {{"health", "--schema", "--json"}, "option '--schema' needs a value"},
      {{"health", "--schema", file("good.baml"), "extra"}, "unexpected argument 'extra'"},
      {{"health", "--schema", file("good.baml"), "--timeout", "soon"}, "--timeout must be a positive"},
      {{"health", "--schema", file("good.baml"), "--timeout", "0"}, "--timeout must be a positive"},
      {{"health", "--schema", file("good.baml"), "--timeout"}, "option '--timeout' needs a value"},
      {{"health", "--schema", file("good.baml"), "--json=yes"}, "option '--json' takes no value"},
      {{"health", "--endpoint="}, "needs a URL"},
  };
  for (const auto& c : cases) {
    const auto r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.message;
    EXPECT_THAT(r.err, HasSubstr(c.message));
    EXPECT_THAT(r.err, HasSubstr("usage: covenant health"));
    EXPECT_THAT(r.out, IsEmpty()) << c.message;
  }
}

TEST_F(CliHealth, HelpThreeWaysAndInTheCommandList) {
  const auto a = run({"help", "health"});
  const auto b = run({"health", "--help"});
  const auto c = run({"health", "-h"});
  EXPECT_EQ(a.status, 0);
  EXPECT_EQ(b.status, 0);
  EXPECT_EQ(c.status, 0);
  EXPECT_THAT(a.out, StartsWith("usage: covenant health"));
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out, c.out);
  for (const char* word : {"--schema", "--endpoint", "--timeout", "--json", "COVENANT_BASE_URL", "COVENANT_API_KEY",
                           "COVENANT_PROVIDER=anthropic", "GET {URL}/v1/models", "x-api-key", "anthropic-version",
                           "GET {URL}/models", "Authorization: Bearer"})
    EXPECT_THAT(a.out, HasSubstr(word));
  EXPECT_THAT(run({"--help"}).out, HasSubstr("  health    "));
}

}  // namespace
