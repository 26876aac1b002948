// try_read_dynamic: a model's reply read against a runtime schema the way contracts read theirs.
#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/schema_file.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {

using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

const covenant::schema::model& answer_model() {
  static const covenant::schema::model m = covenant::schema_set::parse(R"(
    class Answer {
      text string
      confidence float @assert({{ this >= 0 and this <= 1 }})
      sources string[] @assert({{ this|length >= 1 }})
      language string
      topic string
    }
  )").model("Answer");
  return m;
}

std::vector<std::string> notes_of(const covenant::read_result& r, covenant::note_kind kind) {
  std::vector<std::string> out;
  for (const covenant::note& n : r.notes)
    if (n.kind == kind) out.push_back(n.path.to_string() + ": " + n.detail);
  return out;
}

TEST(ReadDynamic, StrictJsonIsReadAsItIs) {
  const auto r = covenant::try_read_dynamic(
      R"({"text": "Paris", "confidence": 0.9, "sources": ["atlas"], "language": "en", "topic": "geo"})",
      answer_model());
  ASSERT_TRUE(r.ok()) << covenant::render_feedback(r.issues);
  EXPECT_THAT(r.notes, IsEmpty());
  EXPECT_FALSE(r.truncated);
  EXPECT_EQ(covenant::json_text(r.value),
            R"({"text":"Paris","confidence":0.9,"sources":["atlas"],"language":"en","topic":"geo"})");
}

TEST(ReadDynamic, StrictLevelRefusesWhatTheOtherLevelsRepair) {
  const std::string reply =
      "Sure:\n```json\n{'text': 'Paris', 'confidence': '0.9', 'sources': ['atlas',], 'language': 'en', "
      "'topic': 'geo'}\n```";
  const auto strict = covenant::try_read_dynamic(reply, answer_model(), {.level = covenant::strictness::strict});
  EXPECT_FALSE(strict.ok());
  EXPECT_TRUE(strict.value.is_null());
  ASSERT_EQ(strict.issues.size(), 1u);
  EXPECT_EQ(strict.issues[0].code, covenant::issue_code::parse_error);

  const auto coerced = covenant::try_read_dynamic(reply, answer_model());
  ASSERT_TRUE(coerced.ok()) << covenant::render_feedback(coerced.issues);
  EXPECT_EQ(coerced.value.at("confidence"), 0.9);
  EXPECT_FALSE(notes_of(coerced, covenant::note_kind::extracted).empty());
  EXPECT_FALSE(notes_of(coerced, covenant::note_kind::repaired).empty());
  EXPECT_FALSE(notes_of(coerced, covenant::note_kind::coerced).empty());
}

TEST(ReadDynamic, FinalModeDropsTheCutValueAndReportsTheMissingFields) {
  const auto r = covenant::try_read_dynamic(R"({"text": "Paris", "confidence": 0.9, "sources": ["atl)", answer_model());
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.truncated);
  EXPECT_TRUE(r.value.is_null());
  std::vector<std::string> paths;
  for (const auto& i : r.issues) paths.push_back(i.path.to_string());
  // The cut source is dropped, not completed: the list is empty, and two fields were never written.
  EXPECT_THAT(paths, UnorderedElementsAre("sources", "language", "topic"));
}

// Several fields of an unfinished object are pending at once: each becomes its own note (the
// notes list grows while the pending paths are compared).
TEST(ReadDynamic, PartialModeTurnsEveryPendingFieldIntoANote) {
  const auto r = covenant::try_read_dynamic(R"({"text": "cut mi)", answer_model(), {.partial = true});
  ASSERT_TRUE(r.ok()) << covenant::render_feedback(r.issues);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.value.at("text"), "cut mi");
  const auto pending = notes_of(r, covenant::note_kind::incomplete);
  for (const char* field : {"confidence", "sources", "language", "topic"})
    EXPECT_TRUE(std::any_of(pending.begin(), pending.end(),
                            [&](const std::string& n) { return n == std::string(field) + ": required field not written yet"; }))
        << field << " missing from:\n"
        << ::testing::PrintToString(pending);
}

TEST(ReadDynamic, PartialModeStillReportsFinishedValuesThatAreWrong) {
  const auto r = covenant::try_read_dynamic(R"({"text": "Paris", "confidence": 1.7, "sources": ["a)", answer_model(),
                                            {.partial = true});
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.issues.size(), 1u) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.issues[0].path.to_string(), "confidence");
}

TEST(ReadDynamic, PartialModeLeavesOutAnUnfinishedStringOfEveryChoiceAStringCanName) {
  // A cut string cannot be judged against a closed choice yet: an enum, a string literal, a union
  // of literals (with null too) all leave it out (null); a plain string shows it.
  const auto set = covenant::schema_set::parse(R"(
    enum Tone { calm tense }
    class Pick {
      a Tone
      b "low" | "high"
      c "low" | "high" | null
      d "yes"
      e string
    }
  )");
  for (const char* field : {"a", "b", "c", "d", "e"}) {
    const std::string text = std::string(R"({")") + field + R"(": "lo)";
    const auto r = covenant::try_read_dynamic(text, set.model("Pick"), {.partial = true});
    const auto* got = r.value.is_object() ? r.value.as_object().if_contains(field) : nullptr;
    const bool shown = got != nullptr && got->is_string();
    EXPECT_EQ(shown, std::string(field) == "e") << field << ": " << covenant::json_text(r.value);
  }
}

}  // namespace
