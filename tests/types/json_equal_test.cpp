// The one equality of JSON values (covenant/types/json_equal.hpp): its written semantics, and every place
// that compares decoded values with it — uniqueness (the keyword and the C++ validator), the
// expressions of schema files (==, !=, in, the unique filter), numeric one_of and literal types.
#include <covenant/read/decode.hpp>
#include <covenant/types/describe.hpp>
#include "runtime/schema_formula.hpp"
#include <covenant/read/dynamic.hpp>
#include <covenant/types/json_equal.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace json_equal_test {

struct Point {
  int a = 0;
  std::optional<int> b;
};

struct Points {
  std::vector<Point> ps;
};

struct Big {
  std::int64_t v = 0;
};

}  // namespace json_equal_test

template <>
struct covenant::describe<json_equal_test::Points> {
  static constexpr auto fields = covenant::fields<json_equal_test::Points>(
      covenant::field<&json_equal_test::Points::ps>("Points.", covenant::unique_items{}));
};

template <>
struct covenant::describe<json_equal_test::Big> {
  static constexpr auto fields = covenant::fields<json_equal_test::Big>(
      covenant::field<&json_equal_test::Big::v>("V.", covenant::one_of{9007199254740993LL, 5LL}));
};

namespace {

namespace json = boost::json;
using covenant::json_equal;

bool eq(std::string_view a, std::string_view b) { return json_equal(json::parse(a), json::parse(b)); }

TEST(JsonEqual, NumbersByTheirExactValue) {
  EXPECT_TRUE(eq("1", "1.0"));
  EXPECT_TRUE(eq("-0", "0.0"));
  EXPECT_TRUE(eq("1e2", "100"));
  EXPECT_FALSE(eq("1", "1.5"));
  // int64 and uint64 exactly, never through a double.
  EXPECT_FALSE(eq("9223372036854775807", "9223372036854775808"));
  EXPECT_TRUE(eq("18446744073709551615", "18446744073709551615"));
  EXPECT_FALSE(eq("-1", "18446744073709551615"));
  // An integer equals a double only when the double is exactly that integer.
  EXPECT_FALSE(eq("9007199254740993", "9007199254740992.0"));
  EXPECT_TRUE(eq("9007199254740992", "9007199254740992.0"));
  EXPECT_FALSE(eq("9223372036854775807", "9223372036854775808.0"));
}

TEST(JsonEqual, StringsBooleansNullAndOtherKinds) {
  EXPECT_TRUE(eq(R"("é")", R"("\u00e9")"));
  EXPECT_FALSE(eq(R"("e\u0301")", R"("é")"));  // no normalization
  EXPECT_FALSE(eq(R"("1")", "1"));
  EXPECT_FALSE(eq("true", "1"));
  EXPECT_FALSE(eq("null", "false"));
  EXPECT_TRUE(eq("null", "null"));
  EXPECT_FALSE(eq("[]", "{}"));
}

TEST(JsonEqual, ArraysInOrderObjectsInAnyOrderAbsentEqualsNull) {
  EXPECT_TRUE(eq("[1, [2.0]]", "[1.0, [2]]"));
  EXPECT_FALSE(eq("[1, 2]", "[2, 1]"));
  EXPECT_FALSE(eq("[1]", "[1, null]"));
  EXPECT_TRUE(eq(R"({"a": 1, "b": 2})", R"({"b": 2, "a": 1})"));
  EXPECT_TRUE(eq(R"({"a": 1, "b": null})", R"({"a": 1})"));
  EXPECT_TRUE(eq(R"({"a": 1})", R"({"a": 1, "b": null})"));
  EXPECT_FALSE(eq(R"({"a": 1, "b": 0})", R"({"a": 1})"));
}

covenant::dynamic_result read(const char* schema, const char* type, std::string_view text) {
  return covenant::try_decode_dynamic(text, covenant::schema_set::parse(schema).model(type));
}

constexpr const char* points_schema = R"(
class P {
  a int
  b int?
}
class Keyword {
  ps P[] @assert({{ this|unique|length == this|length }})
}
class Compared {
  ps P[] @assert({{ not (this[0] == this[1]) }})
}
class Filtered {
  ps P[] @assert({{ this|unique|length >= this|length }})
}
class Member {
  ps P[] @assert({{ this|unique("b")|length >= this|length }})
}
class Listed {
  v int @assert({{ this in [1.0, 2] }})
}
)";

TEST(JsonEqual, EveryComparisonOfASchemaFileAgrees) {
  // An absent member and a null one are the same value, whichever check compares them.
  const std::string_view same = R"({"ps": [{"a": 1, "b": null}, {"a": 1}]})";
  for (const char* type : {"Keyword", "Compared", "Filtered", "Member"}) {
    const auto r = read(points_schema, type, same);
    EXPECT_EQ(r.issues.size(), 1u) << type << ": the two points are equal";
  }
  const std::string_view different = R"({"ps": [{"a": 1, "b": 2}, {"a": 1}]})";
  for (const char* type : {"Keyword", "Compared", "Filtered", "Member"})
    EXPECT_TRUE(read(points_schema, type, different).ok()) << type;
  // Numbers by value in `in`, ==, and the unique filter.
  EXPECT_TRUE(read(points_schema, "Listed", R"({"v": 1})").ok());
  EXPECT_FALSE(read(points_schema, "Listed", R"({"v": 3})").ok());
  std::string error;
  std::size_t offset = 0;
  const auto numbers = covenant::detail::formula::parse("this|unique|length", error, offset);
  ASSERT_TRUE(numbers) << error;
  EXPECT_EQ(numbers->evaluate(json::parse("[1, 1.0, 2]")), json::value(2));
}

TEST(JsonEqual, TheTypedValidatorAndTheDynamicDecoderAgree) {
  using json_equal_test::Points;
  const std::string text = R"({"ps": [{"a": 1, "b": null}, {"a": 1}]})";
  const auto typed = covenant::try_decode<Points>(text);
  const auto dynamic = covenant::try_decode_dynamic(text, covenant::schema_of<Points>());
  ASSERT_EQ(typed.issues.size(), 1u);
  EXPECT_EQ(dynamic.issues, typed.issues);
}

TEST(JsonEqual, NumericOneOfComparesIntegersExactly) {
  using json_equal_test::Big;
  EXPECT_TRUE(covenant::try_decode<Big>(R"({"v": 9007199254740993})").ok());
  // 9007199254740992 is the same double as 9007199254740993, not the same integer.
  EXPECT_FALSE(covenant::try_decode<Big>(R"({"v": 9007199254740992})").ok());
  EXPECT_FALSE(covenant::try_decode_dynamic(R"({"v": 9007199254740992})", covenant::schema_of<Big>()).ok());
  EXPECT_TRUE(covenant::try_decode_dynamic(R"({"v": 5.0})", covenant::schema_of<Big>()).ok());
}

TEST(JsonEqual, LiteralsByValue) {
  constexpr const char* schema = R"(
class L {
  n 3
  x 1.5
  big 9007199254740993
}
)";
  EXPECT_TRUE(read(schema, "L", R"({"n": 3.0, "x": 1.50, "big": 9007199254740993})").ok());
  EXPECT_FALSE(read(schema, "L", R"({"n": 4, "x": 1.5, "big": 9007199254740993})").ok());
  EXPECT_FALSE(read(schema, "L", R"({"n": 3, "x": 1.5, "big": 9007199254740992})").ok());
}

}  // namespace
