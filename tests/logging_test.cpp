// The library's log level: one call sets it, COVENANT_LOG_LEVEL sets the starting level.
#include <covenant/contract.hpp>
#include <covenant/logging.hpp>
#include <covenant/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace logging_test {

struct Question {
  std::string text;
};
struct Answer {
  std::string text;
};
struct Echo {
  static constexpr std::string_view prompt = "Answer.";
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

}  // namespace logging_test

namespace {

TEST(LogLevel, NamesReadAndWritten) {
  using covenant::log_level;
  for (auto l : {log_level::trace, log_level::debug, log_level::info, log_level::warn, log_level::error,
                 log_level::critical, log_level::off})
    EXPECT_EQ(covenant::parse_log_level(covenant::to_string(l)), l);
  EXPECT_EQ(covenant::parse_log_level("WARNING"), log_level::warn);
  EXPECT_EQ(covenant::parse_log_level("Error"), log_level::error);
  EXPECT_FALSE(covenant::parse_log_level("loud").has_value());
  EXPECT_FALSE(covenant::parse_log_level("").has_value());
}

TEST(LogLevel, OneLineSilencesPerCallResults) {
  covenant::testing::log_capture capture;  // captures at debug level; restores the level after
  covenant::testing::scripted_engine model{R"({"text": "a"})", R"({"text": "b"})"};
  const covenant::contract<logging_test::Echo> c{model, covenant::testing::instant()};
  (void)c.run({"q"});
  EXPECT_THAT(capture.text(), ::testing::HasSubstr("[info] Echo: succeeded"));
  const std::size_t before = capture.text().size();
  covenant::set_log_level(covenant::log_level::warn);
  EXPECT_EQ(covenant::get_log_level(), covenant::log_level::warn);
  (void)c.run({"q"});
  EXPECT_EQ(capture.text().size(), before);  // nothing at info any more
}

TEST(LogLevelDeathTest, TheEnvironmentSetsTheStartingLevel) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: the logger is created there
  EXPECT_EXIT(
      {
        setenv("COVENANT_LOG_LEVEL", "error", 1);
        std::exit(covenant::get_log_level() == covenant::log_level::error ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
