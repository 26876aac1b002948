// The schema-file reader: BAML type declarations into the schema model, and every load error.
#include <covenant/read/dynamic.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/types/prompt_format.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

namespace {

using covenant::schema_error_code;
namespace schema = covenant::schema;

covenant::schema_load_result load(std::string_view text) { return covenant::schema_set::try_parse(text, {.file = "t.baml"}); }

// "line:column code" of every error, one per line.
std::string error_summary(const covenant::schema_load_result& r) {
  std::string out;
  for (const auto& d : r.issues)
    out += std::to_string(d.line) + ":" + std::to_string(d.column) + " " + std::string(covenant::to_string(d.code)) + "\n";
  return out;
}

const schema::object_def& object(const schema::model& m, std::string_view name) {
  const schema::definition* d = m.find(name);
  if (d == nullptr || d->object() == nullptr) throw std::runtime_error("no class " + std::string(name));
  return *d->object();
}

const schema::field& field(const schema::model& m, std::string_view cls, std::string_view name) {
  for (const auto& f : object(m, cls).fields)
    if (f.name == name) return f;
  throw std::runtime_error("no field " + std::string(name));
}

TEST(SchemaFile, PrimitivesListsOptionalsMapsAndUnionsMapToTheModel) {
  auto set = covenant::schema_set::parse(R"(
    class All {
      s string
      i int
      f float
      b bool
      n null
      list string[]
      nested int[][]
      opt float?
      maybe_list string[]?
      list_of_maybe (int?)[]
      m map<string, int>
      u int | string
      with_null string | null
      lit "a" | "b"
      one 1
      yes true
      neg -42
      seed_list list[bool]
    }
  )");
  const schema::model& m = set.all();
  auto kind_of = [&](std::string_view f) { return field(m, "All", f).type.kind; };
  EXPECT_EQ(kind_of("s"), schema::kind::string);
  EXPECT_EQ(kind_of("i"), schema::kind::integer);
  EXPECT_EQ(field(m, "All", "i").type.int_bits, 64);
  EXPECT_FALSE(field(m, "All", "i").type.is_unsigned);
  EXPECT_EQ(kind_of("f"), schema::kind::number);
  EXPECT_EQ(kind_of("b"), schema::kind::boolean);
  EXPECT_EQ(kind_of("n"), schema::kind::null);
  EXPECT_EQ(schema::type_expression(field(m, "All", "nested").type), "int[][]");
  const auto& opt = field(m, "All", "opt");
  EXPECT_TRUE(opt.type.nullable);
  EXPECT_FALSE(opt.required);
  EXPECT_TRUE(field(m, "All", "s").required);
  EXPECT_EQ(schema::type_expression(field(m, "All", "maybe_list").type), "string[] | null");
  EXPECT_EQ(schema::type_expression(field(m, "All", "list_of_maybe").type), "(int | null)[]");
  EXPECT_EQ(schema::type_expression(field(m, "All", "m").type), "map<string, int>");
  EXPECT_EQ(schema::type_expression(field(m, "All", "u").type), "int | string");
  const auto& with_null = field(m, "All", "with_null");
  EXPECT_EQ(with_null.type.kind, schema::kind::string);
  EXPECT_TRUE(with_null.type.nullable);
  EXPECT_FALSE(with_null.required);
  EXPECT_EQ(schema::type_expression(field(m, "All", "lit").type), R"("a" | "b")");
  EXPECT_EQ(field(m, "All", "one").type.literal, boost::json::value(1));
  EXPECT_EQ(field(m, "All", "yes").type.literal, boost::json::value(true));
  EXPECT_EQ(field(m, "All", "neg").type.literal, boost::json::value(-42));
  EXPECT_EQ(schema::type_expression(field(m, "All", "seed_list").type), "bool[]");
}

TEST(SchemaFile, CommentsAndDocCommentsBecomeDescriptions) {
  auto set = covenant::schema_set::parse(R"(
    // a line comment
    /* a block
       comment */
    /// A person.
    /// Two lines.
    class Person {
      /// The given name.
      name string
      age int @description(#"
        Age in years.
        Whole years only.
      "#)  // trailing comment
      nick string? @description("Nickname.") /* inline */
    }
    /// Colours.
    enum Colour {
      /// The sky.
      BLUE
      RED @description("Blood.")
    }
  )");
  const schema::model& m = set.all();
  EXPECT_EQ(m.find("Person")->description, "A person.\nTwo lines.");
  EXPECT_EQ(field(m, "Person", "name").description, "The given name.");
  EXPECT_EQ(field(m, "Person", "age").description, "Age in years.\nWhole years only.");
  EXPECT_EQ(field(m, "Person", "nick").description, "Nickname.");
  const auto* colour = m.find("Colour");
  EXPECT_EQ(colour->description, "Colours.");
  EXPECT_EQ(colour->enumeration()->values.at(0).description, "The sky.");
  EXPECT_EQ(colour->enumeration()->values.at(1).description, "Blood.");
}

TEST(SchemaFile, AliasesSkipAndClassAttributes) {
  auto set = covenant::schema_set::parse(R"(
    class Thing {
      key string @alias("key-dash")
      other string @alias(plain_word)
      spaced string @alias(NUMBER THREE)
      hidden int? @skip
      @@description("A thing.")
      @@alias("Item")
    }
    enum Kind {
      A @alias("first")
      B @skip
    }
  )");
  const schema::model& m = set.all();
  EXPECT_TRUE(set.contains("Thing"));
  EXPECT_TRUE(set.contains("Item"));
  const auto* item = set.find("Thing");
  EXPECT_EQ(item->name, "Item");
  EXPECT_EQ(item->description, "A thing.");
  EXPECT_EQ(field(m, "Item", "key").key, "key-dash");
  EXPECT_EQ(field(m, "Item", "other").key, "plain_word");
  EXPECT_EQ(field(m, "Item", "spaced").key, "NUMBER THREE");
  EXPECT_TRUE(field(m, "Item", "hidden").skip);
  EXPECT_FALSE(field(m, "Item", "hidden").required);
  const auto& kind = set.find("Kind")->enumeration()->values;
  EXPECT_EQ(kind[0].name, "first");
  EXPECT_EQ(kind[0].declared_name, "A");
  EXPECT_TRUE(kind[0].aliases.empty());
  EXPECT_TRUE(kind[1].skip);
  // The alias is the JSON spelling; the declared name is no longer read as the value (as in BAML).
  auto r = covenant::try_decode_dynamic(R"("first")", set.model("Kind"));
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value, boost::json::value("first"));
  EXPECT_FALSE(covenant::try_decode_dynamic(R"("A")", set.model("Kind")));
}

TEST(SchemaFile, SimpleAssertsBecomeKeywordConstraints) {
  auto set = covenant::schema_set::parse(R"(
    class C {
      score float @assert({{ this >= 0 and this <= 1 }})
      count int @assert(positive, {{ 0 < this }})
      name string @assert({{ this|length > 0 }}) @assert({{ this|length <= 80 }})
      code string @assert({{ this|regex_match("^[A-Z]+$") }})
      items int[] @assert({{ this|length == 3 }})
      soft int @check(small, {{ this < 10 }})
      complex int @assert({{ this % 2 == 1 }})
    }
  )");
  const schema::model& m = set.all();
  auto kinds = [&](std::string_view f) {
    std::string out;
    for (const auto& c : field(m, "C", f).type.constraints) {
      if (!out.empty()) out += " ";
      out += schema::describe(c);
    }
    return out;
  };
  EXPECT_EQ(kinds("score"), "at least 0 at most 1");
  EXPECT_EQ(kinds("count"), "greater than 0");
  EXPECT_EQ(field(m, "C", "count").type.constraints.at(0).label, "positive");
  EXPECT_EQ(kinds("name"), "non-empty at most 80 characters");
  EXPECT_EQ(kinds("code"), "matching the regular expression ^[A-Z]+$");
  EXPECT_EQ(kinds("items"), "at least 3 items at most 3 items");
  const auto& soft = field(m, "C", "soft").type.constraints.at(0);
  EXPECT_EQ(soft.kind, schema::constraint_kind::predicate);
  EXPECT_EQ(soft.on_fail, covenant::fail_action::noop);
  EXPECT_EQ(soft.text, "must satisfy this < 10 (small)");
  const auto& complex = field(m, "C", "complex").type.constraints.at(0);
  EXPECT_EQ(complex.kind, schema::constraint_kind::predicate);
  ASSERT_TRUE(complex.custom && complex.custom->has_json());
  EXPECT_FALSE(complex.custom->check_json(boost::json::value(3)).has_value());
  EXPECT_TRUE(complex.custom->check_json(boost::json::value(4)).has_value());
}

TEST(SchemaFile, SeedModelFormWithInlineObjects) {
  auto set = covenant::schema_set::parse(R"(
    model FinalAnswer {
        answer: string
        confidence: float
        sources: string[]
        reasoning?: string
        metadata?: {
            timestamp?: string
            model_used?: string
            token_usage?: {
                input_tokens?: int
                output_tokens?: int
            }
            program_version?: string
        }
    }
  )");
  EXPECT_EQ(set.names(), (std::vector<std::string>{"FinalAnswer", "FinalAnswer_metadata",
                                                   "FinalAnswer_metadata_token_usage"}));
  const auto m = set.model("FinalAnswer");
  EXPECT_TRUE(field(m, "FinalAnswer", "answer").required);
  const auto& reasoning = field(m, "FinalAnswer", "reasoning");
  EXPECT_FALSE(reasoning.required);
  EXPECT_TRUE(reasoning.type.nullable);
  EXPECT_EQ(schema::type_expression(field(m, "FinalAnswer", "metadata").type), "FinalAnswer_metadata | null");
  EXPECT_EQ(field(m, "FinalAnswer_metadata_token_usage", "input_tokens").type.kind, schema::kind::integer);
  auto ok = covenant::try_decode_dynamic(
      R"({"answer": "a", "confidence": 0.5, "sources": ["s"], "metadata": {"token_usage": {"input_tokens": 3}}})", m);
  EXPECT_TRUE(ok) << covenant::render_feedback(ok.issues);
  auto bad = covenant::try_decode_dynamic(R"({"confidence": 0.5, "sources": ["s"], "metadata": {"token_usage": {"input_tokens": "x"}}})", m);
  EXPECT_EQ(covenant::render_feedback(bad.issues),
            "metadata.token_usage.input_tokens: expected integer or null (got \"x\")\n"
            "answer: required field is missing\n");
}

TEST(SchemaFile, RecursiveTypesThatCanEndAreAccepted) {
  auto set = covenant::schema_set::parse(R"(
    class Node {
      value int
      next Node?
      children Node[]
      either Node | int
    }
    type A = A[]
    type M = map<string, M>
    type JsonValue = int | float | bool | string | null | JsonArray | JsonObject
    type JsonArray = JsonValue[]
    type JsonObject = map<string, JsonValue>
    class Foo { b Bar | int }
    class Bar { f Foo | int }
  )");
  auto r = covenant::try_decode_dynamic(R"({"a": [1, 2.5, {"b": null}], "c": "x"})", set.model("JsonValue"));
  EXPECT_TRUE(r) << covenant::render_feedback(r.issues);
  auto n = covenant::try_decode_dynamic(R"({"value": 1, "next": {"value": 2, "children": [], "either": 3}, "children": [], "either": 0})",
                                        set.model("Node"));
  EXPECT_TRUE(n) << covenant::render_feedback(n.issues);
}

TEST(SchemaFile, SkippedBlocksLeaveNotes) {
  auto r = load(R"(
    class Out { x int }
    function Make(input: string) -> Out {
      client "openai/gpt-4o"
      prompt #"
        {{ ctx.output_format }} with } braces {
      "#
    }
    client<llm> Fast {
      provider openai
      options { model "gpt-4o-mini" }
    }
    generator lang { output_type "python/pydantic" }
    test T1 { functions [Make] args { input "x" } }
    retry_policy Twice { max_retries 2 }
    template_string Greeting(name: string) #"Hello {{ name }}"#
    class After { y int }
  )");
  ASSERT_TRUE(r.ok()) << covenant::render_diagnostics(r.issues);
  EXPECT_EQ(r.set.names(), (std::vector<std::string>{"Out", "After"}));
  ASSERT_EQ(r.notes.size(), 6u);
  EXPECT_EQ(r.notes[0].to_string(), "t.baml:3:5: note: skipped function 'Make' [skipped]");
  EXPECT_EQ(r.notes[1].message, "skipped client 'Fast'");
  EXPECT_EQ(r.notes[5].message, "skipped template_string 'Greeting'");
  EXPECT_EQ(r.set.notes(), r.notes);
}

TEST(SchemaFile, StreamingAttributesAreKeptAsHints) {
  auto set = covenant::schema_set::parse(R"(
    class Foo {
      nums int[] @stream.done
      name string @stream.not_null @stream.with_state
      @@stream.done
    }
  )");
  EXPECT_EQ(set.stream_hints(), (std::vector<covenant::stream_hint>{{"Foo", "nums", "done"},
                                                                  {"Foo", "name", "not_null"},
                                                                  {"Foo", "name", "with_state"},
                                                                  {"Foo", "", "done"}}));
  auto m = set.model_for("((Foo | int) @stream.done)[]");
  EXPECT_EQ(schema::type_expression(m.root), "(Foo | int)[]");
}

TEST(SchemaFile, ModelForTakesAnyTypeExpression) {
  auto set = covenant::schema_set::parse(R"(
    class Foo { a int }
    class Bar { b string }
    enum Key { A B }
  )");
  EXPECT_EQ(schema::type_expression(set.model_for("string[]").root), "string[]");
  auto u = set.model_for("Foo | Bar");
  EXPECT_EQ(u.title(), "Foo | Bar");
  EXPECT_EQ(u.defs.size(), 2u);
  auto k = set.model_for("map<Key, Foo?>");
  EXPECT_EQ(schema::type_expression(k.root), "map<Key, Foo | null>");
  EXPECT_EQ(k.defs.size(), 2u);
  EXPECT_EQ(set.model("Bar").defs.size(), 1u);
  const covenant::schema_model_result bad = set.try_model_for("Baz | Foo");
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(bad.model.has_value());
  ASSERT_EQ(bad.issues.size(), 1u);
  EXPECT_EQ(bad.issues[0].to_string(), "type expression:1:1: error: unknown type 'Baz' [unknown_type]");
  EXPECT_THROW((void)set.model_for("map<int, Foo>"), covenant::schema_error);
  EXPECT_THROW((void)set.model_for("Foo Bar"), covenant::schema_error);
  EXPECT_THROW((void)set.model("Nope"), covenant::schema_error);
}

TEST(SchemaFile, EveryProblemIsReportedAtOnceWithLineAndColumn) {
  auto r = load(R"(class Foo {
  a Sourc
  b string
  b int
  c string @alias("b")
  d map<int, string>
  e string @frobnicate
  f int @assert({{ this >> 3 }})
  g int @assert(bad name, {{ this > 0 }})
  h int @description(1, 2)
  self Foo
}
class Foo { x int }
class Source { y int }
enum E {
  A
  B
  A
  C @alias("B")
}
type T = T | int
interface X { }
class Bar {
  x int,
}
)");
  EXPECT_EQ(error_summary(r),
            "2:5 unknown_type\n"
            "4:3 duplicate_field\n"
            "5:3 conflicting_alias\n"
            "6:3 invalid_map_key\n"
            "7:12 unknown_attribute\n"
            "8:26 invalid_constraint\n"
            "9:17 invalid_attribute\n"
            "10:9 invalid_attribute\n"
            "11:3 unescaped_recursion\n"
            "13:7 duplicate_type\n"
            "18:3 duplicate_value\n"
            "19:3 conflicting_alias\n"
            "21:6 unescaped_recursion\n"
            "22:1 unsupported\n"
            "24:8 syntax_error\n");
  EXPECT_EQ(r.issues[0].to_string(), "t.baml:2:5: error: unknown type 'Sourc' (did you mean 'Source'?) [unknown_type]");
  EXPECT_EQ(r.issues[1].message, "field 'b' of 'Foo' is already declared at line 3");
  EXPECT_EQ(r.issues[2].message, "fields 'b' and 'c' of 'Foo' both use the JSON key \"b\"");
  EXPECT_EQ(r.issues[5].message, "@assert: expected a value but found '>'");
  EXPECT_EQ(r.issues[8].message,
            "class 'Foo' can never be satisfied: its required field 'self' (Foo) leads back to it; make the field "
            "optional, a list, or a union with a non-recursive type");
  EXPECT_EQ(r.issues[9].message, "type 'Foo' is already defined at line 1");
  EXPECT_EQ(r.issues[12].message, "type alias 'T' refers to itself without passing through a list, a map or a class");
  EXPECT_THROW((void)covenant::schema_set::parse("class {"), covenant::schema_error);
}

TEST(SchemaFile, MutualRecursionWithoutAnEscapeIsRefused) {
  auto r = load("class A {\n  b B\n}\nclass B {\n  a A\n}\ntype X = Y\ntype Y = X\n");
  EXPECT_EQ(error_summary(r), "2:3 unescaped_recursion\n5:3 unescaped_recursion\n7:6 unescaped_recursion\n");
}

TEST(SchemaFile, SyntaxErrorsNameWhatWasExpected) {
  auto message = [](std::string_view text) {
    auto r = covenant::schema_set::try_parse(text);
    return r.issues.empty() ? std::string("(none)") : r.issues.front().to_string();
  };
  EXPECT_EQ(message("class Foo {\n  a: int\n}"),
            "2:4: error: class fields read `name type` (no colon); use `model` for the `name: type` form [syntax_error]");
  EXPECT_EQ(message("class Foo {\n  a map<string int>\n}"),
            "2:16: error: expected ',' between the key and value types of map<K, V>, found 'int' [syntax_error]");
  EXPECT_EQ(message("class Foo {\n  a int\n"),
            "3:1: error: unexpected end of input: 'Foo' is missing its closing '}' [syntax_error]");
  EXPECT_EQ(message("class string { a int }"), "1:7: error: 'string' is a built-in type name [syntax_error]");
  EXPECT_EQ(message("class Foo {\n  a \"unterminated\n}"),
            "2:5: error: unterminated string (strings end on the same line; use #\"...\"# for several lines) [syntax_error]");
  EXPECT_EQ(message("class Foo {\n  a video\n}"),
            "2:5: error: media type 'video' is not supported (image, pdf and audio are) [unsupported]");
  EXPECT_EQ(message("class Foo {\n  a { b int }\n}"),
            "2:5: error: inline object types are only allowed in `model` declarations; declare a class instead [unsupported]");
  EXPECT_EQ(message("schema Review:\n    approved: bool\n"),
            "1:1: error: unsupported declaration 'schema': the reader understands class, enum, type and model "
            "(function, client, generator, test, template_string and retry_policy blocks are skipped) [unsupported]");
  EXPECT_EQ(message("enum E {\n}"), "1:6: error: enum 'E' declares no values [syntax_error]");
  EXPECT_EQ(message("class Foo {\n  a int @check({{ this|unknown }})\n}"),
            "2:24: error: @check: unknown filter 'unknown' (known: length, lower, upper, trim, abs, round, int, float, "
            "first, last, sum, map, regex_match, unique, format) [invalid_constraint]");
  EXPECT_EQ(message("class Foo {\n  a int @assert(this > 0)\n}"),
            "2:17: error: @assert: the rule must be written as {{ expression }} [invalid_attribute]");
  EXPECT_EQ(message("class Foo {\n  a int\n  @@unknown\n}"),
            "3:3: error: unknown class attribute @@unknown (known: @@alias, @@description, @@assert, @@check, @@dynamic, "
            "@@stream.done, @@stream.not_null) [unknown_attribute]");
  EXPECT_EQ(message("class Foo {\n  a string @alias(\"x\")\n  b string @@alias(\"Bar\")\n}\nclass Bar {\n  c int\n  @@alias(\"Foo\")\n}"),
            "3:12: error: unexpected '@@' after field 'b' [syntax_error]");
}

TEST(SchemaFile, ClassAliasNamingAnotherTypeIsAConflict) {
  auto r = load("class Foo {\n  a int\n}\nclass Bar {\n  c int\n  @@alias(\"Foo\")\n}\n");
  EXPECT_EQ(error_summary(r), "6:3 conflicting_alias\n");
}

TEST(SchemaFile, LimitsStopHostileInputWithAClearError) {
  covenant::schema_load_options o;
  o.file = "big.baml";
  o.limits.max_bytes = 64;
  auto big = covenant::schema_set::try_parse(std::string(65, ' '), o);
  ASSERT_EQ(big.issues.size(), 1u);
  EXPECT_EQ(big.issues[0].code, schema_error_code::limit_exceeded);
  EXPECT_EQ(big.issues[0].message, "schema text is 65 bytes, more than the limit of 64");

  // Deep nesting of types, list suffixes and expressions.
  auto deep = load("type T = " + std::string(100000, '(') + "int" + std::string(100000, ')'));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.issues.back().code, schema_error_code::limit_exceeded);
  std::string lists = "type T = int";
  for (int i = 0; i < 10000; ++i) lists += "[]";
  EXPECT_EQ(load(lists).issues.back().code, schema_error_code::limit_exceeded);
  auto expr = load("class A {\n  a int @assert({{ " + std::string(5000, '(') + "this" + std::string(5000, ')') + " }})\n}");
  EXPECT_EQ(expr.issues.at(0).code, schema_error_code::invalid_constraint);
  EXPECT_EQ(expr.issues.at(0).message, "@assert: expression is nested too deeply");
  auto chain = load("class A {\n  a int @assert({{ this" + [] {
    std::string s;
    for (int i = 0; i < 5000; ++i) s += " + 1";
    return s;
  }() + " > 0 }})\n}");
  EXPECT_EQ(chain.issues.at(0).message, "@assert: too many operators in one expression");

  // A long chain of classes, each containing the next, is deep nesting too (prompts inline them).
  std::string classes;
  for (int i = 0; i < 5000; ++i) classes += "class C" + std::to_string(i) + " {\n  next C" + std::to_string(i + 1) + "?\n}\n";
  classes += "class C5000 {\n  x int\n}\n";
  auto nested = load(classes);
  ASSERT_EQ(nested.issues.size(), 1u);
  EXPECT_EQ(nested.issues[0].to_string(),
            "t.baml:1:7: error: 'C0' nests types 5001 levels deep, more than the limit of 64 [limit_exceeded]");

  covenant::schema_load_options few;
  few.limits.max_types = 3;
  std::string many;
  for (int i = 0; i < 10; ++i) many += "class C" + std::to_string(i) + " { a int }\n";
  auto types = covenant::schema_set::try_parse(many, few);
  EXPECT_EQ(types.issues.back().message, "more than 3 types");
  covenant::schema_load_options narrow;
  narrow.limits.max_fields = 5;
  auto fields = covenant::schema_set::try_parse("class A {\n a int\n b int\n c int\n d int\n e int\n f int\n}", narrow);
  EXPECT_EQ(fields.issues.back().to_string(), "7:2: error: more than 5 fields and enum values [limit_exceeded]");
  covenant::schema_load_options patience;
  patience.limits.max_errors = 3;
  std::string broken;
  for (int i = 0; i < 20; ++i) broken += "class C" + std::to_string(i) + " { a Missing }\n";
  auto errors = covenant::schema_set::try_parse("class X {\n a ]\n b ]\n c ]\n d ]\n}", patience);
  EXPECT_EQ(errors.issues.size(), 4u);
  EXPECT_EQ(errors.issues.back().message, "too many problems; stopped after 3");
}

TEST(SchemaFile, RandomBytesNeverCrashOrHang) {
  std::mt19937 rng(7);
  const std::string alphabet = "class enum type model{}()[]<>|?=:@,.\"#/*\n abc int string 0123 {{ this }} @@assert map";
  for (int n = 0; n < 300; ++n) {
    std::string text;
    const int len = static_cast<int>(rng() % 200);
    for (int i = 0; i < len; ++i) text.push_back(alphabet[rng() % alphabet.size()]);
    auto r = covenant::schema_set::try_parse(text);
    if (r.ok()) {
      for (const auto& name : r.set.names()) {
        auto m = r.set.model(name);
        (void)covenant::prompt_text(m);
        (void)covenant::to_json_schema(m);
      }
    }
  }
}

TEST(SchemaFile, LoadsFilesAndReportsUnreadableOnes) {
  const auto path = std::filesystem::temp_directory_path() / "covenant_schema_file_test.baml";
  {
    std::ofstream out(path);
    out << "class Foo {\n  a int\n}\n";
  }
  auto set = covenant::schema_set::load(path);
  EXPECT_EQ(set.find("Foo")->where.file, path.string());
  EXPECT_EQ(set.find("Foo")->where.line, 1u);
  EXPECT_EQ(set.find("Foo")->where.column, 7u);
  std::filesystem::remove(path);
  auto missing = covenant::schema_set::try_load(path);
  ASSERT_EQ(missing.issues.size(), 1u);
  EXPECT_EQ(missing.issues[0].code, schema_error_code::io_error);
  EXPECT_THROW((void)covenant::schema_set::load(path), covenant::schema_error);
}

TEST(SchemaFile, CheckModelFindsTheSameProblemsInHandBuiltModels) {
  schema::model m;
  schema::definition node;
  node.name = "Node";
  schema::object_def o;
  schema::field next;
  next.name = next.key = "next";
  next.type = schema::make_ref("Node");
  o.fields.push_back(next);
  schema::field dup = next;
  dup.name = "other";
  dup.type = schema::make_ref("Missing");
  o.fields.push_back(dup);
  node.body = o;
  m.defs.push_back(node);
  m.root = schema::make_ref("Node");
  const auto d = covenant::check_model(m);
  std::string text;
  for (const auto& x : d) text += std::string(covenant::to_string(x.code)) + ": " + x.message + "\n";
  EXPECT_EQ(text,
            "unknown_type: unknown type 'Missing' in 'Node.other'\n"
            "conflicting_alias: fields 'next' and 'other' of 'Node' have the same JSON key \"next\"\n"
            "unescaped_recursion: class 'Node' can never be satisfied: its required field 'next' (Node) leads back to "
            "it; make the field optional, a list, or a union with a non-recursive type\n");
}

}  // namespace
