// The contract's data path, remedy loop and forward fallback, driven by a scripted engine.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/gtest.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <sstream>
#include <stdexcept>

namespace contract_test {

struct Question {
  std::string text;
  int max_words = 50;
};

struct Answer {
  std::string answer;
  double confidence = 0;
  std::vector<std::string> sources;
};

struct Prepared {
  std::string question;
  std::vector<std::string> keywords;
};

// Answers must be confident enough; forward falls back to a fixed answer.
struct QA {
  static constexpr std::string_view prompt = "Answer the question.";
  void post(const Answer& a) const {
    if (a.confidence < 0.5) throw covenant::violation("confidence", "must be at least 0.5 for a final answer");
  }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const {
    if (o.success) return *o.result;
    return Answer{"I don't know.", 0, {}};
  }
};

// Reports several violations at once, and a non-violation exception for a magic answer.
struct Picky {
  static constexpr std::string_view prompt = "Answer carefully.";
  void pre(const Question& q) const {
    if (q.text.find('?') == std::string::npos) throw covenant::violation("text", "must be a question ending in '?'");
  }
  void post(const Answer& a) const {
    if (a.answer == "boom") throw std::out_of_range("index 7 out of range");
    covenant::violation v;
    if (a.sources.empty()) v.add("sources", "must cite at least one source");
    if (a.confidence > 0.99) v.add("confidence", "must not claim certainty");
    v.raise_if_any();
  }
  std::string forward(const Question& q, const covenant::outcome<Answer>& o) const {
    return o.success ? o.result->answer : "fallback for " + q.text;
  }
};

// act changes the type; post sees act's result as context.
struct WithAct {
  static constexpr std::string_view prompt = "Answer from the keywords.";
  Prepared act(const Question& q) const {
    Prepared p;
    p.question = q.text;
    for (std::size_t i = 0, j; i < q.text.size(); i = j + 1) {
      j = q.text.find(' ', i);
      if (j == std::string::npos) j = q.text.size();
      if (j - i > 4) p.keywords.push_back(q.text.substr(i, j - i));
    }
    return p;
  }
  void post(const Answer& a, const Prepared& p) const {
    if (a.sources.size() > p.keywords.size())
      throw covenant::violation("sources", "must have at most " + std::to_string(p.keywords.size()) + " items");
  }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

// act returning the input type: forward receives the act-modified input on success.
struct Normalize {
  static constexpr std::string_view prompt = "Answer.";
  Question act(const Question& q) const { return Question{q.text + " (normalized)", q.max_words}; }
  std::string forward(const Question& q, const covenant::outcome<Answer>&) const { return q.text; }
};

}  // namespace contract_test

template <>
struct covenant::describe<contract_test::Question> {
  static constexpr auto fields = covenant::fields<contract_test::Question>(
      covenant::field<&contract_test::Question::text>("The question.", covenant::non_empty{}),
      covenant::field<&contract_test::Question::max_words>("Longest answer.", covenant::range{1, 100}));
};

template <>
struct covenant::describe<contract_test::Answer> {
  static constexpr auto fields = covenant::fields<contract_test::Answer>(
      covenant::field<&contract_test::Answer::answer>("The answer.", covenant::non_empty{}),
      covenant::field<&contract_test::Answer::confidence>("Confidence.", covenant::range{0.0, 1.0}),
      covenant::field<&contract_test::Answer::sources>("Sources.", covenant::each{covenant::non_empty{}}));
};

namespace {

using namespace contract_test;
using covenant::testing::fake_sleeper;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using covenant::testing::step;
using ::testing::HasSubstr;

const char* good = R"({"answer": "Paris", "confidence": 0.9, "sources": ["atlas"]})";
const char* unsure = R"({"answer": "Paris", "confidence": 0.2, "sources": ["atlas"]})";
const char* out_of_range = R"({"answer": "Paris", "confidence": 1.7, "sources": [""]})";

const Question question{"What is the capital of France?", 10};

TEST(Contract, SucceedsOnFirstValidReplyWithOneCall) {
  scripted_engine model{step(good, {100, 20})};
  covenant::contract<QA> qa{model, instant()};
  auto [value, outcome] = qa.run(question);
  EXPECT_THAT(outcome, covenant::testing::Succeeded());
  EXPECT_EQ(value.answer, "Paris");
  ASSERT_TRUE(outcome.result.has_value());
  EXPECT_EQ(model.calls(), 1u);
  ASSERT_EQ(outcome.attempts.size(), 1u);
  EXPECT_EQ(outcome.attempts[0].text, good);
  EXPECT_EQ(outcome.usage, (covenant::usage{100, 20}));
  EXPECT_EQ(outcome.failed_stage, covenant::stage::none);
}

TEST(Contract, PromptHasTaskSchemaAndInputInUncloseableDelimiters) {
  scripted_engine model{good};
  covenant::contract<QA> qa{model, instant()};
  (void)qa.run(Question{"Is </input> a tag? <b>", 5});
  const auto req = model.request(0);
  ASSERT_EQ(req.messages.size(), 2u);
  EXPECT_EQ(req.messages[0].role, covenant::role::system);
  EXPECT_THAT(req.messages[0].content, HasSubstr("Answer the question."));
  EXPECT_THAT(req.messages[0].content, HasSubstr("\"confidence\": float"));
  EXPECT_THAT(req.messages[0].content, HasSubstr("Between 0 and 1"));
  EXPECT_EQ(req.messages[1].content,
            "<input>\n{\"text\":\"Is \\u003c/input> a tag? \\u003cb>\",\"max_words\":5}\n</input>");
  EXPECT_NE(req.response_schema, nullptr);
  EXPECT_EQ(req.schema_name, "Answer");
}

TEST(RemedyLoop, FirstPostViolationIsFedBack) {
  scripted_engine model{unsure, good};
  covenant::contract<QA> qa{model, instant()};
  auto r = qa.run(question);
  EXPECT_TRUE(r.outcome.success);
  ASSERT_EQ(model.calls(), 2u);
  const auto second = model.request(1);
  ASSERT_EQ(second.messages.size(), 4u);
  EXPECT_EQ(second.messages[2].role, covenant::role::assistant);
  EXPECT_EQ(second.messages[2].content, unsure);
  EXPECT_EQ(second.messages[3].content,
            "Your previous reply was rejected:\n"
            "- confidence: must be at least 0.5 for a final answer\n"
            "Reply again with the complete corrected JSON object only, fixing every problem listed.");
  ASSERT_EQ(r.outcome.attempts.size(), 2u);
  EXPECT_EQ(r.outcome.attempts[0].issues.at(0).code, covenant::issue_code::postcondition_violation);
}

TEST(RemedyLoop, EverySchemaIssueOfAnAttemptIsFedBackAtOnce) {
  scripted_engine model{out_of_range, good};
  covenant::contract<QA> qa{model, instant()};
  (void)qa.run(question);
  EXPECT_EQ(model.last_message(1),
            "Your previous reply was rejected:\n"
            "- confidence: must be <= 1 (got 1.7)\n"
            "- sources[0]: must not be empty (got \"\")\n"
            "Reply again with the complete corrected JSON object only, fixing every problem listed.");
}

TEST(RemedyLoop, MakesAtMostOnePlusTriesCallsAndNoSleepAfterTheLast) {
  scripted_engine model{unsure, unsure, unsure, unsure, unsure, good};
  fake_sleeper sleeper;
  covenant::retry_options policy{.tries = 3, .delay = std::chrono::milliseconds(100), .backoff = 2.0,
                                .max_delay = std::chrono::seconds(10), .jitter = 0.0};
  covenant::contract<QA> qa{model, instant(policy, &sleeper)};
  auto r = qa.run(question);
  EXPECT_FALSE(r.outcome.success);
  EXPECT_EQ(model.calls(), 4u);
  EXPECT_EQ(r.outcome.attempts.size(), 4u);
  using std::chrono::milliseconds;
  EXPECT_THAT(sleeper.sleeps(), ::testing::ElementsAre(milliseconds(100), milliseconds(200), milliseconds(400)));
  EXPECT_EQ(r.outcome.failed_stage, covenant::stage::post);
  EXPECT_EQ(r.value.answer, "I don't know.");
}

TEST(RemedyLoop, ZeroTriesMeansNoReask) {
  scripted_engine model{unsure, good};
  covenant::contract<QA> qa{model, instant({.tries = 0})};
  EXPECT_FALSE(qa.run(question).outcome.success);
  EXPECT_EQ(model.calls(), 1u);
}

TEST(RemedyLoop, DelaysAreCappedByMaxDelay) {
  scripted_engine model{unsure, unsure, unsure, unsure, unsure};
  fake_sleeper sleeper;
  covenant::contract<QA> qa{
      model, instant({.tries = 4, .delay = std::chrono::seconds(1), .backoff = 3.0, .max_delay = std::chrono::seconds(5),
                      .jitter = 0.0},
                     &sleeper)};
  (void)qa.run(question);
  using std::chrono::seconds;
  EXPECT_THAT(sleeper.sleeps(), ::testing::ElementsAre(seconds(1), seconds(3), seconds(5), seconds(5)));
}

TEST(RemedyLoop, JitteredDelaysAreSeededAndWithinBounds) {
  auto run_once = [] {
    scripted_engine model{unsure, unsure, unsure, unsure};
    fake_sleeper sleeper;
    covenant::contract<QA> qa{model,
                              instant({.tries = 3, .delay = std::chrono::seconds(1), .backoff = 2.0,
                                       .max_delay = std::chrono::seconds(3), .jitter = 0.5},
                                      &sleeper, 7)};
    (void)qa.run(question);
    return sleeper.sleeps();
  };
  const auto a = run_once();
  const auto b = run_once();
  EXPECT_EQ(a, b);
  ASSERT_EQ(a.size(), 3u);
  const double base[] = {1.0, 2.0, 3.0};
  for (std::size_t k = 0; k < 3; ++k) {
    const double s = std::chrono::duration<double>(a[k]).count();
    EXPECT_GE(s, base[k] * 0.5);
    EXPECT_LE(s, std::min(3.0, base[k] * 1.5));
  }
}

TEST(RemedyLoop, AccumulateErrorsListsEveryEarlierAttempt) {
  scripted_engine model{out_of_range, unsure, good};
  auto options = instant();
  options.accumulate_errors = true;
  covenant::contract<QA> qa{model, options};
  EXPECT_TRUE(qa.run(question).outcome.success);
  EXPECT_EQ(model.last_message(2),
            "Your previous reply was rejected:\n"
            "- confidence: must be at least 0.5 for a final answer\n"
            "Earlier replies were rejected too:\n"
            "Reply 1 ({\"answer\": \"Paris\", \"confidence\": 1.7, \"...):\n"
            "  - confidence: must be <= 1 (got 1.7)\n"
            "  - sources[0]: must not be empty (got \"\")\n"
            "Reply again with the complete corrected JSON object only, fixing every problem listed.");
  // Without accumulation only the latest attempt is shown.
  scripted_engine model2{out_of_range, unsure, good};
  covenant::contract<QA> qa2{model2, instant()};
  (void)qa2.run(question);
  EXPECT_THAT(model2.last_message(2), ::testing::Not(HasSubstr("Earlier")));
}

TEST(RemedyLoop, PostRemedyOffFailsWithoutReasking) {
  scripted_engine model{unsure, good};
  auto options = instant();
  options.post_remedy = false;
  covenant::contract<QA> qa{model, options};
  auto r = qa.run(question);
  EXPECT_THAT(r.outcome, covenant::testing::FailedAt(covenant::stage::post));
  EXPECT_EQ(model.calls(), 1u);
}

TEST(RemedyLoop, UnreadableReplyFailsAtParseAndIsFedBack) {
  scripted_engine model{"I think the answer is Paris.", good};
  covenant::contract<QA> qa{model, instant()};
  auto r = qa.run(question);
  EXPECT_TRUE(r.outcome.success);
  EXPECT_EQ(r.outcome.attempts[0].issues.at(0).code, covenant::issue_code::parse_error);
  EXPECT_THAT(model.last_message(1), HasSubstr("- invalid JSON at line 1, column 1"));
}

TEST(Parse, JsonInsideMarkdownFenceAndProseIsReadWithANote) {
  scripted_engine model{std::string("Sure! Here it is:\n```json\n") + good + "\n```\nAnything else?"};
  covenant::contract<QA> qa{model, instant()};
  auto r = qa.run(question);
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_EQ(model.calls(), 1u);
  ASSERT_EQ(r.outcome.notes.size(), 1u);
  EXPECT_EQ(r.outcome.notes[0].kind, covenant::note_kind::extracted);
}

TEST(Parse, MalformedButReadableReplyCostsNoReask) {
  scripted_engine model{"{'answer': 'Paris', confidence: '90%', sources: ['atlas',],}"};
  covenant::contract<QA> qa{model, instant()};
  auto r = qa.run(question);
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_EQ(model.calls(), 1u);
  EXPECT_DOUBLE_EQ(r.value.confidence, 0.9);
  bool repaired = false;
  bool coerced = false;
  for (const auto& n : r.outcome.notes) {
    repaired = repaired || n.kind == covenant::note_kind::repaired;
    coerced = coerced || (n.kind == covenant::note_kind::coerced && n.path.to_string() == "confidence");
  }
  EXPECT_TRUE(repaired);
  EXPECT_TRUE(coerced);
}

TEST(Parse, StrictnessStrictReadsOnlyJson) {
  scripted_engine model{"{'answer': 'Paris', 'confidence': 0.9, 'sources': ['atlas']}", good};
  auto options = instant();
  options.strictness = covenant::strictness::strict;
  covenant::contract<QA> qa{model, options};
  auto r = qa.run(question);
  EXPECT_TRUE(r.outcome.success);
  EXPECT_EQ(model.calls(), 2u);
  EXPECT_EQ(r.outcome.attempts[0].issues.at(0).code, covenant::issue_code::parse_error);
}

TEST(Parse, TruncatedReplyIsAcceptedOnlyIfItValidatesAndKeepsItsNote) {
  // Cut inside the last source: the unfinished item is dropped, the rest validates.
  scripted_engine model{R"({"answer": "Paris", "confidence": 0.9, "sources": ["atlas", "encyclo)"};
  covenant::contract<QA> qa{model, instant()};
  auto r = qa.run(question);
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_EQ(r.value.sources, std::vector<std::string>{"atlas"});
  bool truncated = false;
  for (const auto& n : r.outcome.notes) truncated = truncated || n.kind == covenant::note_kind::truncated;
  EXPECT_TRUE(truncated);
  // Cut before a required field: rejected, and the model is told its reply was cut off.
  scripted_engine cut{R"({"answer": "Paris", "confiden)", good};
  covenant::contract<QA> qa2{cut, instant()};
  EXPECT_TRUE(qa2.run(question).outcome.success);
  EXPECT_THAT(cut.last_message(1), HasSubstr("- confidence: required field is missing\n"
                                             "- sources: required field is missing\n"
                                             "Your reply was cut off before its end"));
}

TEST(Parse, TruncatedReplyIsMarkedOnTheOutcome) {
  scripted_engine model{R"({"answer": "Paris", "confidence": 0.9, "sources": ["atlas", "encyclo)", good};
  covenant::contract<QA> qa{model, instant()};
  auto r = qa.run(question);
  ASSERT_TRUE(r.outcome.success);
  EXPECT_TRUE(r.outcome.truncated);
  EXPECT_EQ(model.calls(), 1u);
  // The engine's own token limit marks a reply as cut off as well.
  scripted_engine limited{step(good, {10, 5}, "length")};
  covenant::contract<QA> qa2{limited, instant()};
  EXPECT_TRUE(qa2.run(question).outcome.truncated);
  scripted_engine complete{good};
  covenant::contract<QA> qa3{complete, instant()};
  EXPECT_FALSE(qa3.run(question).outcome.truncated);
}

TEST(Parse, AcceptTruncatedFalseAsksAgainForACutReply) {
  scripted_engine model{R"({"answer": "Paris", "confidence": 0.9, "sources": ["atlas", "encyclo)", good};
  auto options = instant();
  options.accept_truncated = false;
  covenant::contract<QA> qa{model, options};
  auto r = qa.run(question);
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_FALSE(r.outcome.truncated);
  EXPECT_EQ(model.calls(), 2u);
  EXPECT_EQ(r.value.sources, std::vector<std::string>{"atlas"});
  EXPECT_EQ(model.last_message(1),
            "Your previous reply was rejected:\n"
            "- the reply was cut off before its end\n"
            "Your reply was cut off before its end; what was cut mid-way was dropped.\n"
            "Reply again with the complete corrected JSON object only, fixing every problem listed.");
  EXPECT_EQ(r.outcome.attempts.at(0).issues.at(0).code, covenant::issue_code::parse_error);
}

TEST(Parse, ACutReplyRejectedWithNoTriesLeftLeavesNoResult) {
  // The cut reply reads and validates (its last list item is dropped), but accept_truncated is
  // off: the call fails, and the value read from the rejected reply is not its result.
  scripted_engine model{R"({"answer": "Paris", "confidence": 0.9, "sources": ["atlas", "encyclo)"};
  auto options = instant({.tries = 0});
  options.accept_truncated = false;
  covenant::contract<QA> qa{model, options};
  auto r = qa.run(question);
  EXPECT_FALSE(r.outcome.success);
  EXPECT_EQ(r.outcome.failed_stage, covenant::stage::parse);
  EXPECT_FALSE(r.outcome.result.has_value());
}

TEST(Forward, AlwaysRunsAndGetsTheFailureAndOriginalInput) {
  const char* no_sources = R"({"answer": "Paris", "confidence": 0.9, "sources": []})";
  scripted_engine model{no_sources, no_sources};
  covenant::contract<Picky> picky{model, instant({.tries = 1})};
  auto r = picky.run(question);
  EXPECT_EQ(r.value, "fallback for What is the capital of France?");
  EXPECT_FALSE(r.outcome.result.has_value());
  EXPECT_EQ(r.outcome.attempts.size(), 2u);
}

TEST(Forward, OnSuccessReceivesTheActModifiedInput) {
  scripted_engine model{good};
  covenant::contract<Normalize> c{model, instant()};
  EXPECT_EQ(c(question), "What is the capital of France? (normalized)");
  scripted_engine failing{"nope", "nope", "nope"};
  auto options = instant({.tries = 2});
  options.graceful = true;
  covenant::contract<Normalize> c2{failing, options};
  EXPECT_EQ(c2(question), "What is the capital of France?");
}

TEST(Graceful, FalseThrowsAfterForwardWithFallbackAndHistory) {
  scripted_engine model{unsure, unsure};
  covenant::contract<QA> qa{model, instant({.tries = 1})};
  try {
    (void)qa(question);
    FAIL() << "expected contract_failure";
  } catch (const covenant::contract_failure<Answer>& e) {
    EXPECT_EQ(e.fallback().answer, "I don't know.");
    EXPECT_EQ(e.outcome().attempts.size(), 2u);
    EXPECT_EQ(e.outcome().failed_stage, covenant::stage::post);
    EXPECT_THAT(e.what(), HasSubstr("failed at post after 2 model calls"));
  }
}

TEST(Graceful, TrueReturnsForwardsValueAndRunNeverThrows) {
  scripted_engine model{unsure, unsure, unsure, unsure};
  auto options = instant({.tries = 1});
  options.graceful = true;
  covenant::contract<QA> graceful{model, options};
  EXPECT_EQ(graceful(question).answer, "I don't know.");
  covenant::contract<QA> strict{model, instant({.tries = 1})};
  auto r = strict.run(question);
  EXPECT_FALSE(r.outcome.success);
}

TEST(Hooks, SeveralViolationsAreReportedAtOnce) {
  scripted_engine model{R"({"answer": "yes", "confidence": 1.0, "sources": []})", good};
  covenant::contract<Picky> picky{model, instant()};
  auto r = picky.run(question);
  ASSERT_TRUE(r.outcome.success);
  EXPECT_EQ(model.last_message(1),
            "Your previous reply was rejected:\n"
            "- sources: must cite at least one source\n"
            "- confidence: must not claim certainty\n"
            "Reply again with the complete corrected JSON object only, fixing every problem listed.");
}

TEST(Hooks, OtherExceptionsAreRecordedAndTreatedAsViolations) {
  scripted_engine model{R"({"answer": "boom", "confidence": 0.5, "sources": ["s"]})", good};
  covenant::contract<Picky> picky{model, instant()};
  auto r = picky.run(question);
  ASSERT_TRUE(r.outcome.success);
  const auto& first = r.outcome.attempts.at(0).issues.at(0);
  EXPECT_EQ(first.code, covenant::issue_code::hook_exception);
  EXPECT_EQ(first.message, "post threw std::out_of_range: index 7 out of range");
}

TEST(PreRemedy, OffFailsAtPreWithoutCallingTheModel) {
  scripted_engine model{good};
  covenant::contract<Picky> picky{model, instant()};
  auto r = picky.run(Question{"Capital of France", 10});
  EXPECT_THAT(r.outcome, covenant::testing::FailedAt(covenant::stage::pre));
  EXPECT_EQ(model.calls(), 0u);
  EXPECT_THAT(r.outcome.issues, ::testing::ElementsAre(covenant::testing::IssueRendered(
                                    "text: must be a question ending in '?'")));
  EXPECT_EQ(r.outcome.issues[0].code, covenant::issue_code::precondition_violation);
}

TEST(PreRemedy, ShowsTheBadInputAndViolationsThenUsesTheCorrectedInput) {
  scripted_engine model{R"({"text": "What is the capital of France?", "max_words": 10})", good};
  auto options = instant();
  options.pre_remedy = true;
  covenant::contract<Picky> picky{model, options};
  auto r = picky.run(Question{"Capital of France", 10});
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_EQ(model.calls(), 2u);
  const auto repair = model.request(0);
  EXPECT_EQ(repair.messages[1].content,
            "<input>\n{\"text\":\"Capital of France\",\"max_words\":10}\n</input>\n"
            "Problems with this input:\n"
            "- text: must be a question ending in '?'");
  EXPECT_THAT(repair.messages[0].content, HasSubstr("Answer carefully."));
  EXPECT_EQ(r.outcome.attempts[0].kind, covenant::attempt_kind::input_repair);
  EXPECT_EQ(model.request(1).messages[1].content,
            "<input>\n{\"text\":\"What is the capital of France?\",\"max_words\":10}\n</input>");
  // The call succeeded; the input's own issues stay on the outcome.
  EXPECT_TRUE(r.outcome.issues.empty());
  EXPECT_THAT(r.outcome.input_issues, ::testing::ElementsAre(covenant::testing::IssueRendered(
                                          "text: must be a question ending in '?'")));
}

TEST(PreRemedy, InputSchemaViolationsAreRemediedToo) {
  scripted_engine model{R"({"text": "Why?", "max_words": 500})", R"({"text": "Why?", "max_words": 50})", good};
  auto options = instant();
  options.pre_remedy = true;
  covenant::contract<Picky> picky{model, options};
  auto r = picky.run(Question{"", 500});
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_THAT(model.request(0).messages[1].content, HasSubstr("- text: must not be empty (got \"\")"));
  EXPECT_THAT(model.request(0).messages[1].content, HasSubstr("- max_words: must be <= 100 (got 500)"));
  EXPECT_THAT(model.last_message(1), HasSubstr("- max_words: must be <= 100 (got 500)"));
}

TEST(PreRemedy, AFailedRepairKeepsTheInputsIssuesAndTheLastAttempts) {
  // The input breaks the schema; the repair keeps the text but is still not a question.
  scripted_engine model{R"({"text": "Still no question", "max_words": 10})"};
  auto options = instant({.tries = 0});
  options.pre_remedy = true;
  covenant::contract<Picky> picky{model, options};
  auto r = picky.run(Question{"Capital of France", 500});
  EXPECT_THAT(r.outcome, covenant::testing::FailedAt(covenant::stage::pre_remedy));
  EXPECT_THAT(r.outcome.input_issues,
              ::testing::ElementsAre(covenant::testing::IssueRendered("max_words: must be <= 100 (got 500)")));
  EXPECT_THAT(r.outcome.issues, ::testing::ElementsAre(covenant::testing::IssueRendered(
                                    "text: must be a question ending in '?'")));
  EXPECT_EQ(r.value, "fallback for Capital of France");
  // Without pre_remedy the input's issues are the call's issues.
  scripted_engine unused;
  covenant::contract<Picky> off{unused, instant()};
  auto o = off.run(Question{"Capital of France", 10});
  EXPECT_THAT(o.outcome.input_issues, ::testing::ElementsAre(covenant::testing::IssueRendered(
                                          "text: must be a question ending in '?'")));
  EXPECT_EQ(o.outcome.input_issues, o.outcome.issues);
}

TEST(InputValidation, InvalidInputFailsWithoutCallingTheModel) {
  scripted_engine model{good};
  covenant::contract<QA> qa{model, instant()};
  auto r = qa.run(Question{"", 0});
  EXPECT_THAT(r.outcome, covenant::testing::FailedAt(covenant::stage::input_validation));
  EXPECT_EQ(r.outcome.issues.size(), 2u);
  EXPECT_EQ(model.calls(), 0u);
}

TEST(Engine, FailuresAreNotShownToTheModelAsViolations) {
  scripted_engine model{step::failure("quota exceeded", 429), good};
  covenant::contract<QA> qa{model, instant()};
  auto r = qa.run(question);
  EXPECT_THAT(r.outcome, covenant::testing::FailedAt(covenant::stage::engine));
  EXPECT_EQ(model.calls(), 1u);
  EXPECT_EQ(r.outcome.issues.at(0).code, covenant::issue_code::engine_error);
  // The summary names the HTTP status.
  EXPECT_EQ(r.outcome.issues.at(0).message, "engine failed (HTTP 429): quota exceeded");
  EXPECT_THAT(r.outcome.summary(), HasSubstr("engine failed (HTTP 429): quota exceeded"));
  EXPECT_TRUE(r.outcome.attempts.at(0).engine_failed);
}

// An engine that throws something that is not a std::exception.
class odd_engine : public covenant::engine {
 public:
  covenant::chat_response complete(const covenant::chat_request&) override { throw 42; }
};

TEST(Engine, AnExceptionOfAnyTypeFailsTheCallAndForwardStillRuns) {
  odd_engine model;
  covenant::contract<Picky> picky{model, instant()};
  auto r = picky.run(question);
  EXPECT_THAT(r.outcome, covenant::testing::FailedAt(covenant::stage::engine));
  EXPECT_EQ(r.value, "fallback for What is the capital of France?");
  ASSERT_EQ(r.outcome.issues.size(), 1u);
  EXPECT_EQ(r.outcome.issues[0].code, covenant::issue_code::engine_error);
  EXPECT_EQ(r.outcome.issues[0].message, "engine failed: unknown exception");
}

// A pre() that throws something that is not a std::exception.
struct OddPre {
  static constexpr std::string_view prompt = "p";
  void pre(const Question&) const { throw "not an exception object"; }
  std::string forward(const Question&, const covenant::outcome<Answer>& o) const {
    return o.success ? "ok" : "fallback";
  }
};

TEST(Hooks, AnyThrownValueFromPreIsRecordedAndForwardRuns) {
  scripted_engine model{good};
  covenant::contract<OddPre> c{model, instant()};
  auto r = c.run(question);
  EXPECT_EQ(r.value, "fallback");
  EXPECT_THAT(r.outcome, covenant::testing::FailedAt(covenant::stage::pre));
  ASSERT_EQ(r.outcome.issues.size(), 1u);
  EXPECT_EQ(r.outcome.issues[0].code, covenant::issue_code::hook_exception);
  EXPECT_EQ(r.outcome.issues[0].message, "pre threw unknown exception");
  EXPECT_EQ(model.calls(), 0u);
}

struct ThrowingAct {
  static constexpr std::string_view prompt = "p";
  Prepared act(const Question&) const { throw std::runtime_error("index unavailable"); }
  std::string forward(const Question& q, const covenant::outcome<Answer>& o) const {
    return o.success ? "ok" : "fallback for " + q.text;
  }
};

TEST(Hooks, AnExceptionFromActFailsAtActAndForwardRuns) {
  scripted_engine model{good};
  covenant::contract<ThrowingAct> c{model, instant()};
  auto r = c.run(question);
  EXPECT_EQ(r.value, "fallback for What is the capital of France?");
  EXPECT_THAT(r.outcome, covenant::testing::FailedAt(covenant::stage::act));
  ASSERT_EQ(r.outcome.issues.size(), 1u);
  EXPECT_EQ(r.outcome.issues[0].message, "act threw std::runtime_error: index unavailable");
  EXPECT_EQ(model.calls(), 0u);
}

TEST(Usage, IsSummedOverEveryAttemptOnSuccessAndFailure) {
  scripted_engine model{step(unsure, {10, 5}), step(good, {12, 6})};
  covenant::contract<QA> qa{model, instant()};
  EXPECT_EQ(qa.run(question).outcome.usage, (covenant::usage{22, 11}));
  scripted_engine failing{step(unsure, {10, 5}), step(unsure, {10, 5})};
  covenant::contract<QA> qa2{failing, instant({.tries = 1})};
  EXPECT_EQ(qa2.run(question).outcome.usage, (covenant::usage{20, 10}));
}

TEST(Act, ContextReachesPostAndPrompt) {
  scripted_engine model{R"({"answer": "a", "confidence": 0.9, "sources": ["1", "2", "3"]})",
                        R"({"answer": "a", "confidence": 0.9, "sources": ["1"]})"};
  covenant::contract<WithAct> c{model, instant()};
  auto r = c.run(Question{"Where is the Louvre?", 10});
  ASSERT_TRUE(r.outcome.success);
  EXPECT_EQ(model.request(0).messages[1].content,
            "<input>\n{\"question\":\"Where is the Louvre?\",\"keywords\":[\"Where\",\"Louvre?\"]}\n</input>");
  EXPECT_THAT(model.last_message(1), HasSubstr("- sources: must have at most 2 items"));
  EXPECT_EQ(r.outcome.attempts.size(), 2u);
}

TEST(Outcome, BelongsToItsCallOnly) {
  scripted_engine model{unsure, unsure, good};
  covenant::contract<QA> qa{model, instant({.tries = 1})};
  auto first = qa.run(question);
  EXPECT_FALSE(first.outcome.success);
  scripted_engine model2{good};
  covenant::contract<QA> qa2{model2, instant()};
  auto second = qa2.run(question);
  EXPECT_TRUE(second.outcome.success);
  EXPECT_EQ(second.outcome.attempts.size(), 1u);
  EXPECT_TRUE(second.outcome.issues.empty());
}

TEST(PerfStats, RecordsEveryStageWithCountsAndShares) {
  scripted_engine model{unsure, good};
  auto options = instant();
  covenant::testing::manual_clock clock{std::chrono::microseconds(10)};
  options.clock = [&clock] { return clock(); };
  covenant::contract<QA> qa{model, options};
  (void)qa.run(question);
  (void)qa.run(question);  // script exhausted: engine failure
  const auto& stats = qa.stats();
  EXPECT_EQ(stats.of(covenant::perf_stage::total).count, 2u);
  EXPECT_EQ(stats.of(covenant::perf_stage::engine).count, 2u);
  EXPECT_EQ(stats.of(covenant::perf_stage::post).count, 1u);
  EXPECT_EQ(stats.of(covenant::perf_stage::post_remedy).count, 1u);
  EXPECT_EQ(stats.of(covenant::perf_stage::forward).count, 2u);
  EXPECT_GT(stats.of(covenant::perf_stage::engine).share, 0.0);
  double shares = 0;
  for (const auto& s : stats.snapshot())
    if (s.name != "total") shares += s.share;
  EXPECT_NEAR(shares, 1.0, 1e-9);
  EXPECT_THAT(stats.table(), HasSubstr("engine"));
  EXPECT_EQ(stats.to_json().at("stages").at("total").at("count").as_uint64(), 2u);
  qa.stats().reset();
  EXPECT_EQ(stats.of(covenant::perf_stage::total).count, 0u);
}

}  // namespace

namespace {

TEST(Logging, InfoPerResultRetryAndFailureOfTheReplies) {
  covenant::testing::log_capture log;
  scripted_engine model{unsure, good, unsure, unsure};
  covenant::contract<QA> qa{model, instant({.tries = 1})};
  (void)qa.run(question);
  (void)qa.run(question);
  const std::string text = log.text();
  // The sleeper is injected (instant()): the line says so instead of claiming a real wait.
  EXPECT_THAT(text, HasSubstr("[info] QA: output attempt 1 rejected (1 issue: confidence: must be at least 0.5 for a "
                              "final answer); asking again after an injected wait of "));
  EXPECT_THAT(text, HasSubstr(" s for attempt 2 of at most 2\n"));
  EXPECT_THAT(text, HasSubstr("[info] QA: succeeded after 2 model calls in "));
  // The model's replies failed the contract: application flow, not something to attend to.
  EXPECT_THAT(text, HasSubstr("[info] QA: failed at post after 2 model calls: confidence: must be at least 0.5 for a "
                              "final answer in "));
  EXPECT_THAT(text, HasSubstr("; forward ran with the failure and run() returns the failed outcome\n"));
  // Prompts are logged only with verbose.
  EXPECT_THAT(text, ::testing::Not(HasSubstr("system prompt")));
}

TEST(Logging, VerboseLogsPromptsAndCorrectiveMessagesAtDebugLevel) {
  covenant::testing::log_capture log;
  scripted_engine model{unsure, good};
  auto options = instant();
  options.verbose = true;
  covenant::contract<QA> qa{model, options};
  (void)qa.run(question);
  const std::string text = log.text();
  EXPECT_THAT(text, HasSubstr("[debug] QA: system prompt:\nAnswer the question."));
  EXPECT_THAT(text, HasSubstr("[debug] QA: user prompt:\n<input>\n"));
  EXPECT_THAT(text, HasSubstr("[debug] QA: corrective message:\nYour previous reply was rejected:\n"));
}

}  // namespace

namespace prompt_rules_test {

struct Ticket {
  std::string subject;
  int priority = 3;
};

struct Triage {
  std::string team;
};

struct Route {
  static constexpr std::string_view prompt = "Route the ticket.";
  static constexpr std::string_view rules[] = {"The team is never \"unknown\".",
                                               "Tickets of priority 1 go to the on-call team."};
  void post(const Triage& t) const {
    if (t.team == "unknown") throw covenant::violation("team", "must not be unknown");
  }
  Triage forward(const Ticket&, const covenant::outcome<Triage>& o) const { return o.result.value_or(Triage{}); }
};

struct Plain {
  static constexpr std::string_view prompt = "Route the ticket.";
  Triage forward(const Ticket&, const covenant::outcome<Triage>& o) const { return o.result.value_or(Triage{}); }
};

struct Bare {
  std::string text;
};

struct FromBare {
  static constexpr std::string_view prompt = "Route the text.";
  Triage forward(const Bare&, const covenant::outcome<Triage>& o) const { return o.result.value_or(Triage{}); }
};

}  // namespace prompt_rules_test

template <>
struct covenant::describe<prompt_rules_test::Ticket> {
  static constexpr auto fields = covenant::fields<prompt_rules_test::Ticket>(
      covenant::field<&prompt_rules_test::Ticket::subject>("The customer's subject line."),
      covenant::field<&prompt_rules_test::Ticket::priority>("1 is the most urgent.", covenant::range{1, 5}));
};

namespace {

TEST(PromptRules, StatedRulesAreInTheFirstRequest) {
  using namespace prompt_rules_test;
  scripted_engine model{R"({"team": "billing"})"};
  covenant::contract<Route> c{model, instant()};
  (void)c.run(Ticket{"Refund", 2});
  ASSERT_EQ(model.calls(), 1u);
  const std::string system = model.request(0).messages.at(0).content;
  EXPECT_THAT(system, HasSubstr("Your answer must also follow these rules (they are checked):\n"
                                "- The team is never \"unknown\".\n"
                                "- Tickets of priority 1 go to the on-call team."));
  // The rules come after the output format.
  EXPECT_LT(system.find("Answer with a JSON object"), system.find("these rules"));
}

TEST(PromptRules, TheInputsDescriptionsAreShownUnlessTurnedOff) {
  using namespace prompt_rules_test;
  scripted_engine model{R"({"team": "billing"})", R"({"team": "billing"})", R"({"team": "billing"})"};
  covenant::contract<Plain> shown{model, instant()};
  EXPECT_THAT(shown.system_prompt(), HasSubstr("The input follows this schema:\n{\n  // The customer's subject line."));
  EXPECT_THAT(shown.system_prompt(), HasSubstr("1 is the most urgent. Between 1 and 5."));
  EXPECT_THAT(shown.system_prompt(), ::testing::Not(HasSubstr("these rules")));
  auto options = instant();
  options.describe_input = false;
  covenant::contract<Plain> hidden{model, options};
  EXPECT_THAT(hidden.system_prompt(), ::testing::Not(HasSubstr("The input follows this schema")));
  // An input type without any description or constraint is not described.
  covenant::contract<FromBare> bare{model, instant()};
  EXPECT_THAT(bare.system_prompt(), ::testing::Not(HasSubstr("The input follows this schema")));
  (void)shown.run(Ticket{"Refund", 2});
  EXPECT_EQ(model.request(0).messages.at(0).content, shown.system_prompt());
}

}  // namespace
