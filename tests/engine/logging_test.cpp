// The library's log level: warn by default, one call sets it, COVENANT_LOG_LEVEL sets the
// starting level; which events log at which level (docs/contracts.md#logging), and what the line
// of a failed call says its caller gets.
#include <covenant/contract/contract.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/engine/logging.hpp>
#include <covenant/contract/observer.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
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
/// post() rejects "bad" (a violation: the model's fault) and throws something else for "boom"
/// (a bug in the hook).
struct Picky {
  static constexpr std::string_view prompt = "Answer.";
  void post(const Answer& a) const {
    if (a.text == "bad") throw covenant::violation("text", "must not be bad");
    if (a.text == "boom") throw std::runtime_error("lookup table missing");
  }
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

TEST(LogLevelDeathTest, TheDefaultLevelIsWarn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: the logger is created there
  EXPECT_EXIT(
      {
        unsetenv("COVENANT_LOG_LEVEL");
        std::exit(covenant::get_log_level() == covenant::log_level::warn ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// At the default level a call that succeeds, is asked again, or fails for its model's replies
// writes nothing (the caller has the outcome); a call the server failed writes a warning. Runs in
// the death test's fresh process.
[[noreturn]] void calls_at_the_default_level() {
  unsetenv("COVENANT_LOG_LEVEL");
  covenant::testing::scripted_engine model{R"({"text": "a"})",   R"({"text": "bad"})", R"({"text": "a"})",
                                           R"({"text": "bad"})", R"({"text": "bad"})", R"({"text": "bad"})",
                                           R"({"text": "bad"})"};
  const covenant::contract<logging_test::Picky> c{model, covenant::testing::instant({.tries = 1})};
  (void)c.run({"q"});  // succeeded
  (void)c.run({"q"});  // asked again, succeeded
  (void)c.run({"q"});  // failed at post: the caller has the outcome
  try {
    (void)c({"q"});  // failed at post: contract_failure
  } catch (const covenant::contract_error&) {
  }
  std::fputs("-- quiet so far --\n", stderr);
  model.then(covenant::testing::step::failure("server down", 503));
  (void)c.run({"q"});  // failed at engine: needs attention
  std::exit(0);
}

TEST(LogLevelDeathTest, ByDefaultOnlyWhatNeedsAttentionIsWritten) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  using ::testing::HasSubstr;
  using ::testing::Not;
  EXPECT_EXIT(calls_at_the_default_level(), ::testing::ExitedWithCode(0),
              ::testing::AllOf(::testing::StartsWith("-- quiet so far --\n"),
                               HasSubstr("[warning] Picky: failed at engine"), Not(HasSubstr("succeeded")),
                               Not(HasSubstr("rejected")), Not(HasSubstr("failed at post"))));
}

[[noreturn]] void a_call_with_the_level_from_the_environment() {
  setenv("COVENANT_LOG_LEVEL", "info", 1);
  covenant::testing::scripted_engine model{R"({"text": "a"})"};
  const covenant::contract<logging_test::Echo> c{model, covenant::testing::instant()};
  (void)c.run({"q"});
  std::exit(0);
}

TEST(LogLevelDeathTest, TheEnvironmentBringsPerCallLinesBack) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(a_call_with_the_level_from_the_environment(), ::testing::ExitedWithCode(0),
              ::testing::HasSubstr("[info] Echo: succeeded after 1 model call in "));
}

// The level table of docs/contracts.md#logging.
TEST(LogLevel, EachEventAtItsLevel) {
  using ::testing::HasSubstr;
  covenant::testing::log_capture capture;
  covenant::testing::scripted_engine model{R"({"text": "bad"})", R"({"text": "a"})",                     // retry, success
                                           R"({"text": "bad"})", R"({"text": "bad"})", R"({"text": "bad"})",  // post
                                           R"({"text": "boom"})", R"({"text": "boom"})", R"({"text": "boom"})"};  // hook
  model.then(covenant::testing::step::failure("server down", 503));
  struct throwing final : covenant::observer {
    void on_finished(const covenant::finished_event&) override { throw std::runtime_error("tracer down"); }
  };
  auto options = covenant::testing::instant({.tries = 2, .delay = std::chrono::seconds(0)});
  options.observers.push_back(std::make_shared<throwing>());
  const covenant::contract<logging_test::Picky> c{model, options};
  (void)c.run({"q"});
  (void)c.run({"q"});
  (void)c.run({"q"});
  (void)c.run({"q"});
  const std::string text = capture.text();
  // A retry says which attempt comes next and how many there are at most (1 + tries).
  EXPECT_THAT(text, HasSubstr("[info] Picky: output attempt 1 rejected (1 issue: text: must not be bad); asking again "
                              "after an injected wait of 0.000 s for attempt 2 of at most 3\n"));
  EXPECT_THAT(text, HasSubstr("[info] Picky: output attempt 2 rejected (1 issue: text: must not be bad); asking again "
                              "after an injected wait of 0.000 s for attempt 3 of at most 3\n"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("tries left")));
  EXPECT_THAT(text, HasSubstr("[info] Picky: succeeded after 2 model calls in "));
  // The model's replies decided the failure: info, like any result.
  EXPECT_THAT(text, HasSubstr("[info] Picky: failed at post after 3 model calls: text: must not be bad in "));
  // A hook threw something other than a violation, or the server failed: warn.
  EXPECT_THAT(text, HasSubstr("[warning] Picky: failed at post after 3 model calls: post threw std::runtime_error"));
  EXPECT_THAT(text, HasSubstr("[warning] Picky: failed at engine after 1 model call: "));
  EXPECT_THAT(text, HasSubstr("[warning] an observer threw (tracer down); the event is ignored"));
  EXPECT_THAT(text, ::testing::Not(HasSubstr("[error]")));
}

// A failed call's line says what its caller gets: run() and run_async() return the failed
// outcome, operator() throws (or, graceful, returns forward's value).
TEST(LogLevel, AFailedCallSaysWhatItsCallerGets) {
  using ::testing::HasSubstr;
  const std::string bad = R"({"text": "bad"})";
  covenant::testing::log_capture capture;
  covenant::testing::scripted_engine model{bad, bad, bad, bad, bad, bad};
  const covenant::contract<logging_test::Picky> strict{model, covenant::testing::instant({.tries = 0})};
  covenant::contract_options graceful_options = covenant::testing::instant({.tries = 0});
  graceful_options.graceful = true;
  const covenant::contract<logging_test::Picky> graceful{model, graceful_options};

  (void)strict.run({"q"});
  EXPECT_THAT(capture.text(), HasSubstr("; forward ran with the failure and run() returns the failed outcome\n"));
  EXPECT_THAT(capture.text(), ::testing::Not(HasSubstr("throws")));  // run() never throws for a failed contract

  (void)strict.run_async({"q"}).get();
  EXPECT_THAT(capture.text(), HasSubstr("; forward ran with the failure and the future gets the failed outcome\n"));

  EXPECT_THROW((void)strict({"q"}), covenant::contract_failure<logging_test::Answer>);
  EXPECT_THAT(capture.text(),
              HasSubstr("; forward ran with the failure, then operator() throws covenant::contract_failure\n"));

  (void)graceful({"q"});
  EXPECT_THAT(capture.text(), HasSubstr("; forward ran with the failure and operator() returns its value (graceful)\n"));

  // A dynamic contract has no forward.
  covenant::dynamic_task task;
  task.name = "DynamicAnswer";
  task.prompt = "Answer.";
  task.output = covenant::schema_set::parse("class Reply {\n  text string\n}\n").model("Reply");
  task.post = [](const boost::json::value& out, const boost::json::value&) {
    if (out.at("text") == "bad") throw covenant::violation("text", "must not be bad");
  };
  const covenant::dynamic_contract dynamic{model, task, covenant::testing::instant({.tries = 0})};
  (void)dynamic.run(boost::json::object{{"text", "q"}});
  EXPECT_THAT(capture.text(), HasSubstr("[info] DynamicAnswer: failed at post after 1 model call: text: must not be bad "
                                        "in "));
  EXPECT_THAT(capture.text(), HasSubstr(" out 0); run() returns the failed outcome\n"));
  EXPECT_THROW((void)dynamic(boost::json::object{{"text", "q"}}), covenant::contract_error);
  EXPECT_THAT(capture.text(), HasSubstr(" out 0); operator() throws covenant::contract_failure\n"));
}

}  // namespace
