// Partial results while a reply streams: what is shown when, states by path, "changed" only on a
// change, any chunking giving the one-shot result, violations that justify an early stop (and the
// ones that must not), prose and fences before the value, the lenient fallback, runtime schemas.
#include <covenant/read/decode.hpp>
#include <covenant/read/detail/stream_reader.hpp>
#include <covenant/types/describe.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/types/schema_of.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cstdint>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../../examples/models/final_answer.hpp"

namespace stream_test {

enum class Priority { low, high };

struct Step {
  std::string title;
  int minutes = 0;
};

struct Narrow {
  std::int8_t x = 0;
  Priority priority = Priority::low;
};
struct Plan {
  std::string summary;
  Priority priority = Priority::low;
  double confidence = 0;
  std::vector<Step> steps;
  std::optional<std::string> note;
};

}  // namespace stream_test

template <>
struct covenant::describe<stream_test::Plan> {
  static constexpr auto fields = covenant::fields<stream_test::Plan>(
      covenant::field<&stream_test::Plan::summary>("Summary.", covenant::max_length{40}),
      covenant::field<&stream_test::Plan::confidence>("Confidence.", covenant::range{0.0, 1.0}),
      covenant::field<&stream_test::Plan::steps>("Steps.", covenant::item_count{1, 3}));
};

template <>
struct covenant::describe<stream_test::Narrow> {
  static constexpr auto fields = covenant::fields<stream_test::Narrow>(
      covenant::field<&stream_test::Narrow::x>("X.", covenant::range{0, 100}));
};
template <>
struct covenant::describe<stream_test::Step> {
  static constexpr auto fields = covenant::fields<stream_test::Step>(
      covenant::field<&stream_test::Step::minutes>("Minutes.", covenant::range{1, 120}));
};

namespace {

using covenant::value_state;
using covenant::detail::stream_reader;
using stream_test::Plan;
using stream_test::Priority;

const std::string plan_json =
    R"({"summary": "Fix the printer", "priority": "high", "confidence": 0.75, )"
    R"("steps": [{"title": "Unplug it", "minutes": 2}, {"title": "Plug it in again", "minutes": 1}], "note": null})";

std::string read_sample(const std::string& name) {
  std::ifstream in(std::string(COVENANT_SHARED_DIR) + "/bench/python/samples/" + name);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

template <class T>
stream_reader<T> make_reader(covenant::strictness level = covenant::strictness::coerce) {
  return stream_reader<T>(covenant::decode_options{}, level);
}

TEST(StreamReader, WhatIsShownAsTheReplyGrows) {
  auto r = make_reader<Plan>();
  EXPECT_EQ(r.view().state(), value_state::absent);
  EXPECT_TRUE(r.feed(R"({"summary": "Fix)"));
  EXPECT_EQ(r.view().value().summary, "Fix");  // strings grow
  EXPECT_EQ(r.view().state(), value_state::streaming);
  EXPECT_EQ(r.view().state("summary"), value_state::streaming);
  EXPECT_EQ(r.view().state<&Plan::confidence>(), value_state::absent);
  EXPECT_TRUE(r.feed(R"( the printer", "priority": "hi)"));
  EXPECT_EQ(r.view().value().summary, "Fix the printer");
  EXPECT_EQ(r.view().state<&Plan::summary>(), value_state::complete);
  EXPECT_EQ(r.view().value().priority, Priority::low);  // an enum only once its string is finished
  EXPECT_EQ(r.view().state("priority"), value_state::streaming);
  EXPECT_TRUE(r.feed(R"(gh", "confidence": 0.7)"));
  EXPECT_EQ(r.view().value().priority, Priority::high);
  EXPECT_EQ(r.view().value().confidence, 0.0);  // a number only once finished (0.7 may become 0.75)
  EXPECT_TRUE(r.feed(R"(5, "steps": [{"title": "Unplug)"));
  EXPECT_EQ(r.view().value().confidence, 0.75);
  ASSERT_EQ(r.view().value().steps.size(), 1u);
  EXPECT_EQ(r.view().value().steps[0].title, "Unplug");
  EXPECT_EQ(r.view().items("steps"), 1u);
  EXPECT_EQ(r.view().complete_items("steps"), 0u);
  EXPECT_EQ(r.view().state("steps[0].title"), value_state::streaming);
  EXPECT_EQ(r.view().state("steps[0].minutes"), value_state::absent);
  EXPECT_TRUE(r.feed(R"( it", "minutes": 2}, )"));
  EXPECT_EQ(r.view().complete_items("steps"), 1u);
  EXPECT_EQ(r.view().state("steps[0]"), value_state::complete);
  EXPECT_FALSE(r.feed("   \n  "));  // nothing new to show
  EXPECT_TRUE(r.feed(R"({"title": "Plug it in again", "minutes": 1}], "note": null})"));
  EXPECT_EQ(r.view().state(), value_state::complete);
  EXPECT_FALSE(r.view().value().note.has_value());
  EXPECT_TRUE(r.violations().empty());
  EXPECT_FALSE(r.lenient());
}

TEST(StreamReader, AnyChunkingGivesTheOneShotValue) {
  const Plan whole = covenant::decode<Plan>(plan_json);
  for (std::size_t cut = 1; cut < plan_json.size(); ++cut) {
    auto r = make_reader<Plan>();
    r.feed(std::string_view(plan_json).substr(0, cut));
    r.feed(std::string_view(plan_json).substr(cut));
    const Plan& got = r.view().value();
    ASSERT_EQ(got.summary, whole.summary) << cut;
    EXPECT_EQ(got.priority, whole.priority) << cut;
    EXPECT_EQ(got.confidence, whole.confidence) << cut;
    ASSERT_EQ(got.steps.size(), 2u) << cut;
    EXPECT_EQ(got.steps[1].title, "Plug it in again") << cut;
    EXPECT_EQ(r.view().state(), value_state::complete) << cut;
  }
}

TEST(StreamReader, TheLargeSampleInManyChunksEqualsDecode) {
  const std::string text = read_sample("large_final_answer.json");
  if (text.empty()) GTEST_SKIP() << "../shared/bench/python/samples is absent";
  const auto whole = covenant::try_decode<models::FinalAnswer>(text);
  ASSERT_TRUE(whole.ok());
  std::mt19937 rng(11);
  for (int round = 0; round < 20; ++round) {
    auto r = make_reader<models::FinalAnswer>();
    std::size_t at = 0;
    int changes = 0;
    while (at < text.size()) {
      const std::size_t n = 1 + rng() % (round < 10 ? 8 : 200);
      changes += r.feed(std::string_view(text).substr(at, n)) ? 1 : 0;
      at += n;
    }
    const models::FinalAnswer& got = r.view().value();
    EXPECT_EQ(got.answer, whole.value->answer);
    EXPECT_EQ(got.sources, whole.value->sources);
    EXPECT_EQ(got.reasoning, whole.value->reasoning);
    EXPECT_EQ(got.confidence, whole.value->confidence);
    ASSERT_TRUE(got.metadata.has_value());
    EXPECT_EQ(got.metadata->token_usage->input_tokens, whole.value->metadata->token_usage->input_tokens);
    EXPECT_EQ(r.view().state(), value_state::complete);
    EXPECT_EQ(r.view().complete_items("sources"), whole.value->sources.size());
    EXPECT_GT(changes, 0);
    EXPECT_TRUE(r.violations().empty());
  }
}

TEST(StreamReader, SplitsInsideUtf8AndEscapes) {
  const std::string text = R"({"summary": "caf\u00e9 \"ok\" )" "\xE2\x82\xAC" R"(", "steps": [{"title": "x", "minutes": 3}]})";
  for (std::size_t cut = 1; cut < text.size(); ++cut) {
    auto r = make_reader<Plan>();
    r.feed(std::string_view(text).substr(0, cut));
    r.feed(std::string_view(text).substr(cut));
    EXPECT_EQ(r.view().value().summary, "caf\xC3\xA9 \"ok\" \xE2\x82\xAC") << cut;
  }
}

TEST(StreamReader, SurrogatePairsNumbersLiteralsAndTrailingCommasAtEverySplit) {
  const std::string text =
      R"({"summary": "\ud83d\ude00 \u00e9\n", "confidence": -1.5e-1, "steps": [{"title": "t", "minutes": 7,},],)"
      R"( "note": null, "priority": "low"})";
  for (std::size_t cut = 1; cut < text.size(); ++cut) {
    auto r = make_reader<Plan>();
    r.feed(std::string_view(text).substr(0, cut));
    r.feed(std::string_view(text).substr(cut));
    const Plan& got = r.view().value();
    EXPECT_EQ(got.summary, "\xF0\x9F\x98\x80 \xC3\xA9\n") << cut;
    EXPECT_DOUBLE_EQ(got.confidence, -0.15) << cut;
    ASSERT_EQ(got.steps.size(), 1u) << cut;
    EXPECT_EQ(got.steps[0].minutes, 7) << cut;
    EXPECT_EQ(r.view().state(), value_state::complete) << cut;
    EXPECT_FALSE(r.lenient()) << cut;
  }
}

TEST(StreamReader, AFinishedValueOutOfBoundsIsAViolationExactlyAsDecoded) {
  const std::string text = R"({"summary": "ok", "priority": "low", "confidence": 1.5, "steps": [)";
  auto r = make_reader<Plan>();
  r.feed(text);
  ASSERT_EQ(r.violations().size(), 1u);
  // The same issue the final decoder reports for that value.
  const auto full = covenant::try_decode<Plan>(text + R"({"title": "a", "minutes": 5}]})");
  ASSERT_FALSE(full.issues.empty());
  EXPECT_EQ(r.violations()[0], full.issues[0]);
  EXPECT_EQ(r.violations()[0].to_string(), "confidence: must be <= 1 (got 1.5)");
}

TEST(StreamReader, NestedViolationsCarryTheirPath) {
  auto r = make_reader<Plan>();
  r.feed(R"({"summary": "ok", "steps": [{"title": "a", "minutes": 5}, {"title": "b", "minutes": 500}, )");
  ASSERT_EQ(r.violations().size(), 1u);
  EXPECT_EQ(r.violations()[0].path.to_string(), "steps[1].minutes");
}

TEST(StreamReader, AStringLongerThanItsMaximumStopsWhileStillBeingWritten) {
  auto r = make_reader<Plan>();
  r.feed(R"({"summary": ")" + std::string(39, 'a'));
  EXPECT_TRUE(r.violations().empty());
  r.feed("bb");
  ASSERT_EQ(r.violations().size(), 1u);
  EXPECT_EQ(r.violations()[0].path.to_string(), "summary");
  EXPECT_THAT(r.violations()[0].message, ::testing::HasSubstr("at most 40"));
}

TEST(StreamReader, AListLongerThanItsMaximumStopsAtTheExtraElement) {
  auto r = make_reader<Plan>();
  r.feed(R"({"summary": "ok", "steps": [{"title": "a", "minutes": 1}, {"title": "b", "minutes": 1}, )"
         R"({"title": "c", "minutes": 1}, )");
  EXPECT_TRUE(r.violations().empty());
  r.feed(R"({"ti)");
  ASSERT_EQ(r.violations().size(), 1u);
  EXPECT_EQ(r.violations()[0].path.to_string(), "steps");
  EXPECT_EQ(r.violations()[0].code, covenant::issue_code::constraint_violation);
}

// Where a stop is decided depends on the text alone: cut into any two pieces, fed a byte at a time
// or whole, the reader decides on the same byte and reports the same issue, and the text up to and
// including that byte decides it again on its own.
TEST(StreamReader, AStopIsDecidedOnTheSameByteHoweverTheTextIsCut) {
  struct stop_case {
    std::string text;
    std::string decided;  // the text up to and including the deciding byte
  };
  const std::string ok = R"({"summary": "ok", )";
  const std::vector<stop_case> cases = {
      {R"({"confidence": 1.5, "summary": "after"})", R"({"confidence": 1.5,)"},          // the character after a number
      {R"({"confidence": 1.5})", R"({"confidence": 1.5})"},                              // ... a closing bracket
      {R"({"priority": "urgent", "summary": "x"})", R"({"priority": "urgent")"},          // a closing quote
      {R"({"summary": ")" + std::string(45, 'a') + R"("})", R"({"summary": ")" + std::string(41, 'a')},  // past the maximum
      {R"({"summary": ")" + std::string(39, 'a') + "\xC3\xA9\xC3\xA9\xC3\xA9\"}",        // a character of two bytes
       R"({"summary": ")" + std::string(39, 'a') + "\xC3\xA9\xC3\xA9"},
      {R"({"summary": ")" + std::string(40, 'a') + R"(\u00e9 and more"})",               // an escape past it
       R"({"summary": ")" + std::string(40, 'a') + R"(\u00e9)"},
      {ok + R"("steps": [{"minutes": 1}, {"minutes": 1}, {"minutes": 1}, {"minutes": 1}]})",  // an extra item
       ok + R"("steps": [{"minutes": 1}, {"minutes": 1}, {"minutes": 1}, {)"},
      {ok + R"("steps": [{"title": "t", "minutes": 121}, {"title": "u"}]})",
       ok + R"("steps": [{"title": "t", "minutes": 121})"},
  };
  for (const stop_case& c : cases) {
    auto whole = make_reader<Plan>();
    whole.feed(c.text);
    ASSERT_EQ(whole.violations().size(), 1u) << c.text;
    const covenant::issue expected = whole.violations()[0];
    EXPECT_EQ(c.text.substr(0, whole.decided_at()), c.decided) << c.text;
    // Every cut into two pieces, and one byte at a time.
    for (std::size_t cut = 0; cut <= c.text.size(); ++cut) {
      auto r = make_reader<Plan>();
      r.feed(c.text.substr(0, cut));
      r.feed(c.text.substr(cut));
      ASSERT_EQ(r.violations().size(), 1u) << c.text << " cut at " << cut;
      EXPECT_EQ(r.violations()[0], expected) << c.text << " cut at " << cut;
      EXPECT_EQ(r.decided_at(), c.decided.size()) << c.text << " cut at " << cut;
    }
    auto bytes = make_reader<Plan>();
    for (const char ch : c.text) bytes.feed(std::string(1, ch));
    ASSERT_EQ(bytes.violations().size(), 1u) << c.text;
    EXPECT_EQ(bytes.violations()[0], expected) << c.text;
    EXPECT_EQ(bytes.decided_at(), c.decided.size()) << c.text;
    // The kept text alone decides the same stop (what a replay of the rejected reply sees), and
    // one byte less does not.
    auto kept = make_reader<Plan>();
    kept.feed(c.decided);
    ASSERT_EQ(kept.violations().size(), 1u) << c.decided;
    EXPECT_EQ(kept.violations()[0], expected) << c.decided;
    auto less = make_reader<Plan>();
    less.feed(c.decided.substr(0, c.decided.size() - 1));
    EXPECT_TRUE(less.violations().empty()) << c.decided;
  }
  // Without violations, the whole text.
  auto r = make_reader<Plan>();
  r.feed(plan_json);
  EXPECT_EQ(r.decided_at(), plan_json.size());
}

TEST(StreamReader, WhatTheFinalReaderMayStillAcceptIsNeverAViolation) {
  // Coercible values, missing fields, too few items, unfinished values, unknown keys.
  const std::vector<std::string> fine = {
      R"({"confidence": "0.9", "summary": "ok"})",           // a number as a string (coerce)
      R"({"priority": "HIGH", "summary": "ok"})",            // an enum spelling (coerce)
      R"({"steps": [], "summary": "ok"})",                   // too few items: only the end decides
      R"({"summary": "ok", "unknown": {"deep": [1, 2]}})",   // unknown key
      R"({"confidence": 0.5)",                               // unfinished
      R"({"summary": 42, "confidence": true})",              // wrong types: the final reader decides
  };
  for (const std::string& text : fine) {
    auto r = make_reader<Plan>();
    r.feed(text);
    EXPECT_TRUE(r.violations().empty()) << text << ": " << (r.violations().empty() ? "" : r.violations()[0].to_string());
  }
  // The same enum spelling at the strict level cannot be read: it is a violation there.
  auto strict = make_reader<Plan>(covenant::strictness::strict);
  strict.feed(R"({"priority": "HIGH", )");
  EXPECT_EQ(strict.violations().size(), 1u);
}

TEST(StreamReader, ProseAndAFenceBeforeTheValueAreSkipped) {
  auto r = make_reader<Plan>();
  r.feed("Sure! Here is the plan:\n```json\n");
  EXPECT_EQ(r.view().state(), value_state::absent);
  r.feed(R"({"summary": "ok", "steps": [{"title": "t", "minutes": 4}]})");
  r.feed("\n```\nHope this helps!");
  EXPECT_EQ(r.view().value().summary, "ok");
  EXPECT_EQ(r.view().state(), value_state::complete);
  EXPECT_FALSE(r.lenient());
}

TEST(StreamReader, TextThatIsNotJsonFallsBackToTheLenientReaderWithoutViolations) {
  auto r = make_reader<Plan>();
  r.feed(R"({'summary': 'single quotes', 'confidence': 7, 'steps': [{'title': 'x', )");
  EXPECT_TRUE(r.lenient());
  EXPECT_EQ(r.view().value().summary, "single quotes");
  EXPECT_TRUE(r.violations().empty());  // the fallback never stops a stream
  r.feed("'minutes': 1}]");
  for (int i = 0; i < 50; ++i) r.feed(" ");  // re-read only as the text grows by half
  EXPECT_EQ(r.view().value().steps.size(), 1u);
  EXPECT_EQ(r.view().value().steps[0].minutes, 1);
}

TEST(StreamReader, AtTheStrictLevelTextThatIsNotJsonIsNotReadLeniently) {
  // The final reader at the strict level never repairs: the partial stops where the JSON stopped,
  // for the typed and the dynamic stream alike, and nothing stops the stream.
  const std::string text = R"({"summary": "plain", "confidence": 'x', "steps": [{"title": "t", "minutes": 1}]})";
  auto typed = make_reader<Plan>(covenant::strictness::strict);
  typed.feed(text);
  EXPECT_FALSE(typed.lenient());
  EXPECT_EQ(typed.view().value().summary, "plain");
  EXPECT_TRUE(typed.view().value().steps.empty());
  EXPECT_TRUE(typed.violations().empty());
  covenant::detail::dynamic_stream_reader dynamic(covenant::schema_of<Plan>(), {}, covenant::strictness::strict);
  dynamic.feed(text);
  EXPECT_FALSE(dynamic.lenient());
  EXPECT_EQ(dynamic.view().value().at("summary").as_string(), "plain");
  EXPECT_FALSE(dynamic.view().value().as_object().contains("steps"));
  EXPECT_TRUE(dynamic.violations().empty());
}

TEST(StreamReader, BadSyntaxInsideAStringFallsBackFromAFreshStart) {
  // An invalid escape stops the tokenizer inside a string value: the lenient re-read starts from a
  // clean slate (it used to keep writing that string through a slot into the value just cleared).
  const std::string text = R"({"summary": "ab\q", "confidence": 0.5})";
  auto typed = make_reader<Plan>();
  typed.feed(text);
  EXPECT_TRUE(typed.lenient());
  EXPECT_EQ(typed.view().value().confidence, 0.5);
  covenant::detail::dynamic_stream_reader dynamic(covenant::schema_of<Plan>(), {}, covenant::strictness::coerce);
  dynamic.feed(text);
  EXPECT_TRUE(dynamic.lenient());
  EXPECT_EQ(dynamic.view().value().at("confidence"), 0.5);
  EXPECT_EQ(dynamic.view().value().at("summary").as_string(), typed.view().value().summary.c_str());
}

TEST(StreamReader, ResetStartsAFreshReply) {
  auto r = make_reader<Plan>();
  r.feed(R"({"summary": "first", "confidence": 3})");
  EXPECT_FALSE(r.violations().empty());
  r.reset();
  EXPECT_TRUE(r.violations().empty());
  EXPECT_EQ(r.view().state(), value_state::absent);
  EXPECT_EQ(r.view().value().summary, "");
  r.feed(R"({"summary": "second"})");
  EXPECT_EQ(r.view().value().summary, "second");
  EXPECT_EQ(r.text(), R"({"summary": "second"})");
}

TEST(DynamicStreamReader, SchemaFileWithStreamAttributes) {
  const auto set = covenant::schema_set::parse(R"(
enum Tone {
  CALM
  URGENT
}
class Reply {
  text string
  code string @stream.done
  tone Tone
  score float @assert({{ this <= 1 }})
  tags string[]
}
)");
  const covenant::schema::model m = set.model("Reply");
  covenant::detail::dynamic_stream_reader r(m, {}, covenant::strictness::coerce);
  r.feed(R"({"text": "Hel)");
  EXPECT_EQ(r.view().value().at("text"), "Hel");
  r.feed(R"(lo", "code": "AB)");
  EXPECT_FALSE(r.view().value().as_object().contains("code") && !r.view().value().at("code").is_null());
  EXPECT_EQ(r.view().state("code"), value_state::streaming);
  r.feed(R"(C", "tone": "URG)");
  EXPECT_EQ(r.view().value().at("code"), "ABC");
  r.feed(R"(ENT", "tags": ["a", "b)");
  EXPECT_EQ(r.view().value().at("tone"), "URGENT");
  EXPECT_EQ(r.view().items("tags"), 2u);
  EXPECT_EQ(r.view().complete_items("tags"), 1u);
  EXPECT_TRUE(r.violations().empty());
  r.feed(R"("], "score": 2})");
  ASSERT_EQ(r.violations().size(), 1u);
  EXPECT_EQ(r.violations()[0].path.to_string(), "score");
  EXPECT_EQ(r.view().state(), value_state::complete);
}

TEST(DynamicStreamReader, AnEnumValueThatCannotBeReadIsAViolation) {
  const auto set = covenant::schema_set::parse("enum Tone {\n  CALM\n  URGENT\n}\nclass R {\n  tone Tone\n}\n");
  covenant::detail::dynamic_stream_reader r(set.model("R"), {}, covenant::strictness::coerce);
  r.feed(R"({"tone": "furious", )");
  ASSERT_EQ(r.violations().size(), 1u);
  const auto final_issues = covenant::try_decode_dynamic(R"({"tone": "furious"})", set.model("R")).issues;
  ASSERT_EQ(final_issues.size(), 1u);
  EXPECT_EQ(r.violations()[0], final_issues[0]);
}

// The issue the final reader reports at the member `member` ("\"key\": value") read alone in an
// object (the other fields are missing there); null when it reports none at that key.
namespace {
std::optional<covenant::issue> final_issue_at(const covenant::schema::model& m, const std::string& member,
                                              const covenant::decode_options& o = {}) {
  const auto final_issues = covenant::try_decode_dynamic("{" + member + "}", m, o).issues;
  const std::string key = member.substr(1, member.find('"', 1) - 1);
  for (const auto& i : final_issues)
    if (i.path.to_string() == key) return i;
  return std::nullopt;
}
}  // namespace

TEST(DynamicStreamReader, ALiteralUnionValueOutsideItIsAViolation) {
  // Every closed choice is judged as soon as its value is finished, like an enum: a literal, a
  // union of literals (also with null), numbers and booleans.
  const auto set = covenant::schema_set::parse(R"(
class R {
  label "positive" | "negative" | "neutral"
  code ("USD" | "EUR")?
  one "x"
  count 1 | 2 | 3
  yes true
  summary string
}
)");
  const covenant::schema::model m = set.model("R");
  const std::string good = R"("label": "neutral", "code": null, "one": "x", "count": 2, "yes": true)";
  for (const char* bad : {R"("label": "furious")", R"("code": "GBP")", R"("one": "y")", R"("count": 4)", R"("yes": false)"}) {
    const std::string prefix = "{" + std::string(bad) + ", ";
    SCOPED_TRACE(prefix);
    for (const auto level : {covenant::strictness::strict, covenant::strictness::coerce}) {
      covenant::detail::dynamic_stream_reader r(m, {}, level);
      r.feed(prefix);
      ASSERT_EQ(r.violations().size(), 1u);
      EXPECT_EQ(r.violations()[0].code, covenant::issue_code::constraint_violation);
      covenant::decode_options o;
      o.coerce = level == covenant::strictness::coerce;
      const std::optional<covenant::issue> same = final_issue_at(m, bad, o);
      ASSERT_TRUE(same.has_value());
      EXPECT_EQ(r.violations()[0], *same);
    }
  }
  covenant::detail::dynamic_stream_reader fine(m, {}, covenant::strictness::strict);
  fine.feed("{" + good + R"(, "summary": ")");
  EXPECT_TRUE(fine.violations().empty()) << fine.violations()[0].to_string();
  covenant::detail::dynamic_stream_reader first(m, {}, covenant::strictness::strict);
  first.feed(R"({"label": "furious", "summary": ")");
  ASSERT_EQ(first.violations().size(), 1u);
  EXPECT_EQ(first.violations()[0].to_string(), "label: must be one of \"positive\", \"negative\", \"neutral\" (got \"furious\")");
}

TEST(DynamicStreamReader, AnAssertOnAStreamDoneScalarIsJudgedWhenItIsFinished) {
  // A rule on the JSON value of a @stream.done string or number is judged as soon as the value is
  // finished, with the final reader's issue; the same rule on a value not marked @stream.done
  // waits for the final reading.
  const auto set = covenant::schema_set::parse(R"(
enum Tone {
  CALM
  URGENT
}
class R {
  code string @stream.done @assert({{ this != "ABC" }})
  n int @stream.done @assert({{ this != 7 }})
  tone Tone @stream.done @assert({{ this != "URGENT" }})
  loose string @assert({{ this != "ABC" }})
  loose_tone Tone @assert({{ this != "URGENT" }})
  rest string
}
)");
  const covenant::schema::model m = set.model("R");
  for (const char* bad : {R"("code": "ABC")", R"("n": 7)", R"("tone": "URGENT")"}) {
    SCOPED_TRACE(bad);
    covenant::detail::dynamic_stream_reader r(m, {}, covenant::strictness::coerce);
    r.feed("{" + std::string(bad) + R"(, "rest": "more to come)");
    ASSERT_EQ(r.violations().size(), 1u);
    const std::optional<covenant::issue> same = final_issue_at(m, bad);
    ASSERT_TRUE(same.has_value());
    EXPECT_EQ(r.violations()[0], *same);
  }
  for (const char* loose_value : {R"("loose": "ABC")", R"("loose_tone": "URGENT")"}) {
    SCOPED_TRACE(loose_value);
    // The rule is broken (the final reader reports it), but only the final reading judges it.
    ASSERT_TRUE(final_issue_at(m, loose_value).has_value());
    covenant::detail::dynamic_stream_reader loose(m, {}, covenant::strictness::coerce);
    loose.feed("{" + std::string(loose_value) + R"(, "rest": "more to come)");
    EXPECT_TRUE(loose.violations().empty());
  }
}

TEST(DynamicStreamReader, AFilterAssertOnAChoiceIsNotAViolation) {
  // Only the checks whose failure is fed back or ends the call stop a stream: the final reader
  // drops a filtered item, fixes or notes the others.
  const auto set = covenant::schema_set::parse(R"(
enum Kind {
  NEWS
  SPAM
}
class Src {
  kind Kind @assert({{ this != "SPAM" }}, filter)
  tag "a" | "b" @check(not_b, {{ this != "b" }})
}
class Out {
  srcs Src[]
}
)");
  const covenant::schema::model m = set.model("Out");
  const std::string text = R"({"srcs": [{"kind": "SPAM", "tag": "b"}, {"kind": "NEWS", "tag": "b"}]})";
  covenant::detail::dynamic_stream_reader r(m, {}, covenant::strictness::strict);
  r.feed(text);
  EXPECT_TRUE(r.violations().empty()) << r.violations()[0].to_string();
  const auto final_reading = covenant::try_decode_dynamic(text, m);
  EXPECT_TRUE(final_reading.issues.empty()) << covenant::render_feedback(final_reading.issues);
}

TEST(StreamReaders, ANarrowIntegerOutOfWidthIsNotJudged) {
  // 300 does not fit an int8: that is the final reader's issue, not "must be <= 100".
  const std::string prefix = R"({"x": 300, )";
  const auto final_issues = covenant::try_decode<stream_test::Narrow>(prefix + R"("priority": "low"})").issues;
  ASSERT_EQ(final_issues.size(), 1u);
  EXPECT_EQ(final_issues[0].to_string(), "x: must be an integer between -128 and 127 (got 300)");
  auto typed = make_reader<stream_test::Narrow>(covenant::strictness::strict);
  typed.feed(prefix);
  EXPECT_TRUE(typed.violations().empty());
  covenant::detail::dynamic_stream_reader dynamic(covenant::schema_of<stream_test::Narrow>(), {}, covenant::strictness::strict);
  dynamic.feed(prefix);
  EXPECT_TRUE(dynamic.violations().empty()) << dynamic.violations()[0].to_string();
  // In range of the type but not of the check: a violation in both, as decoded.
  auto typed_over = make_reader<stream_test::Narrow>(covenant::strictness::strict);
  typed_over.feed(R"({"x": 120, )");
  covenant::detail::dynamic_stream_reader dynamic_over(covenant::schema_of<stream_test::Narrow>(), {},
                                                       covenant::strictness::strict);
  dynamic_over.feed(R"({"x": 120, )");
  ASSERT_EQ(typed_over.violations().size(), 1u);
  EXPECT_EQ(typed_over.violations()[0].to_string(), "x: must be <= 100 (got 120)");
  EXPECT_EQ(dynamic_over.violations(), typed_over.violations());
  // The typed stream judges an enum as soon as it is finished, as before.
  auto typed_enum = make_reader<stream_test::Narrow>(covenant::strictness::strict);
  typed_enum.feed(R"({"priority": "urgent", )");
  ASSERT_EQ(typed_enum.violations().size(), 1u);
  EXPECT_EQ(typed_enum.violations()[0].to_string(), "priority: must be one of \"low\", \"high\" (got \"urgent\")");
}

}  // namespace
