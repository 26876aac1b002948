// `covenant run` against the fault-injection server (tests/support/fault_server.hpp): every record
// gets exactly one whole result line, with the outcome its faults lead to (fault_model.hpp), at
// concurrency 1, 8 and 200 in both wire dialects, streamed or not; a run killed with kill -9 in
// the middle of its faults and resumed gives every record exactly once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cli_fixture.hpp"
#include "fault_model.hpp"
#include "fault_server.hpp"

namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using covenant_test::dialect;
using covenant_test::fault;
using covenant_test::fault_client;
using covenant_test::fault_options;
using covenant_test::fault_server;
using covenant_test::run_result;
using ::testing::HasSubstr;

/// The record id a request is about: the record is the input JSON in its first user message.
std::string id_of_key(const std::string& key) {
  static const std::regex id(R"re("id"\s*:\s*"([^"]+)")re");
  std::smatch m;
  return std::regex_search(key, m, id) ? m[1].str() : std::string();
}

/// The good answer for record <id>: {"label": "L<id>"}.
std::string answer_for(const std::string& key) { return R"({"label": "L)" + id_of_key(key) + R"("})"; }

std::string seconds(std::chrono::milliseconds d) { return std::to_string(static_cast<double>(d.count()) / 1000.0); }

class CliFaults : public covenant_test::label_run_fixture {
 protected:
  CliFaults() : label_run_fixture("covenant_fault_test") {}

  /// `covenant run` over `input` with the client's settings, against `server`.
  std::vector<std::string> args(const fault_client& c, const std::string& input, std::size_t concurrency,
                                bool stream = false) const {
    std::vector<std::string> a = {"run",
                                  "--schema",
                                  path("label.baml"),
                                  "--prompt",
                                  "Label the record: L followed by its id.",
                                  "--provider",
                                  std::string(covenant_test::to_string(c.dialect)),
                                  "--concurrency",
                                  std::to_string(concurrency),
                                  "--tries",
                                  std::to_string(c.tries),
                                  "--delay",
                                  seconds(c.remedy_delay),
                                  "--jitter",
                                  "0",
                                  "--retries",
                                  std::to_string(c.transport_tries),
                                  "--retry-delay",
                                  "0.005",
                                  "--retry-max-delay",
                                  seconds(c.transport_max_delay),
                                  "--timeout",
                                  seconds(c.request_timeout),
                                  "--output",
                                  path("out.jsonl"),
                                  "--quiet"};
    if (stream) a.emplace_back("--stream");
    a.push_back(input);
    return a;
  }

  /// Runs the tool to its end, or kills it and fails the test when it has not ended within `limit`
  /// (a hang fails at once instead of waiting for the test runner's timeout).
  run_result run_bounded(std::vector<std::string> a, const std::vector<std::string>& e,
                         std::chrono::seconds limit = std::chrono::seconds(60)) {
    const std::string tag = next_tag();
    const pid_t pid = spawn_tool(std::move(a), tag, e);
    const auto until = std::chrono::steady_clock::now() + limit;
    while (pid > 0 && std::chrono::steady_clock::now() < until) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        run_result r;
        if (WIFEXITED(status)) r.status = WEXITSTATUS(status);
        r.out = read(path(tag + ".out"));
        r.err = read(path(tag + ".err"));
        return r;
      }
      std::this_thread::sleep_for(10ms);
    }
    if (pid > 0) ::kill(pid, SIGKILL);
    ADD_FAILURE() << "HANG: covenant run did not end within " << limit.count() << " s";
    return finish(pid, tag);
  }

  static std::vector<std::string> env(const fault_server& server) {
    return {"COVENANT_BASE_URL=" + server.base_url()};
  }

  /// Every record has exactly one whole line, with the outcome its served faults lead to and a
  /// latency within the bound they imply (twice their time plus `slack`).
  void check_every_record(std::size_t records, const fault_server& server, const fault_client& client,
                          std::chrono::milliseconds slack) {
    const std::string text = read(path("out.jsonl"));
    ASSERT_TRUE(text.empty() || text.back() == '\n') << "a half line at the end";
    std::map<std::string, json::object> lines;
    for (const json::value& v : json_lines(text)) {
      ASSERT_TRUE(v.is_object());
      if (v.as_object().contains("partial")) continue;  // --stream: a partial value before the record's line
      const std::string id(v.at("id").as_string());
      EXPECT_TRUE(lines.emplace(id, v.as_object()).second) << "record " << id << " twice";
    }
    ASSERT_EQ(lines.size(), records) << "every record has its line";
    std::map<std::string, std::vector<fault>> served;
    for (const auto& [key, faults] : server.served()) served[id_of_key(key)] = faults;
    for (const auto& [id, line] : lines) {
      SCOPED_TRACE("record " + id);
      const std::vector<fault>& got = served[id];
      const covenant_test::fault_expectation want = covenant_test::expect_outcome(got, client);
      EXPECT_EQ(got.size(), want.requests) << "requests for faults: " << want.why;
      EXPECT_EQ(line.at("ok").as_bool(), want.ok) << want.why << "\n" << json::serialize(line);
      if (line.at("ok").as_bool()) {
        EXPECT_EQ(std::string(line.at("value").at("label").as_string()), "L" + id);
      } else {
        bool allowed = false;
        for (covenant::stage s : want.stages) allowed |= line.at("failed_stage").as_string() == covenant::to_string(s);
        EXPECT_TRUE(allowed) << json::serialize(line) << " after " << want.why;
        EXPECT_FALSE(line.at("issues").as_array().empty());
      }
      // The record's whole time: its queue time (retry waits) and the rest.
      const auto took = std::chrono::milliseconds(static_cast<long long>(line.at("latency_ms").to_number<double>() +
                                                                         line.at("queue_ms").to_number<double>()));
      EXPECT_LE(took, 2 * want.budget + slack) << want.why;
    }
  }
};

using load_param = std::tuple<dialect, std::size_t /* concurrency */, bool /* stream */>;

class CliFaultLoad : public CliFaults, public ::testing::WithParamInterface<load_param> {};

TEST_P(CliFaultLoad, EveryRecordGetsOneLineWithTheOutcomeOfItsFaults) {
  const auto [d, concurrency, stream] = GetParam();
  fault_client client;
  client.dialect = d;
  client.transport_tries = 2;
  client.tries = 1;
  client.remedy_delay = 10ms;
  client.request_timeout = concurrency >= 100 ? 1500ms : concurrency > 1 ? 600ms : 300ms;
  // The tool's stream idle timeout is the engine's default (60 s): a stalled stream ends with the
  // request timeout, like a held request.
  client.stream_idle_timeout = client.request_timeout;
  fault_options fo;
  fo.seed = 7000 + static_cast<std::uint64_t>(d) * 1000 + concurrency + (stream ? 500 : 0);
  fo.dialect = d;
  fo.answer = answer_for;
  fo.fault_rate = concurrency >= 100 ? 0.3 : 0.5;
  fault_server server(fo);
  const std::size_t n = concurrency >= 100 ? 2 * concurrency : concurrency > 1 ? 6 * concurrency : 24;
  const std::string input = write("in.jsonl", covenant_test::label_records(static_cast<int>(n)));
  const run_result r = run_bounded(args(client, input, concurrency, stream), env(server));
  EXPECT_TRUE(r.status == 0 || r.status == 1) << r.err;
  check_every_record(n, server, client, concurrency >= 100 ? 5s : 2s);
}

INSTANTIATE_TEST_SUITE_P(Load, CliFaultLoad,
                         ::testing::Values(load_param{dialect::openai, 1, false}, load_param{dialect::openai, 8, false},
                                           load_param{dialect::openai, 200, false},
                                           load_param{dialect::anthropic, 1, false},
                                           load_param{dialect::anthropic, 8, false},
                                           load_param{dialect::anthropic, 200, false},
                                           load_param{dialect::openai, 1, true}, load_param{dialect::anthropic, 1, true}),
                         [](const ::testing::TestParamInfo<load_param>& p) {
                           return std::string(covenant_test::to_string(std::get<0>(p.param))) + "_c" +
                                  std::to_string(std::get<1>(p.param)) + (std::get<2>(p.param) ? "_stream" : "");
                         });

TEST_F(CliFaults, A429WithRetryAfterOnEachRecordsFirstRequestEndsEveryRecord) {
  // Each record's first request is answered 429 with Retry-After: 0.2, then well; one record in
  // flight, nothing else to wake the loop.
  fault_options fo;
  fo.answer = answer_for;
  fo.script = {fault::rate_limited};
  fo.retry_after = "0.2";
  fault_server server(fo);
  const std::string input = write("in.jsonl", covenant_test::label_records(10));
  const run_result r = run_bounded({"run", "--schema", path("label.baml"), "--prompt", "Label.", "--concurrency", "1",
                                 "--tries", "1", "--delay", "0", "--output", path("out.jsonl"), "--quiet", input},
                                env(server));
  EXPECT_EQ(r.status, 0) << r.err;
  const auto lines = json_lines(read(path("out.jsonl")));
  ASSERT_EQ(lines.size(), 10u);
  for (const auto& line : lines) EXPECT_EQ(line.at("ok"), true) << json::serialize(line);
  EXPECT_EQ(server.requests(), 20u);
}

TEST_F(CliFaults, AnExchangeThatTimesOutIsRetriedAndTheRecordEnds) {
  fault_options fo;
  fo.answer = answer_for;
  fo.script = {fault::hold};
  fault_server server(fo);
  const std::string input = write("in.jsonl", covenant_test::label_records(3));
  const run_result r = run_bounded({"run", "--schema", path("label.baml"), "--prompt", "Label.", "--concurrency", "1",
                                 "--timeout", "0.3", "--output", path("out.jsonl"), "--quiet", input},
                                env(server));
  EXPECT_EQ(r.status, 0) << r.err;
  const auto lines = json_lines(read(path("out.jsonl")));
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& line : lines) EXPECT_EQ(line.at("ok"), true) << json::serialize(line);
  EXPECT_EQ(server.requests(), 6u);
}

TEST_F(CliFaults, ResumeAfterKillNineInTheMiddleOfFaultsGivesEveryRecordOnce) {
  fault_client client;
  client.transport_tries = 2;
  client.tries = 1;
  client.request_timeout = 400ms;
  fault_options fo;
  fo.seed = 99;
  fo.answer = answer_for;
  fo.fault_rate = 0.4;
  fault_server server(fo);
  constexpr int total = 120;
  const std::string input = write("in.jsonl", covenant_test::label_records(total));
  const std::vector<std::string> a = args(client, input, 8);
  const std::string first = next_tag();
  const pid_t pid = spawn_tool(a, first, env(server));
  for (int i = 0; i < 1000; ++i) {
    if (json_lines(read(path("out.jsonl"))).size() >= 30) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  (void)finish(pid, first);
  const std::size_t before = json_lines(read(path("out.jsonl"))).size();
  ASSERT_GE(before, 30u);
  ASSERT_LT(before, static_cast<std::size_t>(total));

  std::vector<std::string> again = a;
  again.insert(again.end() - 1, "--resume");
  const run_result r = run_bounded(again, env(server));
  EXPECT_TRUE(r.status == 0 || r.status == 1) << r.err;
  const std::string text = read(path("out.jsonl"));
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
  std::map<std::string, int> seen;
  for (const json::value& line : json_lines(text)) ++seen[std::string(line.at("id").as_string())];
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(total));
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
}

}  // namespace
