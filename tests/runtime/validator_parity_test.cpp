// Every C++ validator has a schema-file spelling and a JSON Schema keyword that check exactly the
// same thing: for each row of the table in docs/runtime-schemas.md, the C++ type, its exported
// JSON Schema imported back, and the equivalent schema file report the same issues for the same
// values (and the schema file exports the same keyword).
#include <covenant/read/decode.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/runtime/json_schema_import.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>

#include <string>
#include <vector>

namespace parity {

struct Min { double v = 0; };
struct Max { double v = 0; };
struct ExMin { double v = 0; };
struct ExMax { double v = 0; };
struct Range { double v = 0; };
struct Positive { int v = 0; };
struct NonNegative { int v = 0; };
struct MultipleOf { int v = 0; };
struct MinLength { std::string v; };
struct MaxLength { std::string v; };
struct Length { std::string v; };
struct MinItems { std::vector<int> v; };
struct MaxItems { std::vector<int> v; };
struct ItemCount { std::vector<int> v; };
struct NonEmptyText { std::string v; };
struct NonEmptyList { std::vector<int> v; };
struct OneOfText { std::string v; };
struct OneOfNumber { int v = 0; };
struct Pattern { std::string v; };
struct Url { std::string v; };
struct Uuid { std::string v; };
struct DateTime { std::string v; };
struct Date { std::string v; };
struct Email { std::string v; };
struct Unique { std::vector<std::string> v; };
struct Item { std::string id; int n = 0; };
struct UniqueBy { std::vector<Item> v; };
struct Each { std::vector<std::string> v; };

}  // namespace parity

#define PARITY_FIELD(T, ...)                                                                                  \
  template <>                                                                                                 \
  struct covenant::describe<parity::T> {                                                                      \
    static constexpr auto fields = covenant::fields<parity::T>(covenant::field<&parity::T::v>("v", __VA_ARGS__)); \
  };

PARITY_FIELD(Min, covenant::minimum{1.5})
PARITY_FIELD(Max, covenant::maximum{1.5})
PARITY_FIELD(ExMin, covenant::exclusive_minimum{1.5})
PARITY_FIELD(ExMax, covenant::exclusive_maximum{1.5})
PARITY_FIELD(Range, covenant::range{0.0, 1.0})
PARITY_FIELD(Positive, covenant::positive{})
PARITY_FIELD(NonNegative, covenant::non_negative{})
PARITY_FIELD(MultipleOf, covenant::multiple_of{5})
PARITY_FIELD(MinLength, covenant::min_length{3})
PARITY_FIELD(MaxLength, covenant::max_length{3})
PARITY_FIELD(Length, covenant::length{2, 4})
PARITY_FIELD(MinItems, covenant::min_items{2})
PARITY_FIELD(MaxItems, covenant::max_items{2})
PARITY_FIELD(ItemCount, covenant::item_count{1, 3})
PARITY_FIELD(NonEmptyText, covenant::non_empty{})
PARITY_FIELD(NonEmptyList, covenant::non_empty{})
PARITY_FIELD(OneOfText, covenant::one_of{"low", "high"})
PARITY_FIELD(OneOfNumber, covenant::one_of{1, 2, 3})
PARITY_FIELD(Pattern, covenant::pattern{"^[A-Z]{3}$"})
PARITY_FIELD(Url, covenant::url{})
PARITY_FIELD(Uuid, covenant::uuid{})
PARITY_FIELD(DateTime, covenant::iso8601{})
PARITY_FIELD(Date, covenant::date{})
PARITY_FIELD(Email, covenant::email{})
PARITY_FIELD(Unique, covenant::unique_items{})
PARITY_FIELD(UniqueBy, covenant::unique_by<&parity::Item::id>{})
PARITY_FIELD(Each, covenant::each{covenant::min_length{2}})
#undef PARITY_FIELD

namespace {

std::string render(const covenant::issue_list& issues) {
  std::string out;
  for (const auto& i : issues) out += i.to_string() + " [" + std::string(covenant::to_string(i.code)) + "]\n";
  return out;
}

/// The C++ type T, its JSON Schema imported back, and `schema_file` (a class named T with field
/// `v`) report the same issues for every value; the schema file's JSON Schema has `keyword`.
template <class T>
void expect_parity(const std::string& type_name, const std::string& schema_file, const std::string& keyword,
                   const std::vector<std::string>& values) {
  SCOPED_TRACE(type_name);
  const covenant::schema::model from_json_schema = covenant::import_json_schema(covenant::json_schema_of<T>());
  const covenant::schema_set file = covenant::schema_set::parse(schema_file);
  const covenant::schema::model from_file = file.model(type_name);
  const std::string file_schema = boost::json::serialize(covenant::to_json_schema(from_file));
  EXPECT_NE(file_schema.find("\"" + keyword + "\""), std::string::npos) << file_schema;
  const std::string cpp_schema = boost::json::serialize(covenant::json_schema_of<T>());
  EXPECT_NE(cpp_schema.find("\"" + keyword + "\""), std::string::npos) << cpp_schema;
  bool some_rejected = false;
  bool some_accepted = false;
  for (const std::string& v : values) {
    const std::string doc = R"({"v": )" + v + "}";
    SCOPED_TRACE(doc);
    const std::string typed = render(covenant::try_decode<T>(doc).issues);
    EXPECT_EQ(render(covenant::try_decode_dynamic(doc, from_json_schema).issues), typed) << "JSON Schema round trip";
    EXPECT_EQ(render(covenant::try_decode_dynamic(doc, from_file).issues), typed) << "schema file";
    (typed.empty() ? some_accepted : some_rejected) = true;
  }
  EXPECT_TRUE(some_accepted && some_rejected) << "each row is tested with a good and a bad value";
}

TEST(ValidatorParity, NumberBounds) {
  using namespace parity;
  expect_parity<Min>("Min", "class Min {\n  v float @assert({{ this >= 1.5 }})\n}\n", "minimum", {"1.5", "1.4", "9"});
  expect_parity<Max>("Max", "class Max {\n  v float @assert({{ this <= 1.5 }})\n}\n", "maximum", {"1.5", "1.6", "0"});
  expect_parity<ExMin>("ExMin", "class ExMin {\n  v float @assert({{ this > 1.5 }})\n}\n", "exclusiveMinimum",
                       {"1.5", "1.6"});
  expect_parity<ExMax>("ExMax", "class ExMax {\n  v float @assert({{ this < 1.5 }})\n}\n", "exclusiveMaximum",
                       {"1.5", "1.4"});
  expect_parity<Range>("Range", "class Range {\n  v float @assert({{ this >= 0 and this <= 1 }})\n}\n", "maximum",
                       {"0", "1", "1.01", "-0.5"});
  expect_parity<Positive>("Positive", "class Positive {\n  v int @assert({{ this > 0 }})\n}\n", "exclusiveMinimum",
                          {"1", "0", "-3"});
  expect_parity<NonNegative>("NonNegative", "class NonNegative {\n  v int @assert({{ this >= 0 }})\n}\n", "minimum",
                             {"0", "-1"});
  expect_parity<MultipleOf>("MultipleOf", "class MultipleOf {\n  v int @assert({{ this % 5 == 0 }})\n}\n",
                            "multipleOf", {"10", "0", "7"});
}

TEST(ValidatorParity, LengthsAndCounts) {
  using namespace parity;
  expect_parity<MinLength>("MinLength", "class MinLength {\n  v string @assert({{ this|length >= 3 }})\n}\n",
                           "minLength", {R"("abc")", R"("ab")", R"("été")"});
  expect_parity<MaxLength>("MaxLength", "class MaxLength {\n  v string @assert({{ this|length <= 3 }})\n}\n",
                           "maxLength", {R"("abc")", R"("abcd")"});
  expect_parity<Length>("Length", "class Length {\n  v string @assert({{ this|length >= 2 and this|length <= 4 }})\n}\n",
                        "maxLength", {R"("ab")", R"("a")", R"("abcde")"});
  expect_parity<MinItems>("MinItems", "class MinItems {\n  v int[] @assert({{ this|length >= 2 }})\n}\n", "minItems",
                          {"[1, 2]", "[1]"});
  expect_parity<MaxItems>("MaxItems", "class MaxItems {\n  v int[] @assert({{ this|length <= 2 }})\n}\n", "maxItems",
                          {"[1, 2]", "[1, 2, 3]"});
  expect_parity<ItemCount>("ItemCount",
                           "class ItemCount {\n  v int[] @assert({{ this|length >= 1 and this|length <= 3 }})\n}\n",
                           "minItems", {"[1]", "[]", "[1, 2, 3, 4]"});
  expect_parity<NonEmptyText>("NonEmptyText", "class NonEmptyText {\n  v string @assert({{ this|length > 0 }})\n}\n",
                              "minLength", {R"("x")", R"("")"});
  expect_parity<NonEmptyList>("NonEmptyList", "class NonEmptyList {\n  v int[] @assert({{ this|length > 0 }})\n}\n",
                              "minItems", {"[1]", "[]"});
}

TEST(ValidatorParity, ValuesPatternsAndFormats) {
  using namespace parity;
  expect_parity<OneOfText>("OneOfText", "class OneOfText {\n  v string @assert({{ this in [\"low\", \"high\"] }})\n}\n",
                           "enum", {R"("low")", R"("medium")"});
  expect_parity<OneOfNumber>("OneOfNumber", "class OneOfNumber {\n  v int @assert({{ this in [1, 2, 3] }})\n}\n",
                             "enum", {"2", "4"});
  expect_parity<Pattern>("Pattern",
                         "class Pattern {\n  v string @assert({{ this|regex_match(\"^[A-Z]{3}$\") }})\n}\n", "pattern",
                         {R"("ABC")", R"("abc")"});
  expect_parity<Url>("Url", "class Url {\n  v string @assert({{ this|format(\"uri\") }})\n}\n", "format",
                     {R"("https://example.com/a")", R"("not a url")"});
  expect_parity<Uuid>("Uuid", "class Uuid {\n  v string @assert({{ this|format(\"uuid\") }})\n}\n", "format",
                      {R"("123e4567-e89b-12d3-a456-426614174000")", R"("123")"});
  expect_parity<DateTime>("DateTime", "class DateTime {\n  v string @assert({{ this|format(\"date-time\") }})\n}\n",
                          "format", {R"("2025-01-15T10:30:00Z")", R"("2025-01-15")"});
  expect_parity<Date>("Date", "class Date {\n  v string @assert({{ this|format(\"date\") }})\n}\n", "format",
                      {R"("2025-01-15")", R"("15/01/2025")"});
  expect_parity<Email>("Email", "class Email {\n  v string @assert({{ this|format(\"email\") }})\n}\n", "format",
                       {R"("a@example.com")", R"("a.example.com")"});
}

TEST(ValidatorParity, UniquenessAndItems) {
  using namespace parity;
  expect_parity<Unique>("Unique", "class Unique {\n  v string[] @assert({{ this|unique|length == this|length }})\n}\n",
                        "uniqueItems", {R"(["a", "b"])", R"(["a", "a"])", "[]"});
  expect_parity<UniqueBy>("UniqueBy",
                          "class Item {\n  id string\n  n int\n}\n"
                          "class UniqueBy {\n  v Item[] @assert({{ this|unique(\"id\")|length == this|length }})\n}\n",
                          "x-unique-by",
                          {R"([{"id": "a", "n": 1}, {"id": "b", "n": 1}])", R"([{"id": "a", "n": 1}, {"id": "a", "n": 2}])"});
  expect_parity<Each>("Each", "class Each {\n  v (string @assert({{ this|length >= 2 }}))[]\n}\n", "minLength",
                      {R"(["ab", "cd"])", R"(["ab", "c"])"});
}

TEST(ValidatorParity, TheNewSpellingsAlsoWorkAsExpressions) {
  // In an expression that is not a single keyword, the filters evaluate like any other.
  const covenant::schema_set file = covenant::schema_set::parse(
      "class Tags {\n  v string[] @assert({{ this|unique|length == this|length or this|length > 3 }})\n"
      "  site string @assert({{ this|format(\"uri\") or this == \"none\" }})\n}\n");
  const covenant::schema::model m = file.model("Tags");
  EXPECT_TRUE(covenant::try_decode_dynamic(R"({"v": ["a", "a", "b", "c"], "site": "none"})", m).ok());
  EXPECT_FALSE(covenant::try_decode_dynamic(R"({"v": ["a", "a"], "site": "none"})", m).ok());
  EXPECT_FALSE(covenant::try_decode_dynamic(R"({"v": [], "site": "nowhere"})", m).ok());
  // Unknown format names are load errors.
  EXPECT_THROW((void)covenant::schema_set::parse("class X {\n  v string @assert({{ this|format(\"zip\") }})\n}\n"),
               covenant::schema_error);
}

}  // namespace
