// Schema-guided coercions of the typed decoder (decode_options::coerce).
#include <covenant/read/decode.hpp>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace coerce_test {

enum class Level { low, medium, high, very_high };

struct Reading {
  double score = 0;
  int count = 0;
  bool flag = false;
  std::string label;
  Level level = Level::low;
  std::vector<std::string> tags;
  std::optional<std::string> model_used;
};

struct Choice {
  std::variant<int, std::string> value;
};

}  // namespace coerce_test

namespace {

using namespace coerce_test;

covenant::decode_options coerce() {
  covenant::decode_options o;
  o.coerce = true;
  return o;
}

std::vector<std::string> details(const covenant::note_list& notes) {
  std::vector<std::string> out;
  for (const auto& n : notes) out.push_back(n.to_string());
  return out;
}

TEST(Coerce, NumbersWrittenAsStrings) {
  auto r = covenant::try_decode<Reading>(
      R"({"score": "87%", "count": "1,234", "flag": "TRUE", "label": 42, "level": "HIGH", "tags": "solo"})", coerce());
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_DOUBLE_EQ(r.value->score, 0.87);
  EXPECT_EQ(r.value->count, 1234);
  EXPECT_TRUE(r.value->flag);
  EXPECT_EQ(r.value->label, "42");
  EXPECT_EQ(r.value->level, Level::high);
  EXPECT_EQ(r.value->tags, std::vector<std::string>{"solo"});
  EXPECT_EQ(details(r.notes), (std::vector<std::string>{
                                  "coerced at score: \"87%\" read as a number",
                                  "coerced at count: \"1,234\" read as a number",
                                  "coerced at flag: \"TRUE\" read as a boolean",
                                  "coerced at label: 42 read as the string \"42\"",
                                  "coerced at level: \"HIGH\" read as \"high\" (ignoring case and punctuation)",
                                  "coerced at tags: a single value read as a one-item list",
                              }));
}

TEST(Coerce, FractionsDecimalsAndKeysInOtherCases) {
  auto r = covenant::try_decode<Reading>(
      R"({"Score": "9/10", "COUNT": "7", "flag": false, "label": "x", "level": "Very-High", "tags": [], "modelUsed": "m"})",
      coerce());
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_DOUBLE_EQ(r.value->score, 0.9);
  EXPECT_EQ(r.value->count, 7);
  EXPECT_EQ(r.value->level, Level::very_high);
  EXPECT_EQ(r.value->model_used, "m");
}

TEST(Coerce, EnumNamedInsideASentence) {
  auto r = covenant::try_decode<Reading>(
      R"({"score": 1, "count": 1, "flag": true, "label": "", "level": "The level is medium.", "tags": []})", coerce());
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value->level, Level::medium);
}

TEST(Coerce, NeverInventsData) {
  auto r = covenant::try_decode<Reading>(
      R"({"score": "very high", "count": "2.5", "flag": "maybe", "label": "x", "level": "extreme", "tags": [], "model_used": null})",
      coerce());
  ASSERT_EQ(r.issues.size(), 4u) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.issues[0].to_string(), "score: expected number (got \"very high\")");
  EXPECT_EQ(r.issues[1].to_string(), "count: expected integer (got \"2.5\")");
  EXPECT_EQ(r.issues[2].to_string(), "flag: expected boolean (got \"maybe\")");
  EXPECT_EQ(r.issues[3].code, covenant::issue_code::constraint_violation);
  // A percentage is a fraction only for floating-point fields.
  auto pct = covenant::try_decode<Reading>(
      R"({"score": 0, "count": "50%", "flag": true, "label": "", "level": "low", "tags": []})", coerce());
  ASSERT_EQ(pct.issues.size(), 1u);
  EXPECT_EQ(pct.issues[0].to_string(), "count: expected integer (got \"50%\")");
  // An enum named twice in a sentence is ambiguous.
  auto two = covenant::try_decode<Reading>(
      R"({"score": 0, "count": 1, "flag": true, "label": "", "level": "low or high", "tags": []})", coerce());
  ASSERT_EQ(two.issues.size(), 1u);
}

TEST(Coerce, StrictModeCoercesNothing) {
  auto r = covenant::try_decode<Reading>(
      R"({"score": "0.5", "count": 1, "flag": true, "label": "", "level": "HIGH", "tags": "x"})");
  EXPECT_EQ(r.issues.size(), 3u);
  EXPECT_TRUE(r.notes.empty());
}

TEST(Coerce, VariantPrefersAnAlternativeThatFitsAsWritten) {
  auto s = covenant::try_decode<Choice>(R"({"value": "5"})", coerce());
  ASSERT_TRUE(s);
  EXPECT_EQ(std::get<std::string>(s.value->value), "5");
  EXPECT_TRUE(s.notes.empty());
  auto n = covenant::try_decode<Choice>(R"({"value": 5})", coerce());
  ASSERT_TRUE(n);
  EXPECT_EQ(std::get<int>(n.value->value), 5);
}

}  // namespace
