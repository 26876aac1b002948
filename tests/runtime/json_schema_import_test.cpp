// JSON Schema import: documents into the schema model; round trip with the exporter; parity of
// decoding with the typed decoder; errors with JSON pointers.
#include <covenant/read/decode.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/runtime/json_schema_import.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "../../examples/models/final_answer.hpp"

namespace jsi {

enum class Level { low, medium, high };

struct Ticket {
  std::string title;
  Level level = Level::low;
  std::optional<Level> previous;
  std::vector<std::string> tags;
};

struct Circle {
  double radius = 0;
};
struct Square {
  double side = 0;
};
struct Drawing {
  std::variant<Circle, Square> shape;
  std::variant<std::monostate, int, std::string> id;
  std::optional<std::variant<int, std::string>> label;
  std::variant<std::string, Circle> either;
};

struct Counts {
  std::map<std::string, int> counts;
  std::optional<std::map<std::string, std::string>> labels;
};

struct Node {
  std::string name;
  std::vector<Node> children;
};

struct Tree {
  Node root;
  std::optional<Node> spare;
};

struct Narrow {
  std::int8_t a = 0;
  std::uint16_t b = 0;
  std::uint32_t c = 0;
  std::uint8_t d = 0;
  std::uint64_t e = 0;
  std::int16_t f = 0;
};

struct Query {
  std::string q;
  int max_snippets = 3;
  std::string lang = "en";
};

struct Link {
  std::string url;
  std::string id;
  std::string code;
  std::vector<std::string> tags;
  std::optional<double> score;
  boost::json::value extra;
};

struct Dial {
  double speed = 1;
  std::optional<std::string> mode;
  std::vector<std::optional<int>> sparse;
};

}  // namespace jsi

template <>
struct covenant::describe<jsi::Level> {
  static constexpr std::string_view description = "How urgent the ticket is.";
  static constexpr auto values = covenant::values<jsi::Level>(
      covenant::value<jsi::Level::low>("Little risk.", covenant::alias{"Low"}),
      covenant::value<jsi::Level::high>("Needs review today."));
};

template <>
struct covenant::describe<jsi::Ticket> {
  static constexpr std::string_view description = "A ticket.";
  static constexpr auto fields = covenant::fields<jsi::Ticket>(
      covenant::field<&jsi::Ticket::title>("Short title.", covenant::length{1, 80}),
      covenant::field<&jsi::Ticket::level>("Urgency."),
      covenant::field<&jsi::Ticket::tags>(covenant::item_count{0, 3}, covenant::each{covenant::non_empty{}}));
};

template <>
struct covenant::describe<jsi::Counts> {
  static constexpr auto fields = covenant::fields<jsi::Counts>(
      covenant::field<&jsi::Counts::counts>("Votes per option.", covenant::item_count{1, 10},
                                            covenant::each{covenant::range{0, 5}}));
};

template <>
struct covenant::describe<jsi::Query> {
  static constexpr auto fields = covenant::fields<jsi::Query>(
      covenant::field<&jsi::Query::max_snippets>("How many snippets.", covenant::defaulted{}, covenant::range{1, 10}),
      covenant::field<&jsi::Query::lang>(covenant::defaulted{}, covenant::alias{"language"}));
};

template <>
struct covenant::describe<jsi::Link> {
  static constexpr auto fields = covenant::fields<jsi::Link>(
      covenant::field<&jsi::Link::url>(covenant::url{}, covenant::max_length{200}),
      covenant::field<&jsi::Link::id>(covenant::uuid{}),
      covenant::field<&jsi::Link::code>(covenant::pattern{"^[A-Z]{3}$"}, covenant::one_of{"ABC", "XYZ"}),
      covenant::field<&jsi::Link::tags>(covenant::unique_items{}, covenant::max_items{5}),
      covenant::field<&jsi::Link::score>(covenant::exclusive_minimum{0}, covenant::exclusive_maximum{1}));
};

template <>
struct covenant::describe<jsi::Dial> {
  static constexpr auto fields = covenant::fields<jsi::Dial>(
      covenant::field<&jsi::Dial::speed>(covenant::one_of{1.0, 2.5}, covenant::multiple_of{0.5}),
      covenant::field<&jsi::Dial::mode>(covenant::one_of{"slow", "fast"}));
};

namespace {

namespace json = boost::json;

std::string read_shared(const std::string& rel) {
  std::ifstream f(std::string(COVENANT_SHARED_DIR) + "/" + rel, std::ios::binary);
  if (!f) return {};
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// export -> import -> export gives the same document (same text: same keys in the same order).
template <class T>
covenant::schema::model expect_round_trip() {
  const json::value& first = covenant::json_schema_of<T>();
  covenant::schema::model m = covenant::import_json_schema(first);
  const json::value second = covenant::to_json_schema(m);
  EXPECT_EQ(json::serialize(second), json::serialize(first));
  return m;
}

template <class T>
void expect_same_issues(const covenant::schema::model& imported, const std::vector<std::string>& docs) {
  for (const auto& text : docs) {
    auto typed = covenant::try_decode<T>(text);
    auto dyn = covenant::try_decode_dynamic(text, imported);
    EXPECT_EQ(dyn.issues, typed.issues) << "typed:\n"
                                        << covenant::render_feedback(typed.issues) << "imported:\n"
                                        << covenant::render_feedback(dyn.issues) << "text: " << text;
  }
}

TEST(JsonSchemaImport, FinalAnswerRoundTripsAndDecodesLikeTheTypedDecoder) {
  const auto m = expect_round_trip<models::FinalAnswer>();
  std::vector<std::string> docs = {
      R"({"answer": "a", "confidence": 0.5, "sources": ["s"], "metadata": {"token_usage": {"input_tokens": -3}}})",
      R"({"answer": 42, "confidence": "high", "sources": "a"})",
      R"({"answer": "", "confidence": 1.5, "sources": ["", "x"], "reasoning": null, "metadata": null})",
      R"({"confidence": 2})",
  };
  for (const char* sample : {"bench/python/samples/valid_final_answer.json", "bench/python/samples/invalid_final_answer.json",
                             "bench/python/samples/large_answer_overlimit.json"}) {
    std::string text = read_shared(sample);
    if (!text.empty()) docs.push_back(std::move(text));
  }
  expect_same_issues<models::FinalAnswer>(m, docs);
}

TEST(JsonSchemaImport, EnumsObjectsAndListsRoundTrip) {
  const auto m = expect_round_trip<jsi::Ticket>();
  EXPECT_EQ(m.title(), "Ticket");
  ASSERT_NE(m.find("Level"), nullptr);
  EXPECT_NE(m.find("Level")->enumeration(), nullptr);
  expect_same_issues<jsi::Ticket>(m, {R"({"title": "", "level": "urgent", "previous": "Low", "tags": ["a", "", "b", "c"]})",
                                      R"({"title": "ok", "level": "medium", "tags": []})",
                                      R"({"level": 3, "previous": null})"});
}

TEST(JsonSchemaImport, UnionsAndNullableFormsRoundTrip) {
  const auto m = expect_round_trip<jsi::Drawing>();
  expect_same_issues<jsi::Drawing>(m, {R"({"shape": {"radius": 1}, "id": null, "label": null, "either": "s"})",
                                       R"({"shape": {"side": "x"}, "id": [1], "label": 2.5, "either": {"radius": "r"}})",
                                       R"({"shape": 3, "id": "a", "either": 4})"});
}

TEST(JsonSchemaImport, MapsRecursionAndIntegerWidthsRoundTrip) {
  const auto counts = expect_round_trip<jsi::Counts>();
  expect_same_issues<jsi::Counts>(counts, {R"({"counts": {}, "labels": {"a": 1}})", R"({"counts": {"a": 9, "b": 2}})"});
  const auto tree = expect_round_trip<jsi::Tree>();
  expect_same_issues<jsi::Tree>(tree, {R"({"root": {"name": "r", "children": [{"name": 1, "children": [{}]}]}})"});
  const auto narrow = expect_round_trip<jsi::Narrow>();
  // 8- and 16-bit widths survive the document; 32/64-bit unsigned ones read back as 64-bit integers
  // with minimum 0 (their upper bounds are not written).
  expect_same_issues<jsi::Narrow>(narrow, {R"({"a": 128, "b": -1, "c": 1, "d": 256, "e": 0, "f": 40000})",
                                           R"({"a": -128, "b": 65535, "c": 0, "d": 255, "e": 9223372036854775807, "f": 1})"});
}

TEST(JsonSchemaImport, DefaultsFormatsPatternsAndOneOfRoundTrip) {
  const auto query = expect_round_trip<jsi::Query>();
  expect_same_issues<jsi::Query>(query, {R"({"q": "x"})", R"({"q": "x", "max_snippets": 11, "language": 3})"});
  auto filled = covenant::try_decode_dynamic(R"({"q": "x"})", query);
  EXPECT_EQ(covenant::json_text(filled.value), R"({"q":"x","max_snippets":3,"language":"en"})");
  const auto link = expect_round_trip<jsi::Link>();
  expect_same_issues<jsi::Link>(link, {R"({"url": "nope", "id": "x", "code": "abc", "tags": ["a", "a"], "score": 1, "extra": {}})",
                                       R"({"url": "https://a.b/c", "id": "123e4567-e89b-12d3-a456-426614174000", "code": "ABC", "tags": [], "extra": [1]})"});
  const auto dial = expect_round_trip<jsi::Dial>();
  expect_same_issues<jsi::Dial>(dial, {R"({"speed": 2, "mode": "medium", "sparse": [1, null, "x"]})"});
}

TEST(JsonSchemaImport, PydanticDocumentImportsAndReportsTheSampleIssues) {
  const std::string schema_text = read_shared("bench/python/samples/final_answer.schema.json");
  const std::string invalid = read_shared("bench/python/samples/invalid_final_answer.json");
  if (schema_text.empty() || invalid.empty()) GTEST_SKIP() << "shared samples absent";
  const auto m = covenant::import_json_schema_text(schema_text, {.file = "final_answer.schema.json"});
  EXPECT_EQ(m.title(), "FinalAnswer");
  const auto r = covenant::try_decode_dynamic(invalid, m);
  EXPECT_EQ(covenant::render_feedback(r.issues),
            "confidence: must be <= 1 (got 1.7)\n"
            "sources[1]: must not be empty (got \"\")\n"
            "answer: required field is missing\n");
  EXPECT_EQ(r.issues, covenant::try_decode<models::FinalAnswer>(invalid).issues);
  // Absent optional fields take their default (null).
  auto ok = covenant::try_decode_dynamic(R"({"answer": "a", "confidence": 1, "sources": ["s"]})", m);
  ASSERT_TRUE(ok) << covenant::render_feedback(ok.issues);
  EXPECT_EQ(covenant::json_text(ok.value), R"({"answer":"a","confidence":1,"sources":["s"],"reasoning":null,"metadata":null})");
}

TEST(JsonSchemaImport, OtherDraftsAndFormsAreRead) {
  const auto m = covenant::import_json_schema(json::parse(R"({
    "title": "Event",
    "type": "object",
    "properties": {
      "kind": {"const": "click"},
      "size": {"enum": ["S", "M", "L", null]},
      "when": {"type": ["string", "null"], "format": "date-time"},
      "count": {"type": ["integer", "string"]},
      "ref": {"oneOf": [{"$ref": "#/definitions/Point"}, {"type": "boolean"}]},
      "wrapped": {"allOf": [{"$ref": "#/definitions/Point"}]},
      "legacy": {"type": "number", "nullable": true},
      "by_key": {"type": "object", "propertyNames": {"enum": ["a", "b"]}, "additionalProperties": {"type": "integer"}},
      "anything": {},
      "inline": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    },
    "required": ["kind"],
    "definitions": {"Point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}
  })"));
  auto expr = [&](std::string_view field) {
    for (const auto& f : m.find("Event")->object()->fields)
      if (f.name == field) return covenant::schema::type_expression(f.type);
    return std::string("?");
  };
  EXPECT_EQ(expr("kind"), R"("click")");
  EXPECT_EQ(expr("size"), R"("S" | "M" | "L" | null)");
  EXPECT_EQ(expr("when"), "string | null");
  EXPECT_EQ(expr("count"), "int | string");
  EXPECT_EQ(expr("ref"), "Point | bool");
  EXPECT_EQ(expr("wrapped"), "Point");
  EXPECT_EQ(expr("legacy"), "float | null");
  EXPECT_EQ(expr("by_key"), R"(map<"a" | "b", int>)");
  EXPECT_EQ(expr("anything"), "any");
  EXPECT_EQ(expr("inline"), "Event_inline");
  auto r = covenant::try_decode_dynamic(R"({"kind": "tap", "size": "XL", "by_key": {"c": 1}, "inline": {}})", m);
  EXPECT_EQ(covenant::render_feedback(r.issues),
            "kind: must be one of \"click\" (got \"tap\")\n"
            "size: must be one of \"S\", \"M\", \"L\" (got \"XL\")\n"
            "by_key.c: key must be one of \"a\", \"b\" (got \"c\")\n"
            "inline.x: required field is missing\n");
}

TEST(JsonSchemaImport, ErrorsCarryJsonPointers) {
  auto r = covenant::try_import_json_schema(json::parse(R"({
    "type": "object",
    "properties": {
      "a": {"type": "integer", "minimum": "zero"},
      "b": {"not": {"type": "string"}},
      "c": {"$ref": "https://example.com/schema.json"},
      "d": {"$ref": "#/$defs/Missing"},
      "e": {"type": "string", "pattern": "(unclosed"},
      "f": {"type": "frob"},
      "g": {"type": "array", "items": [{"type": "string"}]},
      "h": {"type": "string", "maxLength": -1}
    },
    "required": ["a", "zzz"]
  })"));
  ASSERT_FALSE(r.ok());
  std::string text;
  for (const auto& d : r.issues) text += d.pointer + " " + std::string(covenant::to_string(d.code)) + "\n";
  EXPECT_EQ(text,
            "/required/1 invalid_json_schema\n"
            "/properties/a/minimum invalid_json_schema\n"
            "/properties/b/not unsupported\n"
            "/properties/c/$ref unsupported\n"
            "/properties/d/$ref unknown_type\n"
            "/properties/e/pattern invalid_constraint\n"
            "/properties/f/type invalid_json_schema\n"
            "/properties/g/items unsupported\n"
            "/properties/h/maxLength invalid_json_schema\n");
  EXPECT_EQ(r.issues[1].to_string(), "/properties/a/minimum: error: minimum must be a number [invalid_json_schema]");
  EXPECT_THROW((void)covenant::import_json_schema(json::parse(R"({"not": {}})")), covenant::schema_error);
}

TEST(JsonSchemaImport, RecursionWithoutAnEscapeIsRefused) {
  auto r = covenant::try_import_json_schema(json::parse(R"({
    "$defs": {
      "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}, "required": ["b"]},
      "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "required": ["a"]},
      "Loop": {"$ref": "#/$defs/Loop"}
    },
    "anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/Loop"}]
  })"));
  std::string text;
  for (const auto& d : r.issues) text += d.pointer + " " + std::string(covenant::to_string(d.code)) + "\n";
  EXPECT_EQ(text,
            "/$defs/Loop unescaped_recursion\n"
            "/$defs/A unescaped_recursion\n"
            "/$defs/B unescaped_recursion\n");
}

TEST(JsonSchemaImport, ProblemsInATextDocumentHaveLineColumnAndPointer) {
  const std::string text =
      "{\n"
      "  \"type\": \"object\",\n"
      "  \"properties\": {\n"
      "    \"a\": {\"type\": \"integer\", \"minimum\": \"zero\"},\n"
      "    \"b~/c\": {\"type\": \"frob\"}\n"
      "  },\n"
      "  \"required\": [\"a\", \"zzz\"]\n"
      "}";
  auto r = covenant::try_import_json_schema_text(text, {.file = "s.json"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(covenant::render_diagnostics(r.issues),
            "s.json:7:21:/required/1: error: required property 'zzz' is not declared in properties "
            "[invalid_json_schema]\n"
            "s.json:4:30:/properties/a/minimum: error: minimum must be a number [invalid_json_schema]\n"
            "s.json:5:14:/properties/b~0~1c/type: error: unknown type 'frob' [invalid_json_schema]\n");
}

TEST(JsonSchemaImport, TextErrorsHaveLineAndColumnAndLimitsHold) {
  auto bad = covenant::try_import_json_schema_text("{\n  \"type\": \"object\",\n  \"properties\": {,}\n}", {.file = "s.json"});
  ASSERT_EQ(bad.issues.size(), 1u);
  EXPECT_EQ(bad.issues[0].to_string(), "s.json:3:18: error: invalid JSON: expected a string key in double quotes [syntax_error]");
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += R"({"type": "array", "items": )";
  deep += "{}";
  for (int i = 0; i < 200; ++i) deep += "}";
  auto d = covenant::try_import_json_schema_text(deep);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.issues.back().code, covenant::schema_error_code::limit_exceeded);
  covenant::json_schema_import_options small;
  small.limits.max_bytes = 10;
  EXPECT_EQ(covenant::try_import_json_schema_text(R"({"type": "string"})", small).issues.at(0).code,
            covenant::schema_error_code::limit_exceeded);
  EXPECT_FALSE(covenant::try_import_json_schema(json::value(false)).ok());
  auto any = covenant::import_json_schema(json::value(true));
  EXPECT_EQ(any.root.kind, covenant::schema::kind::any);
}

TEST(JsonSchemaImport, SchemaDocumentsLoadWithOrWithoutThrowing) {
  const auto dir = std::filesystem::temp_directory_path() / ("covenant_schema_document_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "a.json") << R"({"title": "A", "type": "object", "properties": {"x": {"type": "integer"}}})";
    std::ofstream(dir / "b.baml") << "class B {\n  y string\n}\n";
    std::ofstream(dir / "bad.baml") << "class C {\n  z frob\n}\n";
  }
  const covenant::schema_document a = covenant::load_schema_document(dir / "a.json");
  EXPECT_TRUE(a.json_schema);
  EXPECT_TRUE(a.ok());
  EXPECT_TRUE(a.set.contains("A"));
  const covenant::schema_document b = covenant::load_schema_document(dir / "b.baml");
  EXPECT_FALSE(b.json_schema);
  EXPECT_TRUE(b.set.contains("B"));

  for (const char* name : {"bad.baml", "missing.baml"}) {
    const covenant::schema_document tried = covenant::try_load_schema_document(dir / name);
    ASSERT_FALSE(tried.ok()) << name;
    try {
      (void)covenant::load_schema_document(dir / name);
      ADD_FAILURE() << name << ": expected schema_error";
    } catch (const covenant::schema_error& e) {
      EXPECT_EQ(e.issues(), tried.issues) << name;
    }
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
