// Dynamic decoding: JSON text against a runtime schema, with the typed decoder's exact issues.
#include <covenant/read/decode.hpp>
#include <covenant/read/detail/stream_reader.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/types/json_equal.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/types/prompt_format.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "../../examples/models/final_answer.hpp"

namespace dyn_test {

enum class Level { low, high };

struct Point {
  int x = 0;
  int y = 0;
};

struct Shapes {
  std::variant<int, std::string, Point> choice;
  std::vector<Point> points;
  std::map<std::string, int> counts;
  std::optional<Level> level;
  std::vector<std::string> tags;
  std::variant<std::monostate, double> maybe;
};

struct Unique {
  std::vector<std::string> names;
  std::vector<Point> points;
};

struct Small {
  std::uint8_t u8 = 0;
  std::int16_t i16 = 0;
  std::string name;
};

}  // namespace dyn_test

template <>
struct covenant::describe<dyn_test::Level> {
  static constexpr auto values =
      covenant::values<dyn_test::Level>(covenant::value<dyn_test::Level::high>("", covenant::alias{"HIGH"}));
};

template <>
struct covenant::describe<dyn_test::Shapes> {
  static constexpr auto fields = covenant::fields<dyn_test::Shapes>(
      covenant::field<&dyn_test::Shapes::points>("", covenant::max_items{2}),
      covenant::field<&dyn_test::Shapes::tags>("", covenant::each{covenant::length{2, 4}}));
};

template <>
struct covenant::describe<dyn_test::Unique> {
  static constexpr auto fields = covenant::fields<dyn_test::Unique>(
      covenant::field<&dyn_test::Unique::names>("", covenant::unique_items{}),
      covenant::field<&dyn_test::Unique::points>("", covenant::unique_by<&dyn_test::Point::x>{}));
};

namespace {

using models::FinalAnswer;

std::string read_shared(const std::string& rel) {
  std::ifstream f(std::string(COVENANT_SHARED_DIR) + "/" + rel, std::ios::binary);
  if (!f) return {};
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// FinalAnswer (examples/models/final_answer.hpp) written as a schema file.
const char* final_answer_baml = R"(
/// Tokens spent producing the answer.
class TokenUsage {
  input_tokens int? @description("Prompt tokens.") @assert({{ this >= 0 }})
  output_tokens int? @description("Completion tokens.") @assert({{ this >= 0 }})
}

/// Additional metadata about how the answer was produced.
class AnswerMetadata {
  timestamp string? @description("When the answer was produced (ISO 8601).")
  model_used string? @description("Model that produced the answer.")
  token_usage TokenUsage? @description("Token usage.")
  program_version string? @description("Version of the producing program.")
}

/// The final, validated answer to the user's query.
class FinalAnswer {
  answer string @description("The final answer text.")
    @assert(non_empty, {{ this|length > 0 }})
    @assert({{ this|length <= 10000 }})
  confidence float @description("Confidence score.") @assert({{ this >= 0.0 and this <= 1.0 }})
  sources (string @assert({{ this|length > 0 }}))[] @description("Identifiers of the source documents.")
    @assert({{ this|length >= 1 and this|length <= 50 }})
  reasoning string? @description("Explanation of the answer.") @assert({{ this|length <= 5000 }})
  metadata AnswerMetadata? @description("Additional metadata.")
}
)";

const covenant::schema::model& baml_final_answer() {
  static const covenant::schema::model m = covenant::schema_set::parse(final_answer_baml).model("FinalAnswer");
  return m;
}

// Decodes `text` with the typed decoder and the dynamic one (BAML model); both issue lists.
void expect_same_issues(const std::string& text, const covenant::schema::model& m,
                        const covenant::decode_options& o = {}) {
  auto typed = covenant::try_decode<FinalAnswer>(text, o);
  auto dyn = covenant::try_decode_dynamic(text, m, o);
  EXPECT_EQ(dyn.issues, typed.issues) << "typed:\n"
                                      << covenant::render_feedback(typed.issues) << "dynamic:\n"
                                      << covenant::render_feedback(dyn.issues) << "text: " << text;
  EXPECT_EQ(dyn.ok(), typed.ok());
  if (o.coerce) {
    EXPECT_EQ(dyn.notes, typed.notes) << text;
  }
}

std::vector<std::string> parity_documents() {
  std::vector<std::string> docs = {
      R"({"answer": "The Eiffel Tower is 330 m tall.", "confidence": 0.87, "sources": ["https://en.wikipedia.org/wiki/Eiffel_Tower"], "metadata": {"timestamp": "2025-01-15T10:30:00Z", "token_usage": {"input_tokens": 512, "output_tokens": 128}}})",
      R"({"answer": 42, "confidence": "high", "sources": "a"})",
      R"({"answer": "a", "confidence": 1, "sources": ["s"], "metadata": {"token_usage": {"input_tokens": -3}}})",
      R"({"answer": null, "confidence": 1, "sources": ["s"], "reasoning": null})",
      R"({"confidence": 2})",
      R"({"answer": "", "confidence": -0.5, "sources": [], "reasoning": 7})",
      R"({"answer": "x", "confidence": 0.5, "sources": ["a", "", "b", ""], "metadata": {"model_used": 3, "token_usage": {"input_tokens": 1.5, "output_tokens": "many"}}})",
      R"({"answer": "x", "confidence": 0.5, "sources": ["a"], "metadata": [], "extra": {"deep": [1, 2, {"x": null}]}})",
      R"({"answer": "x", "confidence": 1e400, "sources": [1, null, true]})",
      R"({"answer": "x", "confidence": 0.5, "sources": ["a"], "metadata": {"token_usage": null, "program_version": "1"}})",
      R"([1, 2, 3])",
      R"("just a string")",
      R"({"answer": "x",, })",
      R"({"answer": "x", "confidence": 0.5, "sources": ["a"]} trailing)",
      R"()",
  };
  std::string sources = R"({"answer": "x", "confidence": 0.5, "sources": [)";
  for (int i = 0; i < 51; ++i) sources += (i ? ", " : "") + std::string("\"s\"");
  docs.push_back(sources + "]}");
  docs.push_back(R"({"answer": ")" + std::string(10001, 'a') + R"(", "confidence": 0.5, "sources": ["a"], "reasoning": ")" +
                 std::string(5001, 'b') + R"("})");
  for (const char* sample : {"bench/python/samples/valid_final_answer.json", "bench/python/samples/invalid_final_answer.json",
                             "bench/python/samples/large_final_answer.json", "bench/python/samples/large_answer_overlimit.json"}) {
    std::string text = read_shared(sample);
    if (!text.empty()) docs.push_back(std::move(text));
  }
  return docs;
}

TEST(DynamicParity, BamlFinalAnswerReportsExactlyTheTypedIssues) {
  for (const auto& doc : parity_documents()) expect_same_issues(doc, baml_final_answer());
}

TEST(DynamicParity, InvalidSampleGivesTheThreeTypedIssues) {
  const std::string text = read_shared("bench/python/samples/invalid_final_answer.json");
  if (text.empty()) GTEST_SKIP() << "shared samples absent";
  auto r = covenant::try_decode_dynamic(text, baml_final_answer());
  EXPECT_EQ(covenant::render_feedback(r.issues),
            "confidence: must be <= 1 (got 1.7)\n"
            "sources[1]: must not be empty (got \"\")\n"
            "answer: required field is missing\n");
  EXPECT_EQ(r.issues, covenant::try_decode<FinalAnswer>(text).issues);
}

TEST(DynamicParity, StrictUnknownFieldsAndCoercionMatchTheTypedDecoder) {
  covenant::decode_options strict;
  strict.reject_unknown_fields = true;
  covenant::decode_options coerce;
  coerce.coerce = true;
  for (const auto& doc : parity_documents()) {
    expect_same_issues(doc, baml_final_answer(), strict);
    expect_same_issues(doc, baml_final_answer(), coerce);
  }
  expect_same_issues(R"({"Answer": "x", "confidence": "0.5", "sources": "one", "metadata": {"modelUsed": 7}})",
                     baml_final_answer(), coerce);
}

TEST(DynamicParity, TypedModelDecodesDynamicallyWithTheSameIssues) {
  // The dynamic decoder also reads schema_of<T>() models: the issues are the typed ones.
  for (const auto& doc : parity_documents()) expect_same_issues(doc, covenant::schema_of<FinalAnswer>());
}

TEST(DynamicParity, SchemaFileGivesTheTypedPromptAndJsonSchema) {
  EXPECT_EQ(covenant::prompt_text(baml_final_answer()), covenant::prompt_of<FinalAnswer>());
  EXPECT_EQ(covenant::to_json_schema(baml_final_answer()), covenant::json_schema_of<FinalAnswer>());
  EXPECT_EQ(covenant::to_openai_strict_schema(baml_final_answer()),
            covenant::openai_strict_schema_of<FinalAnswer>());
}

template <class T>
void expect_typed_parity(const std::string& text, const covenant::decode_options& o = {}) {
  auto typed = covenant::try_decode<T>(text, o);
  auto dyn = covenant::try_decode_dynamic(text, covenant::schema_of<T>(), o);
  EXPECT_EQ(dyn.issues, typed.issues) << "typed:\n"
                                      << covenant::render_feedback(typed.issues) << "dynamic:\n"
                                      << covenant::render_feedback(dyn.issues) << "text: " << text;
  if (typed.ok()) {
    EXPECT_EQ(dyn.value, covenant::to_value(*typed.value)) << text;
  }
}

TEST(DynamicParity, UnionsMapsEnumsAndListsMatchTheTypedDecoder) {
  using dyn_test::Shapes;
  const std::string ok =
      R"({"choice": {"x": 1, "y": 2}, "points": [{"x": 1, "y": 2}], "counts": {"a": 1}, "level": "HIGH", "tags": ["ab"], "maybe": null})";
  expect_typed_parity<Shapes>(ok);
  expect_typed_parity<Shapes>(
      R"({"choice": [1], "points": [{"x": 1}, {"x": "2", "y": 3}, {}], "counts": {"a": "x", "b": 2}, "level": "medium", "tags": ["a", "abcde", 3], "maybe": "n"})");
  expect_typed_parity<Shapes>(R"({"choice": {"x": 1}, "points": [], "counts": {}, "tags": [], "maybe": 2.5})");
  expect_typed_parity<Shapes>(R"({"choice": "text", "points": null, "counts": [], "level": null, "tags": null})");
  expect_typed_parity<Shapes>(R"({"choice": 7, "points": [], "counts": {}, "tags": [], "maybe": 1, "level": 3})");
  covenant::decode_options coerce;
  coerce.coerce = true;
  expect_typed_parity<Shapes>(R"({"choice": "7", "points": {"x": "1", "y": 2}, "counts": {"a": "3"}, "level": "high", "tags": "abc", "maybe": "2.5"})",
                              coerce);
}

TEST(DynamicParity, UniquenessMessagesMatchTheTypedValidators) {
  using dyn_test::Unique;
  expect_typed_parity<Unique>(R"({"names": ["a", "b"], "points": [{"x": 1, "y": 1}, {"x": 2, "y": 1}]})");
  expect_typed_parity<Unique>(R"({"names": ["a", "b", "a"], "points": [{"x": 1, "y": 1}, {"x": 1, "y": 2}]})");
}

TEST(DynamicParity, IntegerWidthsMatchTheTypedDecoder) {
  using dyn_test::Small;
  expect_typed_parity<Small>(R"({"u8": 255, "i16": -32768, "name": "n"})");
  expect_typed_parity<Small>(R"({"u8": 256, "i16": 1.5, "name": 3})");
  expect_typed_parity<Small>(R"({"u8": -1, "i16": 40000, "name": "n"})");
}

// ---- values ---------------------------------------------------------------------------------

const char* ticket_baml = R"(
enum Priority {
  LOW @alias("low")
  HIGH @alias("high")
  INTERNAL @skip
}
class Ticket {
  title string @alias("Title")
  priority Priority
  notes string @skip
  tags string[]?
  kind "bug" | "feature"
  estimate int | string
  labels map<"team" | "area", string>?
}
)";

TEST(DynamicValues, KeysFollowTheSchemaUnknownAndSkippedFieldsAreDropped) {
  auto set = covenant::schema_set::parse(ticket_baml);
  auto m = set.model("Ticket");
  auto r = covenant::try_decode_dynamic(
      R"({"extra": 1, "kind": "bug", "priority": "high", "Title": "Crash", "notes": "secret", "estimate": "2d"})", m);
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(covenant::json_text(r.value), R"({"Title":"Crash","priority":"high","kind":"bug","estimate":"2d"})");
  auto declared = covenant::try_decode_dynamic(R"({"kind": "bug", "priority": "high", "Title": "Crash", "estimate": 3})", m,
                                               {}, covenant::output_keys::declared);
  ASSERT_TRUE(declared) << covenant::render_feedback(declared.issues);
  EXPECT_EQ(covenant::json_text(declared.value), R"({"title":"Crash","priority":"HIGH","kind":"bug","estimate":3})");
  // An alias replaces the declared name in JSON (as in BAML): neither "HIGH" nor a "title" key reads.
  auto old_names = covenant::try_decode_dynamic(R"({"kind": "bug", "priority": "HIGH", "title": "Crash", "estimate": 3})", m);
  EXPECT_EQ(covenant::render_feedback(old_names.issues),
            "priority: must be one of \"low\", \"high\" (got \"HIGH\")\nTitle: required field is missing\n");
}

TEST(DynamicValues, LiteralsSkippedEnumValuesAndMapKeysAreChecked) {
  auto m = covenant::schema_set::parse(ticket_baml).model("Ticket");
  auto r = covenant::try_decode_dynamic(
      R"({"Title": "t", "priority": "INTERNAL", "kind": "question", "estimate": 1.5, "labels": {"team": "a", "owner": "b"}})", m);
  EXPECT_EQ(covenant::render_feedback(r.issues),
            "priority: must be one of \"low\", \"high\" (got \"INTERNAL\")\n"
            "kind: must be one of \"bug\", \"feature\" (got \"question\")\n"
            "estimate: expected integer or string (got 1.5)\n"
            "labels.owner: key must be one of \"team\", \"area\" (got \"owner\")\n");
}

TEST(DynamicValues, AUnionOfAnEnumAndLiteralsIsOneChoice) {
  // Every alternative names values: a value of their kind that names none breaks the one choice of
  // the union (whichever alternative comes first); a value of another kind is a type mismatch.
  auto set = covenant::schema_set::parse(R"(
    enum Tone { calm tense }
    class P { t Tone | "other" }
    class Q { t "other" | Tone }
  )");
  for (const char* name : {"P", "Q"}) {
    const auto out = covenant::try_decode_dynamic(R"({"t": "loud"})", set.model(name));
    ASSERT_EQ(out.issues.size(), 1u) << name;
    EXPECT_EQ(out.issues[0].code, covenant::issue_code::constraint_violation) << name;
    EXPECT_TRUE(out.issues[0].message.starts_with("must be one of ")) << name;
    for (const char* v : {"\"calm\"", "\"tense\"", "\"other\""})
      EXPECT_NE(out.issues[0].message.find(v), std::string::npos) << name << ": " << out.issues[0].message;
    const auto kind = covenant::try_decode_dynamic(R"({"t": 3})", set.model(name));
    ASSERT_EQ(kind.issues.size(), 1u) << name;
    EXPECT_EQ(kind.issues[0].code, covenant::issue_code::type_mismatch) << name;
  }
}

TEST(DynamicValues, DefaultsAreFilledAndValuesValidateAgain) {
  using namespace covenant;
  schema::model m;
  schema::definition d;
  d.name = "Config";
  schema::object_def o;
  schema::field a;
  a.name = a.key = "retries";
  a.type = schema::make_primitive(schema::kind::integer);
  a.required = false;
  a.default_value = boost::json::value(3);
  o.fields.push_back(a);
  d.body = o;
  m.defs.push_back(d);
  m.root = schema::make_ref("Config");
  m.root.def = 0;
  auto r = try_decode_dynamic("{}", m);
  ASSERT_TRUE(r);
  EXPECT_EQ(json_text(r.value), R"({"retries":3})");
  auto again = try_validate_value(r.value, m);
  EXPECT_TRUE(again);
  EXPECT_EQ(again.value, r.value);
  EXPECT_EQ(json_text(boost::json::parse(R"({"a": 0.87, "b": [1e21, -0.5]})")), R"({"a":0.87,"b":[1e+21,-0.5]})");
}

TEST(DynamicValues, ValidateValueReportsTheDecoderIssues) {
  boost::json::value v = boost::json::parse(R"({"answer": "", "confidence": 1.7, "sources": ["a", ""]})");
  auto r = covenant::try_validate_value(v, baml_final_answer());
  EXPECT_EQ(covenant::render_feedback(r.issues),
            "answer: must not be empty (got \"\")\n"
            "confidence: must be <= 1 (got 1.7)\n"
            "sources[1]: must not be empty (got \"\")\n");
}

TEST(DynamicValues, PlainFormsReturnTheValueOrThrowTheIssuesOfTheirTryForms) {
  const covenant::schema::model& m = baml_final_answer();
  const std::string good = R"({"answer": "a", "confidence": 0.5, "sources": ["s"]})";
  const std::string bad = R"({"answer": "", "confidence": 1.7, "sources": ["a", ""]})";
  EXPECT_EQ(covenant::decode_dynamic(good, m), covenant::try_decode_dynamic(good, m).value);
  EXPECT_EQ(covenant::validate_value(boost::json::parse(good), m),
            covenant::try_validate_value(boost::json::parse(good), m).value);
  const std::string reply = "```json\n" + good + "\n```";
  EXPECT_EQ(covenant::read_dynamic(reply, m), covenant::try_read_dynamic(reply, m).value);

  const covenant::issue_list expected = covenant::try_decode_dynamic(bad, m).issues;
  ASSERT_EQ(expected.size(), 3u);
  const auto thrown = [](const auto& call) -> covenant::issue_list {
    try {
      (void)call();
    } catch (const covenant::decode_error& e) {
      return e.issues();
    }
    ADD_FAILURE() << "expected decode_error";
    return {};
  };
  EXPECT_EQ(thrown([&] { return covenant::decode_dynamic(bad, m); }), expected);
  EXPECT_EQ(thrown([&] { return covenant::validate_value(boost::json::parse(bad), m); }), expected);
  EXPECT_EQ(thrown([&] { return covenant::read_dynamic(bad, m); }), covenant::try_read_dynamic(bad, m).issues);
  EXPECT_EQ(thrown([&] { return covenant::read_dynamic("not json", m, {.level = covenant::strictness::strict}); }),
            covenant::try_read_dynamic("not json", m, {.level = covenant::strictness::strict}).issues);
}

// ---- rules ----------------------------------------------------------------------------------

const char* rules_baml = R"(
class Range {
  start int
  end int @alias("stop")
  label string? @check(short_label, {{ this|length < 5 }})
  code string @assert(upper, {{ this == this|upper }})
  counts map<string, int> @assert(has_total, {{ "total" in this }})
  @@assert(ordered, {{ this.start <= this.end }})
  @@check(small, {{ this.end - this.start < 100 }})
}
enum Answer {
  YES
  NO
  @@assert(not_no, {{ this != "NO" }})
}
class Poll {
  answer Answer
}
)";

TEST(DynamicRules, AssertsAreIssuesAndChecksAreNotes) {
  auto set = covenant::schema_set::parse(rules_baml);
  auto m = set.model("Range");
  auto ok = covenant::try_decode_dynamic(R"({"start": 1, "stop": 500, "label": "longer", "code": "AB", "counts": {"total": 1}})", m);
  ASSERT_TRUE(ok) << covenant::render_feedback(ok.issues);
  ASSERT_EQ(ok.notes.size(), 2u);
  EXPECT_EQ(ok.notes[0].kind, covenant::note_kind::check_failed);
  EXPECT_EQ(ok.notes[0].path.to_string(), "label");
  // A noop rule's note reads as every failed check's: "check failed: <message> (got <actual>)", and
  // an object's rule as a C++ invariant's, "check failed: must satisfy: <rule>".
  EXPECT_EQ(ok.notes[0].detail, "check failed: must satisfy this|length < 5 (short_label) (got \"longer\")");
  EXPECT_EQ(ok.notes[1].path.to_string(), "");
  EXPECT_EQ(ok.notes[1].detail, "check failed: must satisfy: this.end - this.start < 100 (small)");

  auto bad = covenant::try_decode_dynamic(R"({"start": 5, "stop": 1, "code": "ab", "counts": {}})", m);
  EXPECT_EQ(covenant::render_feedback(bad.issues),
            "code: must satisfy this == this|upper (upper) (got \"ab\")\n"
            "counts: must satisfy \"total\" in this (has_total)\n");
  EXPECT_EQ(bad.issues[0].expected, "must satisfy this == this|upper (upper)");
  // The object rule runs once the fields are valid, and reads fields by their declared names.
  auto rule = covenant::try_decode_dynamic(R"({"start": 5, "stop": 1, "code": "AB", "counts": {"total": 0}})", m);
  ASSERT_EQ(rule.issues.size(), 1u);
  EXPECT_EQ(rule.issues[0].code, covenant::issue_code::invariant_violation);
  EXPECT_EQ(rule.issues[0].to_string(), "must satisfy: this.start <= this.end (ordered)");
}

TEST(DynamicRules, EnumRulesApplyToEveryUse) {
  auto m = covenant::schema_set::parse(rules_baml).model("Poll");
  EXPECT_TRUE(covenant::try_decode_dynamic(R"({"answer": "YES"})", m));
  auto r = covenant::try_decode_dynamic(R"({"answer": "NO"})", m);
  EXPECT_EQ(covenant::render_feedback(r.issues), "answer: must satisfy this != \"NO\" (not_no) (got \"NO\")\n");
}

TEST(DynamicRules, UnionAlternativeRanksAsInTheTypedDecoder) {
  auto set = covenant::schema_set::parse(R"(
    class A { a int }
    class B {
      b string
      c int
    }
  )");
  auto m = set.model_for("A | B");
  EXPECT_TRUE(covenant::try_decode_dynamic(R"({"b": "x", "c": 1})", m));
  auto r = covenant::try_decode_dynamic(R"({"b": "x"})", m);
  // A misses one field, B misses one: the first best (A) is reported.
  EXPECT_EQ(covenant::render_feedback(r.issues), "a: required field is missing\n");
  auto t = covenant::try_decode_dynamic("3", m);
  EXPECT_EQ(covenant::render_feedback(t.issues), "expected object (A) or object (B) (got 3)\n");
}

TEST(DynamicValues, DepthAndSizeLimitsAreIssuesNotCrashes) {
  auto set = covenant::schema_set::parse("type Json = int | string | Json[] | map<string, Json>");
  auto m = set.model("Json");
  std::string deep(100000, '[');
  auto r = covenant::try_decode_dynamic(deep, m);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].code, covenant::issue_code::parse_error);
  EXPECT_TRUE(r.value.is_null());
  covenant::decode_options small;
  small.max_input_bytes = 4;
  EXPECT_EQ(covenant::try_decode_dynamic("[1, 2, 3]", m, small).issues.at(0).code, covenant::issue_code::parse_error);
  boost::json::value very_deep = boost::json::array{};
  for (int i = 0; i < 100000; ++i) {
    boost::json::array wrap;
    wrap.push_back(std::move(very_deep));
    very_deep = std::move(wrap);
  }
  auto v = covenant::try_validate_value(very_deep, m);
  ASSERT_EQ(v.issues.size(), 1u);
  EXPECT_EQ(v.issues[0].code, covenant::issue_code::parse_error);
  // (the deep value is released iteratively to keep this test's own stack small)
  while (very_deep.is_array() && !very_deep.get_array().empty()) {
    boost::json::value inner = std::move(very_deep.get_array()[0]);
    very_deep = std::move(inner);
  }
  auto ok = covenant::try_decode_dynamic(R"([1, "a", [2, {"k": [3]}]])", m);
  EXPECT_TRUE(ok) << covenant::render_feedback(ok.issues);
}

}  // namespace

namespace {

// Schema-guided coercions of try_read_dynamic (coerce level).
std::string read_text(std::string_view schema, std::string_view target, std::string_view reply,
                      covenant::read_result* out = nullptr) {
  const auto set = covenant::schema_set::parse(schema);
  auto r = covenant::try_read_dynamic(reply, set.model_for(target));
  std::string s = r.ok() ? covenant::json_text(r.value) : "error: " + covenant::render_feedback(r.issues);
  if (out != nullptr) *out = std::move(r);
  return s;
}

TEST(DynamicCoerce, LiteralUnionsAndEnumsIgnoreCaseAccentsAndPunctuation) {
  const char* schema = R"(
    enum Dish {
      COFFEE @alias("café")
      CAKE @alias("Gâteau")
    }
    class Form {
      title string @alias("señor")
      street string @alias("Straße")
    }
  )";
  covenant::read_result r;
  EXPECT_EQ(read_text(schema, R"("low" | "medium" | "high")", "\"HIGH\"", &r), "\"high\"");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].to_string(), "coerced: \"HIGH\" read as \"high\" (ignoring case and punctuation)");
  EXPECT_EQ(read_text(schema, R"("TWO")", "The answer is Two"), "\"TWO\"");
  EXPECT_EQ(read_text(schema, "Dish", "I would like some CAFE please"), "\"café\"");
  EXPECT_EQ(read_text(schema, "Dish[]", R"(["cafe", "gateau"])"), R"(["café","Gâteau"])");
  EXPECT_EQ(read_text(schema, "Form", R"({"senor": "Sr. García", "strasse": "Main St"})"),
            R"({"señor":"Sr. García","Straße":"Main St"})");
  // Two values named: ambiguous, for a union of literals as for an enum.
  EXPECT_EQ(read_text(schema, R"("TWO" | "THREE")", "TWO or THREE").rfind("error: ", 0), 0u);
  EXPECT_EQ(read_text(schema, "Dish", "cafe or gateau?").rfind("error: ", 0), 0u);
}

TEST(DynamicCoerce, ShapesAndNumbersInText) {
  const char* schema = R"(
    class Foo {
      foo int
    }
    class Item {
      key string
    }
    class Small {
      id string
      name string
    }
    class Full {
      id string
      name string
      metadata string[]
    }
  )";
  EXPECT_EQ(read_text(schema, R"("ONE" | "TWO")", R"(["TWO"])"), "\"TWO\"");
  EXPECT_EQ(read_text(schema, "int", R"({"status": 1})"), "1");
  EXPECT_EQ(read_text(schema, "int", R"({"status": {"code": 1}})").rfind("error: ", 0), 0u);  // one level only
  EXPECT_EQ(read_text(schema, "Foo", "1214"), R"({"foo":1214})");
  EXPECT_EQ(read_text(schema, "float", "1 cup unsalted butter, room temperature"), "1");
  EXPECT_EQ(read_text(schema, "float", "between 3 and 4").rfind("error: ", 0), 0u);
  EXPECT_EQ(read_text(schema, "float", "very high").rfind("error: ", 0), 0u);
  EXPECT_EQ(read_text(schema, "bool", "Answer: **True**"), "true");
  EXPECT_EQ(read_text(schema, "string", R"({"hi":    "hello"})"), R"("{\"hi\":    \"hello\"}")");
  EXPECT_EQ(read_text(schema, "string", R"(The output is: {"a": 1})"), R"("The output is: {\"a\": 1}")");
  EXPECT_EQ(read_text(schema, "Item[]", R"({"key": "v1"} {"key": "v2"})"), R"([{"key":"v1"},{"key":"v2"}])");
  // The alternative that reads every key wins over the first that fits.
  EXPECT_EQ(read_text(schema, "Small | Full", R"({"id": "1", "name": "n", "metadata": ["m"]})"),
            R"({"id":"1","name":"n","metadata":["m"]})");
}

}  // namespace

// ---- streaming attributes in partial mode (@stream.done, @stream.not_null, @@stream.done) ----

namespace {

covenant::read_result read_partial(std::string_view schema, std::string_view target, std::string_view text) {
  const auto set = covenant::schema_set::parse(schema);
  covenant::read_options o;
  o.partial = true;
  return covenant::try_read_dynamic(text, set.model_for(target), o);
}

bool has_note(const covenant::read_result& r, std::string_view where, std::string_view detail_part) {
  for (const auto& n : r.notes)
    if (n.kind == covenant::note_kind::incomplete && n.path.to_string() == where &&
        n.detail.find(detail_part) != std::string::npos)
      return true;
  return false;
}

}  // namespace

TEST(StreamAttributes, SchemaFileRecordsThemInTheModel) {
  const auto set = covenant::schema_set::parse(R"(
    class Foo {
      a string @stream.done
      b int @stream.not_null @stream.with_state
      @@stream.done
    }
  )");
  const auto m = set.model("Foo");
  const auto* obj = m.find("Foo")->object();
  ASSERT_NE(obj, nullptr);
  EXPECT_EQ(obj->stream, covenant::schema::stream_flag::done);
  EXPECT_EQ(obj->fields[0].type.stream, covenant::schema::stream_flag::done);
  EXPECT_EQ(obj->fields[1].type.stream, covenant::schema::stream_flag::not_null | covenant::schema::stream_flag::with_state);
  const auto e = set.model_for("(Foo | string) @stream.done");
  EXPECT_EQ(e.root.kind, covenant::schema::kind::union_);
  EXPECT_EQ(e.root.stream, covenant::schema::stream_flag::done);
}

TEST(StreamAttributes, DoneFieldIsLeftOutUntilFinished) {
  const char* schema = "class Foo {\n foo string @stream.done\n bar string\n}";
  auto r = read_partial(schema, "Foo", R"({"bar": "x", "foo": "hal)");
  ASSERT_TRUE(r.ok()) << r.issues.front().to_string();
  EXPECT_EQ(r.value, boost::json::parse(R"({"bar": "x"})"));
  EXPECT_TRUE(has_note(r, "foo", "@stream.done"));
  // finished: shown, even though the object is not
  r = read_partial(schema, "Foo", R"({"foo": "hello", "bar": "wor)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value, boost::json::parse(R"({"foo": "hello", "bar": "wor"})"));
}

TEST(StreamAttributes, DoneClassItemsAppearWhole) {
  const char* schema = "class Foo {\n nums int[]\n @@stream.done\n}\nclass Bar {\n foos Foo[]\n}";
  auto r = read_partial(schema, "Bar", "{'foos': [{'nums': [1, 2]}, {'nums': [3, 4]\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value, boost::json::parse(R"({"foos": [{"nums": [1, 2]}]})"));
  EXPECT_TRUE(has_note(r, "foos[1]", "@stream.done"));
  // a type expression's @stream.done works the same on list items
  r = read_partial("class T {\n name string\n args string\n}", "(T @stream.done)[]",
                   R"([{"name": "a", "args": "{}"}, {"name": "b)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value, boost::json::parse(R"([{"name": "a", "args": "{}"}])"));
}

TEST(StreamAttributes, NotNullFieldHoldsBackItsObject) {
  const char* schema = "class Foo {\n my_int int\n my_string string @stream.not_null\n}\nclass Bar {\n foos Foo[]\n}";
  auto r = read_partial(schema, "Bar", R"({"foos": [{"my_int": 1, "my)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value, boost::json::parse(R"({"foos": []})"));
  EXPECT_TRUE(has_note(r, "foos[0]", "my_string"));
  r = read_partial(schema, "Bar", R"({"foos": [{"my_int": 1, "my_string": "ab)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value, boost::json::parse(R"({"foos": [{"my_int": 1, "my_string": "ab"}]})"));
}

TEST(StreamAttributes, NotNullRootWithNothingFinishedIsAnIssue) {
  const char* schema = "class Foo {\n nums int[]\n @@stream.done\n}";
  auto r = read_partial(schema, "Foo @stream.not_null", "{'nums': [1,2]");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(r.value.is_null());
  // without @stream.not_null: nothing to show yet, not an issue
  r = read_partial(schema, "Foo", "{'nums': [1,2]");
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.value.is_null());
  // finished: shown
  r = read_partial(schema, "Foo @stream.not_null", "{'nums': [1,2]}");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value, boost::json::parse(R"({"nums": [1, 2]})"));
}

TEST(StreamAttributes, UnfinishedStringIsNotReadAsALiteralOrEnumValue) {
  // "pay" may be the start of "pay_without_credit_card"
  auto r = read_partial("", R"("pay" | "pay_without_credit_card")", "\"pay");
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.value.is_null());
  r = read_partial("enum E {\n A\n AB\n}\nclass C {\n e E\n s string\n}", "C", R"({"s": "x", "e": "A)");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value, boost::json::parse(R"({"s": "x"})"));
  EXPECT_TRUE(has_note(r, "e", "unfinished string"));
}

TEST(StreamAttributes, TheStreamShowsWhatAPartialReadingShows) {
  // The incremental stream of a runtime schema follows the same attributes as a partial reading
  // of the text so far: a @stream.done value is left out until finished, an object until its
  // @stream.not_null fields have values, a string of a closed choice until it ends. (The stream
  // applied @stream.done to strings only, and @stream.not_null not at all.)
  const auto set = covenant::schema_set::parse(R"(
    class Step {
      title string @stream.not_null
      notes string[]
    }
    class Part {
      name string
      @@stream.done
    }
    enum Level {
      low
      high
    }
    class Tag {
      name string
      level Level @stream.not_null
      done_list int[] @stream.done @stream.not_null
    }
    class Plan {
      steps Step[]
      summary string @stream.done
      tags string[] @stream.done
      parts Part[]
      label "a" | "b"
      marks Tag[]
    }
  )");
  const auto model = set.model_for("Plan");
  const std::string text =
      R"({"steps": [{"notes": ["x", "y"], "title": "first"}, {"title": "second", "notes": []}], )"
      R"("summary": "all done", "tags": ["p", "q"], "parts": [{"name": "one"}, {"name": "two"}], "label": "b", )"
      R"("marks": [{"name": "m", "level": "high", "done_list": [1, 2]}, {"done_list": [3], "level": "low", "name": "n"}]})";
  covenant::detail::dynamic_stream_reader stream(model, {}, covenant::strictness::coerce);
  std::size_t compared = 0;
  for (std::size_t n = 1; n <= text.size(); ++n) {
    stream.feed(text.substr(n - 1, 1));
    covenant::read_options o;
    o.partial = true;
    const auto reading = covenant::try_read_dynamic(text.substr(0, n), model, o);
    if (!reading.ok()) continue;
    ++compared;
    EXPECT_TRUE(covenant::json_equal(stream.view().value(), reading.value))
        << "after " << text.substr(0, n) << "\nstream:  " << covenant::json_text(stream.view().value())
        << "\nreading: " << covenant::json_text(reading.value);
  }
  EXPECT_GT(compared, text.size() / 2);
}

TEST(StreamAttributes, FinalModeIgnoresThem) {
  const auto set = covenant::schema_set::parse("class Foo {\n foo string @stream.done\n bar string?\n}");
  auto r = covenant::try_read_dynamic(R"({"bar": "x", "foo": "hal)", set.model("Foo"));
  EXPECT_FALSE(r.ok());  // the cut value is dropped and foo is missing: an issue, as without the attribute
}

TEST(StreamAttributes, PartialRankingSetsPendingIssuesAside) {
  // The fenced object still lacks fields (not written yet); the whole text, which reads as a
  // one-item list with a single issue, must not win over it.
  const char* schema =
      "class G {\n v V[]\n e string[]\n}\nclass V {\n id string\n m map<string, string>\n}\n"
      "class E {\n code int\n message string\n}";
  auto r = read_partial(schema, "G | G[] | E", "```json\n{\"v\": [{\"id\": \"a\", \"m\": {\"k\": \"x\"}}, {\"id\": \n");
  ASSERT_TRUE(r.ok()) << r.issues.front().to_string();
  EXPECT_EQ(r.value, boost::json::parse(R"({"v": [{"id": "a", "m": {"k": "x"}}, {}]})"));
  EXPECT_TRUE(has_note(r, "v[1].id", "not written yet"));
}

namespace {

const char* wrapper_baml = R"(
class Circle {
  name string
  radius int
}
class Square {
  name string
  side int
}
class Pick {
  selected Circle | Square
}
)";

TEST(DynamicCoercion, AnObjectIsReadAsTheOnlyFieldOfAWrappingClass) {
  auto m = covenant::schema_set::parse(wrapper_baml).model("Pick");
  covenant::decode_options coerce;
  coerce.coerce = true;
  auto r = covenant::try_decode_dynamic(R"({"name": "c", "side": 2})", m, coerce);
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(covenant::json_text(r.value), R"({"selected":{"name":"c","side":2}})");
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_EQ(r.notes[0].to_string(), "coerced: an object read as the value of the only field selected");
  // A key naming the field: read as the class itself.
  auto named = covenant::try_decode_dynamic(R"({"selected": {"name": "c", "radius": 1}})", m, coerce);
  ASSERT_TRUE(named) << covenant::render_feedback(named.issues);
  EXPECT_TRUE(named.notes.empty());
  // Not without coercions, and not when the object does not read as the field.
  EXPECT_FALSE(covenant::try_decode_dynamic(R"({"name": "c", "side": 2})", m));
  auto wrong = covenant::try_decode_dynamic(R"({"name": "c", "height": 2})", m, coerce);
  EXPECT_EQ(covenant::render_feedback(wrong.issues), "selected: required field is missing\n");
}

}  // namespace
