// Coerce level: JSON text inside a string where the schema wants an object or a list (typed and
// runtime schemas), at any depth, and the whole reply encoded twice.
#include <covenant/read/decode.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/schema_file.hpp>

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reading.hpp"

namespace json_in_string_test {

struct Meta {
  std::string model;
  int tokens = 0;
};

struct Step {
  std::string name;
  std::vector<int> values;
};

struct Report {
  std::string answer;
  Meta metadata;
  std::vector<Step> steps;
  std::map<std::string, int> counts;
  std::string raw;  // a string field: JSON text in it stays text
};

struct Tags {
  std::vector<std::string> tags;
};

}  // namespace json_in_string_test

namespace {

using covenant_test::reading::rendered;

using namespace json_in_string_test;

covenant::decode_options coerce() {
  covenant::decode_options o;
  o.coerce = true;
  return o;
}

std::vector<std::string> notes_of(const covenant::note_list& notes) {
  std::vector<std::string> out;
  for (const auto& n : notes) out.push_back(n.to_string());
  return out;
}

bool has_note(const covenant::note_list& notes, std::string_view path, std::string_view starts) {
  for (const auto& n : notes)
    if (n.kind == covenant::note_kind::coerced && n.path.to_string() == path && n.detail.rfind(starts, 0) == 0)
      return true;
  return false;
}

constexpr const char* nested_reply = R"({
  "answer": "Paris",
  "metadata": "{\"model\": \"gpt-4o\", \"tokens\": 12}",
  "steps": "[{\"name\": \"look up\", \"values\": \"[1, 2]\"}, {\"name\": \"answer\", \"values\": []}]",
  "counts": "{\"a\": 1}",
  "raw": "{\"kept\": \"as text\"}"
})";

TEST(JsonInString, TypedObjectsListsAndMapsAtAnyDepth) {
  const auto r = covenant::try_decode<Report>(nested_reply, coerce());
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_EQ(r.value->metadata.model, "gpt-4o");
  EXPECT_EQ(r.value->metadata.tokens, 12);
  ASSERT_EQ(r.value->steps.size(), 2u);
  EXPECT_EQ(r.value->steps[0].name, "look up");
  EXPECT_EQ(r.value->steps[0].values, (std::vector<int>{1, 2}));  // a string inside a string
  EXPECT_EQ(r.value->counts.at("a"), 1);
  EXPECT_EQ(r.value->raw, R"({"kept": "as text"})");  // the schema wants a string: never decoded
  const auto& n = r.notes;
  EXPECT_TRUE(has_note(n, "metadata", "a string holding a JSON object read as the object")) << testing::PrintToString(notes_of(n));
  EXPECT_TRUE(has_note(n, "steps", "a string holding a JSON list read as the list"));
  EXPECT_TRUE(has_note(n, "steps[0].values", "a string holding a JSON list read as the list"));
  EXPECT_TRUE(has_note(n, "counts", "a string holding a JSON object"));
  EXPECT_EQ(n.size(), 4u) << testing::PrintToString(notes_of(n));
}

TEST(JsonInString, TheInnerTextMayNeedRepairs) {
  const auto r = covenant::try_decode<Report>(
      R"({"answer": "a", "metadata": "{'model': 'x', tokens: 3,}", "steps": [], "counts": {}, "raw": ""})", coerce());
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_EQ(r.value->metadata.model, "x");
  EXPECT_EQ(r.value->metadata.tokens, 3);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].detail.find("repair"), std::string::npos) << r.notes[0].detail;
}

TEST(JsonInString, IssuesInsideKeepTheirPaths) {
  const auto r = covenant::try_decode<Report>(
      R"({"answer": "a", "metadata": "{\"model\": \"x\", \"tokens\": \"many\"}", "steps": [], "counts": {}, "raw": ""})",
      coerce());
  ASSERT_EQ(r.issues.size(), 1u) << rendered(r.issues);
  EXPECT_EQ(r.issues[0].path.to_string(), "metadata.tokens");
}

TEST(JsonInString, NotReadWhenTheStringIsNotExactlyOneValue) {
  for (const char* metadata : {
           R"("{\"model\": \"x\", \"tokens\": 1} and more")",  // text after the value
           R"("see {\"model\": \"x\", \"tokens\": 1}")",        // text before it
           R"("{\"model\": \"x\", \"tokens\": 1")",              // cut off
           R"("model x")",                                       // no JSON at all
           R"("42")",                                            // a scalar
       }) {
    const std::string reply = std::string(R"({"answer": "a", "metadata": )") + metadata +
                              R"(, "steps": [], "counts": {}, "raw": ""})";
    const auto r = covenant::try_decode<Report>(reply, coerce());
    ASSERT_EQ(r.issues.size(), 1u) << metadata << "\n" << rendered(r.issues);
    EXPECT_EQ(r.issues[0].path.to_string(), "metadata") << metadata;
    EXPECT_EQ(r.issues[0].code, covenant::issue_code::type_mismatch) << metadata;
  }
}

TEST(JsonInString, StrictDecodingReadsNothingInStrings) {
  const auto r = covenant::try_decode<Report>(nested_reply);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.issues.size(), 3u) << rendered(r.issues);  // metadata, steps, counts
}

TEST(JsonInString, AListOfStringsGivenTheTextOfAList) {
  // The text of a list is read as the list, not as a one-item list holding the text.
  const auto r = covenant::try_decode<Tags>(R"({"tags": "[\"a\", \"b\"]"})", coerce());
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_EQ(r.value->tags, (std::vector<std::string>{"a", "b"}));
  // Any other text still is a one-item list.
  const auto one = covenant::try_decode<Tags>(R"({"tags": "a, b"})", coerce());
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one.value->tags, (std::vector<std::string>{"a, b"}));
}

const covenant::schema::model& report_model() {
  static const covenant::schema::model m = covenant::schema_set::parse(R"(
    class Meta {
      model string
      tokens int
    }
    class Step {
      name string
      values int[]
    }
    class Report {
      answer string
      metadata Meta
      steps Step[]
      counts map<string, int>
      raw string
    }
  )").model("Report");
  return m;
}

TEST(JsonInString, RuntimeSchemasReadTheSame) {
  const auto r = covenant::try_read_dynamic(nested_reply, report_model());
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_EQ(r.value.at("metadata").at("model").as_string(), "gpt-4o");
  EXPECT_EQ(r.value.at("metadata").at("tokens").as_int64(), 12);
  EXPECT_EQ(r.value.at("steps").as_array().size(), 2u);
  EXPECT_EQ(r.value.at("steps").at(0).at("values").as_array().size(), 2u);
  EXPECT_EQ(r.value.at("counts").at("a").as_int64(), 1);
  EXPECT_EQ(r.value.at("raw").as_string(), R"({"kept": "as text"})");
  EXPECT_TRUE(has_note(r.notes, "metadata", "a string holding a JSON object read as the object"));
  EXPECT_TRUE(has_note(r.notes, "steps[0].values", "a string holding a JSON list read as the list"));

  const auto cut = covenant::try_read_dynamic(
      R"({"answer": "a", "metadata": "{\"model\": \"x\"", "steps": [], "counts": {}, "raw": ""})", report_model());
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.issues[0].path.to_string(), "metadata");

  const auto strict = covenant::try_read_dynamic(nested_reply, report_model(), {.level = covenant::strictness::repair});
  EXPECT_FALSE(strict.ok());
}

TEST(JsonInString, TheWholeReplyEncodedTwice) {
  const auto r = covenant::try_read_dynamic(
      R"("{\"answer\": \"a\", \"metadata\": {\"model\": \"x\", \"tokens\": 1}, \"steps\": [], \"counts\": {}, \"raw\": \"r\"}")",
      report_model());
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_EQ(r.value.at("metadata").at("model").as_string(), "x");
  EXPECT_EQ(r.value.at("raw").as_string(), "r");
}

}  // namespace
