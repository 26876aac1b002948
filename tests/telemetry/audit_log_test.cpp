// The audit log (covenant/telemetry/audit_log.hpp): one JSON line per attempt with the documented fields,
// redaction, the raw reply only when asked, retention by the date in the file name, and the
// journal that keeps the lines of a process that was killed.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/prices.hpp>
#include <covenant/telemetry/audit_log.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lookup_tool.hpp"

namespace audit_test {

struct Question {
  std::string text;
};

struct Answer {
  std::string answer;
  double confidence = 0;
};

struct QA {
  static constexpr std::string_view prompt = "Answer.";
  void post(const Answer& a) const {
    if (a.answer == "?") throw covenant::violation("answer", "must not be a question mark, sk-secret-123456");
  }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

using covenant_test::lookup::Lookup;

struct Researcher {
  static constexpr std::string_view prompt = "Answer from what the lookups find.";
  covenant::toolset<Lookup> tools;
  void post(const Answer& a) const {
    if (a.answer == "?") throw covenant::violation("answer", "must not be a question mark");
  }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

}  // namespace audit_test

namespace {

namespace fs = std::filesystem;
using namespace audit_test;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using covenant::testing::step;

class AuditLog : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("covenant_audit_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::vector<boost::json::value> lines_of(const fs::path& file) {
    std::ifstream in(file);
    std::vector<boost::json::value> out;
    for (std::string line; std::getline(in, line);) out.push_back(boost::json::parse(line));
    return out;
  }

  static std::string date_name(int days_ago) {
    const std::time_t t = std::time(nullptr) - static_cast<std::time_t>(days_ago) * 86400;
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "audit_%Y-%m-%d.jsonl", &tm);
    return buf;
  }

  fs::path dir_;
};

TEST_F(AuditLog, OneLinePerAttemptWithTheDocumentedFields) {
  auto audit = std::make_shared<covenant::audit_log>(
      covenant::audit_log_options{.directory = dir_, .redact = {"sk-secret-123456"}});
  scripted_engine model{step(R"({"answer": "?", "confidence": 0.5})", {12, 3}),
                        step(R"({"answer": "Paris", "confidence": 0.9})", {20, 4})};
  covenant::contract_options o = instant();
  o.observers.push_back(audit);
  covenant::contract<QA> qa{model, o};
  covenant::call_options call;
  call.query_id = "req-1";
  ASSERT_TRUE(qa.run(Question{"q"}, call).outcome.success);
  audit->flush();

  EXPECT_EQ(audit->current_file().filename().string(), date_name(0));
  const auto lines = lines_of(audit->current_file());
  ASSERT_EQ(lines.size(), 2u);
  const auto& first = lines[0].as_object();
  EXPECT_EQ(first.at("query_id").as_string(), "req-1");
  EXPECT_EQ(first.at("contract").as_string(), "QA");
  EXPECT_EQ(first.at("attempt").as_int64(), 1);
  EXPECT_EQ(first.at("result").as_string(), "rejected");
  EXPECT_EQ(first.at("retry_count").as_int64(), 0);
  EXPECT_EQ(first.at("schema_version").as_string(), "");
  EXPECT_EQ(first.at("usage").at("input_tokens").as_int64(), 12);
  EXPECT_EQ(first.at("usage").at("output_tokens").as_int64(), 3);
  EXPECT_TRUE(first.at("latency_ms").is_double());
  EXPECT_EQ(first.at("queue_ms").as_double(), 0.0);  // nothing waited
  const std::string ts(first.at("ts").as_string());
  EXPECT_EQ(ts.size(), 24u) << ts;  // 2026-11-25T10:30:00.123Z
  EXPECT_EQ(ts.back(), 'Z');
  ASSERT_EQ(first.at("issues").as_array().size(), 1u);
  const auto& issue = first.at("issues").as_array()[0].as_object();
  EXPECT_EQ(issue.at("path").as_string(), "answer");
  EXPECT_EQ(issue.at("code").as_string(), "postcondition_violation");
  EXPECT_EQ(issue.at("message").as_string(), "must not be a question mark, [redacted]");
  EXPECT_FALSE(first.contains("reply"));
  const auto& second = lines[1].as_object();
  EXPECT_EQ(second.at("result").as_string(), "accepted");
  EXPECT_EQ(second.at("retry_count").as_int64(), 1);
  EXPECT_TRUE(second.at("issues").as_array().empty());
}

TEST_F(AuditLog, TheModelTheCostAndThePricedPartsOfTheUsageAreWritten) {
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir_});
  scripted_engine model{step(R"({"answer": "Paris", "confidence": 0.9})", covenant::usage{1000, 100, 600, 50, 30})};
  auto prices = std::make_shared<covenant::price_table>();
  prices->set("scripted", covenant::token_price{2, 8, 0.5, 2.5, std::nullopt});
  covenant::contract_options o = instant();
  o.observers.push_back(audit);
  o.prices = prices;
  covenant::contract<QA> qa{model, o};
  ASSERT_TRUE(qa.run(Question{"q"}).outcome.success);
  // without prices: no cost, and a usage without parts has only its two counts
  scripted_engine plain{step(R"({"answer": "Paris", "confidence": 0.9})", {10, 1})};
  covenant::contract_options unpriced = instant();
  unpriced.observers.push_back(audit);
  covenant::contract<QA> qa2{plain, unpriced};
  ASSERT_TRUE(qa2.run(Question{"q"}).outcome.success);
  audit->flush();
  const auto lines = lines_of(audit->current_file());
  ASSERT_EQ(lines.size(), 2u);
  const auto& priced = lines[0].as_object();
  EXPECT_EQ(priced.at("model").as_string(), "scripted");
  EXPECT_EQ(priced.at("usage"), boost::json::parse(R"({"input_tokens":1000,"output_tokens":100,"cached_input_tokens":600,
                                                       "cache_write_tokens":50,"reasoning_tokens":30})"));
  EXPECT_DOUBLE_EQ(priced.at("cost_usd").as_double(), (350 * 2 + 600 * 0.5 + 50 * 2.5 + 100 * 8) / 1e6);
  const auto& plain_line = lines[1].as_object();
  EXPECT_EQ(plain_line.at("usage"), boost::json::parse(R"({"input_tokens":10,"output_tokens":1})"));
  EXPECT_FALSE(plain_line.contains("cost_usd"));
}

TEST_F(AuditLog, QueueTimeIsWrittenBesideLatencyAndIsNotPartOfIt) {
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir_});
  // The engine took 300 ms of the contract's clock, of which it waited 250 ms between its
  // exchanges (a Retry-After, say): the latency is the other 50 ms.
  auto clock = std::make_shared<covenant::testing::manual_clock>();
  scripted_engine model([clock](const covenant::chat_request&, std::size_t) {
    clock->advance(std::chrono::milliseconds(300));
    covenant::chat_response r;
    r.text = R"({"answer": "Paris", "confidence": 0.9})";
    r.queued = std::chrono::milliseconds(250);
    return r;
  });
  covenant::contract_options o = instant();
  o.clock = [clock] { return (*clock)(); };
  o.observers.push_back(audit);
  covenant::contract<QA> qa{model, o};
  ASSERT_TRUE(qa.run(Question{"q"}).outcome.success);
  audit->flush();
  std::ifstream in(audit->current_file());
  std::string text;
  std::getline(in, text);
  const boost::json::object line = boost::json::parse(text).as_object();
  EXPECT_EQ(line.at("queue_ms").as_double(), 250.0);
  EXPECT_EQ(line.at("latency_ms").as_double(), 50.0);
  const auto latency_at = text.find("\"latency_ms\":");
  EXPECT_NE(latency_at, std::string::npos);
  EXPECT_EQ(text.find("\"queue_ms\":"), text.find(',', latency_at) + 1) << "queue_ms follows latency_ms: "
                                                                         << text;
}

TEST_F(AuditLog, TheRawReplyOnlyWhenAskedAndNeverAKeyFromTheEnvironment) {
  ::setenv("COVENANT_API_KEY", "key-abcdef-0123", 1);
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir_, .include_reply = true});
  ::unsetenv("COVENANT_API_KEY");
  scripted_engine model{R"({"answer": "my key is key-abcdef-0123", "confidence": 0.9})"};
  covenant::contract_options o = instant();
  o.observers.push_back(audit);
  covenant::contract<QA> qa{model, o};
  ASSERT_TRUE(qa.run(Question{"q"}).outcome.success);
  audit->flush();
  const auto lines = lines_of(audit->current_file());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("reply").as_string(), R"({"answer": "my key is [redacted]", "confidence": 0.9})");
}

TEST_F(AuditLog, AnAgentsAttemptLinesCarryTheStepsThatLedToThem) {
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{
      .directory = dir_, .include_reply = true, .redact = {"sk-secret-123456"}});
  // Step 1 (three calls: one runs, one pre refuses, one cannot be read), a rejected answer;
  // step 2, whose arguments hold a secret, and the accepted answer.
  scripted_engine model([](const covenant::chat_request&, std::size_t i) {
    covenant::chat_response r;
    switch (i) {
      case 0:
        r.text = "Let me look.";
        r.tool_calls = {{"c1", "lookup", R"({"topic": "Paris"})"}, {"c2", "lookup", R"({"topic": ""})"},
                        {"c3", "lookup", R"({"town": 3})"}};
        r.usage = {100, 10};
        break;
      case 1: r.text = R"({"answer": "?", "confidence": 0.5})"; r.usage = {120, 12}; break;
      case 2:
        r.tool_calls = {{"c4", "lookup", R"({"topic": "sk-secret-123456"})"}};
        r.usage = {130, 5};
        break;
      default: r.text = R"({"answer": "Paris", "confidence": 0.9})"; r.usage = {150, 15};
    }
    return r;
  });
  covenant::contract_options o = instant({.tries = 2});
  o.observers.push_back(audit);
  covenant::contract<Researcher> research{model, o};
  covenant::call_options call;
  call.query_id = "agent-1";
  const auto r = research.run(Question{"q"}, call);
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  ASSERT_EQ(r.outcome.steps.size(), 2u);
  audit->flush();
  const auto lines = lines_of(audit->current_file());
  ASSERT_EQ(lines.size(), 2u);

  // The attempt lines keep their fields; each has the steps made before it in its attempt.
  const auto& first = lines[0].as_object();
  EXPECT_EQ(first.at("query_id").as_string(), "agent-1");
  EXPECT_EQ(first.at("attempt").as_int64(), 1);
  EXPECT_EQ(first.at("result").as_string(), "rejected");
  EXPECT_EQ(first.at("usage"), boost::json::parse(R"({"input_tokens":120,"output_tokens":12})"));  // the answer's own
  EXPECT_EQ(first.at("issues").as_array().at(0).at("code").as_string(), "postcondition_violation");
  EXPECT_EQ(first.at("finish_reason").as_string(), "");
  const auto& steps1 = first.at("steps").as_array();
  ASSERT_EQ(steps1.size(), 1u);
  const auto& s1 = steps1[0].as_object();
  EXPECT_EQ(s1.at("step").as_int64(), 1);
  EXPECT_EQ(s1.at("usage"), boost::json::parse(R"({"input_tokens":100,"output_tokens":10})"));
  EXPECT_TRUE(s1.at("latency_ms").is_double());
  EXPECT_EQ(s1.at("reply").as_string(), "Let me look.");
  const auto& tools = s1.at("tools").as_array();
  ASSERT_EQ(tools.size(), 3u);
  EXPECT_EQ(tools[0].at("id").as_string(), "c1");
  EXPECT_EQ(tools[0].at("name").as_string(), "lookup");
  EXPECT_EQ(tools[0].at("status").as_string(), "ok");
  EXPECT_TRUE(tools[0].at("elapsed_ms").is_double());
  EXPECT_EQ(tools[0].at("arguments"), boost::json::parse(R"({"topic":"Paris"})"));  // as read: a JSON value
  EXPECT_FALSE(tools[0].as_object().contains("raw_arguments"));
  EXPECT_TRUE(tools[0].at("issues").as_array().empty());
  EXPECT_EQ(tools[1].at("status").as_string(), "pre");
  EXPECT_EQ(tools[1].at("arguments"), boost::json::parse(R"({"topic":""})"));
  ASSERT_EQ(tools[1].at("issues").as_array().size(), 1u);
  EXPECT_EQ(tools[1].at("issues").as_array()[0].at("path").as_string(), "topic");
  EXPECT_EQ(tools[1].at("issues").as_array()[0].at("message").as_string(), "must name a topic");
  EXPECT_EQ(tools[2].at("status").as_string(), "arguments");
  EXPECT_FALSE(tools[2].as_object().contains("arguments"));
  EXPECT_EQ(tools[2].at("raw_arguments").as_string(), R"({"town": 3})");  // unread: the model's text
  EXPECT_FALSE(tools[2].at("issues").as_array().empty());

  const auto& second = lines[1].as_object();
  EXPECT_EQ(second.at("attempt").as_int64(), 2);
  EXPECT_EQ(second.at("result").as_string(), "accepted");
  const auto& steps2 = second.at("steps").as_array();
  ASSERT_EQ(steps2.size(), 1u);
  EXPECT_EQ(steps2[0].at("step").as_int64(), 2);
  EXPECT_FALSE(steps2[0].as_object().contains("reply"));  // the step wrote no text
  EXPECT_EQ(steps2[0].at("tools").as_array()[0].at("arguments"), boost::json::parse(R"({"topic":"[redacted]"})"));

  // The same line from line(e), the event carrying the steps.
  const covenant::call_info info{"Researcher", "agent-1", ""};
  const covenant::attempt_event e{info, r.outcome.attempts[1], covenant::verdict::accepted, 1,
                                  std::span(r.outcome.steps).subspan(1)};
  const boost::json::value built = boost::json::parse(audit->line(e));
  EXPECT_EQ(built.at("steps"), second.at("steps"));
  const covenant::attempt_event bare{info, r.outcome.attempts[1], covenant::verdict::accepted, 1};
  EXPECT_FALSE(boost::json::parse(audit->line(bare)).as_object().contains("steps"));
}

TEST_F(AuditLog, AnAgentThatAnswersWithoutToolsWritesItsLineAtOnceWithoutSteps) {
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir_, .flush_interval = {}});
  scripted_engine model{step(R"({"answer": "Paris", "confidence": 0.9})")};
  covenant::contract_options o = instant();
  o.observers.push_back(audit);
  covenant::contract<Researcher> research{model, o};
  ASSERT_TRUE(research.run(Question{"q"}).outcome.success);
  const auto lines = lines_of(audit->current_file());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_FALSE(lines[0].as_object().contains("steps"));
}

TEST_F(AuditLog, ACallItsToolLoopEndedHasALineForItsLastSteps) {
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir_});
  scripted_engine model([](const covenant::chat_request&, std::size_t) {
    covenant::chat_response r;
    r.tool_calls = {{"", "lookup", R"({"topic": "again"})"}};
    r.usage = {50, 5};
    return r;
  });
  covenant::contract_options o = instant();
  o.agent.max_steps = 1;
  o.observers.push_back(audit);
  covenant::contract<Researcher> research{model, o};
  covenant::call_options call;
  call.query_id = "loop-1";
  const auto r = research.run(Question{"q"}, call);
  ASSERT_EQ(r.outcome.failed_stage, covenant::stage::tool);
  audit->flush();
  const auto lines = lines_of(audit->current_file());
  ASSERT_EQ(lines.size(), 1u);
  const auto& line = lines[0].as_object();
  // The attempt that was to answer, failed with the call's issues; every field of an attempt line.
  for (const char* field : {"ts", "query_id", "contract", "kind", "attempt", "result", "retry_count", "schema_version",
                            "issues", "notes", "usage", "latency_ms", "queue_ms", "finish_reason"})
    EXPECT_TRUE(line.contains(field)) << field;
  EXPECT_EQ(line.at("query_id").as_string(), "loop-1");
  EXPECT_EQ(line.at("kind").as_string(), "output");
  EXPECT_EQ(line.at("attempt").as_int64(), 1);
  EXPECT_EQ(line.at("result").as_string(), "failed");
  EXPECT_EQ(line.at("retry_count").as_int64(), 0);
  EXPECT_EQ(line.at("reason").as_string(), "max_steps");
  EXPECT_EQ(line.at("issues").as_array().at(0).at("code").as_string(), "limit_reached");
  EXPECT_EQ(line.at("usage"), boost::json::parse(R"({"input_tokens":0,"output_tokens":0})"));
  const auto& steps = line.at("steps").as_array();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].at("tools").as_array()[0].at("status").as_string(), "ok");
  EXPECT_EQ(steps[0].at("tools").as_array()[0].at("id").as_string(), "call_1_1");
  EXPECT_EQ(steps[1].at("step").as_int64(), 2);
  EXPECT_EQ(steps[1].at("usage").at("input_tokens").as_int64(), 50);
  EXPECT_EQ(steps[1].at("tools").as_array()[0].at("status").as_string(), "refused");
}

TEST_F(AuditLog, FilesOlderThanTheRetentionAreDeletedWhenItOpens) {
  fs::create_directories(dir_);
  for (const std::string& name : {date_name(45), date_name(31), date_name(29), date_name(1), std::string("notes.txt"),
                                  std::string("audit_garbage.jsonl")})
    std::ofstream(dir_ / name) << "{}\n";
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir_, .retention_days = 30});
  EXPECT_FALSE(fs::exists(dir_ / date_name(45)));
  EXPECT_FALSE(fs::exists(dir_ / date_name(31)));
  EXPECT_TRUE(fs::exists(dir_ / date_name(29)));
  EXPECT_TRUE(fs::exists(dir_ / date_name(1)));
  EXPECT_TRUE(fs::exists(dir_ / "notes.txt"));
  EXPECT_TRUE(fs::exists(dir_ / "audit_garbage.jsonl"));
  EXPECT_TRUE(fs::exists(audit->current_file()));

  std::ofstream(dir_ / date_name(400)) << "{}\n";
  EXPECT_EQ(audit->apply_retention(), 1u);
  EXPECT_FALSE(fs::exists(dir_ / date_name(400)));
}

// One attempt's line with query id `id` (and the raw reply `reply` when the log includes it).
void write_attempt(covenant::audit_log& audit, const std::string& id, const std::string& reply = "{}") {
  const covenant::call_info call{"QA", id, ""};
  covenant::attempt a;
  a.number = 1;
  a.text = reply;
  audit.on_attempt(covenant::attempt_event{call, a, covenant::verdict::accepted, 0});
}

std::vector<std::string> query_ids(const std::vector<boost::json::value>& lines) {
  std::vector<std::string> ids;
  for (const auto& l : lines) ids.emplace_back(l.at("query_id").as_string());
  return ids;
}

std::vector<fs::path> journals_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".journal") out.push_back(e.path());
  return out;
}

// A journal's header (src/telemetry/line_journal.hpp): its generation, then 8 unused bytes.
void write_journal_header(std::ofstream& out, std::uint64_t generation) {
  out.write(reinterpret_cast<const char*>(&generation), sizeof generation);
  out << std::string(8, '\0');
}

TEST_F(AuditLog, LinesWaitInTheJournalUntilFlushedAndThenGoToTheFileInOrder) {
  auto audit = std::make_shared<covenant::audit_log>(
      covenant::audit_log_options{.directory = dir_, .flush_interval = std::chrono::hours(1)});
  write_attempt(*audit, "a");
  write_attempt(*audit, "b");
  EXPECT_TRUE(lines_of(audit->current_file()).empty());
  const auto journals = journals_in(dir_);
  ASSERT_EQ(journals.size(), 2u);  // the one being filled and the one being written
  for (const auto& j : journals)
    EXPECT_EQ(j.filename().string().rfind(".audit-" + std::to_string(::getpid()) + "-", 0), 0u) << j;
  audit->flush();
  EXPECT_THAT(query_ids(lines_of(audit->current_file())), ::testing::ElementsAre("a", "b"));
  write_attempt(*audit, "c");
  const fs::path file = audit->current_file();
  audit.reset();  // destroying the log writes what waits and deletes its journal
  EXPECT_THAT(query_ids(lines_of(file)), ::testing::ElementsAre("a", "b", "c"));
  EXPECT_TRUE(journals_in(dir_).empty());
}

TEST_F(AuditLog, LinesReachTheFileWithinTheFlushInterval) {
  auto audit = std::make_shared<covenant::audit_log>(
      covenant::audit_log_options{.directory = dir_, .flush_interval = std::chrono::milliseconds(20)});
  write_attempt(*audit, "a");
  // Nobody calls flush(): the log's own flusher writes the line (bounded wait, not a timing check).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (lines_of(audit->current_file()).empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_THAT(query_ids(lines_of(audit->current_file())), ::testing::ElementsAre("a"));
}

TEST_F(AuditLog, WithoutAFlushIntervalEachLineIsInTheFileAtOnceAndThereIsNoJournal) {
  auto audit = std::make_shared<covenant::audit_log>(
      covenant::audit_log_options{.directory = dir_, .flush_interval = std::chrono::milliseconds(0)});
  write_attempt(*audit, "a");
  EXPECT_THAT(query_ids(lines_of(audit->current_file())), ::testing::ElementsAre("a"));
  EXPECT_TRUE(journals_in(dir_).empty());
}

TEST_F(AuditLog, ALineLongerThanTheJournalIsWrittenAfterTheLinesBeforeIt) {
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{
      .directory = dir_, .include_reply = true, .flush_interval = std::chrono::hours(1)});
  write_attempt(*audit, "small");
  std::string big(300 * 1024 + 2, 'x');  // a JSON string: "xxx...x"
  big.front() = big.back() = '"';
  write_attempt(*audit, "big", big);
  write_attempt(*audit, "after");
  audit->flush();
  const auto lines = lines_of(audit->current_file());
  EXPECT_THAT(query_ids(lines), ::testing::ElementsAre("small", "big", "after"));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].at("reply").as_string().size(), big.size());
}

TEST_F(AuditLog, ManyLinesFillTheJournalMoreThanOnceAndNoneIsLostOrReordered) {
  auto audit = std::make_shared<covenant::audit_log>(
      covenant::audit_log_options{.directory = dir_, .flush_interval = std::chrono::hours(1)});
  std::vector<std::string> ids;
  for (int i = 0; i < 3000; ++i) {  // about 600 KiB of lines: more than two journals' worth
    ids.push_back(std::string("q").append(std::to_string(i)));  // not "q" + ...: a false -Wrestrict (GCC 12, Release)
    write_attempt(*audit, ids.back(), std::string(100, 'r'));
  }
  audit->flush();
  EXPECT_EQ(query_ids(lines_of(audit->current_file())), ids);
}

TEST_F(AuditLog, ALogDestroyedJustAfterHandingAJournalToItsThreadWritesEveryLine) {
  // The log's thread may not even have started when the destructor asks it to stop.
  std::size_t total = 0;
  for (int round = 0; round < 20; ++round) {
    auto audit = std::make_shared<covenant::audit_log>(
        covenant::audit_log_options{.directory = dir_, .flush_interval = std::chrono::hours(1)});
    const int n = 1500 + 37 * round;  // more than one journal's worth
    for (int i = 0; i < n; ++i)  // appended, not "r" + ...: a false -Wrestrict (GCC 12, Release)
      write_attempt(*audit, std::string("r").append(std::to_string(round)).append("-").append(std::to_string(i)));
    total += static_cast<std::size_t>(n);
    audit.reset();
    std::ifstream in(dir_ / date_name(0));
    std::ostringstream read;
    read << in.rdbuf();
    const std::string text = read.str();
    ASSERT_EQ(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')), total) << "round " << round;
  }
}

TEST_F(AuditLog, AProcessKilledBeforeItsLinesReachedTheFileLosesNone) {
  fs::create_directories(dir_);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child writes three lines (the flush interval keeps them in the journal) and is killed:
    // no destructor, no flush.
    covenant::audit_log audit(covenant::audit_log_options{.directory = dir_, .flush_interval = std::chrono::hours(1)});
    write_attempt(audit, "k1");
    write_attempt(audit, "k2");
    write_attempt(audit, "k3");
    ::kill(::getpid(), SIGKILL);
    ::_exit(3);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  ASSERT_EQ(journals_in(dir_).size(), 2u);  // the killed process's journals are still there
  const fs::path today = dir_ / date_name(0);
  EXPECT_TRUE(lines_of(today).empty());

  // The next log opened on the directory writes them, once, and deletes that journal.
  auto audit = std::make_shared<covenant::audit_log>(
      covenant::audit_log_options{.directory = dir_, .flush_interval = std::chrono::hours(1)});
  EXPECT_THAT(query_ids(lines_of(today)), ::testing::ElementsAre("k1", "k2", "k3"));
  ASSERT_EQ(journals_in(dir_).size(), 2u);  // its own
  audit.reset();
  auto again = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir_});
  EXPECT_EQ(lines_of(today).size(), 3u);
}

TEST_F(AuditLog, ALeftJournalAlreadyInTheFileIsNotWrittenTwiceAndACutLineIsDropped) {
  fs::create_directories(dir_);
  const std::string l1 = R"({"query_id":"j1"})";
  const std::string l2 = R"({"query_id":"j2"})";
  const std::string l3 = R"({"query_id":"j3"})";
  // A process that died after writing its journal to the file, before clearing the journal.
  std::ofstream(dir_ / date_name(0)) << l1 << "\n" << l2 << "\n";
  {
    std::ofstream j(dir_ / ".audit-999999999-0.journal", std::ios::binary);
    write_journal_header(j, 1000);
    const std::string content = l1 + "\n" + l2 + "\n";
    j.write(content.data(), static_cast<std::streamsize>(content.size()));
    j << std::string(4096, '\0');
  }
  covenant::audit_log(covenant::audit_log_options{.directory = dir_});
  EXPECT_THAT(query_ids(lines_of(dir_ / date_name(0))), ::testing::ElementsAre("j1", "j2"));
  // One that died while copying its second line.
  {
    std::ofstream j(dir_ / ".audit-999999999-1.journal", std::ios::binary);
    write_journal_header(j, 2000);
    const std::string content = l3 + "\n" + R"({"query_id":"cut)";
    j.write(content.data(), static_cast<std::streamsize>(content.size()));
    j << std::string(4096, '\0');
  }
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir_});
  EXPECT_THAT(query_ids(lines_of(dir_ / date_name(0))), ::testing::ElementsAre("j1", "j2", "j3"));
  EXPECT_EQ(journals_in(dir_).size(), 2u);  // only its own
}

TEST_F(AuditLog, LeftJournalsAreWrittenOldestFirstAndEmptyOnesOnlyDeleted) {
  fs::create_directories(dir_);
  auto journal = [&](const std::string& name, std::uint64_t generation, const std::string& lines) {
    std::ofstream j(dir_ / name, std::ios::binary);
    write_journal_header(j, generation);
    j << lines << std::string(4096, '\0');
  };
  journal(".audit-999999991-0.journal", 300, R"({"query_id":"third"})" "\n");
  journal(".audit-999999992-0.journal", 100, R"({"query_id":"first"})" "\n");
  journal(".audit-999999991-1.journal", 200, R"({"query_id":"second"})" "\n");
  // Generation 0: cleared (whatever bytes follow are stale).
  journal(".audit-999999993-0.journal", 0, R"({"query_id":"stale"})" "\n");
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir_});
  EXPECT_THAT(query_ids(lines_of(dir_ / date_name(0))), ::testing::ElementsAre("first", "second", "third"));
  EXPECT_EQ(journals_in(dir_).size(), 2u);  // only its own
}

TEST_F(AuditLog, ManyThreadsWriteEveryLineOnce) {
  auto audit = std::make_shared<covenant::audit_log>(
      covenant::audit_log_options{.directory = dir_, .flush_interval = std::chrono::milliseconds(1)});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) write_attempt(*audit, std::to_string(t) + "-" + std::to_string(i), std::string(80, 'r'));
    });
  for (auto& th : threads) th.join();
  audit->flush();
  auto ids = query_ids(lines_of(audit->current_file()));
  ASSERT_EQ(ids.size(), 8000u);
  // Each thread's lines in its own order.
  std::vector<int> next(4, 0);
  for (const auto& id : ids) {
    const int t = id[0] - '0';
    EXPECT_EQ(id, std::to_string(t) + "-" + std::to_string(next[static_cast<std::size_t>(t)]++));
  }
}

TEST_F(AuditLog, ADirectoryThatCannotBeCreatedIsAClearError) {
  std::ofstream(fs::temp_directory_path() / "covenant_audit_blocker") << "x";
  EXPECT_THROW(covenant::audit_log(covenant::audit_log_options{.directory = fs::temp_directory_path() /
                                                                             "covenant_audit_blocker" / "sub"}),
               std::runtime_error);
  fs::remove(fs::temp_directory_path() / "covenant_audit_blocker");
}

}  // namespace
