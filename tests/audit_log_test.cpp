// The audit log (covenant/audit_log.hpp): one JSON line per attempt with the documented fields,
// redaction, the raw reply only when asked, and retention by the date in the file name.
#include <covenant/audit_log.hpp>
#include <covenant/contract.hpp>
#include <covenant/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

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

TEST_F(AuditLog, TheRawReplyOnlyWhenAskedAndNeverAKeyFromTheEnvironment) {
  ::setenv("COVENANT_API_KEY", "key-abcdef-0123", 1);
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir_, .include_reply = true});
  ::unsetenv("COVENANT_API_KEY");
  scripted_engine model{R"({"answer": "my key is key-abcdef-0123", "confidence": 0.9})"};
  covenant::contract_options o = instant();
  o.observers.push_back(audit);
  covenant::contract<QA> qa{model, o};
  ASSERT_TRUE(qa.run(Question{"q"}).outcome.success);
  const auto lines = lines_of(audit->current_file());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].at("reply").as_string(), R"({"answer": "my key is [redacted]", "confidence": 0.9})");
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

TEST_F(AuditLog, ADirectoryThatCannotBeCreatedIsAClearError) {
  std::ofstream(fs::temp_directory_path() / "covenant_audit_blocker") << "x";
  EXPECT_THROW(covenant::audit_log(covenant::audit_log_options{.directory = fs::temp_directory_path() /
                                                                             "covenant_audit_blocker" / "sub"}),
               std::runtime_error);
  fs::remove(fs::temp_directory_path() / "covenant_audit_blocker");
}

}  // namespace
