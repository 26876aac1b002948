// Each validator failing on its own, through the decoder: one issue with its path, code, expected,
// actual and rendered line; and the same value passing.
#include <covenant/read/decode.hpp>
#include <covenant/types/describe.hpp>
#include <covenant/types/validators.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace validators_test {

struct Item {
  std::string id;
  int n = 0;
};

struct Everything {
  std::string color;
  int level = 0;
  double step = 0;
  double open_low = 0;
  double open_high = 0;
  std::string code;
  std::string site;
  std::string key;
  std::string when;
  std::string day;
  std::string mail;
  std::vector<int> distinct;
  std::vector<Item> items;
  int even = 0;
  std::uint16_t port = 0;
  std::int32_t delta = 0;
};

}  // namespace validators_test

using validators_test::Everything;
using validators_test::Item;

template <>
struct covenant::describe<Everything> {
  static constexpr auto fields = covenant::fields<Everything>(
      covenant::field<&Everything::color>("", covenant::one_of{"red", "green"}),
      covenant::field<&Everything::level>("", covenant::one_of{1, 2, 3}),
      covenant::field<&Everything::step>("", covenant::multiple_of{0.5}),
      covenant::field<&Everything::open_low>("", covenant::exclusive_minimum{0.0}),
      covenant::field<&Everything::open_high>("", covenant::exclusive_maximum{10.0}),
      covenant::field<&Everything::code>("", covenant::pattern{"^[A-Z]{3}$"}),
      covenant::field<&Everything::site>("", covenant::url{}),
      covenant::field<&Everything::key>("", covenant::uuid{}),
      covenant::field<&Everything::when>("", covenant::iso8601{}),
      covenant::field<&Everything::day>("", covenant::date{}),
      covenant::field<&Everything::mail>("", covenant::email{}),
      covenant::field<&Everything::distinct>("", covenant::unique_items{}),
      covenant::field<&Everything::items>("", covenant::unique_by<&Item::id>{}),
      covenant::field<&Everything::even>(
          "", covenant::predicate{[](const int& v) { return v % 2 == 0; }, "must be even"}));
};

namespace {

// A valid document with `field` replaced by `value` (raw JSON).
std::string with(const std::string& field, const std::string& value) {
  const std::string valid =
      R"({"color": "red", "level": 1, "step": 0.5, "open_low": 1, "open_high": 1, "code": "ABC",)"
      R"( "site": "https://example.org", "key": "123e4567-e89b-12d3-a456-426614174000",)"
      R"( "when": "2025-01-15T10:30:00Z", "day": "2025-01-15", "mail": "a@b.org", "distinct": [1, 2],)"
      R"( "items": [{"id": "a", "n": 1}, {"id": "b", "n": 2}], "even": 2, "port": 80, "delta": 0})";
  if (field.empty()) return valid;
  const std::string key = "\"" + field + "\": ";
  const auto at = valid.find(key);
  EXPECT_NE(at, std::string::npos) << field;
  std::size_t end = at + key.size();
  int depth = 0;
  bool in_string = false;
  for (; end < valid.size(); ++end) {
    const char c = valid[end];
    if (in_string) {
      if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') ++depth;
    else if (c == ']' || c == '}') {
      if (depth == 0) break;
      --depth;
    } else if (c == ',' && depth == 0) break;
  }
  return valid.substr(0, at + key.size()) + value + valid.substr(end);
}

// The one rendered issue of decoding the valid document with one field replaced.
std::string only_issue(const std::string& field, const std::string& value,
                       covenant::issue_code code = covenant::issue_code::constraint_violation) {
  auto r = covenant::try_decode<Everything>(with(field, value));
  if (r.issues.size() != 1) return "expected one issue, got:\n" + covenant::render_feedback(r.issues);
  EXPECT_EQ(r.issues[0].code, code) << r.issues[0].to_string();
  EXPECT_EQ(r.issues[0].path.to_string(), field);
  return r.issues[0].to_string();
}

TEST(Validators, TheValidDocumentPasses) {
  auto r = covenant::try_decode<Everything>(with("", ""));
  EXPECT_TRUE(r.ok()) << covenant::render_feedback(r.issues);
}

TEST(Validators, OneOfStringsAndNumbers) {
  EXPECT_EQ(only_issue("color", R"("blue")"), R"(color: must be one of "red", "green" (got "blue"))");
  EXPECT_EQ(only_issue("level", "4"), "level: must be one of 1, 2, 3 (got 4)");
}

TEST(Validators, MultipleOfAndExclusiveBounds) {
  EXPECT_EQ(only_issue("step", "0.75"), "step: must be a multiple of 0.5 (got 0.75)");
  EXPECT_EQ(only_issue("open_low", "0"), "open_low: must be > 0 (got 0)");
  EXPECT_EQ(only_issue("open_high", "10"), "open_high: must be < 10 (got 10)");
  EXPECT_TRUE(covenant::try_decode<Everything>(with("open_high", "9.99")).ok());
  EXPECT_TRUE(covenant::try_decode<Everything>(with("open_low", "0.01")).ok());
}

TEST(Validators, PatternIsASearchUnlessAnchored) {
  EXPECT_EQ(only_issue("code", R"("ABCD")"), R"(code: must match the regular expression ^[A-Z]{3}$ (got "ABCD"))");
  EXPECT_EQ(only_issue("code", R"("abc")"), R"(code: must match the regular expression ^[A-Z]{3}$ (got "abc"))");
}

TEST(Validators, Formats) {
  EXPECT_EQ(only_issue("site", R"("example.org")"), R"(site: must be an absolute URL (got "example.org"))");
  EXPECT_EQ(only_issue("key", R"("123e4567")"),
            R"(key: must be a UUID (8-4-4-4-12 hexadecimal digits) (got "123e4567"))");
  EXPECT_EQ(only_issue("when", R"("2025-01-15 10:30")"),
            R"(when: must be an ISO 8601 date-time with time zone, such as 2025-01-15T10:30:00Z (got "2025-01-15 10:30"))");
  EXPECT_EQ(only_issue("day", R"("15/01/2025")"), R"(day: must be a date such as 2025-01-15 (got "15/01/2025"))");
  EXPECT_EQ(only_issue("mail", R"("nobody")"), R"(mail: must be an e-mail address (got "nobody"))");
}

TEST(Validators, UniqueItemsAndUniqueBy) {
  EXPECT_EQ(only_issue("distinct", "[1, 2, 1]"), "distinct: items must be unique ([0] and [2] are equal)");
  EXPECT_EQ(only_issue("items", R"([{"id": "a", "n": 1}, {"id": "a", "n": 2}])"),
            R"(items: id values must be unique ("a" appears at [0] and [1]))");
  // Equal values of another member do not count.
  EXPECT_TRUE(covenant::try_decode<Everything>(with("items", R"([{"id": "a", "n": 1}, {"id": "b", "n": 1}])")).ok());
}

TEST(Validators, CustomPredicateWithItsMessage) {
  EXPECT_EQ(only_issue("even", "3"), "even: must be even (got 3)");
}

TEST(Validators, Uint16AndInt32OutOfRangeAreErrorsNeverNarrowed) {
  EXPECT_THAT(only_issue("port", "65536", covenant::issue_code::type_mismatch),
              ::testing::StartsWith("port: must be an integer between 0 and 65535"));
  EXPECT_THAT(only_issue("port", "-1", covenant::issue_code::type_mismatch),
              ::testing::StartsWith("port: must be an integer between 0 and 65535"));
  EXPECT_THAT(only_issue("delta", "2147483648", covenant::issue_code::type_mismatch),
              ::testing::StartsWith("delta: must be an integer between -2147483648 and 2147483647"));
  auto r = covenant::try_decode<Everything>(with("port", "65535"));
  ASSERT_TRUE(r.ok()) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value->port, 65535);
}

TEST(Issues, LongActualValuesAreElided) {
  const std::string long_value(200, 'x');
  auto r = covenant::try_decode<Everything>(with("color", "\"" + long_value + "\""));
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_LT(r.issues[0].actual.size(), 60u);
  EXPECT_THAT(r.issues[0].actual, ::testing::StartsWith("\"xxxx"));
  EXPECT_THAT(r.issues[0].actual, ::testing::HasSubstr("..."));
  EXPECT_LT(r.issues[0].to_string().size(), 120u);
}

}  // namespace
