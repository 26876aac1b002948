// `covenant run`: a contract over a JSON Lines file against a loopback server on 127.0.0.1:
// results per record, failures, bad lines, resuming after kill -9, shards, rate limits, streaming.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "anthropic_replies.hpp"
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

class CliRun : public covenant_test::label_run_fixture {
 protected:
  CliRun() : label_run_fixture("covenant_run_test") {}

  /// The tool with COVENANT_BASE_URL pointing at `server` (unless with_base_url_ is off).
  pid_t spawn(const covenant_test::loopback_server& server, std::vector<std::string> args, const std::string& tag) {
    std::vector<std::string> env;
    if (with_base_url_) env.push_back("COVENANT_BASE_URL=" + server.base_url());
    return spawn_tool(std::move(args), tag, env);
  }

  run_result run(const covenant_test::loopback_server& server, std::vector<std::string> args) {
    const std::string tag = next_tag();
    return finish(spawn(server, std::move(args), tag), tag);
  }

  bool with_base_url_ = true;
};

TEST_F(CliRun, OneLinePerRecordWithTheValidatedValue) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", records(6));
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label the record.", "--quiet", input});
  EXPECT_EQ(r.status, 0) << r.err;
  const auto out = json_lines(r.out);
  ASSERT_EQ(out.size(), 6u);
  std::set<std::string> ids;
  for (const auto& line : out) {
    ids.insert(std::string(line.at("id").as_string()));
    EXPECT_EQ(line.at("ok"), true);
    const std::string id(line.at("id").as_string());
    std::string want = "L";
    want.append(id, 1);
    EXPECT_EQ(std::string(line.at("value").at("label").as_string()), want);
    EXPECT_EQ(line.at("attempts"), 1);
    EXPECT_EQ(line.at("usage").at("input_tokens"), 10);
    EXPECT_TRUE(line.as_object().contains("latency_ms"));
  }
  EXPECT_EQ(ids.size(), 6u);
  EXPECT_EQ(r.err, "");  // --quiet
  // The prompt and the input reached the server.
  const auto body = json::parse(server.request(0).body);
  EXPECT_THAT(std::string(body.at("messages").as_array().at(0).at("content").as_string()), HasSubstr("Label the record."));
}

TEST_F(CliRun, FailedRecordsAreReportedAndTheExitStatusIsOne) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", records(5, {1, 3}));
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--tries", "1", "--delay",
                              "0", "--output", path("out.jsonl"), input});
  EXPECT_EQ(r.status, 1);
  const auto out = json_lines(read(path("out.jsonl")));
  ASSERT_EQ(out.size(), 5u);
  int failed = 0;
  for (const auto& line : out) {
    if (line.at("ok") == true) continue;
    ++failed;
    EXPECT_EQ(line.at("failed_stage"), "validate");
    EXPECT_EQ(line.at("attempts"), 2);  // asked again once
    EXPECT_THAT(json::serialize(line.at("issues")), HasSubstr("label"));
    EXPECT_TRUE(line.at("value").is_null());
  }
  EXPECT_EQ(failed, 2);
  EXPECT_THAT(r.err, HasSubstr("5 records (3 ok, 2 failed)"));
  // Standard error is not a terminal and the run took less than 5 s: the summary only.
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("in flight")));
}

TEST_F(CliRun, ABadInputLineIsReportedWithItsNumberAndSkipped) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", R"({"id": "a", "n": 1})" "\n" "not json\n" "[1, 2]\n" R"({"id": "b", "n": 2})" "\n");
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", input});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("in.jsonl:2: skipped: not JSON"));
  EXPECT_THAT(r.err, HasSubstr("in.jsonl:3: skipped: not a JSON object"));
  EXPECT_EQ(json_lines(r.out).size(), 2u);
}

TEST_F(CliRun, ALineThatIsNotUtf8IsReportedWithWhereAndSkipped) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", R"({"id": "a", "n": 1})" "\n"
                                              "{\"id\": \"b\", \"n\": \"caf\xE9\"}\n"       // Latin-1
                                              "{\"id\": \"c\", \"n\": \"\xE2\x82\"}\n"     // cut short
                                              "{\"id\": \"d\", \"n\": \"caf\xC3\xA9\"}\n");  // UTF-8
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", input});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("in.jsonl:2: skipped: not UTF-8 (byte 0xE9 at offset 21 of the line)"));
  EXPECT_THAT(r.err, HasSubstr("in.jsonl:3: skipped: not UTF-8 (byte 0xE2 at offset 18 of the line)"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("in.jsonl:4:")));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("not JSON")));
  std::set<std::string> ids;
  for (const auto& line : json_lines(r.out)) ids.insert(std::string(line.at("id").as_string()));
  EXPECT_EQ(ids, (std::set<std::string>{"a", "d"}));
}

TEST_F(CliRun, UsageAndSchemaErrorsExitTwo) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  EXPECT_EQ(run(server, {"run", "--prompt", "x"}).status, 2);
  EXPECT_EQ(run(server, {"run", "--schema", path("label.baml")}).status, 2);
  EXPECT_EQ(run(server, {"run", "--schema", path("label.baml"), "--prompt", "x", "--resume"}).status, 2);
  EXPECT_EQ(run(server, {"run", "--schema", path("label.baml"), "--prompt", "x", "--shard", "3/2"}).status, 2);
  EXPECT_EQ(run(server, {"run", "--schema", path("label.baml"), "--prompt", "x", "--delay", "soon"}).status, 2);
  EXPECT_EQ(run(server, {"run", "--schema", write("bad.baml", "class {"), "--prompt", "x"}).status, 2);
  EXPECT_EQ(run(server, {"run", "--schema", path("label.baml"), "--prompt", "x", path("missing.jsonl")}).status, 2);
}

TEST_F(CliRun, ModeAndProviderReachTheServer) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    covenant_test::response_plan p;
    if (r.target.find("/messages") != std::string::npos) {
      p.body = covenant_test::anthropic_tool_message("Label", R"({"label": "A"})");
    } else {
      json::object call{{"id", "c"}, {"type", "function"},
                        {"function", json::object{{"name", "Label"}, {"arguments", R"({"label": "T"})"}}}};
      json::object message{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array{call}}};
      p.body = json::serialize(json::object{
          {"choices", json::array{json::object{{"index", 0}, {"message", message}, {"finish_reason", "tool_calls"}}}},
          {"usage", json::object{{"prompt_tokens", 3}, {"completion_tokens", 2}}}});
    }
    return p;
  });
  const std::string input = write("in.jsonl", records(1));
  const auto tools = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--mode", "tools", "--quiet", input});
  EXPECT_EQ(tools.status, 0) << tools.err;
  ASSERT_EQ(json_lines(tools.out).size(), 1u);
  EXPECT_EQ(json_lines(tools.out)[0].at("value").at("label"), "T");
  ASSERT_EQ(server.requests(), 1u);
  const json::value sent = json::parse(server.request(0).body);
  EXPECT_EQ(sent.at("tool_choice").at("function").at("name"), "Label");
  EXPECT_FALSE(sent.as_object().contains("response_format"));

  const auto claude = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--provider", "anthropic",
                                   "--quiet", input});
  EXPECT_EQ(claude.status, 0) << claude.err;
  ASSERT_EQ(json_lines(claude.out).size(), 1u);
  EXPECT_EQ(json_lines(claude.out)[0].at("value").at("label"), "A");
  ASSERT_EQ(server.requests(), 2u);
  EXPECT_EQ(server.request(1).target, "/v1/messages");
  EXPECT_EQ(json::parse(server.request(1).body).at("tool_choice").at("type"), "tool");

  const auto bad_mode = run(server, {"run", "--schema", path("label.baml"), "--prompt", "x", "--mode", "xml", input});
  EXPECT_EQ(bad_mode.status, 2);
  EXPECT_THAT(bad_mode.err, HasSubstr("unknown mode 'xml'"));
  const auto bad_provider = run(server, {"run", "--schema", path("label.baml"), "--prompt", "x", "--provider", "gemini", input});
  EXPECT_EQ(bad_provider.status, 2);
  EXPECT_THAT(bad_provider.err, HasSubstr("unknown provider 'gemini'"));
  EXPECT_EQ(server.requests(), 2u);
}

TEST_F(CliRun, WithoutAServerTheMessageNamesTheSettingAndTheFlag) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  with_base_url_ = false;
  const std::string input = write("in.jsonl", records(2));
  auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "x", input});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("covenant run: COVENANT_BASE_URL is not set"));
  EXPECT_THAT(r.err, HasSubstr("or pass --base-url URL"));
  EXPECT_EQ(r.out, "");
  r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "x", "--base-url", server.base_url(), "--quiet", input});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json_lines(r.out).size(), 2u);
}

TEST_F(CliRun, ResumeAfterKillNineWritesEveryRecordExactlyOnce) {
  std::mutex m;
  std::map<std::string, int> asked;  // record id -> requests for it
  covenant_test::loopback_server server([&](const covenant_test::received_request& r, std::size_t) {
    const json::value rec = record_of(r.body);
    {
      std::lock_guard lock(m);
      ++asked[std::string(rec.at("id").as_string())];
    }
    return label_reply(r, 40ms);
  });
  constexpr int total = 40;
  const std::string input = write("in.jsonl", records(total));
  const std::string output = path("out.jsonl");
  const std::vector<std::string> args = {"run",      "--schema",        path("label.baml"), "--prompt", "Label.",
                                         "--output", output,            "--concurrency",    "2",        "--quiet",
                                         input};
  const pid_t pid = spawn(server, args, "first");
  // Let some records finish, then kill it without warning.
  for (int i = 0; i < 400; ++i) {
    if (json_lines(read(output)).size() >= 8) break;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  waitpid(pid, &status, 0);
  const auto first = json_lines(read(output));
  ASSERT_GE(first.size(), 8u);
  ASSERT_LT(first.size(), static_cast<std::size_t>(total));
  std::set<std::string> finished_first;
  for (const auto& line : first) finished_first.insert(std::string(line.at("id").as_string()));
  std::map<std::string, int> asked_first;
  {
    std::lock_guard lock(m);
    asked_first = asked;
  }

  std::vector<std::string> again = args;
  again.insert(again.end() - 1, "--resume");
  const auto r = run(server, again);
  EXPECT_EQ(r.status, 0) << r.err;
  const auto all = json_lines(read(output));
  std::map<std::string, int> seen;
  for (const auto& line : all) ++seen[std::string(line.at("id").as_string())];
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(total));
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
  // No record finished by the first run was asked for again.
  std::lock_guard lock(m);
  for (const std::string& id : finished_first) EXPECT_EQ(asked[id], asked_first[id]) << id;
}

TEST_F(CliRun, ShardsSplitTheRecordsWithoutOverlap) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", records(30));
  std::set<std::string> ids;
  std::size_t lines = 0;
  for (const char* shard : {"0/3", "1/3", "2/3"}) {
    const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--shard", shard, "--quiet",
                                input});
    EXPECT_EQ(r.status, 0);
    const auto out = json_lines(r.out);
    EXPECT_GT(out.size(), 0u) << shard;
    lines += out.size();
    for (const auto& line : out) ids.insert(std::string(line.at("id").as_string()));
  }
  EXPECT_EQ(lines, 30u);
  EXPECT_EQ(ids.size(), 30u);
}

TEST_F(CliRun, RequestsPerMinuteAreRespectedAtTheServer) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", records(30));
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--rpm", "1200",
                              "--concurrency", "30", "--quiet", input});
  EXPECT_EQ(r.status, 0);
  ASSERT_EQ(server.requests(), 30u);
  // 1200 per minute: 20 at once (one second's worth), then 20 per second.
  const auto first = server.request(0).at;
  const auto last = server.request(29).at;
  EXPECT_GE(last - first, 400ms);  // the last ten waited for the buckets to refill
  std::size_t early = 0;
  for (std::size_t i = 0; i < 30; ++i) early += server.request(i).at - first < 100ms ? 1 : 0;
  EXPECT_LE(early, 23u);  // the burst of 20, and 20 per second for 0.1 s
}

TEST_F(CliRun, StreamPrintsEachChangedPartialThenTheRecord) {
  covenant_test::loopback_server server([](const covenant_test::received_request&, std::size_t) {
    covenant_test::response_plan p;
    p.content_type = "text/event-stream";
    p.chunks = covenant_test::openai_stream({"{\"label\": \"Ab", "cd\"}"});
    p.chunk_delay = 20ms;  // separate reads: separate partials
    return p;
  });
  const std::string input = write("in.jsonl", records(1));
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--stream", "--quiet", input});
  EXPECT_EQ(r.status, 0) << r.err;
  const auto out = json_lines(r.out);
  ASSERT_GE(out.size(), 3u);
  EXPECT_EQ(out[0].at("attempt"), 1);
  EXPECT_TRUE(out[0].as_object().contains("partial"));
  EXPECT_EQ(out[out.size() - 2].at("partial").at("label"), "Abcd");
  EXPECT_EQ(out.back().at("value").at("label"), "Abcd");
}

TEST_F(CliRun, StreamStopsAtAFinishedValueOutsideALiteralUnion) {
  write("review.baml", "class Review {\n  label \"positive\" | \"negative\" | \"neutral\"\n  summary string\n}\n");
  const std::string bad = R"({"label": "furious", "summary": ")" + std::string(1800, 's') + R"("})";
  std::vector<std::string> pieces;
  for (std::size_t at = 0; at < bad.size(); at += 20) pieces.push_back(bad.substr(at, 20));
  const std::vector<std::string> slow = covenant_test::openai_stream(pieces);
  covenant_test::loopback_server server([&](const covenant_test::received_request&, std::size_t i) {
    covenant_test::response_plan p;
    p.content_type = "text/event-stream";
    if (i == 0) {
      p.chunks = slow;
      p.chunk_delay = 10ms;
    } else {
      p.chunks = covenant_test::openai_stream({R"({"label": "negative", "summary": "ok"})"});
    }
    return p;
  });
  const std::string input = write("in.jsonl", records(1));
  const auto r = run(server, {"run", "--schema", path("review.baml"), "--prompt", "Review.", "--stream", "--quiet", input});
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(server.requests(), 2u);
  // The first reply was cut off once "furious" was finished: its connection closed, most of the
  // summary never sent.
  for (int i = 0; i < 200 && !server.client_left_early(0); ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(server.client_left_early(0));
  EXPECT_LT(server.chunks_sent(0), slow.size() / 4);
  EXPECT_LT(server.bytes_sent(0), bad.size() / 2);
  // The model was asked again with the issue that stopped the stream.
  EXPECT_THAT(server.request(1).body, HasSubstr(R"(label: must be one of \"positive\", \"negative\", \"neutral\" (got \"furious\"))"));
  const auto out = json_lines(r.out);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back().at("ok"), true);
  EXPECT_EQ(out.back().at("attempts"), 2);
  EXPECT_EQ(out.back().at("value").at("label"), "negative");
}

}  // namespace

namespace {

// A label reply whose usage says 4 of its 10 input tokens came from the prompt cache.
covenant_test::response_plan cached_label_reply(const covenant_test::received_request& r) {
  covenant_test::response_plan p = label_reply(r, 0ms);
  json::value body = json::parse(p.body);
  body.at("usage").as_object()["prompt_tokens_details"] = json::object{{"cached_tokens", 4}};
  p.body = json::serialize(body);
  return p;
}

/// A price file dated today (no staleness warning) with `models`.
std::string prices_json(const std::string& models) {
  const auto today = std::chrono::year_month_day(std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now()));
  char date[16];
  std::snprintf(date, sizeof date, "%04d-%02u-%02u", static_cast<int>(today.year()), static_cast<unsigned>(today.month()),
                static_cast<unsigned>(today.day()));
  return std::string(R"({"taken": ")") + date + R"(", "models": )" + models + "}";
}

TEST_F(CliRun, PricesGiveEachRecordItsCostAndTheRunItsTotal) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return cached_label_reply(r);
  });
  const std::string input = write("in.jsonl", records(3));
  const std::string prices = write("prices.json", prices_json(R"({"loop*": {"input": 1, "cached_input": 0.5, "output": 2}})"));
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--prices", prices, input});
  EXPECT_EQ(r.status, 0) << r.err;
  const auto out = json_lines(r.out);
  ASSERT_EQ(out.size(), 3u);
  const double each = (6 * 1.0 + 4 * 0.5 + 5 * 2.0) / 1e6;  // 6 fresh + 4 cached input, 5 output
  for (const auto& line : out) {
    EXPECT_EQ(line.at("usage").at("cached_input_tokens"), 4);
    EXPECT_DOUBLE_EQ(line.at("cost_usd").to_number<double>(), each);
  }
  EXPECT_THAT(r.err, HasSubstr("tokens 30 in (40% from the prompt cache) / 15 out; cost $0.000054"));
  EXPECT_THAT(r.err, ::testing::Not(HasSubstr("days ago")));
}

TEST_F(CliRun, AModelWithoutAPriceHasAnUnknownCostAndTheSummaryNamesIt) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", records(2));
  const std::string prices = write("prices.json", prices_json(R"({"gpt-4o": {"input": 2.5, "output": 10}})"));
  // COVENANT_PRICES is read when --prices is not given
  const auto r = run_tool({"run", "--schema", path("label.baml"), "--prompt", "Label.", input},
                          {"COVENANT_BASE_URL=" + server.base_url(), "COVENANT_PRICES=" + prices});
  EXPECT_EQ(r.status, 0) << r.err;
  for (const auto& line : json_lines(r.out)) EXPECT_TRUE(line.at("cost_usd").is_null());  // unknown, never 0
  EXPECT_THAT(r.err, HasSubstr("cost unknown (no price for 'loopback' in " + prices + ")"));
  // without prices there is no cost at all
  const auto plain = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", input});
  for (const auto& line : json_lines(plain.out)) EXPECT_FALSE(line.as_object().contains("cost_usd"));
  EXPECT_THAT(plain.err, ::testing::Not(HasSubstr("cost")));
}

TEST_F(CliRun, ABadOrOldPriceFileIsSaid) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", records(1));
  const std::string bad = write("bad.json", R"({"taken": "2026-02-30", "models": {"m": {"input": -2, "output": 1, "cache": 1}}})");
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--prices", bad, input});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("the prices cannot be read"));
  EXPECT_THAT(r.err, HasSubstr("taken: must be a date"));
  EXPECT_THAT(r.err, HasSubstr("models.m.input: must be >= 0"));
  EXPECT_THAT(r.err, HasSubstr("models.m.cache: unknown field"));
  EXPECT_EQ(server.requests(), 0u);  // nothing was spent
  const auto missing = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--prices",
                                    path("none.json"), input});
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(missing.err, HasSubstr("cannot read the price file"));
  const std::string old = write("old.json", R"({"taken": "2020-01-01", "models": {"loopback": {"input": 1, "output": 1}}})");
  const auto stale = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--prices", old, input});
  EXPECT_EQ(stale.status, 0) << stale.err;
  EXPECT_THAT(stale.err, HasSubstr("the prices were taken on 2020-01-01"));
}

}  // namespace

namespace {

TEST_F(CliRun, ABudgetEndsTheRunAndResumeGoesOnWithANewOne) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);  // 15 tokens a record
  });
  const std::string input = write("in.jsonl", records(10));
  const std::string out = path("out.jsonl");
  const auto first = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--concurrency", "1",
                                  "--max-tokens", "40", "--output", out, input});
  EXPECT_EQ(first.status, 3) << first.err;  // the budget ended the run
  EXPECT_THAT(first.err, HasSubstr("stopped: the budget was reached (--max-tokens 40)"));
  EXPECT_EQ(json_lines(read(out)).size(), 3u);  // 30 spent: a third starts; 45: none more
  EXPECT_EQ(server.requests(), 3u);
  const auto rest = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--concurrency", "1",
                                 "--max-tokens", "1000", "--output", out, "--resume", input});
  EXPECT_EQ(rest.status, 0) << rest.err;
  std::set<std::string> ids;
  for (const auto& line : json_lines(read(out))) ids.insert(std::string(line.at("id").as_string()));
  EXPECT_EQ(ids.size(), 10u);
  EXPECT_EQ(json_lines(read(out)).size(), 10u);  // each record once
  // a cost cap needs prices
  const auto no_prices = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--max-cost", "1", input});
  EXPECT_EQ(no_prices.status, 2);
  EXPECT_THAT(no_prices.err, HasSubstr("--max-cost needs prices"));
}

TEST_F(CliRun, ACostBudgetEndsAStreamedRunToo) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    covenant_test::response_plan p;
    p.content_type = "text/event-stream";
    const json::value rec = covenant_test::record_of(r.body);
    p.chunks = covenant_test::openai_stream({R"({"label": "L)" + json::serialize(rec.at("n")) + R"("})"}, "stop", 10, 5);
    return p;
  });
  const std::string input = write("in.jsonl", records(6));
  const std::string prices = write("prices.json", prices_json(R"({"loopback": {"input": 1000, "output": 2000}})"));
  // a record: 10 * 1000 + 5 * 2000 = 20000 per million tokens, 0.02 dollars
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--stream", "--prices",
                              prices, "--max-cost", "0.05", input});
  EXPECT_EQ(r.status, 3) << r.err;
  std::size_t records_done = 0;
  for (const auto& line : json_lines(r.out)) records_done += line.as_object().contains("ok") ? 1 : 0;
  EXPECT_EQ(records_done, 3u);  // 0.04 spent: a third; 0.06: none more
  EXPECT_THAT(r.err, HasSubstr("cost $0.060000"));
  EXPECT_THAT(r.err, HasSubstr("the budget was reached (--max-cost $0.050000)"));
}

}  // namespace

namespace {

TEST_F(CliRun, AnthropicsSystemPromptIsMarkedForThePromptCacheAndTheSummarySaysHowMuchHit) {
  std::mutex mutex;
  std::set<std::string> cached;
  covenant_test::loopback_server server([&](const covenant_test::received_request& r, std::size_t) {
    const json::value body = json::parse(r.body);
    const json::value& system = body.at("system");
    const bool marked = system.is_array() && system.at(0).as_object().contains("cache_control");
    const std::string text(system.is_array() ? system.at(0).at("text").as_string() : system.as_string());
    bool hit = false;
    {
      std::lock_guard lock(mutex);
      hit = marked && !cached.insert(text).second;
    }
    json::value m = json::parse(covenant_test::anthropic_tool_message("Label", R"({"label": "A"})", 10, 5));
    if (hit) {  // 30 of the request's 40 input tokens read from the cache
      m.at("usage").as_object()["cache_read_input_tokens"] = 30;
    } else if (marked) {
      m.at("usage").as_object()["cache_creation_input_tokens"] = 30;
    } else {
      m.at("usage").as_object()["input_tokens"] = 40;
    }
    covenant_test::response_plan p;
    p.body = json::serialize(m);
    return p;
  });
  const std::string input = write("in.jsonl", records(4));
  const auto r = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--provider", "anthropic",
                              "--concurrency", "1", input});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(json::parse(server.request(0).body).at("system").is_array());
  // 160 input tokens, 90 of them read from the cache (the three records after the first)
  EXPECT_THAT(r.err, HasSubstr("tokens 160 in (56% from the prompt cache)"));
  const auto plain = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--provider", "anthropic",
                                  "--no-prompt-cache", "--quiet", input});
  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_TRUE(json::parse(server.request(4).body).at("system").is_string());
}

}  // namespace

namespace {

TEST_F(CliRun, TwoRunsAtOnceShareAResponseCacheAndALaterRunIsAnsweredFromIt) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 5ms);
  });
  const std::string input = write("in.jsonl", records(20));
  const std::string cache = path("cache");
  const std::vector<std::string> args = {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--cache", cache,
                                         "--concurrency", "4", input};
  // two processes writing the same cache file at once
  const std::string tag_a = next_tag();
  const pid_t a = spawn(server, args, tag_a);
  const std::string tag_b = next_tag();
  const pid_t b = spawn(server, args, tag_b);
  const auto first = finish(a, tag_a);
  const auto second = finish(b, tag_b);
  EXPECT_EQ(first.status, 0) << first.err;
  EXPECT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(json_lines(first.out).size(), 20u);
  EXPECT_EQ(json_lines(second.out).size(), 20u);
  const std::size_t asked = server.requests();
  EXPECT_GE(asked, 20u);
  EXPECT_LE(asked, 40u);
  EXPECT_THAT(first.err + second.err, ::testing::Not(HasSubstr("could not be used")));  // no warning
  // every record is in the cache now: a third run asks the server nothing
  const auto third = run(server, args);
  EXPECT_EQ(third.status, 0) << third.err;
  EXPECT_EQ(server.requests(), asked);
  EXPECT_THAT(third.err, HasSubstr("20 model calls answered from the response cache"));
  std::set<std::string> labels;
  for (const auto& line : json_lines(third.out)) labels.insert(std::string(line.at("value").at("label").as_string()));
  EXPECT_EQ(labels.size(), 20u);
  // a cache that cannot be used does not stop a run
  fs::create_directories(path("bad"));
  write("bad/responses.sqlite", std::string(4096, 'z'));
  const auto broken = run(server, {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--cache", path("bad"),
                                   "--quiet", input});
  EXPECT_EQ(broken.status, 0) << broken.err;
  EXPECT_EQ(json_lines(broken.out).size(), 20u);
  EXPECT_THAT(broken.err, HasSubstr("warning: the response cache"));
  EXPECT_THAT(broken.err, HasSubstr("could not be used"));
}

}  // namespace

namespace {

TEST_F(CliRun, ACostBudgetStopsStartingRecordsAndResumeGoesOnWithANewOne) {
  covenant_test::loopback_server server([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);  // 10 tokens in, 5 out
  });
  const std::string input = write("in.jsonl", records(8));
  const std::string out = path("out.jsonl");
  const std::string prices = write("prices.json", prices_json(R"({"loopback": {"input": 1000, "output": 2000}})"));
  // a record: 10 * 1000 + 5 * 2000 per million tokens = 0.02 dollars
  auto run_with = [&](const std::string& budget, bool resume) {
    std::vector<std::string> args = {"run", "--schema", path("label.baml"), "--prompt", "Label.", "--concurrency", "1",
                                     "--prices", prices, "--max-cost", budget, "--output", out, input};
    if (resume) args.push_back("--resume");
    return run(server, args);
  };
  const auto first = run_with("0.05", false);
  EXPECT_EQ(first.status, 3) << first.err;
  EXPECT_THAT(first.err, HasSubstr("cost $0.060000; stopped: the budget was reached (--max-cost $0.050000)"));
  EXPECT_EQ(json_lines(read(out)).size(), 3u);
  const auto second = run_with("0.05", true);  // a new budget: three more
  EXPECT_EQ(second.status, 3) << second.err;
  EXPECT_EQ(json_lines(read(out)).size(), 6u);
  const auto last = run_with("1", true);
  EXPECT_EQ(last.status, 0) << last.err;
  std::set<std::string> ids;
  for (const auto& line : json_lines(read(out))) ids.insert(std::string(line.at("id").as_string()));
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_EQ(json_lines(read(out)).size(), 8u);
  EXPECT_EQ(server.requests(), 8u);
}

}  // namespace
