// The rules every reader of a schema applies the same way: the typed decoder, the dynamic decoder
// on schema_of<T>() and the two stream readers (readers_of / expect_readers_agree in
// support/reading.hpp). Each test pins one rule for all of them: nulls and optional values,
// booleans, integers, numbers, numbers and booleans written as text, strings, objects and lists read
// as their text, JSON inside a string, enums, absent fields, defaults, unknown keys, key spellings,
// a single value read as a list, maps, string and number constraints, invariants.
#include <covenant/read/decode.hpp>
#include <covenant/types/describe.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/runtime/json_schema_import.hpp>
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "reading.hpp"
#include "read/json_ops.hpp"
#include <covenant/read/detail/filter.hpp>

namespace rules_test {

enum class Level { low, high };

struct Item {
  std::string name;
  std::optional<int> qty;
};

struct Rec {
  std::string name;
  int count = 0;
  double ratio = 0;
  bool flag = false;
  Level level = Level::low;
  std::optional<std::string> note;
  std::vector<Item> items;
  std::map<std::string, int> counts;
  std::vector<std::string> tags;
  int retries = 3;
};

struct Window {
  int from = 0;
  int to = 0;
};

struct Pick {
  Level level = Level::low;
  std::string size;
};

struct Sparse {
  std::vector<std::optional<int>> xs;
  std::optional<int> maybe;
};

struct Step {
  int minutes = 5;
};

struct Steps {
  std::vector<Step> steps;
};

struct Narrow {
  std::int8_t x = 0;
};

struct Single {
  float f = 0;
};

struct Distinct {
  std::vector<int> xs;
};

struct Unlucky {
  int x = 0;
};

inline bool not_thirteen(int v) { return v != 13; }

// Shapes (coerce level): a value in a one-item list or a one-member object, a value for an
// object's only field, an object for a class whose only field is a class.
struct Boxed {
  int value = 0;
};
struct Inner {
  std::string name;
};
struct Wrapper {
  Inner selected;
};
// Unions: which alternative a value reads as.
struct Plain {
  int id = 0;
  std::string name;
};
struct Tagged {
  int id = 0;
  std::string name;
  std::optional<std::string> metadata;
};
struct Either {
  std::variant<Plain, Tagged> v;
};
struct Ratio {
  double x = 0;
};
struct RatioOrCount {
  std::variant<Ratio, int> u;
};
struct Shapes {
  int n = 0;
  Level level = Level::low;
  std::optional<bool> flag;
  Boxed boxed;
  Wrapper w;
};

}  // namespace rules_test

template <>
struct covenant::describe<rules_test::Level> {
  static constexpr auto values = covenant::values<rules_test::Level>(
      covenant::value<rules_test::Level::high>("High.", covenant::alias{"HIGH"}, covenant::also_accept("urgent")));
};

template <>
struct covenant::describe<rules_test::Item> {
  static constexpr auto fields = covenant::fields<rules_test::Item>(
      covenant::field<&rules_test::Item::name>("Name.", covenant::non_empty{}));
};

template <>
struct covenant::describe<rules_test::Rec> {
  static constexpr auto fields = covenant::fields<rules_test::Rec>(
      covenant::field<&rules_test::Rec::name>("Name.", covenant::non_empty{}, covenant::max_length{10}),
      covenant::field<&rules_test::Rec::count>("Count.", covenant::range{0, 100}),
      covenant::field<&rules_test::Rec::items>("Items.", covenant::max_items{3}),
      covenant::field<&rules_test::Rec::retries>("Retries.", covenant::defaulted{}));
};

template <>
struct covenant::describe<rules_test::Pick> {
  static constexpr auto fields = covenant::fields<rules_test::Pick>(
      covenant::field<&rules_test::Pick::size>("Size.", covenant::one_of{"S", "M"}));
};

template <>
struct covenant::describe<rules_test::Sparse> {
  static constexpr auto fields = covenant::fields<rules_test::Sparse>(
      covenant::field<&rules_test::Sparse::xs>("Xs.", covenant::each{covenant::on_fail::filter(covenant::range{0, 9})}),
      covenant::field<&rules_test::Sparse::maybe>("Maybe.", covenant::on_fail::filter(covenant::range{0, 9})));
};

template <>
struct covenant::describe<rules_test::Step> {
  static constexpr auto fields = covenant::fields<rules_test::Step>(covenant::field<&rules_test::Step::minutes>(
      "Minutes.", covenant::defaulted{}, covenant::on_fail::filter(covenant::range{1, 120})));
};

template <>
struct covenant::describe<rules_test::Narrow> {
  static constexpr auto fields = covenant::fields<rules_test::Narrow>(
      covenant::field<&rules_test::Narrow::x>("X.", covenant::on_fail::fix(covenant::multiple_of{50})));
};

template <>
struct covenant::describe<rules_test::Unlucky> {
  static constexpr auto fields = covenant::fields<rules_test::Unlucky>(
      covenant::field<&rules_test::Unlucky::x>("X.", covenant::predicate{rules_test::not_thirteen, "must not be 13"}));
};

template <>
struct covenant::describe<rules_test::Distinct> {
  static constexpr auto fields = covenant::fields<rules_test::Distinct>(covenant::field<&rules_test::Distinct::xs>(
      "Xs.", covenant::on_fail::fix(covenant::unique_items{}), covenant::on_fail::fix(covenant::max_items{2})));
};

template <>
struct covenant::describe<rules_test::Ratio> {
  static constexpr auto fields = covenant::fields<rules_test::Ratio>(
      covenant::field<&rules_test::Ratio::x>("X.", covenant::on_fail::noop(covenant::range{0.0, 1.0})));
};

template <>
struct covenant::describe<rules_test::Window> {
  static constexpr auto invariants = covenant::invariants<rules_test::Window>(
      covenant::invariant<&rules_test::Window::to>("to must not be before from",
                                                   [](const rules_test::Window& w) { return w.to >= w.from; }));
  static constexpr auto fields = covenant::fields<rules_test::Window>(
      covenant::field<&rules_test::Window::from>("From.", covenant::non_negative{}));
};

namespace {

using covenant_test::reading::expect_readers_agree;
using covenant_test::reading::rendered;
using rules_test::Rec;

covenant::decode_options coerce() {
  covenant::decode_options o;
  o.coerce = true;
  return o;
}

// A valid record with `member` (a "key": value text) in place of the field of that key.
std::string rec(const std::string& member) {
  std::string out = "{";
  const std::pair<const char*, const char*> fields[] = {
      {"name", R"("name": "box")"}, {"count", R"("count": 4)"},     {"ratio", R"("ratio": 0.5)"},
      {"flag", R"("flag": true)"},  {"level", R"("level": "low")"}, {"items", R"("items": [{"name": "a"}])"},
      {"counts", R"("counts": {})"}, {"tags", R"("tags": [])"}};
  const std::string key = member.substr(1, member.find('"', 1) - 1);
  bool placed = false;
  for (const auto& [k, text] : fields) {
    if (out.size() > 1) out += ", ";
    if (key == k) {
      out += member;
      placed = true;
    } else {
      out += text;
    }
  }
  if (!placed) out += ", " + member;
  return out + "}";
}

TEST(ReadingRules, AValidRecordReadsTheSameEverywhere) {
  const auto r = expect_readers_agree<Rec>(rec(R"("note": "n")"));
  ASSERT_TRUE(r.typed.ok()) << rendered(r.typed.issues);
  EXPECT_EQ(r.typed.value->name, "box");
  EXPECT_EQ(r.typed.value->retries, 3);
  EXPECT_TRUE(r.typed_stream.empty());
}

TEST(ReadingRules, NullIsAnAbsentOptionalAndAMismatchElsewhere) {
  const auto ok = expect_readers_agree<Rec>(rec(R"("note": null)"));
  ASSERT_TRUE(ok.typed.ok());
  EXPECT_FALSE(ok.typed.value->note.has_value());
  const auto bad = expect_readers_agree<Rec>(rec(R"("name": null)"));
  EXPECT_EQ(rendered(bad.typed.issues), "name: expected string (got null)\n");
}

TEST(ReadingRules, BooleansAndBooleansWrittenAsText) {
  EXPECT_EQ(rendered(expect_readers_agree<Rec>(rec(R"("flag": "true")")).typed.issues),
            "flag: expected boolean (got \"true\")\n");
  const auto r = expect_readers_agree<Rec>(rec(R"("flag": "True")"), coerce());
  ASSERT_TRUE(r.typed.ok()) << rendered(r.typed.issues);
  EXPECT_TRUE(r.typed.value->flag);
  ASSERT_EQ(r.typed.notes.size(), 1u);
  EXPECT_EQ(r.typed.notes[0].to_string(), "coerced at flag: \"True\" read as a boolean");
}

TEST(ReadingRules, IntegersTakeWholeNumbersInAnyNotation) {
  for (const char* whole : {"2.0", "1e2", "-0"}) {
    const auto r = expect_readers_agree<Rec>(rec(std::string(R"("count": )") + whole));
    EXPECT_TRUE(r.typed.ok()) << whole << ": " << rendered(r.typed.issues);
  }
  EXPECT_EQ(rendered(expect_readers_agree<Rec>(rec(R"("count": 2.5)")).typed.issues),
            "count: expected integer (got 2.5)\n");
  EXPECT_EQ(rendered(expect_readers_agree<Rec>(rec(R"("items": [{"name": "a", "qty": 99999999999}])")).typed.issues),
            "items[0].qty: must be an integer between -2147483648 and 2147483647 (got 99999999999)\n");
  EXPECT_EQ(rendered(expect_readers_agree<Rec>(rec(R"("count": 1e300)")).typed.issues),
            "count: must be an integer between -2147483648 and 2147483647 (got 1e300)\n");
}

TEST(ReadingRules, NumbersOutOfRangeOfADouble) {
  EXPECT_EQ(rendered(expect_readers_agree<Rec>(rec(R"("ratio": 1e400)")).typed.issues),
            "ratio: number is out of range (got 1e400)\n");
}

TEST(ReadingRules, NumbersWrittenAsTextAtCoerceLevel) {
  const std::pair<const char*, double> cases[] = {{R"("0.9")", 0.9}, {R"("87%")", 0.87}, {R"("9/10")", 0.9},
                                                  {R"("1,234")", 1234}, {R"("about 0.5 or so")", 0.5}};
  for (const auto& [text, value] : cases) {
    const auto r = expect_readers_agree<Rec>(rec(std::string(R"("ratio": )") + text), coerce());
    ASSERT_TRUE(r.typed.ok()) << text << ": " << rendered(r.typed.issues);
    EXPECT_DOUBLE_EQ(r.typed.value->ratio, value) << text;
    ASSERT_EQ(r.typed.notes.size(), 1u) << text;
    EXPECT_EQ(r.typed.notes[0].detail, std::string(text) + " read as a number");
  }
  EXPECT_EQ(rendered(expect_readers_agree<Rec>(rec(R"("count": "3 or 4")"), coerce()).typed.issues),
            "count: expected integer (got \"3 or 4\")\n");
  EXPECT_EQ(rendered(expect_readers_agree<Rec>(rec(R"("count": "2.5")"), coerce()).typed.issues),
            "count: expected integer (got \"2.5\")\n");
}

TEST(ReadingRules, ScalarsReadAsStringsAtCoerceLevel) {
  EXPECT_EQ(rendered(expect_readers_agree<Rec>(rec(R"("name": 5)")).typed.issues), "name: expected string (got 5)\n");
  const auto r = expect_readers_agree<Rec>(rec(R"("name": 5)"), coerce());
  ASSERT_TRUE(r.typed.ok()) << rendered(r.typed.issues);
  EXPECT_EQ(r.typed.value->name, "5");
  EXPECT_EQ(r.typed.notes.at(0).detail, "5 read as the string \"5\"");
}

TEST(ReadingRules, ObjectsAndListsReadAsTheirTextForAString) {
  const auto r = expect_readers_agree<Rec>(rec(R"("note": {"a": 1})"), coerce());
  ASSERT_TRUE(r.typed.ok()) << rendered(r.typed.issues);
  EXPECT_EQ(*r.typed.value->note, R"({"a": 1})");
  EXPECT_EQ(r.typed.notes.at(0).detail, "an object read as its text");
  const auto l = expect_readers_agree<Rec>(rec(R"("note": [1, 2])"), coerce());
  ASSERT_TRUE(l.typed.ok()) << rendered(l.typed.issues);
  EXPECT_EQ(l.typed.notes.at(0).detail, "a list read as its text");
}

TEST(ReadingRules, JsonTextInsideAStringForAListOrAnObject) {
  const auto r = expect_readers_agree<Rec>(rec(R"("items": "[{\"name\": \"x\"}]")"), coerce());
  ASSERT_TRUE(r.typed.ok()) << rendered(r.typed.issues);
  ASSERT_EQ(r.typed.value->items.size(), 1u);
  EXPECT_EQ(r.typed.value->items[0].name, "x");
  EXPECT_EQ(rendered(expect_readers_agree<Rec>(rec(R"("items": "[{\"name\": \"x\"}]")")).typed.issues),
            "items: expected array (got \"[{\\\"name\\\": \\\"x\\\"}]\")\n");
}

TEST(ReadingRules, EnumValuesByNameAliasAndCoercedSpelling) {
  EXPECT_TRUE(expect_readers_agree<Rec>(rec(R"("level": "HIGH")")).typed.ok());
  EXPECT_TRUE(expect_readers_agree<Rec>(rec(R"("level": "urgent")")).typed.ok());
  const auto wrong = expect_readers_agree<Rec>(rec(R"("level": "medium")"));
  ASSERT_EQ(wrong.typed.issues.size(), 1u);
  EXPECT_EQ(wrong.typed.issues[0].code, covenant::issue_code::constraint_violation);
  EXPECT_EQ(wrong.typed.issues[0].to_string(), "level: must be one of \"low\", \"HIGH\" (got \"medium\")");
  // A finished enum value outside the enum stops the stream.
  EXPECT_EQ(rendered(wrong.typed_stream), rendered(wrong.typed.issues));
  const auto coerced = expect_readers_agree<Rec>(rec(R"("level": "the level is high")"), coerce());
  ASSERT_TRUE(coerced.typed.ok()) << rendered(coerced.typed.issues);
  EXPECT_EQ(coerced.typed.value->level, rules_test::Level::high);
  EXPECT_EQ(expect_readers_agree<Rec>(rec(R"("level": 1)")).typed.issues.at(0).code, covenant::issue_code::type_mismatch);
}

TEST(ReadingRules, AbsentFieldsMissingOptionalOrEmptyListAtCoerceLevel) {
  const auto missing =
      expect_readers_agree<Rec>(R"({"count": 4, "ratio": 0.5, "flag": true, "level": "low", "items": [], "counts": {}})");
  EXPECT_EQ(rendered(missing.typed.issues), "name: required field is missing\ntags: required field is missing\n");
  const auto empty = expect_readers_agree<Rec>(
      R"({"name": "a", "count": 4, "ratio": 0.5, "flag": true, "level": "low", "items": [], "counts": {}})", coerce());
  ASSERT_TRUE(empty.typed.ok()) << rendered(empty.typed.issues);
  EXPECT_TRUE(empty.typed.value->tags.empty());
  EXPECT_EQ(empty.typed.notes.at(0).to_string(), "coerced at tags: missing list read as empty");
  // Not for a list with bounds of its own.
  const auto bounded = expect_readers_agree<Rec>(
      R"({"name": "a", "count": 4, "ratio": 0.5, "flag": true, "level": "low", "counts": {}, "tags": []})", coerce());
  EXPECT_EQ(rendered(bounded.typed.issues), "items: required field is missing\n");
}

TEST(ReadingRules, DefaultedFieldsKeepTheirDefault) {
  const auto r = expect_readers_agree<Rec>(rec(R"("retries": 5)"));
  ASSERT_TRUE(r.typed.ok());
  EXPECT_EQ(r.typed.value->retries, 5);
  const auto d = expect_readers_agree<Rec>(rec(R"("note": "x")"));
  ASSERT_TRUE(d.typed.ok());
  EXPECT_EQ(d.typed.value->retries, 3);
  EXPECT_EQ(d.dynamic.value.at("retries"), 3);
}

TEST(ReadingRules, UnknownKeysAreIgnoredOrRejected) {
  EXPECT_TRUE(expect_readers_agree<Rec>(rec(R"("colour": "red")")).typed.ok());
  covenant::decode_options reject;
  reject.reject_unknown_fields = true;
  EXPECT_EQ(rendered(expect_readers_agree<Rec>(rec(R"("colour": "red")"), reject).typed.issues),
            "colour: unknown field\n");
}

TEST(ReadingRules, KeySpellingsAtCoerceLevel) {
  const auto r = expect_readers_agree<Rec>(
      R"({"Name": "box", "COUNT": 4, "ratio": 0.5, "flag": true, "level": "low", "items": [], "counts": {}})", coerce());
  ASSERT_TRUE(r.typed.ok()) << rendered(r.typed.issues);
  EXPECT_EQ(r.typed.value->count, 4);
  EXPECT_EQ(r.typed.notes.at(0).to_string(), "coerced at name: key \"Name\" read as \"name\"");
  // Not when the field's own key is written too.
  const auto both = expect_readers_agree<Rec>(rec(R"("Name": "other")"), coerce());
  ASSERT_TRUE(both.typed.ok()) << rendered(both.typed.issues);
  EXPECT_EQ(both.typed.value->name, "box");
}

TEST(ReadingRules, ASingleValueReadAsAOneItemListAtCoerceLevel) {
  const auto r = expect_readers_agree<Rec>(rec(R"("items": {"name": "x"})"), coerce());
  ASSERT_TRUE(r.typed.ok()) << rendered(r.typed.issues);
  ASSERT_EQ(r.typed.value->items.size(), 1u);
  EXPECT_EQ(r.typed.notes.at(0).detail, "a single value read as a one-item list");
  EXPECT_EQ(rendered(expect_readers_agree<Rec>(rec(R"("items": {"name": "x"})")).typed.issues),
            "items: expected array (got {\"name\": \"x\"})\n");
}

TEST(ReadingRules, MapsOfStringKeys) {
  const auto r = expect_readers_agree<Rec>(rec(R"("counts": {"a": 1, "b": "x"})"));
  EXPECT_EQ(rendered(r.typed.issues), "counts.b: expected integer (got \"x\")\n");
}

TEST(ReadingRules, StringConstraintsAndTheStreamThatBreaksThem) {
  const auto empty = expect_readers_agree<Rec>(rec(R"("name": "")"));
  EXPECT_EQ(rendered(empty.typed.issues), "name: must not be empty (got \"\")\n");
  EXPECT_EQ(rendered(empty.typed_stream), rendered(empty.typed.issues));
  const auto longer = expect_readers_agree<Rec>(rec(R"("name": "far too long a name")"));
  EXPECT_EQ(rendered(longer.typed.issues), "name: must have at most 10 characters (got 19 characters)\n");
  ASSERT_EQ(longer.typed_stream.size(), 1u);  // while the string is still being written
  EXPECT_EQ(longer.typed_stream[0].actual, "11 characters");
}

TEST(ReadingRules, NumberAndCountConstraintsAndTheStreamThatBreaksThem) {
  const auto r = expect_readers_agree<Rec>(rec(R"("count": 500)"));
  EXPECT_EQ(rendered(r.typed.issues), "count: must be <= 100 (got 500)\n");
  EXPECT_EQ(rendered(r.typed_stream), rendered(r.typed.issues));
  const auto items = expect_readers_agree<Rec>(rec(R"("items": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}])"));
  EXPECT_EQ(rendered(items.typed.issues), "items: must have at most 3 items (got 4 items)\n");
  EXPECT_EQ(items.typed_stream.size(), 1u);
}

TEST(ReadingRules, InvariantsOnlyWhenTheObjectHasNoOtherIssue) {
  // C++ invariants run on the C++ object (the dynamic decoder skips native checks); the same rule
  // in a schema file runs on the JSON value, under the same condition.
  using covenant_test::reading::readers_of;
  EXPECT_EQ(rendered(readers_of<rules_test::Window>(R"({"from": 5, "to": 2})").typed.issues),
            "to: must satisfy: to must not be before from\n");
  EXPECT_EQ(rendered(readers_of<rules_test::Window>(R"({"from": -5, "to": -9})").typed.issues),
            "from: must be >= 0 (got -5)\n");
  const covenant::schema::model m = covenant::schema_set::parse(R"(
class Window {
  from int @assert({{ this >= 0 }})
  to int
  @@assert(ordered, {{ this.to >= this.from }})
}
)").model_for("Window");
  const auto broken = covenant::try_decode_dynamic(R"({"from": 5, "to": 2})", m);
  ASSERT_EQ(broken.issues.size(), 1u);
  EXPECT_EQ(broken.issues[0].code, covenant::issue_code::invariant_violation);
  const auto field = covenant::try_decode_dynamic(R"({"from": -5, "to": -9})", m);
  ASSERT_EQ(field.issues.size(), 1u);
  EXPECT_EQ(field.issues[0].path.to_string(), "from");
}

TEST(ReadingRules, AValueOfItsKindThatNamesNoChoiceIsAConstraintViolation) {
  // An enum and a C++ one_of, in every reader.
  const auto typed = expect_readers_agree<rules_test::Pick>(R"({"level": "mid", "size": "XL"})");
  EXPECT_EQ(rendered(typed.typed.issues),
            "level: must be one of \"low\", \"HIGH\" (got \"mid\")\n"
            "size: must be one of \"S\", \"M\" (got \"XL\")\n");
  for (const auto& i : typed.typed.issues) EXPECT_EQ(i.code, covenant::issue_code::constraint_violation);
  // Literals and unions of literals in a schema file, and JSON Schema `enum` with or without
  // `type`: the same check, the same issue, in the decoder, the reply reader and the stream.
  const covenant::schema_set set = covenant::schema_set::parse(R"(
enum Cur {
  USD
  EUR
}
class Price {
  code "USD" | "EUR"
  cur Cur
  one "USD"
  count 1 | 2 | 3
  yes true
  maybe ("USD" | "EUR")?
}
)");
  const covenant::schema::model file = set.model_for("Price");
  const covenant::schema::model imported = covenant::import_json_schema(boost::json::parse(R"({
    "type": "object",
    "properties": {
      "code": {"enum": ["USD", "EUR"]},
      "typed": {"type": "string", "enum": ["USD", "EUR"]},
      "one": {"const": "USD"}
    },
    "required": ["code", "typed", "one"]
  })"));
  struct row {
    const covenant::schema::model* model;
    const char* text;
    const char* issue;  // the one issue, as text
    covenant::issue_code code;
  };
  const covenant::issue_code violation = covenant::issue_code::constraint_violation;
  const covenant::issue_code mismatch = covenant::issue_code::type_mismatch;
  // A valid Price with `member` in place of the member of the same key (or added).
  const auto price = [](const std::string& member) {
    const std::string key = member.substr(0, member.find(':'));
    std::string out = "{";
    for (const char* m : {R"("code": "USD")", R"("cur": "USD")", R"("one": "USD")", R"("count": 1)", R"("yes": true)"})
      if (!std::string_view(m).starts_with(key)) out += std::string(m) + ", ";
    return out + member + "}";
  };
  const auto event = [](const std::string& member) {
    const std::string key = member.substr(0, member.find(':'));
    std::string out = "{";
    for (const char* m : {R"("code": "USD")", R"("typed": "USD")", R"("one": "USD")"})
      if (!std::string_view(m).starts_with(key)) out += std::string(m) + ", ";
    return out + member + "}";
  };
  const row rows[] = {
      {&file, R"("code": "GBP")", "code: must be one of \"USD\", \"EUR\" (got \"GBP\")", violation},
      {&file, R"("cur": "GBP")", "cur: must be one of \"USD\", \"EUR\" (got \"GBP\")", violation},
      {&file, R"("one": "GBP")", "one: must be one of \"USD\" (got \"GBP\")", violation},
      {&file, R"("count": 4)", "count: must be one of 1, 2, 3 (got 4)", violation},
      {&file, R"("yes": false)", "yes: must be one of true (got false)", violation},
      {&file, R"("maybe": "GBP")", "maybe: must be one of \"USD\", \"EUR\" (got \"GBP\")", violation},
      {&file, R"("code": 5)", "code: expected \"USD\" or \"EUR\" (got 5)", mismatch},
      {&file, R"("count": "4")", "count: expected 1 or 2 or 3 (got \"4\")", mismatch},
      {&file, R"("one": 5)", "one: expected \"USD\" (got 5)", mismatch},
      {&imported, R"("code": "GBP")", "code: must be one of \"USD\", \"EUR\" (got \"GBP\")", violation},
      {&imported, R"("typed": "GBP")", "typed: must be one of \"USD\", \"EUR\" (got \"GBP\")", violation},
      {&imported, R"("one": "GBP")", "one: must be one of \"USD\" (got \"GBP\")", violation},
  };
  for (const row& r : rows) {
    const std::string text = r.model == &file ? price(r.text) : event(r.text);
    SCOPED_TRACE(text);
    for (const bool coerce_level : {false, true}) {
      covenant::decode_options o;
      o.coerce = coerce_level;
      const auto decoded = covenant::try_decode_dynamic(text, *r.model, o);
      ASSERT_EQ(decoded.issues.size(), 1u) << rendered(decoded.issues);
      EXPECT_EQ(decoded.issues[0].to_string(), r.issue);
      EXPECT_EQ(decoded.issues[0].code, r.code);
      const auto read = covenant_test::reading::read_against(
          text, *r.model, coerce_level ? covenant::strictness::coerce : covenant::strictness::strict);
      EXPECT_EQ(rendered(read.issues), rendered(decoded.issues));
    }
  }
}

TEST(ReadingRules, ReplyCandidatesThatKeepEveryShapeWin) {
  // The lenient reader's candidates are ranked alike for the typed and the runtime-schema reader:
  // the first that reads without issues and without changing the shape of a value wins.
  using covenant_test::reading::read_against;
  using covenant_test::reading::read_typed;
  // Objects one after another, for a list: all of them as one list, not the first as a one-item list.
  const std::string objects = R"({"name": "a"} {"name": "b"})";
  const auto list = read_typed<std::vector<rules_test::Item>>(objects);
  ASSERT_TRUE(list.ok()) << rendered(list.issues);
  ASSERT_EQ(list.value->size(), 2u);
  EXPECT_EQ((*list.value)[1].name, "b");
  const auto list_dynamic = read_against(objects, covenant::schema_of<std::vector<rules_test::Item>>());
  ASSERT_TRUE(list_dynamic.issues.empty()) << rendered(list_dynamic.issues);
  EXPECT_TRUE(covenant::json_equal(list_dynamic.value, covenant::to_value(*list.value)));
  // Prose around an object, for a string: the whole reply, not the object read as its text.
  const std::string prose = R"(Here: {"a": 1})";
  const auto text = read_typed<std::string>(prose);
  ASSERT_TRUE(text.ok()) << rendered(text.issues);
  EXPECT_EQ(*text.value, prose);
  const auto text_dynamic = read_against(prose, covenant::schema_of<std::string>());
  ASSERT_TRUE(text_dynamic.issues.empty()) << rendered(text_dynamic.issues);
  EXPECT_EQ(text_dynamic.value, boost::json::value(prose));
  // A candidate that reads as it is written still wins at once.
  const auto fenced = read_typed<std::vector<rules_test::Item>>("```json\n[{\"name\": \"a\"}]\n```");
  ASSERT_TRUE(fenced.ok()) << rendered(fenced.issues);
  EXPECT_EQ(fenced.value->size(), 1u);
}

TEST(ReadingRules, AFilterDropsTheListItemOrTheFieldThatIsNotRequired) {
  // A list item is erased (an optional item too, not read as null); a field that is not required
  // reads as absent (an optional one empty, a defaulted one its default). Never a map value.
  const auto sparse = expect_readers_agree<rules_test::Sparse>(R"({"xs": [1, 50, 2], "maybe": 70})");
  ASSERT_TRUE(sparse.typed.ok()) << rendered(sparse.typed.issues);
  EXPECT_EQ(covenant::json_text(sparse.dynamic.value), R"({"xs":[1,2]})");
  ASSERT_EQ(sparse.typed.notes.size(), 2u);
  EXPECT_EQ(sparse.typed.notes[0].to_string(), "filtered at xs[1]: dropped: xs[1]: must be <= 9 (got 50)");
  EXPECT_EQ(sparse.typed.notes[1].path.to_string(), "maybe");
  const auto steps = expect_readers_agree<rules_test::Steps>(R"({"steps": [{"minutes": 500}, {"minutes": 30}]})");
  ASSERT_TRUE(steps.typed.ok()) << rendered(steps.typed.issues);
  ASSERT_EQ(steps.typed.value->steps.size(), 2u);
  EXPECT_EQ(steps.typed.value->steps[0].minutes, 5);
  EXPECT_EQ(steps.typed.notes.at(0).path.to_string(), "steps[0].minutes");
}

TEST(ReadingRules, TheFilterAfterHooksIsOneWalkOnACppAndAJsonValue) {
  // The same filter violations on the typed value and on its JSON twin: the same drops, notes and
  // left issues. An empty field has nothing to drop, so its filter goes to the list item around
  // it; a map value never goes, and a required field neither: that issue stays.
  const std::string text =
      R"({"name": "n", "count": 1, "ratio": 0.5, "flag": true, "level": "high", "note": "x",)"
      R"( "items": [{"name": "a"}, {"name": "b", "qty": 2}, {"name": "c"}], "counts": {"k": 1}, "tags": ["t", "u"]})";
  auto typed = covenant::try_decode<rules_test::Rec>(text);
  ASSERT_TRUE(typed.ok()) << rendered(typed.issues);
  auto dynamic = covenant::try_decode_dynamic(text, covenant::schema_of<rules_test::Rec>());
  ASSERT_TRUE(dynamic.ok()) << rendered(dynamic.issues);
  covenant::issue_list filters;
  for (const char* at : {"items[0].qty", "items[1].qty", "counts.k", "note", "tags[1]", "tags[7]", "name"}) {
    covenant::issue i;
    i.path = covenant::path::parse(at);
    i.code = covenant::issue_code::postcondition_violation;
    i.message = "is not wanted";
    i.action = covenant::fail_action::filter;
    filters.push_back(std::move(i));
  }
  covenant::issue_list typed_left = filters, dynamic_left = filters;
  covenant::note_list typed_notes, dynamic_notes;
  EXPECT_TRUE(covenant::detail::apply_filters(*typed.value, typed_left, typed_notes));
  EXPECT_TRUE(covenant::detail::apply_filters(
      covenant::detail::value_ref{&dynamic.value, &covenant::detail::json_ops()},
      covenant::schema_of<rules_test::Rec>(), dynamic_left, dynamic_notes));
  EXPECT_TRUE(covenant::json_equal(covenant::to_value(*typed.value), dynamic.value))
      << covenant::json_text(covenant::to_value(*typed.value)) << "\n" << covenant::json_text(dynamic.value);
  EXPECT_EQ(covenant::json_text(dynamic.value),
            R"({"name":"n","count":1,"ratio":0.5,"flag":true,"level":"HIGH","retries":3,)"
            R"("items":[{"name":"b"},{"name":"c"}],"counts":{"k":1},"tags":["t"]})");
  EXPECT_EQ(typed_notes, dynamic_notes);
  std::vector<std::string> dropped;
  for (const auto& n : typed_notes) dropped.push_back(n.path.to_string());
  EXPECT_EQ(dropped, (std::vector<std::string>{"tags[1]", "note", "items[0]", "items[1].qty"}));
  EXPECT_EQ(rendered(typed_left), rendered(dynamic_left));
  EXPECT_EQ(rendered(typed_left), "counts.k: is not wanted\nname: is not wanted\ntags[7]: is not wanted\n");
}

TEST(ReadingRules, AnIntegerFixThatWouldNotFitItsWidthIsNotApplied) {
  // 127 rounds to 150, outside std::int8_t: the fix is not made and the issue stays (the typed
  // decoder clamped to 127 and noted 150; the dynamic one wrote 150).
  const auto over = expect_readers_agree<rules_test::Narrow>(R"({"x": 127})");
  EXPECT_EQ(rendered(over.typed.issues), "x: must be a multiple of 50 (got 127)\n");
  EXPECT_TRUE(over.typed.notes.empty());
  const auto fits = expect_readers_agree<rules_test::Narrow>(R"({"x": 74})");
  ASSERT_TRUE(fits.typed.ok()) << rendered(fits.typed.issues);
  EXPECT_EQ(fits.typed.value->x, 50);
  EXPECT_EQ(fits.typed.notes.at(0).detail, "74 changed to 50 (must be a multiple of 50)");
}

TEST(ReadingRules, TheDynamicReaderNeverRunsCppChecks) {
  // A C++ predicate travels in schema_of<T>() but only the typed decoder can run it; the dynamic
  // reader skips it whether the number is written as a number or, coerced, as text (it ran in
  // that one case).
  const auto& m = covenant::schema_of<rules_test::Unlucky>();
  EXPECT_EQ(rendered(covenant::try_decode<rules_test::Unlucky>(R"({"x": 13})").issues), "x: must not be 13 (got 13)\n");
  EXPECT_EQ(rendered(covenant::try_decode<rules_test::Unlucky>(R"({"x": "13"})", coerce()).issues),
            "x: must not be 13 (got \"13\")\n");
  EXPECT_TRUE(covenant::try_decode_dynamic(R"({"x": 13})", m).ok());
  const auto text = covenant::try_decode_dynamic(R"({"x": "13"})", m, coerce());
  EXPECT_TRUE(text.ok()) << rendered(text.issues);
  EXPECT_EQ(covenant::json_text(text.value), R"({"x":13})");
}

TEST(ReadingRules, AFloatIsReadAtItsWidth) {
  // schema_of<T>() keeps a float's width (float_bits 32), so the dynamic reader reads 0.1 as the
  // float nearest to it and refuses what does not fit a float, as the typed decoder does.
  const auto tenth = expect_readers_agree<rules_test::Single>(R"({"f": 0.1})");
  ASSERT_TRUE(tenth.typed.ok()) << rendered(tenth.typed.issues);
  EXPECT_EQ(tenth.dynamic.value.at("f").as_double(), static_cast<double>(0.1f));
  const auto huge = expect_readers_agree<rules_test::Single>(R"({"f": 1e39})");
  EXPECT_EQ(rendered(huge.typed.issues), "f: number is out of range (got 1e39)\n");
  const auto text = expect_readers_agree<rules_test::Single>(R"({"f": "0.1"})", coerce());
  ASSERT_TRUE(text.typed.ok()) << rendered(text.typed.issues);
  EXPECT_EQ(text.dynamic.value.at("f").as_double(), static_cast<double>(0.1f));
  EXPECT_EQ(covenant::schema_of<rules_test::Single>().defs.at(0).object()->fields.at(0).type.float_bits, 32);
}

TEST(ReadingRules, CountsAndUniquenessRunInTheirDeclaredOrder) {
  // Duplicates are dropped first, then the list is cut: [1, 2] (the dynamic reader cut first and
  // then dropped, leaving [1]).
  const auto fixed = expect_readers_agree<rules_test::Distinct>(R"({"xs": [1, 1, 2]})");
  ASSERT_TRUE(fixed.typed.ok()) << rendered(fixed.typed.issues);
  EXPECT_EQ(fixed.typed.value->xs, (std::vector<int>{1, 2}));
  ASSERT_EQ(fixed.typed.notes.size(), 1u);
  EXPECT_EQ(fixed.typed.notes[0].detail, "dropped 1 duplicate (items must be unique ([0] and [1] are equal); the first is kept)");
  const auto both = expect_readers_agree<rules_test::Distinct>(R"({"xs": [3, 3, 4, 5]})");
  ASSERT_TRUE(both.typed.ok()) << rendered(both.typed.issues);
  EXPECT_EQ(both.typed.value->xs, (std::vector<int>{3, 4}));
  EXPECT_EQ(both.typed.notes.size(), 2u);
}

TEST(ReadingRules, ShapesAtCoerceLevel) {
  // One implementation (detail::read_unwrapped, read_as_only_field) for both decoders.
  const std::string plain = R"("level": "low", "boxed": {"value": 1}, "w": {"selected": {"name": "a"}})";
  const auto wrapped = expect_readers_agree<rules_test::Shapes>(
      R"({"n": [5], "level": {"pick": "high"}, "flag": [true], "boxed": {"value": 1}, "w": {"selected": {"name": "a"}}})", coerce());
  ASSERT_TRUE(wrapped.typed.ok()) << rendered(wrapped.typed.issues);
  EXPECT_EQ(wrapped.typed.value->n, 5);
  EXPECT_EQ(wrapped.typed.value->level, rules_test::Level::high);
  EXPECT_EQ(wrapped.typed.value->flag, std::optional<bool>(true));
  ASSERT_EQ(wrapped.typed.notes.size(), 3u);
  EXPECT_EQ(wrapped.typed.notes[0].to_string(), "coerced at n: a one-item list read as its item");
  EXPECT_EQ(wrapped.typed.notes[1].to_string(), "coerced at level: the only member \"pick\" read as the value");
  // A value for an object's only field; an object for a class whose only field is a class.
  const auto fields =
      expect_readers_agree<rules_test::Shapes>(R"({"n": 1, "level": "low", "boxed": 7, "w": {"name": "x"}})", coerce());
  ASSERT_TRUE(fields.typed.ok()) << rendered(fields.typed.issues);
  EXPECT_EQ(fields.typed.value->boxed.value, 7);
  EXPECT_EQ(fields.typed.value->w.selected.name, "x");
  ASSERT_EQ(fields.typed.notes.size(), 2u);
  EXPECT_EQ(fields.typed.notes[0].to_string(), "coerced at boxed: a single value read as the object's only field value");
  EXPECT_EQ(fields.typed.notes[1].to_string(), "coerced at w: an object read as the value of the only field selected");
  // An object as the only item of a one-item list.
  const auto listed = expect_readers_agree<rules_test::Shapes>(R"({"n": 1, "level": "low", "boxed": [{"value": 2}], "w": [{"selected": {"name": "y"}}]})", coerce());
  ASSERT_TRUE(listed.typed.ok()) << rendered(listed.typed.issues);
  EXPECT_EQ(listed.typed.value->boxed.value, 2);
  EXPECT_EQ(listed.typed.value->w.selected.name, "y");
  // One level only, one item only, and nothing of it at the strict level.
  EXPECT_EQ(rendered(expect_readers_agree<rules_test::Shapes>(R"({"n": [[5]], )" + plain + "}", coerce()).typed.issues),
            "n: expected integer (got [[5]])\n");
  EXPECT_EQ(rendered(expect_readers_agree<rules_test::Shapes>(R"({"n": [5, 6], )" + plain + "}", coerce()).typed.issues),
            "n: expected integer (got [5, 6])\n");
  EXPECT_EQ(rendered(expect_readers_agree<rules_test::Shapes>(R"({"n": [5], )" + plain + "}").typed.issues),
            "n: expected integer (got [5])\n");
  // A key naming the only field: the object is the class itself, and must read as it.
  EXPECT_EQ(rendered(expect_readers_agree<rules_test::Shapes>(R"({"n": 1, "level": "low", "boxed": {"value": 1}, "w": {"selected": 3}})", coerce()).typed.issues),
            "w.selected: expected object (Inner) (got 3)\n");
}

TEST(ReadingRules, TheUnionAlternativeThatLeavesNothingUnreadWins) {
  // One rule (detail::read_union) for std::variant and a runtime schema's union: the first
  // alternative that fits leaving no key unread and needing no coercion wins; else the fit that
  // leaves the fewest keys unread, then needs the fewest coercions.
  const auto tagged = expect_readers_agree<rules_test::Either>(R"({"v": {"id": 1, "name": "x", "metadata": "m"}})");
  ASSERT_TRUE(tagged.typed.ok()) << rendered(tagged.typed.issues);
  ASSERT_EQ(tagged.typed.value->v.index(), 1u);
  EXPECT_EQ(std::get<1>(tagged.typed.value->v).metadata, std::optional<std::string>("m"));
  const auto plain = expect_readers_agree<rules_test::Either>(R"({"v": {"id": 1, "name": "x"}})");
  ASSERT_TRUE(plain.typed.ok()) << rendered(plain.typed.issues);
  EXPECT_EQ(plain.typed.value->v.index(), 0u);
  // The notes of the alternative that fits are kept, at the coerce level too.
  const auto noted = expect_readers_agree<rules_test::RatioOrCount>(R"({"u": {"x": 5}})", coerce());
  ASSERT_TRUE(noted.typed.ok()) << rendered(noted.typed.issues);
  ASSERT_EQ(noted.typed.notes.size(), 1u);
  EXPECT_EQ(noted.typed.notes[0].to_string(), "check_failed at u.x: check failed: must be <= 1 (got 5)");
  // A value of a kind no alternative takes is one issue for the union.
  EXPECT_EQ(rendered(expect_readers_agree<rules_test::RatioOrCount>(R"({"u": "x"})").typed.issues),
            "u: expected object (Ratio) or integer (got \"x\")\n");
}

TEST(ReadingRules, AKeyGivenTwiceIsReadAsItsLastValue) {
  // The streams too: a repeated key starts its value afresh (it was appended to, "SM" here).
  const auto r = expect_readers_agree<rules_test::Pick>(R"({"level": "low", "size": "S", "size": "M"})");
  ASSERT_TRUE(r.typed.ok()) << rendered(r.typed.issues);
  EXPECT_EQ(r.typed.value->size, "M");
  EXPECT_TRUE(r.typed_stream.empty()) << rendered(r.typed_stream);
  const auto list = expect_readers_agree<Rec>(rec(R"("tags": ["a"], "tags": ["b", "c"])"));
  ASSERT_TRUE(list.typed.ok()) << rendered(list.typed.issues);
  EXPECT_EQ(list.typed.value->tags, (std::vector<std::string>{"b", "c"}));
  covenant::detail::stream_reader<Rec> stream({}, covenant::strictness::strict);
  stream.feed(rec(R"("tags": ["a"], "tags": ["b", "c"])"));
  EXPECT_EQ(stream.view().value().tags, (std::vector<std::string>{"b", "c"}));
}

TEST(ReadingRules, ATextThatIsNotJsonIsOneIssueAndNoNotes) {
  // The typed decoder kept the notes of what it read before the syntax error (here a filtered
  // item); the dynamic reader dropped them. Neither is a reading: one parse error, no notes.
  const auto r = expect_readers_agree<rules_test::Sparse>(R"({"xs": [1, 50, 2alarm]})");
  ASSERT_EQ(r.typed.issues.size(), 1u);
  EXPECT_EQ(r.typed.issues[0].code, covenant::issue_code::parse_error);
  EXPECT_TRUE(r.typed.notes.empty());
}


// Both streams of `text`, fed one byte at a time and whole, at the strict level: the typed
// partial of Plain and the dynamic partial of its schema, each as JSON.
std::vector<boost::json::value> streamed_plain(std::string_view text) {
  std::vector<boost::json::value> out;
  for (std::size_t piece : {std::size_t{1}, text.size()}) {
    covenant::detail::stream_reader<rules_test::Plain> typed({}, covenant::strictness::strict);
    covenant::detail::dynamic_stream_reader dynamic(covenant::schema_of<rules_test::Plain>(), {},
                                                    covenant::strictness::strict);
    for (std::size_t at = 0; at < text.size(); at += piece) {
      typed.feed(text.substr(at, piece));
      dynamic.feed(text.substr(at, piece));
    }
    out.push_back(covenant::to_value(typed.view().value()));
    out.push_back(dynamic.view().value());
  }
  return out;
}

TEST(ReadingRules, TheStreamsTakeOnlyTheJsonTheFinalReaderTakes) {
  // Numbers, UTF-8 and \u escapes the final reader refuses: the streams stop before the value (a
  // number with a leading zero was shown as 1, a lone surrogate as U+FFFD, invalid UTF-8 as is).
  const std::string refused[] = {
      R"({"id": 01, "name": "x"})",         R"({"id": 1., "name": "x"})",
      R"({"id": -, "name": "x"})",          R"({"id": 1e, "name": "x"})",
      R"({"id": 2, "name": "\uD800"})",     R"({"id": 2, "name": "\uDC00"})",
      R"({"id": 2, "name": "\uD800\u0041"})", R"({"id": 2, "name": "\uD800x"})",
      "{\"id\": 2, \"name\": \"a\xff\"}",   "{\"id\": 2, \"name\": \"\xc0\xaf\"}",
      "{\"id\": 2, \"name\": \"\xe2\x82\"}", "{\"id\": 2, \"name\": \"\xed\xa0\x80\"}",
      "{\"id\": 2, \"n\xffme\": \"x\"}"};
  for (const std::string& text : refused) {
    const auto final_reading = covenant::try_decode<rules_test::Plain>(text);
    ASSERT_EQ(final_reading.issues.size(), 1u) << text;
    EXPECT_EQ(final_reading.issues[0].code, covenant::issue_code::parse_error) << text;
    const std::vector<boost::json::value> seen = streamed_plain(text);
    // however the text was cut: one byte at a time, or whole
    EXPECT_EQ(covenant::json_text(seen[0]), covenant::json_text(seen[2])) << text;
    EXPECT_EQ(covenant::json_text(seen[1]), covenant::json_text(seen[3])) << text;
    for (const boost::json::value& v : seen) {
      const auto* id = v.as_object().if_contains("id");
      const auto* name = v.as_object().if_contains("name");
      // (a string shows its text up to where the stream stopped: "a" here)
      EXPECT_TRUE(id == nullptr || (id->is_int64() && (id->get_int64() == 0 || id->get_int64() == 2)))
          << text << " -> " << covenant::json_text(v);
      EXPECT_TRUE(name == nullptr || name->is_null() || (name->is_string() && (name->get_string() == "" || name->get_string() == "a")))
          << text << " -> " << covenant::json_text(v);
    }
  }
  // Valid UTF-8 and surrogate pairs, cut anywhere: the streams end with the final reader's value.
  const std::string taken = "{\"id\": 7, \"name\": \"na\xc3\xafve \xe2\x82\xac \xf0\x9d\x84\x9e \\u00e9\\ud834\\udd1e\"}";
  const auto final_reading = covenant::try_decode<rules_test::Plain>(taken);
  ASSERT_TRUE(final_reading.ok()) << rendered(final_reading.issues);
  const boost::json::value expected = covenant::to_value(*final_reading.value);
  for (const boost::json::value& v : streamed_plain(taken))
    EXPECT_TRUE(covenant::json_equal(v, expected)) << covenant::json_text(v) << " != " << covenant::json_text(expected);
}

TEST(ReadingRules, AStreamShowsAScalarOnlyOfAKindItsTypeTakes) {
  // A value of another kind is the final reader's to coerce or refuse: the typed stream cannot
  // store it, and the dynamic stream no longer shows it either (it showed "5" for an integer).
  for (const char* text : {R"({"id": "5", "name": 6})", R"({"id": true, "name": false})", R"({"id": 2.5, "name": null})"}) {
    const std::vector<boost::json::value> seen = streamed_plain(text);
    EXPECT_EQ(covenant::json_text(seen[0]), R"({"id":0,"name":""})") << text;
    const auto& dynamic = seen[1].as_object();
    EXPECT_TRUE(dynamic.at("id").is_null()) << text << " -> " << covenant::json_text(seen[1]);
    EXPECT_TRUE(dynamic.at("name").is_null()) << text << " -> " << covenant::json_text(seen[1]);
  }
  // Of a kind it takes, through a union, a literal or an enum: shown.
  auto model = covenant::schema_of<rules_test::Pick>();
  covenant::detail::dynamic_stream_reader dynamic(model, {}, covenant::strictness::strict);
  dynamic.feed(R"({"level": "low", "size": "S"})");
  EXPECT_EQ(dynamic.view().value().as_object().at("level"), "low");
  EXPECT_EQ(dynamic.view().value().as_object().at("size"), "S");
}

}  // namespace
