// Every supported field type, decoded and encoded.
#include <covenant/read/decode.hpp>
#include <covenant/types/encode.hpp>
#include <gtest/gtest.h>

#include <charconv>
#include <cstdint>
#include <map>
#include <random>
#include <unordered_map>
#include <variant>

namespace types_test {

enum class Priority { low, medium, high };
enum class Color : std::uint8_t { red = 1, green = 2 };

struct Integers {
  std::int8_t i8 = 0;
  std::uint8_t u8 = 0;
  std::int16_t i16 = 0;
  std::uint32_t u32 = 0;
  std::int64_t i64 = 0;
  std::uint64_t u64 = 0;
};

struct Floats {
  double d = 0;
  float f = 0;
};

struct Point {
  int x = 0;
  int y = 0;
};

struct Everything {
  bool flag = false;
  Priority priority = Priority::low;
  std::optional<Color> color;
  std::vector<Point> points;
  std::map<std::string, int> counts;
  std::unordered_map<std::string, std::vector<std::string>> tags;
  std::variant<int, std::string, Point> choice;
  std::variant<std::monostate, double> maybe_number;
  boost::json::value extra;
  std::optional<std::vector<std::optional<int>>> sparse;
};

struct Node {
  std::string name;
  std::vector<Node> children;
};

struct WithDefaults {
  std::string name;
  int retries = 3;
  std::optional<int> max_snippets = 3;
};

}  // namespace types_test

template <>
struct covenant::describe<types_test::Priority> {
  static constexpr auto values = covenant::values<types_test::Priority>(
      covenant::value<types_test::Priority::high>("Urgent.", covenant::alias{"HIGH"}, covenant::also_accept{"urgent"}));
};

template <>
struct covenant::describe<types_test::WithDefaults> {
  static constexpr auto fields = covenant::fields<types_test::WithDefaults>(
      covenant::field<&types_test::WithDefaults::retries>("Retries.", covenant::defaulted{}, covenant::range{0, 10}),
      covenant::field<&types_test::WithDefaults::name>(covenant::alias{"full_name"}));
};

namespace {

using namespace types_test;

TEST(Types, IntegersInRangeDecode) {
  auto r = covenant::try_decode<Integers>(
      R"({"i8": -128, "u8": 255, "i16": 32767, "u32": 4294967295, "i64": -9223372036854775808, "u64": 18446744073709551615})");
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value->i8, -128);
  EXPECT_EQ(r.value->u8, 255);
  EXPECT_EQ(r.value->u32, 4294967295u);
  EXPECT_EQ(r.value->i64, INT64_MIN);
  EXPECT_EQ(r.value->u64, UINT64_MAX);
}

TEST(Types, IntegersOutOfRangeAreIssuesNeverNarrowed) {
  auto r = covenant::try_decode<Integers>(
      R"({"i8": 128, "u8": -1, "i16": 1.5, "u32": 4294967296, "i64": 9223372036854775808, "u64": 184467440737095516150})");
  ASSERT_EQ(r.issues.size(), 6u) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.issues[0].to_string(), "i8: must be an integer between -128 and 127 (got 128)");
  EXPECT_EQ(r.issues[1].to_string(), "u8: must be an integer between 0 and 255 (got -1)");
  EXPECT_EQ(r.issues[2].to_string(), "i16: expected integer (got 1.5)");
  EXPECT_EQ(r.issues[3].to_string(), "u32: must be an integer between 0 and 4294967295 (got 4294967296)");
  EXPECT_EQ(r.issues[4].code, covenant::issue_code::type_mismatch);
  EXPECT_EQ(r.issues[5].code, covenant::issue_code::type_mismatch);
}

TEST(Types, IntegralFloatsAreAcceptedForIntegers) {
  auto r = covenant::try_decode<Integers>(R"({"i8": 5.0, "u8": 1e2, "i16": 0, "u32": 0, "i64": 0, "u64": 0})");
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value->i8, 5);
  EXPECT_EQ(r.value->u8, 100);
}

TEST(Types, DoublesMatchCorrectlyRoundedConversion) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<std::int64_t> mant(0, 999999999999999LL);
  std::uniform_int_distribution<int> frac(0, 15);
  for (int i = 0; i < 20000; ++i) {
    std::string digits = std::to_string(mant(rng));
    const int f = std::min<int>(frac(rng), static_cast<int>(digits.size()) - 1);
    if (f > 0) digits.insert(digits.size() - static_cast<std::size_t>(f), ".");
    if (i % 3 == 0) digits = "-" + digits;
    double expected = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), expected);
    auto r = covenant::try_decode<Floats>(R"({"d": )" + digits + R"(, "f": 0})");
    ASSERT_TRUE(r) << digits;
    ASSERT_EQ(r.value->d, expected) << digits;
  }
  for (const char* text : {"1e308", "2.2250738585072014e-308", "0.1", "123456789012345678901234567890", "-0.0",
                           "1.7976931348623157e308", "4.9e-324"}) {
    double expected = 0;
    std::from_chars(text, text + std::strlen(text), expected);
    auto r = covenant::try_decode<Floats>(std::string(R"({"d": )") + text + R"(, "f": 0})");
    ASSERT_TRUE(r) << text;
    EXPECT_EQ(r.value->d, expected) << text;
  }
}

TEST(Types, DoubleOverflowIsAnIssue) {
  auto r = covenant::try_decode<Floats>(R"({"d": 1e400, "f": 1e39})");
  ASSERT_EQ(r.issues.size(), 2u);
  EXPECT_EQ(r.issues[0].to_string(), "d: number is out of range (got 1e400)");
}

TEST(Types, EveryKindDecodesAndRoundTrips) {
  const char* text = R"({
    "flag": true, "priority": "HIGH", "color": "green",
    "points": [{"x": 1, "y": 2}, {"x": -3, "y": 4}],
    "counts": {"a": 1, "b": 2},
    "tags": {"k": ["v1", "v2"]},
    "choice": {"x": 9, "y": 8},
    "maybe_number": null,
    "extra": {"anything": [1, "two", null]},
    "sparse": [1, null, 3]
  })";
  auto r = covenant::try_decode<Everything>(text);
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  const Everything& e = *r.value;
  EXPECT_TRUE(e.flag);
  EXPECT_EQ(e.priority, Priority::high);
  EXPECT_EQ(e.color, Color::green);
  ASSERT_EQ(e.points.size(), 2u);
  EXPECT_EQ(e.points[1].x, -3);
  EXPECT_EQ(e.counts.at("b"), 2);
  EXPECT_EQ(e.tags.at("k").at(1), "v2");
  ASSERT_EQ(e.choice.index(), 2u);
  EXPECT_EQ(std::get<Point>(e.choice).y, 8);
  EXPECT_EQ(e.maybe_number.index(), 0u);
  EXPECT_EQ(e.extra.at("anything").at(1), "two");
  ASSERT_TRUE(e.sparse.has_value());
  EXPECT_FALSE((*e.sparse)[1].has_value());

  auto again = covenant::try_decode<Everything>(covenant::to_json(e));
  ASSERT_TRUE(again) << covenant::render_feedback(again.issues);
  EXPECT_EQ(covenant::to_json(*again.value), covenant::to_json(e));
  EXPECT_NE(covenant::to_json(e).find(R"("priority":"HIGH")"), std::string::npos);
}

TEST(Types, EnumsAcceptAliasesAndRejectUnknownValues) {
  auto ok = covenant::try_decode<Everything>(
      R"({"flag": false, "priority": "urgent", "points": [], "counts": {}, "tags": {}, "choice": 1, "maybe_number": 2.5, "extra": null})");
  ASSERT_TRUE(ok) << covenant::render_feedback(ok.issues);
  EXPECT_EQ(ok.value->priority, Priority::high);
  auto bad = covenant::try_decode<Everything>(
      R"({"flag": false, "priority": "critical", "points": [], "counts": {}, "tags": {}, "choice": 1, "maybe_number": null, "extra": null})");
  ASSERT_EQ(bad.issues.size(), 1u);
  EXPECT_EQ(bad.issues[0].to_string(), R"(priority: must be one of "low", "medium", "HIGH" (got "critical"))");
}

TEST(Types, VariantPicksFirstFittingAlternativeAndReportsOnceWhenNoneFits) {
  auto s = covenant::try_decode<Everything>(
      R"({"flag": false, "priority": "low", "points": [], "counts": {}, "tags": {}, "choice": "text", "maybe_number": null, "extra": 0})");
  ASSERT_TRUE(s);
  EXPECT_EQ(std::get<std::string>(s.value->choice), "text");
  auto bad = covenant::try_decode<Everything>(
      R"({"flag": false, "priority": "low", "points": [], "counts": {}, "tags": {}, "choice": [1], "maybe_number": null, "extra": 0})");
  ASSERT_EQ(bad.issues.size(), 1u);
  EXPECT_EQ(bad.issues[0].to_string(), "choice: expected integer or string or object (Point) (got [1])");
  auto partial = covenant::try_decode<Everything>(
      R"({"flag": false, "priority": "low", "points": [], "counts": {}, "tags": {}, "choice": {"x": 1}, "maybe_number": null, "extra": 0})");
  ASSERT_EQ(partial.issues.size(), 1u);
  EXPECT_EQ(partial.issues[0].to_string(), "choice.y: required field is missing");
}

TEST(Types, MapValuesHaveKeyedPaths) {
  auto r = covenant::try_decode<Everything>(
      R"({"flag": false, "priority": "low", "points": [], "counts": {"odd key": "x"}, "tags": {}, "choice": 1, "maybe_number": null, "extra": 0})");
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].to_string(), R"(counts["odd key"]: expected integer (got "x"))");
}

TEST(Types, RecursiveTypesDecode) {
  auto r = covenant::try_decode<Node>(R"({"name": "root", "children": [{"name": "a", "children": [{"name": "b", "children": []}]}]})");
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value->children.at(0).children.at(0).name, "b");
  auto bad = covenant::try_decode<Node>(R"({"name": "root", "children": [{"name": "a", "children": [{"children": []}]}]})");
  ASSERT_EQ(bad.issues.size(), 1u);
  EXPECT_EQ(bad.issues[0].to_string(), "children[0].children[0].name: required field is missing");
}

TEST(Types, DefaultedAndOptionalFieldsKeepTheirInitializers) {
  auto r = covenant::try_decode<WithDefaults>(R"({"full_name": "x"})");
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value->retries, 3);
  EXPECT_EQ(r.value->max_snippets, 3);
  const auto& model = covenant::schema_of<WithDefaults>();
  const auto& obj = *model.defs.at(model.root.def).object();
  ASSERT_TRUE(obj.fields[1].default_value.has_value());
  EXPECT_EQ(*obj.fields[1].default_value, boost::json::value(3));
  EXPECT_FALSE(obj.fields[1].required);
  EXPECT_EQ(obj.fields[0].key, "full_name");
  auto bad = covenant::try_decode<WithDefaults>(R"({"name": "x", "retries": 11})");
  ASSERT_EQ(bad.issues.size(), 2u) << covenant::render_feedback(bad.issues);
  EXPECT_EQ(bad.issues[0].to_string(), "retries: must be <= 10 (got 11)");
  EXPECT_EQ(bad.issues[1].to_string(), "full_name: required field is missing");
}

TEST(Types, SchemaModelIsBuiltOnceAndShared) {
  const auto* a = &covenant::schema_of<Everything>();
  const auto* b = &covenant::schema_of<Everything>();
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->title(), "Everything");
  EXPECT_NE(a->find("Point"), nullptr);
  EXPECT_NE(a->find("Priority"), nullptr);
}

}  // namespace
