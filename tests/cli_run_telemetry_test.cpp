// `covenant run` telemetry against a loopback server on 127.0.0.1: --metrics-file (rewritten
// atomically during the run and at its end), --metrics-port (GET /metrics while the run goes),
// --audit-log (one JSON line per attempt), and their argument errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <covenant/metrics.hpp>

#if __has_include(<httplib.h>)
#include <httplib.h>
#define COVENANT_TEST_HTTPLIB 1
#endif

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_fixture.hpp"
#include "loopback_server.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;
using ::testing::HasSubstr;

using covenant_test::label_baml;
using covenant_test::label_reply;
using covenant_test::record_of;
using covenant_test::run_result;

/// The value of the sample `series` (name and labels, as written) in a text exposition.
std::optional<double> sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(series + " ", 0) != 0) continue;
    return std::strtod(line.c_str() + series.size() + 1, nullptr);
  }
  return std::nullopt;
}

/// Whether `program` is an executable on PATH.
bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
  if (path == nullptr) return false;
  std::istringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    if (::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

class CliRunTelemetry : public covenant_test::cli_fixture {
 protected:
  CliRunTelemetry() : cli_fixture("covenant_run_telemetry_test") {}
  void SetUp() override {
    cli_fixture::SetUp();
    if (IsSkipped()) return;
    write("label.baml", label_baml);
  }

  static std::string records(int n, const std::set<int>& bad = {}) { return covenant_test::label_records(n, bad); }

  /// The tool with COVENANT_BASE_URL pointing at `server`.
  pid_t spawn(const covenant_test::loopback_server& server, std::vector<std::string> args, const std::string& tag) {
    return spawn_tool(std::move(args), tag, {"COVENANT_BASE_URL=" + server.base_url()});
  }

  run_result run(const covenant_test::loopback_server& server, std::vector<std::string> args) {
    const std::string tag = next_tag();
    return finish(spawn(server, std::move(args), tag), tag);
  }

  /// The files of the test's directory whose names start with `prefix`.
  std::vector<std::string> files_starting(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) == 0) out.push_back(name);
    }
    return out;
  }

};

TEST_F(CliRunTelemetry, MetricsFileCountsEveryRecordAndIsValidExposition) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", records(7, {2}));
  const std::string metrics = path("covenant.prom");
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--tries", "1", "--delay",
                              "0", "--metrics-file", metrics, "--quiet", input});
  EXPECT_EQ(r.status, 1) << r.err;  // record 2 failed
  EXPECT_EQ(json_lines(r.out).size(), 7u);
  const std::string text = read(metrics);
  EXPECT_THAT(text, HasSubstr("covenant_calls_total{contract=\"Label\"} 7\n")) << text;
  EXPECT_EQ(sample(text, "covenant_model_calls_total{contract=\"Label\"}"), 8.0) << text;  // record 2 asked twice
  EXPECT_THAT(files_starting("covenant.prom.tmp."), ::testing::IsEmpty());

  if (!on_path("promtool")) {
    std::cout << "[ INFO     ] promtool is not on PATH: `promtool check metrics` skipped\n";
    return;
  }
  const pid_t pid = spawn_program("promtool", {"check", "metrics"}, "promtool", {}, metrics);
  const run_result check = finish(pid, "promtool");
  EXPECT_EQ(check.status, 0) << check.out << check.err;
}

TEST_F(CliRunTelemetry, MetricsFileIsRewrittenDuringTheRun) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 250ms);
  });
  constexpr int total = 6;
  const std::string input = write("in.jsonl", records(total));
  const std::string metrics = path("covenant.prom");
  const pid_t pid = spawn(server,
                          {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--concurrency", "1",
                           "--metrics-file", metrics, "--metrics-interval", "0.05", "--quiet", input},
                          "periodic");
  // A count between the first and the last record, read while the tool still runs.
  std::set<double> seen;
  for (int i = 0; i < 1000; ++i) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      ADD_FAILURE() << "the run ended before the metrics file was seen";
      return;
    }
    if (const auto n = sample(read(metrics), "covenant_calls_total{contract=\"Label\"}")) {
      seen.insert(*n);
      if (*n >= 1 && *n < total) break;
    }
    std::this_thread::sleep_for(20ms);
  }
  const run_result r = finish(pid, "periodic");
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(seen.empty());
  EXPECT_GE(*seen.rbegin(), 1.0);
  EXPECT_LT(*seen.rbegin(), static_cast<double>(total));
  EXPECT_EQ(sample(read(metrics), "covenant_calls_total{contract=\"Label\"}"), static_cast<double>(total));
  EXPECT_THAT(files_starting("covenant.prom.tmp."), ::testing::IsEmpty());
}

TEST_F(CliRunTelemetry, MetricsFileIsWrittenWhenTheRunIsInterrupted) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 200ms);
  });
  const std::string input = write("in.jsonl", records(40));
  const std::string metrics = path("covenant.prom");
  const pid_t pid = spawn(server,
                          {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--concurrency", "1",
                           "--metrics-file", metrics, "--metrics-interval", "3600", "--quiet", input},
                          "interrupted");
  ASSERT_TRUE(server.wait_for_requests(3, 20s));
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  const run_result r = finish(pid, "interrupted");
  EXPECT_EQ(r.status, 1) << r.err;
  // The only periodic write is an hour away: the figures are the final ones, written at the end.
  const auto calls = sample(read(metrics), "covenant_calls_total{contract=\"Label\"}");
  ASSERT_TRUE(calls.has_value()) << read(metrics);
  EXPECT_GE(*calls, 2.0);
  EXPECT_LT(*calls, 40.0);
  EXPECT_THAT(files_starting("covenant.prom.tmp."), ::testing::IsEmpty());
}

TEST_F(CliRunTelemetry, MetricsPortServesMetricsDuringTheRun) {
#ifndef COVENANT_TEST_HTTPLIB
  GTEST_SKIP() << "cpp-httplib is not available";
#else
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 300ms);
  });
  constexpr int total = 8;
  const std::string input = write("in.jsonl", records(total));
  const pid_t pid = spawn(server,
                          {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--concurrency", "1",
                           "--metrics-port", "0", "--quiet", input},
                          "served");
  // The chosen port, from standard error.
  int port = 0;
  const std::regex address(R"(covenant run: metrics at http://127\.0\.0\.1:([0-9]+)/metrics)");
  for (int i = 0; i < 1000 && port == 0; ++i) {
    const std::string err = read(path("served.err"));
    if (err.find("not available in this build") != std::string::npos) {
      finish(pid, "served");
      GTEST_SKIP() << "the covenant tool is built without cpp-httplib";
    }
    std::smatch m;
    if (std::regex_search(err, m, address)) port = std::stoi(m[1].str());
    else std::this_thread::sleep_for(10ms);
  }
  ASSERT_GT(port, 0) << read(path("served.err"));
  // After the first answer, while later records are still being asked for.
  ASSERT_TRUE(server.wait_for_requests(2, 20s));

  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5);
  client.set_read_timeout(5);
  const auto res = client.Get("/metrics");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), covenant::metrics::content_type);
  EXPECT_TRUE(res->body.find("covenant_calls_total") != std::string::npos ||
              res->body.find("covenant_model_calls_total") != std::string::npos)
      << res->body;
  EXPECT_THAT(res->body, HasSubstr("covenant_model_calls_total{contract=\"Label\"}"));
  const auto other = client.Get("/other");
  ASSERT_TRUE(other) << httplib::to_string(other.error());
  EXPECT_EQ(other->status, 404);
  // The answers were given while the run was going.
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the run had already ended";

  const run_result r = finish(pid, "served");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json_lines(r.out).size(), static_cast<std::size_t>(total));
  // The server stopped with the run.
  httplib::Client after("127.0.0.1", port);
  after.set_connection_timeout(1);
  EXPECT_FALSE(after.Get("/metrics"));
#endif
}

TEST_F(CliRunTelemetry, MetricsPortInUseExitsTwoBeforeAnyModelCall) {
#ifndef COVENANT_TEST_HTTPLIB
  GTEST_SKIP() << "cpp-httplib is not available";
#else
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  httplib::Server taken;
  const int port = taken.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  const std::string input = write("in.jsonl", records(2));
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--metrics-port",
                              std::to_string(port), input});
  if (r.err.find("not available in this build") != std::string::npos) GTEST_SKIP() << "built without cpp-httplib";
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--metrics-port: cannot listen on 127.0.0.1:" + std::to_string(port)));
  EXPECT_EQ(server.requests(), 0u);
  EXPECT_EQ(r.out, "");
#endif
}

TEST_F(CliRunTelemetry, AuditLogHasOneJsonLinePerAttempt) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", records(4, {1}));
  const std::string audit = path("audit/nested");  // created by the tool
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--tries", "1", "--delay",
                              "0", "--audit-log", audit, "--quiet", input});
  EXPECT_EQ(r.status, 1) << r.err;
  ASSERT_TRUE(fs::is_directory(audit));
  std::vector<json::value> lines;
  for (const auto& e : fs::directory_iterator(audit)) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(std::regex_match(name, std::regex(R"(audit_\d{4}-\d{2}-\d{2}\.jsonl)"))) << name;
    for (auto& v : json_lines(read(e.path().string()))) lines.push_back(std::move(v));
  }
  // Three records accepted at once, record 1 rejected then failed: five attempts.
  ASSERT_EQ(lines.size(), 5u);
  std::map<std::string, int> results;
  std::set<std::string> query_ids;
  for (const json::value& line : lines) {
    ASSERT_TRUE(line.is_object());
    const json::object& o = line.as_object();
    ASSERT_TRUE(o.contains("query_id") && o.contains("contract") && o.contains("attempt") && o.contains("result"))
        << json::serialize(line);
    EXPECT_EQ(o.at("contract"), "Label");
    EXPECT_TRUE(o.at("attempt").is_int64() || o.at("attempt").is_uint64());
    EXPECT_FALSE(o.contains("reply"));  // only with --audit-include-reply
    ++results[std::string(o.at("result").as_string())];
    query_ids.insert(std::string(o.at("query_id").as_string()));
  }
  EXPECT_EQ(results["accepted"], 3);
  EXPECT_EQ(results["rejected"], 1);
  EXPECT_EQ(results["failed"], 1);
  EXPECT_EQ(query_ids.size(), 4u);  // one per record

  // --audit-include-reply: the raw reply in each line.
  const std::string with_reply = path("audit-replies");
  const auto r2 = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--audit-log", with_reply,
                               "--audit-include-reply", "--audit-retention-days", "7", "--quiet",
                               write("one.jsonl", records(1))});
  EXPECT_EQ(r2.status, 0) << r2.err;
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(with_reply)) {
    for (const auto& v : json_lines(read(e.path().string()))) {
      ++n;
      ASSERT_TRUE(v.as_object().contains("reply")) << json::serialize(v);
      EXPECT_THAT(std::string(v.at("reply").as_string()), HasSubstr("L0"));
    }
  }
  EXPECT_EQ(n, 1u);
}

TEST_F(CliRunTelemetry, AuditLogInAPathThatCannotBeCreatedExitsTwoBeforeAnyModelCall) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", records(2));
  const std::string plain = write("plain", "a regular file\n");
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--audit-log",
                              plain + "/audit", input});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("covenant run: --audit-log: cannot create " + plain + "/audit"));
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(server.requests(), 0u);
}

TEST_F(CliRunTelemetry, BadTelemetryArgumentsExitTwo) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", records(2));
  const std::vector<std::string> base = {"run", "--schema", path("label.baml"), "--prompt", "Label."};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(input);
    return run(server, args);
  };
  const std::string metrics = path("m.prom");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--metrics-file", metrics, "--metrics-interval", "0"}, "--metrics-interval takes a number of seconds"},
      {{"--metrics-file", metrics, "--metrics-interval", "-1"}, "--metrics-interval takes a number of seconds"},
      {{"--metrics-file", metrics, "--metrics-interval", "5s"}, "(got '5s')"},
      {{"--metrics-file", metrics, "--metrics-interval", "nan"}, "(got 'nan')"},
      {{"--metrics-interval", "5"}, "--metrics-interval needs --metrics-file FILE"},
      {{"--metrics-file", ""}, "--metrics-file takes a file name"},
      {{"--metrics-port", "65536"}, "--metrics-port takes a port number from 0 to 65535"},
      {{"--metrics-port", "-1"}, "(got '-1')"},
      {{"--metrics-port", "80x"}, "(got '80x')"},
      {{"--metrics-port", ""}, "--metrics-port takes a port number"},
      {{"--metrics-port", "1.5"}, "(got '1.5')"},
      {{"--audit-log", path("a"), "--audit-retention-days", "x"}, "--audit-retention-days takes a whole number"},
      {{"--audit-log", path("a"), "--audit-retention-days", "3.5"}, "(got '3.5')"},
      {{"--audit-retention-days", "3"}, "--audit-retention-days needs --audit-log DIR"},
      {{"--audit-include-reply"}, "--audit-include-reply needs --audit-log DIR"},
      {{"--metrics-file", path("missing/m.prom")}, "--metrics-file: cannot write"},
  };
  for (const auto& [extra, message] : cases) {
    const auto r = with(extra);
    EXPECT_EQ(r.status, 2) << ::testing::PrintToString(extra);
    EXPECT_THAT(r.err, HasSubstr(message)) << ::testing::PrintToString(extra);
    EXPECT_EQ(r.out, "");
  }
  // The file that cannot be written is reported once, naming it.
  const auto missing = with({"--metrics-file", path("missing/m.prom")});
  EXPECT_THAT(missing.err, ::testing::StartsWith("covenant run: --metrics-file: cannot write '" +
                                                 path("missing/m.prom") + ".tmp."));
  EXPECT_EQ(missing.err.find("cannot write"), missing.err.rfind("cannot write")) << missing.err;
  EXPECT_EQ(server.requests(), 0u);
  EXPECT_FALSE(fs::exists(path("a")));
  EXPECT_FALSE(fs::exists(metrics));
}

}  // namespace
