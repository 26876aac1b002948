// The formulas of @check/@assert (their Jinja-like expression language): sum, map and round, keyword arguments in filter calls,
// evaluation errors and load-time diagnostics, on their own and through schema files, the
// dynamic reader and a dynamic contract.
#include "runtime/schema_formula.hpp"
#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/testing/gtest.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/testing/testing.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace {

namespace json = boost::json;
using covenant::detail::evaluation_error;
using covenant::detail::formula;
using ::testing::HasSubstr;

std::shared_ptr<const formula> parsed(std::string_view source) {
  std::string error;
  std::size_t offset = 0;
  auto e = formula::parse(source, error, offset);
  if (!e) throw std::runtime_error(std::to_string(offset) + ": " + error);
  return e;
}

// The value of `source` with `this` bound to the JSON text `self`.
json::value eval(std::string_view source, std::string_view self = "null") {
  return parsed(source)->evaluate(json::parse(self));
}

// "offset: message" of the parse error of `source`, or "(none)".
std::string parse_error(std::string_view source) {
  std::string error;
  std::size_t offset = 0;
  if (formula::parse(source, error, offset)) return "(none)";
  return std::to_string(offset) + ": " + error;
}

// The evaluation error of `source` on `self`, or "(none)".
std::string eval_error(std::string_view source, std::string_view self) {
  try {
    (void)eval(source, self);
  } catch (const evaluation_error& e) {
    return e.what();
  }
  return "(none)";
}

TEST(SchemaFormulaSum, IntegersSumToAnInteger) {
  const json::value v = eval("this|sum", "[1, 2, 3]");
  ASSERT_TRUE(v.is_int64());
  EXPECT_EQ(v.get_int64(), 6);
  EXPECT_EQ(eval("this|sum", "[-4, 9007199254740993]"), json::value(std::int64_t{9007199254740989}));  // exact
  // A total beyond 64 bits is a float.
  const json::value big = eval("this|sum", "[9223372036854775807, 1]");
  ASSERT_TRUE(big.is_double());
  EXPECT_DOUBLE_EQ(big.get_double(), 9223372036854775808.0);
}

TEST(SchemaFormulaSum, AnyFloatMakesAFloat) {
  const json::value v = eval("this|sum", "[1, 2.5]");
  ASSERT_TRUE(v.is_double());
  EXPECT_EQ(v.get_double(), 3.5);
  EXPECT_TRUE(eval("this|sum", "[1.0, 2.0]").is_double());
  EXPECT_EQ(eval("this|sum", "[0.5, 0.25]"), json::value(0.75));
  // Binary floats do not add up to the decimal total: 0.1 + 0.2 is not 0.3.
  EXPECT_EQ(eval("this|sum == 0.3", "[0.1, 0.2]"), json::value(false));
  EXPECT_EQ(eval("(this|sum - 0.3)|abs < 0.000001", "[0.1, 0.2]"), json::value(true));
  EXPECT_EQ(eval("this|sum|round(2) == 0.3", "[0.1, 0.2]"), json::value(true));
  // Compensated: the small terms are not lost next to the large one.
  EXPECT_EQ(eval("this|sum", "[1e16, 1.0, -1e16, 1.0]"), json::value(2.0));
}

TEST(SchemaFormulaSum, StartIsAddedFirst) {
  EXPECT_EQ(eval("this|sum(start=10)", "[1, 2]"), json::value(13));
  EXPECT_TRUE(eval("this|sum(start=10)", "[1, 2]").is_int64());
  EXPECT_EQ(eval("this|sum(start=0.5)", "[1, 2]"), json::value(3.5));
  EXPECT_EQ(eval("this|sum(start=-3)", "[1, 2]"), json::value(0));
  // Positional, in Jinja's order: sum(attribute, start).
  EXPECT_EQ(eval("this|sum(\"n\", 5)", R"([{"n": 1}, {"n": 2}])"), json::value(8));
  EXPECT_EQ(eval("this|sum(none, 5)", "[1, 2]"), json::value(8));
  // Any expression: the items plus the shipping.
  EXPECT_EQ(eval(R"(this.items|sum(attribute="amount", start=this.shipping))",
                 R"({"items": [{"amount": 10}, {"amount": 5.5}], "shipping": 4.5})"),
            json::value(20.0));
  EXPECT_EQ(eval_error("this.items|sum(start=this.shipping)", R"({"items": [1], "shipping": "4.50"})"),
            "sum: start must be a number, got a string (\"4.50\")");
}

TEST(SchemaFormulaSum, EmptyListIsTheStart) {
  const json::value zero = eval("this|sum", "[]");
  ASSERT_TRUE(zero.is_int64());
  EXPECT_EQ(zero.get_int64(), 0);
  EXPECT_EQ(eval("this|sum(attribute=\"amount\")", "[]"), json::value(0));
  EXPECT_EQ(eval("this|sum(start=2.5)", "[]"), json::value(2.5));
}

TEST(SchemaFormulaSum, AttributeOfEachItem) {
  const std::string items = R"([{"amount": 1.5, "price": {"net": 2}, "lines": [7, 8]},
                                {"amount": 2, "price": {"net": 3}, "lines": [1]}])";
  EXPECT_EQ(eval(R"(this|sum(attribute="amount"))", items), json::value(3.5));
  EXPECT_EQ(eval(R"(this|sum("amount"))", items), json::value(3.5));
  // Dotted paths, a number part indexing a list, as in Jinja.
  EXPECT_EQ(eval(R"(this|sum(attribute="price.net"))", items), json::value(5));
  EXPECT_EQ(eval(R"(this|sum(attribute="lines.0"))", items), json::value(8));
  EXPECT_EQ(eval(R"(this|sum(attribute="amount",))", items), json::value(3.5));  // trailing comma
}

TEST(SchemaFormulaSum, MissingAttributesAndNonNumbersAreEvaluationErrors) {
  EXPECT_EQ(eval_error(R"(this|sum(attribute="amount"))", R"([{"amount": 1}, {"amt": 2}])"),
            "sum: item [1] has no attribute \"amount\"");
  EXPECT_EQ(eval_error(R"(this|sum(attribute="amount"))", R"([{"amount": 1}, {"amount": "12.50"}])"),
            "sum: item [1].amount is a string (\"12.50\"), not a number");
  EXPECT_EQ(eval_error(R"(this|sum(attribute="amount"))", R"([{"amount": null}])"),
            "sum: item [0].amount is null, not a number");
  EXPECT_EQ(eval_error(R"(this|sum(attribute="amount"))", "[3]"), "sum: item [0] (a number) has no attribute \"amount\"");
  EXPECT_EQ(eval_error("this|sum", "[1, true]"), "sum: item [1] is a boolean (true), not a number");
  EXPECT_EQ(eval_error("this|sum", "[[1]]"), "sum: item [0] is a list, not a number");
  EXPECT_EQ(eval_error("this|sum", R"({"a": 1})"), "sum: expected a list, got an object");
  EXPECT_EQ(eval_error("this.items|sum", "{}"), "sum: expected a list, got null");
  // A long string is cut after 40 bytes, on a character boundary.
  EXPECT_EQ(eval_error("this|sum", R"(["ééééééééééééééééééééé"])"),
            "sum: item [0] is a string (\"éééééééééééééééééééé...\"), not a number");
  // The error is not a value: negating a failed sum does not make the rule hold.
  EXPECT_EQ(eval_error("not (this|sum > 5)", R"(["a"])"), "sum: item [0] is a string (\"a\"), not a number");
  EXPECT_EQ(eval_error("this|length == 0 or this|sum > 5", R"(["a"])"), "sum: item [0] is a string (\"a\"), not a number");
  EXPECT_EQ(eval_error("this|length > 0 and this|sum > 5", "[]"), "(none)");  // short-circuit
  // (x or []): an optional list that is null sums to 0.
  EXPECT_EQ(eval("(this.items or [])|sum", "{}"), json::value(0));
}

TEST(SchemaFormulaMap, AttributeOfEachItem) {
  const std::string items = R"([{"amount": 1.5}, {"amount": 2}, {"amount": null}])";
  EXPECT_EQ(eval(R"(this|map(attribute="amount"))", items), json::parse("[1.5, 2, null]"));
  EXPECT_EQ(eval(R"(this|map(attribute="amount")|sum)", R"([{"amount": 1.5}, {"amount": 2}])"), json::value(3.5));
  EXPECT_EQ(eval(R"(this|map(attribute="amount")|sum(start=1))", R"([{"amount": 1}, {"amount": 2}])"), json::value(4));
  EXPECT_EQ(eval(R"(this|map(attribute="amount")|length)", "[]"), json::value(0));
  EXPECT_EQ(eval(R"(this|map(attribute="a.b"))", R"([{"a": {"b": "x"}}])"), json::parse(R"(["x"])"));
  // default= stands in for a missing attribute (not for a null one).
  EXPECT_EQ(eval(R"(this|map(attribute="amount", default=0))", R"([{"amount": 1}, {}, {"amount": null}])"),
            json::parse("[1, 0, null]"));
}

TEST(SchemaFormulaMap, MissingAttributeIsAnEvaluationError) {
  EXPECT_EQ(eval_error(R"(this|map(attribute="amount"))", R"([{"amount": 1}, {"amt": 2}])"),
            "map: item [1] has no attribute \"amount\"");
  EXPECT_EQ(eval_error(R"(this|map(attribute="amount"))", R"(["12"])"),
            "map: item [0] (a string (\"12\")) has no attribute \"amount\"");
  EXPECT_EQ(eval_error(R"(this|map(attribute="amount"))", "3"), "map: expected a list, got a number");
  // After map, sum names the item but no longer the attribute.
  EXPECT_EQ(eval_error(R"(this|map(attribute="amount")|sum)", R"([{"amount": "1"}])"),
            "sum: item [0] is a string (\"1\"), not a number");
}

TEST(SchemaFormulaMap, AFilterOnEachItem) {
  EXPECT_EQ(eval(R"(this|map("lower"))", R"(["A", "b"])"), json::parse(R"(["a", "b"])"));
  EXPECT_EQ(eval(R"(this|map("lower")|unique|length)", R"(["Red", "RED", "blue"])"), json::value(2));
  EXPECT_EQ(eval(R"(this|map("abs")|sum)", "[-1, 2, -3]"), json::value(6));
  EXPECT_EQ(eval(R"(this|map("round", 1))", "[1.25, 2.35]"), json::parse("[1.2, 2.4]"));
  EXPECT_EQ(eval(R"(this|map("round", method="ceil"))", "[1.25]"), json::parse("[2.0]"));
  EXPECT_EQ(eval(R"(this|map("sum", attribute="n"))", R"([[{"n": 1}, {"n": 2}], []])"), json::parse("[3, 0]"));
}

TEST(SchemaFormulaRound, AsJinja) {
  // common: Python's round, halves of the exact binary value to even.
  EXPECT_EQ(eval("this|round(2)", "2.675"), json::value(2.67));  // 2.675 is 2.67499999...
  EXPECT_EQ(eval("this|round(2)", "0.125"), json::value(0.12));
  EXPECT_EQ(eval("this|round", "2.5"), json::value(2.0));
  EXPECT_EQ(eval("this|round", "3.5"), json::value(4.0));
  EXPECT_EQ(eval("this|round(precision=1)", "-1.26"), json::value(-1.3));
  EXPECT_TRUE(eval("this|round", "2.5").is_double());
  const json::value i = eval("this|round(2)", "3");
  ASSERT_TRUE(i.is_int64());  // an integer rounds to itself
  EXPECT_EQ(i.get_int64(), 3);
  EXPECT_EQ(eval("this|round(1, \"ceil\")", "2.01"), json::value(2.1));
  EXPECT_EQ(eval("this|round(method=\"floor\")", "-2.1"), json::value(-3.0));
  EXPECT_EQ(eval("this|round(method=\"floor\")", "7"), json::value(7.0));
  EXPECT_EQ(eval("this|round(2)", "1e300"), json::value(1e300));
  EXPECT_TRUE(eval("this|round", "\"2.5\"").is_null());  // like abs: none for what is not a number
  EXPECT_EQ(eval("this|round(2) == 0.3", "0.30000000000000004"), json::value(true));
}

TEST(SchemaFormulaKeywords, JinjaSpellingsWork) {
  EXPECT_EQ(eval(R"(this|unique(attribute="id")|length)", R"([{"id": 1}, {"id": 1}, {"id": 2}])"), json::value(2));
  EXPECT_EQ(eval(R"(this|unique("id")|length)", R"([{"id": 1}, {"id": 1}, {"id": 2}])"), json::value(2));
  EXPECT_EQ(eval(R"(this|regex_match(pattern="^a"))", R"("abc")"), json::value(true));
  EXPECT_EQ(eval(R"(this|sum(start=1, attribute="n"))", R"([{"n": 1}])"), json::value(2));
  EXPECT_EQ(eval(R"(this|sum( attribute = "n" ))", R"([{"n": 1}])"), json::value(1));
}

TEST(SchemaFormulaKeywords, ProblemsAreParseErrorsAtTheArgument) {
  // The offset is where the argument (its keyword) starts.
  EXPECT_EQ(parse_error(R"(this|sum(atribute="amount"))"),
            "9: filter 'sum' has no argument 'atribute' (its arguments: attribute, start)");
  EXPECT_EQ(parse_error(R"(this|map(atribute="amount"))"),
            "9: filter 'map' has no argument 'atribute' (its arguments: attribute, default)");
  EXPECT_EQ(parse_error(R"(this|unique(case_sensitive=true))"),
            "12: filter 'unique' has no argument 'case_sensitive' (its arguments: attribute)");
  EXPECT_EQ(parse_error(R"(this|round(digits=2))"),
            "11: filter 'round' has no argument 'digits' (its arguments: precision, method)");
  EXPECT_EQ(parse_error(R"(this|sum(attribute="a", attribute="b"))"), "24: filter 'sum' is given argument 'attribute' twice");
  EXPECT_EQ(parse_error(R"(this|sum("a", attribute="b"))"), "14: filter 'sum' is given argument 'attribute' twice");
  EXPECT_EQ(parse_error(R"(this|sum("a", 0, 1))"), "17: filter 'sum' takes at most 2 arguments (attribute, start)");
  EXPECT_EQ(parse_error(R"(this|unique("a", "b"))"), "17: filter 'unique' takes at most 1 argument (attribute)");
  EXPECT_EQ(parse_error(R"(this|sum(start=0, "a"))"),
            "18: a positional argument cannot follow a keyword argument (in 'sum(...)')");
  EXPECT_EQ(parse_error(R"(this|sum(start="0"))"), "9: sum: start must be a number (sum(start=0))");
  EXPECT_EQ(parse_error(R"(this|sum(attribute=1))"),
            "9: sum: attribute must be a string literal naming a member of each item (sum(attribute=\"amount\"))");
  EXPECT_EQ(parse_error(R"(this|sum(attribute="a..b"))"),
            "9: sum: attribute must be a member name or a dotted path (\"price.amount\")");
  EXPECT_EQ(parse_error("this|sum(attribute=amount)"), "19: unknown name 'amount' (expressions read the value as `this`)");
  EXPECT_EQ(parse_error("this|map"),
            "5: map takes attribute=\"name\" (that member of each item; default= for items without it) or the name "
            "of a filter to apply to each item (map(\"lower\"))");
  // A first positional argument names a filter; the keywords after it are that filter's (as in Jinja).
  EXPECT_EQ(parse_error(R"(this|map("lower", attribute="a"))"), "9: filter 'lower' takes no arguments");
  EXPECT_EQ(parse_error(R"(this|map("sum", atribute="a"))"),
            "16: filter 'sum' has no argument 'atribute' (its arguments: attribute, start)");
  EXPECT_EQ(parse_error(R"(this|map("lowr"))"),
            "9: unknown filter 'lowr' (known: length, lower, upper, trim, abs, round, int, float, first, last, sum, "
            "map, regex_match, unique, format)");
  EXPECT_EQ(parse_error(R"(this|map("round", this))"), "18: map: the arguments passed on to 'round' must be literals");
  EXPECT_EQ(parse_error(R"(this|map("lower", 1))"), "9: filter 'lower' takes no arguments");
  EXPECT_EQ(parse_error(R"(this|round(16))"), "11: round: precision must be a whole number from 0 to 15");
  EXPECT_EQ(parse_error(R"(this|round(method="up"))"), "11: round: method must be \"common\", \"ceil\" or \"floor\"");
  EXPECT_EQ(parse_error("this|length(x=1)"), "5: filter 'length' takes no arguments");
  EXPECT_EQ(parse_error("this = 1"), "5: '=' is not a comparison (write ==)");
}

// ---- through schema files ------------------------------------------------------------------------

const char* invoice_schema = R"(class Item {
  description string
  amount float
}
class Invoice {
  items Item[]
  total float
  @@assert(sum_matches, {{ this.items|map(attribute="amount")|sum == this.total }})
}
class Receipt {
  items Item[]
  total float
  @@assert(adds_up, {{ (this.items|sum(attribute="amount") - this.total)|abs < 0.01 }})
}
class Loose {
  amounts (float | string)[] @assert(positive_total, {{ this|sum > 0 }})
  notes (float | null)[] @check(small, {{ this|sum < 10 }})
}
)";

TEST(SchemaFormulaFile, InvoiceTotalMustMatchItsItems) {
  const auto set = covenant::schema_set::parse(invoice_schema, {.file = "invoice.baml"});
  const auto invoice = set.model("Invoice");
  const auto ok = covenant::try_read_dynamic(
      R"({"items": [{"description": "pens", "amount": 10.25}, {"description": "ink", "amount": 5.5}], "total": 15.75})",
      invoice);
  EXPECT_TRUE(ok.ok()) << covenant::render_feedback(ok.issues);

  const auto bad = covenant::try_read_dynamic(
      R"({"items": [{"description": "pens", "amount": 10.25}, {"description": "ink", "amount": 5.5}], "total": 16})",
      invoice);
  ASSERT_EQ(bad.issues.size(), 1u) << covenant::render_feedback(bad.issues);
  EXPECT_EQ(bad.issues[0].code, covenant::issue_code::invariant_violation);
  EXPECT_EQ(bad.issues[0].to_string(),
            "must satisfy: this.items|map(attribute=\"amount\")|sum == this.total (sum_matches)");

  // An empty invoice adds up to 0.
  EXPECT_TRUE(covenant::try_read_dynamic(R"({"items": [], "total": 0})", invoice).ok());
  EXPECT_FALSE(covenant::try_read_dynamic(R"({"items": [], "total": 1})", invoice).ok());
}

TEST(SchemaFormulaFile, ToleranceForFloatingTotals) {
  const auto set = covenant::schema_set::parse(invoice_schema);
  const std::string items = R"({"items": [{"description": "a", "amount": 0.1}, {"description": "b", "amount": 0.2}], )";
  // 0.1 + 0.2 is 0.30000000000000004: exact equality refuses it, the tolerance accepts it.
  EXPECT_FALSE(covenant::try_read_dynamic(items + R"("total": 0.3})", set.model("Invoice")).ok());
  EXPECT_TRUE(covenant::try_read_dynamic(items + R"("total": 0.3})", set.model("Receipt")).ok());
  const auto off = covenant::try_read_dynamic(items + R"("total": 0.35})", set.model("Receipt"));
  ASSERT_EQ(off.issues.size(), 1u);
  EXPECT_THAT(off.issues[0].to_string(), HasSubstr("(adds_up)"));
}

TEST(SchemaFormulaFile, EvaluationErrorsFailTheCheckWithTheirReason) {
  const auto set = covenant::schema_set::parse(invoice_schema);
  const auto r = covenant::try_read_dynamic(R"({"amounts": [1, "2"], "notes": []})", set.model("Loose"));
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].code, covenant::issue_code::constraint_violation);
  EXPECT_EQ(covenant::render_feedback(r.issues),
            "amounts: cannot check this|sum > 0 (positive_total): sum: item [1] is a string (\"2\"), not a number\n");
  // A soft check that cannot be evaluated is a failed check: a note, the value is kept.
  const auto soft = covenant::try_read_dynamic(R"({"amounts": [1], "notes": [1, null]})", set.model("Loose"));
  ASSERT_TRUE(soft.ok()) << covenant::render_feedback(soft.issues);
  ASSERT_EQ(soft.notes.size(), 1u);
  EXPECT_EQ(soft.notes[0].kind, covenant::note_kind::check_failed);
  EXPECT_EQ(soft.notes[0].path.to_string(), "notes");
}

TEST(SchemaFormulaFile, UnknownKeywordIsReportedWhenTheFileLoads) {
  const auto r = covenant::schema_set::try_parse(R"(class Item {
  amount float
}
class Invoice {
  items Item[]
  total float
  @@assert(sum_matches, {{ this.items|sum(atribute="amount") == this.total }})
}
)",
                                       {.file = "invoice.baml"});
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].to_string(),
            "invoice.baml:7:43: error: @@assert: filter 'sum' has no argument 'atribute' (its arguments: attribute, "
            "start) [invalid_constraint]");
  const auto field = covenant::schema_set::try_parse("class C {\n  xs int[] @check({{ this|map(atribute=\"n\")|sum > 0 }})\n}\n",
                                           {.file = "c.baml"});
  ASSERT_EQ(field.issues.size(), 1u);
  EXPECT_EQ(field.issues[0].to_string(),
            "c.baml:2:31: error: @check: filter 'map' has no argument 'atribute' (its arguments: attribute, "
            "default) [invalid_constraint]");
}

TEST(SchemaFormulaFile, DynamicContractAsksAgainUntilTheTotalMatches) {
  covenant::testing::scripted_engine model{
      R"({"items": [{"description": "pens", "amount": 10.25}, {"description": "ink", "amount": 5.5}], "total": 16})",
      R"({"items": [{"description": "pens", "amount": 10.25}, {"description": "ink", "amount": 5.5}], "total": 15.75})"};
  const auto set = covenant::schema_set::parse(invoice_schema);
  covenant::dynamic_task task;
  task.name = "read_invoice";
  task.prompt = "Read the invoice.";
  task.output = set.model("Invoice");
  const covenant::dynamic_contract read{model, task, covenant::testing::instant({.tries = 3})};
  const auto o = read.run(json::value{{"text", "pens 10.25, ink 5.50, total 15.75"}}).outcome;
  ASSERT_THAT(o, covenant::testing::Succeeded());
  EXPECT_EQ(o.result->at("total"), json::value(15.75));
  EXPECT_EQ(model.calls(), 2u);
  EXPECT_THAT(model.last_message(1), HasSubstr("sum_matches"));
  // The rule is in the prompt as written.
  EXPECT_THAT(model.request(0).messages[0].content, HasSubstr("this.items|map(attribute=\"amount\")|sum == this.total"));
}

}  // namespace
