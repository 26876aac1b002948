// Stopping a bad stream early: a finished value that already breaks a constraint ends the
// transfer at once and the model is asked again with that violation, instead of paying for the
// rest of the reply.
#include <covenant/contract/contract.hpp>
#include <covenant/read/decode.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "loopback_server.hpp"
#include "qa_model.hpp"

namespace early_stop_test {

using covenant_test::confidence_first::Answer;
using covenant_test::confidence_first::Question;

struct Ask {
  static constexpr std::string_view prompt = "Answer with your confidence first.";
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

struct Headline {
  std::string headline;
  int words = 0;
  std::string body;
};
struct Write {
  static constexpr std::string_view prompt = "Write the headline first.";
  Headline forward(const Question&, const covenant::outcome<Headline>& o) const {
    return o.result.value_or(Headline{});
  }
};

// The same output with the same checks, not marked streaming-safe.
struct PlainHeadline {
  std::string headline;
  int words = 0;
  std::string body;
};
struct WritePlain {
  static constexpr std::string_view prompt = "Write the headline first.";
  PlainHeadline forward(const Question&, const covenant::outcome<PlainHeadline>& o) const {
    return o.result.value_or(PlainHeadline{});
  }
};

constexpr auto no_shouting = [](const std::string& s) { return s.find('!') == std::string::npos; };
constexpr auto even = [](const int& n) -> std::optional<std::string> {
  if (n % 2 == 0) return std::nullopt;
  return n < 0 ? "must be even and not negative" : "must be even";
};

}  // namespace early_stop_test

template <>
struct covenant::describe<early_stop_test::Headline> {
  static constexpr auto fields = covenant::fields<early_stop_test::Headline>(
      covenant::field<&early_stop_test::Headline::headline>(
          "The headline.", covenant::predicate{early_stop_test::no_shouting, "must not contain '!'"}.streaming_safe()),
      covenant::field<&early_stop_test::Headline::words>(
          "Words in the body.", covenant::predicate{early_stop_test::even, "must be even"}.streaming_safe()));
};

template <>
struct covenant::describe<early_stop_test::PlainHeadline> {
  static constexpr auto fields = covenant::fields<early_stop_test::PlainHeadline>(
      covenant::field<&early_stop_test::PlainHeadline::headline>(
          "The headline.", covenant::predicate{early_stop_test::no_shouting, "must not contain '!'"}),
      covenant::field<&early_stop_test::PlainHeadline::words>(
          "Words in the body.", covenant::predicate{early_stop_test::even, "must be even"}));
};

namespace {

using namespace std::chrono_literals;
using namespace early_stop_test;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using ::testing::HasSubstr;

const std::string long_tail(600, 'x');
const std::string bad = R"({"confidence": 1.7, "answer": "Paris", "reasoning": ")" + long_tail + R"("})";
const std::string good = R"({"confidence": 0.9, "answer": "Paris", "reasoning": "short"})";

TEST(EarlyStop, AViolationInTheStreamStopsItAndTheModelIsAskedAgainAtOnce) {
  scripted_engine model{bad, good};
  model.stream_in_chunks(8, 2ms);
  covenant::contract<Ask> c{model, instant({.tries = 1})};
  std::vector<std::string> events;
  auto r = c.stream(Question{"capital of France?"}, [&](const covenant::stream_update<Answer>& u) {
               if (u.what == covenant::stream_update<Answer>::kind::attempt_started)
                 events.push_back("start " + std::to_string(u.attempt));
             }).get();
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_EQ(r.value.answer, "Paris");
  EXPECT_THAT(events, ::testing::ElementsAre("start 1", "start 2"));
  ASSERT_EQ(r.outcome.attempts.size(), 2u);
  const covenant::attempt& first = r.outcome.attempts[0];
  ASSERT_EQ(first.issues.size(), 1u);
  EXPECT_EQ(first.issues[0].to_string(), "confidence: must be <= 1 (got 1.7)");
  EXPECT_LT(first.text.size(), bad.size() / 2);  // stopped long before the end
  EXPECT_TRUE(std::any_of(first.notes.begin(), first.notes.end(),
                          [](const covenant::note& n) { return n.kind == covenant::note_kind::stopped_early; }));
  // The corrective message names the violation.
  const std::string correction = model.last_message(1);
  EXPECT_THAT(correction, HasSubstr("- confidence: must be <= 1 (got 1.7)"));
  EXPECT_THAT(correction, HasSubstr("stopped as soon as it broke this rule"));
  EXPECT_EQ(c.stats().early_stops(), 1u);
  // The engine saw the stop and sent nothing more of the first reply (one that ignored it would
  // run to its end).
  for (int i = 0; i < 500 && !model.stopped(0); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(model.stopped(0));
  EXPECT_LT(model.streamed_bytes(0), bad.size());
}

TEST(EarlyStop, OffTheWholeReplyIsReadAndRejectedAsUsual) {
  scripted_engine model{bad, good};
  model.stream_in_chunks(64);
  auto options = instant({.tries = 1});
  options.early_stop = false;
  covenant::contract<Ask> c{model, options};
  auto r = c.stream(Question{"?"}, [](const covenant::stream_update<Answer>&) {}).get();
  ASSERT_TRUE(r.outcome.success);
  EXPECT_EQ(r.outcome.attempts[0].text, bad);
  EXPECT_EQ(r.outcome.attempts[0].issues.at(0).to_string(), "confidence: must be <= 1 (got 1.7)");
  EXPECT_EQ(c.stats().early_stops(), 0u);
}

TEST(EarlyStop, ValuesTheFinalReaderCoercesDoNotStopTheStream) {
  // "0.9" as a string is read as 0.9 at the coerce level: no early stop, accepted.
  const std::string quoted = R"({"confidence": "0.9", "answer": "Paris", "reasoning": ")" + long_tail + R"("})";
  scripted_engine model{quoted};
  model.stream_in_chunks(16);
  covenant::contract<Ask> c{model, instant()};
  auto r = c.stream(Question{"?"}, [](const covenant::stream_update<Answer>&) {}).get();
  EXPECT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_EQ(r.outcome.attempts.size(), 1u);
  EXPECT_EQ(c.stats().early_stops(), 0u);
}

TEST(EarlyStop, OverHttpTheConnectionIsClosedBeforeTheEndAndFewerTokensArePaidFor) {
  // Each piece is one "token", 10 ms apart; the first reply breaks the bound in its first pieces.
  std::vector<std::string> bad_pieces = {"{\"confidence\": ", "1.7", ", \"answer\": \"Paris\", \"reasoning\": \""};
  for (int i = 0; i < 100; ++i) bad_pieces.push_back("word ");
  bad_pieces.push_back("\"}");
  const auto bad_stream = covenant_test::openai_stream(bad_pieces, "stop", 50, static_cast<int>(bad_pieces.size()));
  const auto good_stream = covenant_test::openai_stream({good}, "stop", 60, 1);
  covenant_test::loopback_server server([&](const covenant_test::received_request&, std::size_t i) {
    covenant_test::response_plan p;
    p.content_type = "text/event-stream";
    p.chunks = i == 0 ? bad_stream : good_stream;
    p.chunk_delay = 10ms;
    return p;
  });
  covenant::http_engine engine({.base_url = server.base_url(), .retry = {.tries = 4, .delay = std::chrono::milliseconds(1)}});
  covenant::contract<Ask> c{engine, instant({.tries = 1})};
  auto r = c.stream(Question{"?"}, [](const covenant::stream_update<Answer>&) {}).get();
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  ASSERT_EQ(server.requests(), 2u);
  for (int i = 0; i < 200 && !server.client_left_early(0); ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(server.client_left_early(0));                 // the connection was closed mid-reply
  EXPECT_LT(server.chunks_sent(0), bad_stream.size() / 4);  // most of the reply was never sent
  const auto second = boost::json::parse(server.request(1).body);
  const auto& messages = second.at("messages").as_array();
  const std::string correction(messages.back().at("content").as_string());
  EXPECT_THAT(correction, HasSubstr("confidence: must be <= 1 (got 1.7)"));
  EXPECT_EQ(c.stats().early_stops(), 1u);
}

// A runtime schema whose `level` is a closed choice: the first reply streams "EXTREME" and then a
// long text; the stream must stop before the text and the model be asked again with the violation.
void expect_level_stops_the_stream(const char* schema) {
  const auto set = covenant::schema_set::parse(schema);
  scripted_engine model{R"({"level": "EXTREME", "text": ")" + long_tail + R"("})", R"({"level": "HIGH", "text": "ok"})"};
  model.stream_in_chunks(6, 1ms);
  covenant::dynamic_contract c{model, {.name = "levels", .prompt = "Rate.", .output = set.model("Out")},
                               instant({.tries = 1})};
  auto o = c.stream(boost::json::object{{"q", "x"}}, [](const covenant::stream_update<boost::json::value>&) {}).get().outcome;
  ASSERT_TRUE(o.success) << o.summary();
  ASSERT_EQ(o.attempts.size(), 2u);
  EXPECT_EQ(o.attempts[0].issues.at(0).to_string(), "level: must be one of \"LOW\", \"HIGH\" (got \"EXTREME\")");
  EXPECT_LT(o.attempts[0].text.size(), 100u);
  EXPECT_EQ(c.stats().early_stops(), 1u);
}

TEST(EarlyStop, DynamicContractsStopEarlyToo) {
  expect_level_stops_the_stream("enum Level {\n  LOW\n  HIGH\n}\nclass Out {\n  level Level\n  text string\n}\n");
}

TEST(EarlyStop, ALiteralUnionStopsLikeAnEnum) {
  expect_level_stops_the_stream("class Out {\n  level \"LOW\" | \"HIGH\"\n  text string\n}\n");
}

TEST(EarlyStop, PredicatesMarkedStreamingSafeStopTheStream) {
  const std::string body(600, 'x');
  const std::string shouting = R"({"headline": "Rates cut!", "words": 2, "body": ")" + body + R"("})";
  const std::string odd = R"({"headline": "Rates cut", "words": 3, "body": ")" + body + R"("})";
  const std::string fine = R"({"headline": "Rates cut", "words": 2, "body": "ok"})";
  scripted_engine model{shouting, odd, fine};
  model.stream_in_chunks(8, 2ms);  // slow enough that the stop comes before the end
  covenant::contract<Write> c{model, instant({.tries = 2})};
  auto r = c.stream(Question{"news"}, [](const covenant::stream_update<Headline>&) {}).get();
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  ASSERT_EQ(r.outcome.attempts.size(), 3u);
  // Each issue is exactly what the final decoder reports for that value.
  EXPECT_EQ(r.outcome.attempts[0].issues.at(0).to_string(), "headline: must not contain '!' (got \"Rates cut!\")");
  EXPECT_EQ(r.outcome.attempts[1].issues.at(0).to_string(), "words: must be even (got 3)");
  EXPECT_LT(r.outcome.attempts[0].text.size(), shouting.size() / 2);
  EXPECT_LT(r.outcome.attempts[1].text.size(), odd.size() / 2);
  EXPECT_EQ(c.stats().early_stops(), 2u);
  EXPECT_EQ(covenant::try_decode<Headline>(shouting).issues.at(0).to_string(),
            r.outcome.attempts[0].issues.at(0).to_string());
}

TEST(EarlyStop, PredicatesNotMarkedWaitForTheWholeReply) {
  const std::string shouting = R"({"headline": "Rates cut!", "words": 2, "body": ")" + std::string(600, 'x') + R"("})";
  scripted_engine model{shouting, R"({"headline": "Rates cut", "words": 2, "body": "ok"})"};
  model.stream_in_chunks(8);
  covenant::contract<WritePlain> c{model, instant({.tries = 1})};
  auto r = c.stream(Question{"news"}, [](const covenant::stream_update<PlainHeadline>&) {}).get();
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_EQ(r.outcome.attempts[0].text, shouting);  // read to the end
  EXPECT_EQ(r.outcome.attempts[0].issues.at(0).to_string(), "headline: must not contain '!' (got \"Rates cut!\")");
  EXPECT_EQ(c.stats().early_stops(), 0u);
}

}  // namespace
