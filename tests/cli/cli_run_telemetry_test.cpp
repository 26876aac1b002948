// `covenant run` telemetry against a loopback server on 127.0.0.1: --metrics-file (rewritten
// atomically during the run and at its end), --metrics-port (GET /metrics while the run goes),
// --audit-log (one JSON line per attempt), and their argument errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <covenant/telemetry/metrics.hpp>

#if __has_include(<httplib.h>)
#include <httplib.h>
#define COVENANT_TEST_HTTPLIB 1
#endif

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

class CliRunTelemetry : public covenant_test::label_run_fixture {
 protected:
  CliRunTelemetry() : label_run_fixture("covenant_run_telemetry_test") {}

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

  /// Every line of the audit files in `audit_dir`.
  static std::vector<json::value> audit_lines(const std::string& audit_dir) {
    std::vector<json::value> lines;
    for (const auto& e : fs::directory_iterator(audit_dir))
      for (auto& v : json_lines(read(e.path().string()))) lines.push_back(std::move(v));
    return lines;
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

TEST_F(CliRunTelemetry, WaitingForTheRateLimiterIsQueueTimeNotLatencyInResultAndAuditLines) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);  // an instant server
  });
  // --rpm 120: a bucket of two requests that go at once, then one every 0.5 s. The four records
  // are in flight together, so the third waits about 0.5 s for its turn and the fourth 1 s.
  const std::string input = write("in.jsonl", records(4));
  const std::string audit = path("audit");
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--rpm", "120",
                              "--audit-log", audit, "--quiet", input});
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::pair<double, json::object>> by_queue;  // result lines by queue_ms
  for (const json::value& v : json_lines(r.out)) {
    const json::object& o = v.as_object();
    ASSERT_TRUE(o.contains("latency_ms") && o.contains("queue_ms")) << json::serialize(v);
    by_queue.emplace_back(o.at("queue_ms").to_number<double>(), o);
  }
  ASSERT_EQ(by_queue.size(), 4u);
  std::sort(by_queue.begin(), by_queue.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  EXPECT_GE(by_queue[2].first, 400.0);
  EXPECT_GE(by_queue[3].first, 900.0);
  EXPECT_GE(by_queue[2].first - by_queue[1].first, 300.0);  // the burst of two went before the others' turns
  for (std::size_t i = 2; i < 4; ++i)  // the wait is queue time, not latency
    EXPECT_LT(by_queue[i].second.at("latency_ms").to_number<double>(), by_queue[i].first)
        << json::serialize(by_queue[i].second);

  // The audit line of each record's one attempt: the same split.
  const std::vector<json::value> lines = audit_lines(audit);
  ASSERT_EQ(lines.size(), 4u);
  std::map<std::string, json::object> audit_of;
  for (const json::value& v : lines) {
    const json::object& o = v.as_object();
    ASSERT_TRUE(o.contains("latency_ms") && o.contains("queue_ms")) << json::serialize(v);
    audit_of[std::string(o.at("query_id").as_string())] = o;
  }
  for (const auto& [queue, line] : by_queue) {
    const std::string q(line.at("query_id").as_string());
    ASSERT_EQ(audit_of.count(q), 1u) << q;
    EXPECT_NEAR(audit_of.at(q).at("queue_ms").to_number<double>(), queue, 0.01) << q;
    if (queue >= 400.0) {  // the wait is the attempt's queue time, not its latency
      EXPECT_LT(audit_of.at(q).at("latency_ms").to_number<double>(), queue) << q;
    }
  }
}

/// The documented join (docs/telemetry.md): the audit lines of the records that failed.
constexpr const char* failed_records_audit_filter =
    "($r | map(select(.ok == false) | {(.query_id): true}) | add // {}) as $failed | inputs | select($failed[.query_id])";

TEST_F(CliRunTelemetry, ResultLinesJoinTheirAuditLinesByQueryId) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  // A plain id, a plain id whose record fails after two attempts, an id that is no plain name
  // (hashed), and a record without an id (its line number).
  const std::string long_id = "order 7/2024 for Z\xC3\xBCrich, " + std::string(80, 'x');
  const std::string input = write("in.jsonl", R"({"id": "r0", "n": 0})" "\n"
                                              R"({"id": "r1", "n": 1, "bad": true})" "\n"
                                              R"({"id": ")" + long_id + R"(", "n": 2})" "\n"
                                              R"({"n": 3})" "\n");
  const std::string audit = path("audit");
  const std::string results = path("results.jsonl");
  const std::vector<std::string> args = {"run",     "--schema", path("label.baml"), "--prompt", "Label.", "--tries",
                                         "1",       "--delay",  "0",                "--audit-log", audit,  "--output",
                                         results, "--quiet"};
  std::vector<std::string> first = args;
  first.push_back(input);
  const auto r = run(server, first);
  EXPECT_EQ(r.status, 1) << r.err;  // r1 failed

  std::map<std::string, json::object> by_id;  // result lines by the record's id, as text
  for (const json::value& v : json_lines(read(results))) {
    const json::object& o = v.as_object();
    ASSERT_TRUE(o.contains("query_id") && o.at("query_id").is_string()) << json::serialize(v);
    const json::value& id = o.at("id");
    by_id[id.is_string() ? std::string(id.as_string()) : json::serialize(id)] = o;
  }
  ASSERT_EQ(by_id.size(), 4u);
  auto query_id = [&](const std::string& id) { return std::string(by_id.at(id).at("query_id").as_string()); };
  // Derived from the record's id: the id itself when it is a plain name, else a hash of it.
  EXPECT_EQ(query_id("r0"), "r0");
  EXPECT_EQ(query_id("r1"), "r1");
  EXPECT_TRUE(std::regex_match(query_id(long_id), std::regex("#[0-9a-f]{16}"))) << query_id(long_id);
  EXPECT_EQ(query_id("4"), "4");  // no id: the line number

  // Each result line's query_id is the query_id of exactly its record's attempts in the audit log.
  const std::vector<json::value> lines = audit_lines(audit);
  ASSERT_EQ(lines.size(), 5u);  // r1 asked twice
  std::map<std::string, std::vector<json::object>> audit_of;
  for (const json::value& v : lines) audit_of[std::string(v.at("query_id").as_string())].push_back(v.as_object());
  ASSERT_EQ(audit_of.size(), 4u);
  for (const auto& [id, result] : by_id) {
    const std::string q = query_id(id);
    ASSERT_EQ(audit_of.count(q), 1u) << id << " has no audit lines under " << q;
    EXPECT_EQ(audit_of.at(q).size(), result.at("attempts").to_number<std::size_t>()) << id;
  }
  ASSERT_EQ(audit_of.at("r1").size(), 2u);
  EXPECT_EQ(audit_of.at("r1")[0].at("result"), "rejected");
  EXPECT_EQ(audit_of.at("r1")[1].at("result"), "failed");
  EXPECT_EQ(audit_of.at("r0").at(0).at("result"), "accepted");

  // The documented jq one-liner picks the failed record's audit lines, and only those.
  if (on_path("jq")) {
    const pid_t pid = spawn_program("jq", {"-cn", "--slurpfile", "r", results, failed_records_audit_filter,
                                           audit + "/" + fs::directory_iterator(audit)->path().filename().string()},
                                    "jq");
    const run_result jq = finish(pid, "jq");
    ASSERT_EQ(jq.status, 0) << jq.err;
    const std::vector<json::value> picked = json_lines(jq.out);
    ASSERT_EQ(picked.size(), 2u) << jq.out;
    for (const json::value& v : picked) EXPECT_EQ(v.at("query_id"), "r1");
  } else {
    std::cout << "[ INFO     ] jq is not on PATH: the documented join is not run\n";
  }

  // --resume runs a record again under the same query id: its audit lines from both runs join it.
  std::string kept;
  for (const json::value& v : json_lines(read(results)))
    if (v.at("ok").as_bool()) kept += json::serialize(v) + "\n";
  write("results.jsonl", kept);
  std::vector<std::string> again = args;
  again.push_back("--resume");
  again.push_back(input);
  const auto r2 = run(server, again);
  EXPECT_EQ(r2.status, 1) << r2.err;
  const std::vector<json::value> now = json_lines(read(results));
  ASSERT_EQ(now.size(), 4u);
  EXPECT_EQ(now.back().at("id"), "r1");
  EXPECT_EQ(now.back().at("query_id"), "r1");
  std::size_t r1_lines = 0;
  for (const json::value& v : audit_lines(audit)) r1_lines += v.at("query_id") == "r1" ? 1 : 0;
  EXPECT_EQ(r1_lines, 4u);

  // --stream (one record at a time) tags its calls the same way.
  covenant_test::loopback_server streaming([](const covenant_test::received_request&, std::size_t) {
    covenant_test::response_plan p;
    p.content_type = "text/event-stream";
    p.chunks = covenant_test::openai_stream({"{\"label\": \"Ab", "cd\"}"});
    return p;
  });
  const std::string streamed_audit = path("audit-streamed");
  const auto r3 = run(streaming, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--stream", "--audit-log",
                               streamed_audit, "--quiet", write("one.jsonl", covenant_test::label_records(1))});
  EXPECT_EQ(r3.status, 0) << r3.err;
  const std::vector<json::value> streamed = json_lines(r3.out);
  ASSERT_FALSE(streamed.empty());
  EXPECT_EQ(streamed.back().at("query_id"), "r0");
  const std::vector<json::value> streamed_lines = audit_lines(streamed_audit);
  ASSERT_EQ(streamed_lines.size(), 1u);
  EXPECT_EQ(streamed_lines[0].at("query_id"), "r0");
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
