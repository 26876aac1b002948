#include <covenant/types/json_schema.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "../../examples/models/final_answer.hpp"

// Test types live at namespace scope: types local to a function cannot be reflected.
namespace jst {

enum class Level { low, medium, high, legacy };

struct Ticket {
  std::string title;
  Level level = Level::low;
  std::optional<Level> previous;
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
};

struct Narrow {
  std::int8_t a = 0;
  std::uint16_t b = 0;
  std::uint32_t c = 0;
  std::uint8_t d = 0;
  std::uint8_t e = 0;
  std::int32_t f = 0;
};

struct Query {
  std::string q;
  int max_snippets = 3;
  std::string lang = "en";
};

struct Item {
  std::string id;
  int weight = 0;
};

struct Interval {
  int lo = 0;
  int hi = 0;
  std::vector<Item> items;
};

struct Link {
  std::string url;
  std::string id;
  std::string code;
  std::vector<std::string> tags;
};

struct Inner {
  int x = 0;
};
struct Outer {
  Inner inner;
  std::optional<Inner> spare;
};

struct WithMap {
  Counts nested;
};

struct Dial {
  double speed = 1;
  std::optional<std::string> mode;
};

}  // namespace jst

template <>
struct covenant::describe<jst::Level> {
  static constexpr std::string_view description = "How urgent the ticket is.";
  static constexpr auto values = covenant::values<jst::Level>(
      covenant::value<jst::Level::low>("Little risk.", covenant::alias{"Low"}, covenant::also_accept{"minor"}),
      covenant::value<jst::Level::high>("Needs review today."));
};

template <>
struct covenant::describe<jst::Ticket> {
  static constexpr auto fields = covenant::fields<jst::Ticket>(
      covenant::field<&jst::Ticket::level>("Urgency."),
      covenant::field<&jst::Ticket::previous>("Urgency before the last change."));
};

template <>
struct covenant::describe<jst::Counts> {
  static constexpr auto fields = covenant::fields<jst::Counts>(
      covenant::field<&jst::Counts::counts>("Votes per option.", covenant::item_count{1, 10},
                                            covenant::each{covenant::range{0, 5}}));
};

template <>
struct covenant::describe<jst::Narrow> {
  static constexpr auto fields = covenant::fields<jst::Narrow>(
      covenant::field<&jst::Narrow::d>(covenant::range{1, 10}),
      covenant::field<&jst::Narrow::e>(covenant::range{-5, 1000}));
};

template <>
struct covenant::describe<jst::Query> {
  static constexpr auto fields = covenant::fields<jst::Query>(
      covenant::field<&jst::Query::max_snippets>("How many snippets to return.", covenant::defaulted{},
                                                 covenant::range{1, 10}),
      covenant::field<&jst::Query::lang>(covenant::defaulted{}));
};

template <>
struct covenant::describe<jst::Interval> {
  static constexpr std::string_view description = "A closed interval.";
  static constexpr auto fields = covenant::fields<jst::Interval>(
      covenant::field<&jst::Interval::lo>("Lower end.", covenant::predicate{[](int x) { return x % 2 == 0; },
                                                                            "must be even"}),
      covenant::field<&jst::Interval::items>(covenant::unique_by<&jst::Item::id>{}));
  static constexpr auto invariants = covenant::invariants<jst::Interval>(covenant::invariant<&jst::Interval::hi>(
      "hi must not be less than lo", [](const jst::Interval& i) { return i.hi >= i.lo; }));
};

template <>
struct covenant::describe<jst::Link> {
  static constexpr auto fields = covenant::fields<jst::Link>(
      covenant::field<&jst::Link::url>(covenant::url{}, covenant::max_length{200}),
      covenant::field<&jst::Link::id>(covenant::uuid{}),
      covenant::field<&jst::Link::code>(covenant::pattern{"^[A-Z]{3}$"}, covenant::one_of{"ABC", "XYZ"}),
      covenant::field<&jst::Link::tags>(covenant::unique_items{}, covenant::max_items{5}));
};

template <>
struct covenant::describe<jst::Inner> {
  static constexpr std::string_view description = "An inner part.";
};

template <>
struct covenant::describe<jst::Outer> {
  static constexpr auto fields = covenant::fields<jst::Outer>(covenant::field<&jst::Outer::inner>("The part."),
                                                              covenant::field<&jst::Outer::spare>("A spare part."));
};

template <>
struct covenant::describe<jst::Dial> {
  static constexpr auto fields = covenant::fields<jst::Dial>(
      covenant::field<&jst::Dial::speed>(covenant::one_of{1.0, 2.5}, covenant::multiple_of{0.5}),
      covenant::field<&jst::Dial::mode>(covenant::one_of{"slow", "fast"}));
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

const json::object& obj(const json::value& v) { return v.as_object(); }
const json::object& prop(const json::value& schema, std::string_view name) {
  return schema.at("properties").at(name).as_object();
}

TEST(JsonSchema, FinalAnswerMatchesTheExpectedDocument) {
  const json::value expected = json::parse(R"({
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "FinalAnswer",
    "description": "The final, validated answer to the user's query.",
    "type": "object",
    "properties": {
      "answer": {"type": "string", "minLength": 1, "maxLength": 10000, "description": "The final answer text."},
      "confidence": {"type": "number", "minimum": 0, "maximum": 1, "description": "Confidence score."},
      "sources": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": 50,
                  "description": "Identifiers of the source documents."},
      "reasoning": {"type": ["string", "null"], "maxLength": 5000, "description": "Explanation of the answer."},
      "metadata": {"anyOf": [{"$ref": "#/$defs/AnswerMetadata"}, {"type": "null"}],
                   "description": "Additional metadata."}
    },
    "required": ["answer", "confidence", "sources"],
    "$defs": {
      "AnswerMetadata": {
        "title": "AnswerMetadata",
        "description": "Additional metadata about how the answer was produced.",
        "type": "object",
        "properties": {
          "timestamp": {"type": ["string", "null"], "description": "When the answer was produced (ISO 8601)."},
          "model_used": {"type": ["string", "null"], "description": "Model that produced the answer."},
          "token_usage": {"anyOf": [{"$ref": "#/$defs/TokenUsage"}, {"type": "null"}], "description": "Token usage."},
          "program_version": {"type": ["string", "null"], "description": "Version of the producing program."}
        }
      },
      "TokenUsage": {
        "title": "TokenUsage",
        "description": "Tokens spent producing the answer.",
        "type": "object",
        "properties": {
          "input_tokens": {"type": ["integer", "null"], "minimum": 0, "description": "Prompt tokens."},
          "output_tokens": {"type": ["integer", "null"], "minimum": 0, "description": "Completion tokens."}
        }
      }
    }
  })");
  const json::value& actual = covenant::json_schema_of<models::FinalAnswer>();
  EXPECT_EQ(actual, expected) << json::serialize(actual);
}

TEST(JsonSchema, IntegralBoundsPrintAsIntegers) {
  const json::value& s = covenant::json_schema_of<models::FinalAnswer>();
  EXPECT_EQ(json::serialize(prop(s, "confidence")),
            R"({"type":"number","minimum":0,"maximum":1,"description":"Confidence score."})");
}

TEST(JsonSchema, SchemaOfTIsBuiltOnceAndCached) {
  const json::value* first = &covenant::json_schema_of<models::FinalAnswer>();
  EXPECT_EQ(first, &covenant::json_schema_of<models::FinalAnswer>());
  EXPECT_EQ(&covenant::openai_strict_schema_of<models::FinalAnswer>(),
            &covenant::openai_strict_schema_of<models::FinalAnswer>());
}

/// Constraint keywords of one property, flattened over anyOf branches and items ("items.minLength").
void collect_keywords(const json::value& v, const std::string& prefix, std::map<std::string, json::value>& out) {
  static const std::set<std::string> keywords = {"minLength", "maxLength", "pattern",   "format",
                                                 "minimum",   "maximum",   "exclusiveMinimum",
                                                 "exclusiveMaximum",       "multipleOf", "minItems",
                                                 "maxItems",  "uniqueItems", "enum",    "const"};
  if (!v.is_object()) return;
  for (const auto& kv : v.as_object()) {
    const std::string key(kv.key());
    if (keywords.count(key)) out[prefix + key] = kv.value();
    else if (key == "anyOf")
      for (const auto& alt : kv.value().as_array()) collect_keywords(alt, prefix, out);
    else if (key == "items") collect_keywords(kv.value(), prefix + "items.", out);
  }
}

std::map<std::string, json::value> keywords_of(const json::value& v) {
  std::map<std::string, json::value> out;
  collect_keywords(v, "", out);
  return out;
}

std::set<std::string> property_names(const json::value& schema) {
  std::set<std::string> out;
  for (const auto& kv : schema.at("properties").as_object()) out.insert(std::string(kv.key()));
  return out;
}

TEST(JsonSchema, FinalAnswerAgreesWithThePydanticSchema) {
  const std::string text = read_shared("bench/python/samples/final_answer.schema.json");
  if (text.empty()) GTEST_SKIP() << "shared samples absent";
  const json::value py = json::parse(text);
  const json::value& ours = covenant::json_schema_of<models::FinalAnswer>();

  EXPECT_EQ(ours.at("required"), py.at("required"));
  EXPECT_EQ(ours.at("title"), py.at("title"));
  ASSERT_EQ(property_names(ours), property_names(py));
  for (const auto& name : property_names(py)) {
    EXPECT_EQ(keywords_of(ours.at("properties").at(name)), keywords_of(py.at("properties").at(name)))
        << "property " << name;
  }
  // Nested definitions: same names and properties; every pydantic keyword is present (ours adds
  // minimum 0 on the token counts, which the pydantic model does not declare).
  for (const auto& kv : py.at("$defs").as_object()) {
    const json::value& def = ours.at("$defs").at(kv.key());
    ASSERT_EQ(property_names(def), property_names(kv.value())) << kv.key();
    for (const auto& name : property_names(kv.value())) {
      const auto mine = keywords_of(def.at("properties").at(name));
      for (const auto& [k, v] : keywords_of(kv.value().at("properties").at(name))) {
        ASSERT_TRUE(mine.count(k)) << kv.key() << "." << name << " lacks " << k;
        EXPECT_EQ(mine.at(k), v) << kv.key() << "." << name << "." << k;
      }
    }
  }
}

TEST(JsonSchema, NullablePrimitivesUseATypeListAndOthersUseAnyOfWithNull) {
  const json::value& s = covenant::json_schema_of<models::FinalAnswer>();
  EXPECT_EQ(prop(s, "reasoning").at("type"), json::parse(R"(["string", "null"])"));
  EXPECT_EQ(prop(s, "reasoning").at("maxLength"), 5000);
  EXPECT_EQ(prop(s, "metadata").at("anyOf"), json::parse(R"([{"$ref": "#/$defs/AnswerMetadata"}, {"type": "null"}])"));
  EXPECT_FALSE(prop(s, "metadata").contains("type"));
  // Arrays and maps are wrapped too, with their keywords inside the non-null branch.
  const json::value& c = covenant::json_schema_of<jst::Counts>();
  EXPECT_EQ(json::value(prop(c, "labels")),
            json::parse(R"({"anyOf": [{"type": "object", "additionalProperties": {"type": "string"}},
                                      {"type": "null"}]})"));
}

TEST(JsonSchema, EnumsListTheirJsonSpellingsAndDescribeTheirValues) {
  const json::value& s = covenant::json_schema_of<jst::Ticket>();
  EXPECT_EQ(json::value(prop(s, "level")), json::parse(R"({"$ref": "#/$defs/Level", "description": "Urgency."})"));
  EXPECT_EQ(json::value(prop(s, "previous")),
            json::parse(R"({"anyOf": [{"$ref": "#/$defs/Level"}, {"type": "null"}],
                            "description": "Urgency before the last change."})"));
  EXPECT_EQ(s.at("$defs").at("Level"), json::parse(R"({
    "title": "Level",
    "description": "How urgent the ticket is. \"Low\": Little risk; \"high\": Needs review today.",
    "type": "string",
    "enum": ["Low", "medium", "high", "legacy"]
  })"));
  EXPECT_EQ(s.at("required"), json::parse(R"(["title", "level"])"));
}

TEST(JsonSchema, VariantsBecomeAnyOfAndMonostateIsNull) {
  const json::value& s = covenant::json_schema_of<jst::Drawing>();
  EXPECT_EQ(json::value(prop(s, "shape")),
            json::parse(R"({"anyOf": [{"$ref": "#/$defs/Circle"}, {"$ref": "#/$defs/Square"}]})"));
  EXPECT_EQ(json::value(prop(s, "id")),
            json::parse(R"({"anyOf": [{"type": "null"}, {"type": "integer"}, {"type": "string"}]})"));
  EXPECT_EQ(s.at("$defs").at("Circle"), json::parse(R"({"title": "Circle", "type": "object",
      "properties": {"radius": {"type": "number"}}, "required": ["radius"]})"));
}

TEST(JsonSchema, MapsAreObjectsWithAdditionalPropertiesAndPropertyCounts) {
  const json::value& s = covenant::json_schema_of<jst::Counts>();
  EXPECT_EQ(json::value(prop(s, "counts")), json::parse(R"({
    "type": "object",
    "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 5},
    "minProperties": 1,
    "maxProperties": 10,
    "description": "Votes per option."
  })"));
}

TEST(JsonSchema, EnumAndLiteralMapKeysBecomePropertyNames) {
  covenant::schema::model m = covenant::schema_of<jst::Ticket>();
  covenant::schema::type by_level = covenant::schema::make_map(covenant::schema::make_primitive(covenant::schema::kind::integer));
  by_level.args[0] = covenant::schema::make_ref("Level");
  covenant::schema::type by_literal = covenant::schema::make_map(covenant::schema::make_primitive(covenant::schema::kind::string));
  covenant::schema::type keys;
  keys.kind = covenant::schema::kind::union_;
  for (const char* k : {"en", "fr"}) {
    covenant::schema::type lit;
    lit.kind = covenant::schema::kind::literal;
    lit.literal = k;
    keys.args.push_back(lit);
  }
  by_literal.args[0] = keys;
  m.root = by_level;
  json::value a = covenant::to_json_schema(m);
  EXPECT_EQ(a.at("propertyNames"), json::parse(R"({"$ref": "#/$defs/Level"})"));
  EXPECT_TRUE(a.at("$defs").as_object().contains("Level"));
  m.root = by_literal;
  json::value b = covenant::to_json_schema(m);
  EXPECT_EQ(b.at("propertyNames"), json::parse(R"({"enum": ["en", "fr"]})"));
  EXPECT_EQ(b.at("title"), "map<\"en\" | \"fr\", string>");
}

TEST(JsonSchema, RecursiveRootRefersToItselfWithHash) {
  const json::value& s = covenant::json_schema_of<jst::Node>();
  EXPECT_EQ(json::value(prop(s, "children")), json::parse(R"({"type": "array", "items": {"$ref": "#"}})"));
  EXPECT_FALSE(obj(s).contains("$defs"));
}

TEST(JsonSchema, RecursiveDefinitionBelowTheRootLivesInDefs) {
  const json::value& s = covenant::json_schema_of<jst::Tree>();
  EXPECT_EQ(json::value(prop(s, "root")), json::parse(R"({"$ref": "#/$defs/Node"})"));
  EXPECT_EQ(s.at("$defs").at("Node"), json::parse(R"({
    "title": "Node",
    "type": "object",
    "properties": {
      "name": {"type": "string"},
      "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
    },
    "required": ["name", "children"]
  })"));
}

TEST(JsonSchema, NarrowAndUnsignedIntegersCarryTheirRange) {
  const json::value& s = covenant::json_schema_of<jst::Narrow>();
  EXPECT_EQ(json::value(prop(s, "a")), json::parse(R"({"type": "integer", "minimum": -128, "maximum": 127})"));
  EXPECT_EQ(json::value(prop(s, "b")), json::parse(R"({"type": "integer", "minimum": 0, "maximum": 65535})"));
  EXPECT_EQ(json::value(prop(s, "c")), json::parse(R"({"type": "integer", "minimum": 0})"));
  // Declared bounds win when they are tighter, the type's range when it is.
  EXPECT_EQ(json::value(prop(s, "d")), json::parse(R"({"type": "integer", "minimum": 1, "maximum": 10})"));
  EXPECT_EQ(json::value(prop(s, "e")), json::parse(R"({"type": "integer", "minimum": 0, "maximum": 255})"));
  EXPECT_EQ(json::value(prop(s, "f")), json::parse(R"({"type": "integer"})"));
}

TEST(JsonSchema, DefaultedFieldsShowTheirDefaultAndAreNotRequired) {
  const json::value& s = covenant::json_schema_of<jst::Query>();
  EXPECT_EQ(s.at("required"), json::parse(R"(["q"])"));
  EXPECT_EQ(json::value(prop(s, "max_snippets")), json::parse(R"({"type": "integer", "minimum": 1, "maximum": 10,
      "description": "How many snippets to return.", "default": 3})"));
  EXPECT_EQ(json::value(prop(s, "lang")), json::parse(R"({"type": "string", "default": "en"})"));
}

TEST(JsonSchema, RulesWithoutKeywordsGoIntoDescriptions) {
  const json::value& s = covenant::json_schema_of<jst::Interval>();
  EXPECT_EQ(s.at("description"), "A closed interval. Rule: hi must not be less than lo.");
  EXPECT_EQ(json::value(prop(s, "lo")), json::parse(R"({"type": "integer", "description": "Lower end. Must be even."})"));
  // unique_by has covenant's own keyword (read back by the importer) and the rule in words.
  EXPECT_EQ(json::value(prop(s, "items")), json::parse(R"({"type": "array", "items": {"$ref": "#/$defs/Item"},
      "x-unique-by": "id", "description": "No two items with the same id."})"));
}

TEST(JsonSchema, StringArrayAndFormatKeywords) {
  const json::value& s = covenant::json_schema_of<jst::Link>();
  EXPECT_EQ(json::value(prop(s, "url")), json::parse(R"({"type": "string", "maxLength": 200, "format": "uri"})"));
  EXPECT_EQ(json::value(prop(s, "id")), json::parse(R"({"type": "string", "format": "uuid"})"));
  EXPECT_EQ(json::value(prop(s, "code")),
            json::parse(R"({"type": "string", "pattern": "^[A-Z]{3}$", "enum": ["ABC", "XYZ"]})"));
  EXPECT_EQ(json::value(prop(s, "tags")),
            json::parse(R"({"type": "array", "items": {"type": "string"}, "maxItems": 5, "uniqueItems": true})"));
}

TEST(JsonSchema, OneOfBecomesEnumAndNullableEnumsAcceptNull) {
  const json::value& s = covenant::json_schema_of<jst::Dial>();
  EXPECT_EQ(json::value(prop(s, "speed")), json::parse(R"({"type": "number", "enum": [1, 2.5], "multipleOf": 0.5})"));
  EXPECT_TRUE(prop(s, "speed").at("enum").at(0).is_int64());  // 1, not 1.0
  EXPECT_EQ(json::value(prop(s, "mode")), json::parse(R"({"type": ["string", "null"], "enum": ["slow", "fast", null]})"));
}

TEST(JsonSchema, NonObjectRootIsExportedDirectly) {
  const json::value s = covenant::to_json_schema(covenant::schema_of<std::vector<std::string>>());
  EXPECT_EQ(s, json::parse(R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "string[]",
                               "type": "array", "items": {"type": "string"}})"));
  covenant::json_schema_options no_uri;
  no_uri.include_schema_uri = false;
  EXPECT_FALSE(covenant::to_json_schema(covenant::schema_of<jst::Node>(), no_uri).as_object().contains("$schema"));
}

TEST(JsonSchema, SkippedFieldsAreOmitted) {
  covenant::schema::model m = covenant::schema_of<jst::Query>();
  auto& fields = std::get<covenant::schema::object_def>(m.defs[m.root.def].body).fields;
  fields[0].skip = true;
  const json::value s = covenant::to_json_schema(m);
  EXPECT_FALSE(s.at("properties").as_object().contains("q"));
  EXPECT_FALSE(s.as_object().contains("required"));
}

// ---------------------------------------------------------------------------------------------
// OpenAI strict mode
// ---------------------------------------------------------------------------------------------

TEST(JsonSchemaStrict, FinalAnswerRequiresEveryPropertyAndForbidsOthers) {
  const json::value& s = covenant::openai_strict_schema_of<models::FinalAnswer>();
  EXPECT_FALSE(obj(s).contains("$schema"));
  EXPECT_EQ(s.at("additionalProperties"), false);
  EXPECT_EQ(s.at("required"), json::parse(R"(["answer", "confidence", "sources", "reasoning", "metadata"])"));
  // minLength / maxLength are not strict-mode keywords: they move into the description.
  EXPECT_EQ(json::value(prop(s, "answer")),
            json::parse(R"({"type": "string", "description": "The final answer text. Non-empty, at most 10000 characters."})"));
  EXPECT_EQ(json::value(prop(s, "confidence")),
            json::parse(R"({"type": "number", "minimum": 0, "maximum": 1, "description": "Confidence score."})"));
  EXPECT_EQ(json::value(prop(s, "sources")),
            json::parse(R"({"type": "array", "items": {"type": "string", "description": "Non-empty."},
                            "minItems": 1, "maxItems": 50, "description": "Identifiers of the source documents."})"));
  EXPECT_EQ(json::value(prop(s, "reasoning")),
            json::parse(R"({"type": ["string", "null"], "description": "Explanation of the answer. At most 5000 characters."})"));
  for (const char* def : {"AnswerMetadata", "TokenUsage"}) {
    const json::value& d = s.at("$defs").at(def);
    EXPECT_EQ(d.at("additionalProperties"), false) << def;
    EXPECT_EQ(d.at("required").as_array().size(), d.at("properties").as_object().size()) << def;
  }
}

TEST(JsonSchemaStrict, ResponseFormatWrapsTheStrictSchema) {
  const json::value rf = covenant::openai_response_format(covenant::schema_of<models::FinalAnswer>(), "final_answer");
  EXPECT_EQ(rf.at("type"), "json_schema");
  EXPECT_EQ(rf.at("json_schema").at("name"), "final_answer");
  EXPECT_EQ(rf.at("json_schema").at("strict"), true);
  EXPECT_EQ(rf.at("json_schema").at("schema"), covenant::openai_strict_schema_of<models::FinalAnswer>());
  EXPECT_EQ(covenant::openai_response_format<models::FinalAnswer>().at("json_schema").at("name"), "FinalAnswer");
}

TEST(JsonSchemaStrict, UnsupportedKeywordsMoveIntoTheDescription) {
  const json::value& s = covenant::openai_strict_schema_of<jst::Link>();
  EXPECT_EQ(json::value(prop(s, "url")),
            json::parse(R"({"type": "string", "description": "At most 200 characters, an absolute URL."})"));
  EXPECT_EQ(json::value(prop(s, "id")), json::parse(R"({"type": "string", "format": "uuid"})"));
  EXPECT_EQ(json::value(prop(s, "code")),
            json::parse(R"({"type": "string", "pattern": "^[A-Z]{3}$", "enum": ["ABC", "XYZ"]})"));
  EXPECT_EQ(json::value(prop(s, "tags")),
            json::parse(R"({"type": "array", "items": {"type": "string"}, "maxItems": 5,
                            "description": "No duplicate items."})"));
}

TEST(JsonSchemaStrict, DefaultedFieldsAreRequiredAndNameTheirDefault) {
  const json::value& s = covenant::openai_strict_schema_of<jst::Query>();
  EXPECT_EQ(s.at("required"), json::parse(R"(["q", "max_snippets", "lang"])"));
  EXPECT_EQ(json::value(prop(s, "max_snippets")), json::parse(R"({"type": "integer", "minimum": 1, "maximum": 10,
      "description": "How many snippets to return. Default: 3."})"));
  EXPECT_EQ(json::value(prop(s, "lang")), json::parse(R"({"type": "string", "description": "Default: \"en\"."})"));
}

TEST(JsonSchemaStrict, OptionalFieldsBecomeNullableAndRequired) {
  const json::value& s = covenant::openai_strict_schema_of<jst::Ticket>();
  EXPECT_EQ(s.at("required"), json::parse(R"(["title", "level", "previous"])"));
  EXPECT_EQ(json::value(prop(s, "previous")),
            json::parse(R"({"anyOf": [{"$ref": "#/$defs/Level"}, {"type": "null"}],
                            "description": "Urgency before the last change."})"));
}

TEST(JsonSchemaStrict, DescribedReferencesAreInlinedBecauseRefTakesNoSiblings) {
  const json::value& s = covenant::openai_strict_schema_of<jst::Outer>();
  EXPECT_EQ(json::value(prop(s, "inner")), json::parse(R"({
    "title": "Inner", "description": "The part. An inner part.", "type": "object",
    "properties": {"x": {"type": "integer"}}, "required": ["x"], "additionalProperties": false})"));
  EXPECT_EQ(json::value(prop(s, "spare")),
            json::parse(R"({"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}], "description": "A spare part."})"));
  // Plain JSON Schema keeps the reference, with the description beside it.
  EXPECT_EQ(json::value(prop(covenant::json_schema_of<jst::Outer>(), "inner")),
            json::parse(R"({"$ref": "#/$defs/Inner", "description": "The part."})"));
}

TEST(JsonSchemaStrict, RecursionStaysAReference) {
  const json::value& s = covenant::openai_strict_schema_of<jst::Node>();
  EXPECT_EQ(json::value(prop(s, "children")), json::parse(R"({"type": "array", "items": {"$ref": "#"}})"));
}

TEST(JsonSchemaStrict, MapsThrowNamingTheirPath) {
  try {
    (void)covenant::to_openai_strict_schema(covenant::schema_of<jst::WithMap>());
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "covenant::to_openai_strict_schema: OpenAI strict mode cannot express maps "
                 "(nested.counts: map<string, int>)");
  }
}

TEST(JsonSchemaStrict, NonObjectRootThrows) {
  EXPECT_THROW((void)covenant::to_openai_strict_schema(covenant::schema_of<std::vector<std::string>>()),
               std::invalid_argument);
}

}  // namespace
