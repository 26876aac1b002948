// The schema registry (names, versions, lookups, errors, threads) and compatibility reports.
#include <covenant/read/dynamic.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/runtime/registry.hpp>
#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "../../examples/models/final_answer.hpp"

namespace {

using covenant::registry_error;
using covenant::registry_error_code;

const char* v1 = R"(
enum Tone {
  NEUTRAL
  FORMAL
  CASUAL
}
class Answer {
  text string @assert({{ this|length <= 200 }})
  confidence float @assert({{ this >= 0 and this <= 1 }})
  sources string[]
  tone Tone?
  note string?
  legacy int
}
)";

// What goes wrong when `v1` becomes `v2`: one line per change.
std::string changes(std::string_view v2) {
  auto a = covenant::schema_set::parse(v1).model("Answer");
  auto b = covenant::schema_set::parse(v2).model("Answer");
  return covenant::check_compatibility(a, b).to_string();
}

registry_error_code code_of(auto&& fn) {
  try {
    fn();
  } catch (const registry_error& e) {
    return e.code();
  }
  ADD_FAILURE() << "no registry_error";
  return registry_error_code::invalid_reference;
}

TEST(Registry, RegistersFromSchemaFilesJsonSchemaAndCppTypes) {
  covenant::schema_registry reg;
  auto a = reg.add_schema_file("FinalAnswer", "v1", "model FinalAnswer {\n  answer: string\n  confidence: float\n  sources: string[]\n}");
  EXPECT_EQ(a.ref(), "FinalAnswer@v1");
  EXPECT_EQ(a.origin, "schema file");
  reg.add_json_schema("FinalAnswer", "v2", covenant::json_schema_of<models::FinalAnswer>());
  reg.add_type<models::FinalAnswer>("FinalAnswer", "v10");
  reg.add_schema_file("Other", "1.0", "class Thing {\n  x int\n}", "Thing");
  EXPECT_EQ(reg.get("FinalAnswer@v2").origin, "JSON Schema");
  EXPECT_EQ(reg.get("FinalAnswer").version, "v10");  // latest: v10 > v2 > v1
  EXPECT_EQ(reg.latest("FinalAnswer").origin, "C++ type");
  EXPECT_EQ(reg.get("FinalAnswer", "v1").model->title(), "FinalAnswer");
  EXPECT_EQ(reg.versions("FinalAnswer"), (std::vector<std::string>{"v1", "v2", "v10"}));
  EXPECT_EQ(reg.list(), (std::vector<covenant::schema_listing>{{"FinalAnswer", {"v1", "v2", "v10"}}, {"Other", {"1.0"}}}));
  // The registered models validate like any other.
  auto r = covenant::try_decode_dynamic(R"({"answer": "a", "confidence": 2, "sources": []})", *reg.get("FinalAnswer@v2").model);
  EXPECT_EQ(covenant::render_feedback(r.issues), "confidence: must be <= 1 (got 2)\nsources: must not be empty (got [])\n");
  EXPECT_TRUE(reg.remove("Other", "1.0"));
  EXPECT_FALSE(reg.remove("Other", "1.0"));
  EXPECT_EQ(reg.list().size(), 1u);
}

TEST(Registry, UnknownNamesAndVersionsHaveTheirOwnCodes) {
  covenant::schema_registry reg;
  reg.add_type<models::FinalAnswer>("FinalAnswer", "v1");
  EXPECT_EQ(code_of([&] { (void)reg.get("Nope@v1"); }), registry_error_code::unknown_schema);
  EXPECT_EQ(code_of([&] { (void)reg.get("FinalAnswer@v9"); }), registry_error_code::unknown_version);
  EXPECT_EQ(code_of([&] { (void)reg.latest("Nope"); }), registry_error_code::unknown_schema);
  EXPECT_EQ(code_of([&] { (void)reg.get("FinalAnswer@"); }), registry_error_code::invalid_reference);
  EXPECT_EQ(code_of([&] { (void)reg.get("@v1"); }), registry_error_code::invalid_reference);
  EXPECT_EQ(code_of([&] { reg.add_type<models::FinalAnswer>("FinalAnswer", "v1"); }), registry_error_code::duplicate_version);
  EXPECT_EQ(code_of([&] { reg.add_type<models::FinalAnswer>("Final@Answer", "v1"); }), registry_error_code::invalid_reference);
  try {
    (void)reg.get("FinalAnswer@v9");
  } catch (const registry_error& e) {
    EXPECT_STREQ(e.what(), "schema 'FinalAnswer' has no version 'v9' (known: v1)");
    EXPECT_EQ(covenant::to_string(e.code()), "unknown_version");
  }
  EXPECT_FALSE(reg.find("FinalAnswer", "v9").has_value());
  EXPECT_TRUE(reg.find("FinalAnswer").has_value());
  EXPECT_TRUE(reg.versions("Nope").empty());
}

TEST(Registry, InvalidSchemasAreRefusedWithEveryProblem) {
  covenant::schema_registry reg;
  try {
    reg.add_schema_file("Bad", "v1", "class Bad {\n  a Missing\n  b Other\n}");
    FAIL() << "expected registry_error";
  } catch (const registry_error& e) {
    EXPECT_EQ(e.code(), registry_error_code::invalid_schema);
    ASSERT_EQ(e.issues().size(), 2u);
    EXPECT_EQ(e.issues()[0].code, covenant::schema_error_code::unknown_type);
  }
  EXPECT_EQ(code_of([&] { reg.add_schema_file("Bad", "v1", "class Other {\n  a int\n}"); }), registry_error_code::invalid_schema);
  EXPECT_EQ(code_of([&] { reg.add_json_schema("Bad", "v1", boost::json::parse(R"({"not": {}})")); }),
            registry_error_code::invalid_schema);
  covenant::schema::model loop;
  loop.defs.push_back({"A", "", covenant::schema::alias_def{covenant::schema::make_ref("A")}, {}});
  loop.root = covenant::schema::make_ref("A");
  EXPECT_EQ(code_of([&] { reg.add("Loop", "v1", loop); }), registry_error_code::invalid_schema);
  EXPECT_TRUE(reg.list().empty());
}

TEST(Registry, ManyThreadsRegisterAndReadAtOnce) {
  covenant::schema_registry reg;
  reg.add_type<models::FinalAnswer>("FinalAnswer", "v0");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        // Appended, not "v" + std::to_string(...): GCC 12 reports a false -Wrestrict on that in Release builds.
        const std::string version = std::string("v").append(std::to_string(t * 100 + i + 1));
        reg.add_type<models::FinalAnswer>("FinalAnswer", version);
        if (reg.get("FinalAnswer@" + version).version != version) ++failures;
        if (reg.get("FinalAnswer@v0").model == nullptr) ++failures;
        (void)reg.list();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(reg.versions("FinalAnswer").size(), 401u);
  EXPECT_EQ(reg.latest("FinalAnswer").version, "v750");
}

TEST(Registry, VersionsOrderNaturally) {
  EXPECT_TRUE(covenant::version_less("v2", "v10"));
  EXPECT_FALSE(covenant::version_less("v10", "v2"));
  EXPECT_TRUE(covenant::version_less("1.9", "1.10"));
  EXPECT_TRUE(covenant::version_less("v1", "v1.1"));
  EXPECT_TRUE(covenant::version_less("1", "01"));
  EXPECT_FALSE(covenant::version_less("v3", "v3"));
  EXPECT_EQ(covenant::parse_schema_ref("FinalAnswer@v2"), (covenant::schema_ref{"FinalAnswer", "v2"}));
  EXPECT_EQ(covenant::parse_schema_ref("FinalAnswer"), (covenant::schema_ref{"FinalAnswer", ""}));
  EXPECT_EQ(covenant::parse_schema_ref("FinalAnswer@"), std::nullopt);
  EXPECT_EQ(covenant::parse_schema_ref("@v2"), std::nullopt);
  EXPECT_EQ(covenant::parse_schema_ref("A@B@v2"), std::nullopt);
  EXPECT_EQ(covenant::parse_schema_ref(""), std::nullopt);
}

TEST(SchemaCompat, IdenticalVersionsHaveNoChanges) {
  EXPECT_EQ(changes(v1), "");
}

TEST(SchemaCompat, BreakingChangesAreReportedFieldByField) {
  EXPECT_EQ(changes(R"(
enum Tone {
  NEUTRAL
  FORMAL
}
class Answer {
  text string @assert({{ this|length <= 100 }})
  confidence int @assert({{ this >= 0 and this <= 1 }})
  sources string[] @assert({{ this|length > 0 }})
  tone Tone?
  note string
  extra bool
}
)"),
            "breaking: text: maximum length 200 -> 100\n"
            "breaking: confidence: float -> int\n"
            "breaking: sources: minimum items 1 added\n"
            "breaking: tone: value \"CASUAL\" removed\n"
            "breaking: note: optional field became required\n"
            "breaking: note: null no longer accepted\n"
            "breaking: legacy: field removed\n"
            "breaking: extra: required field added\n");
}

TEST(SchemaCompat, WideningChangesAreCompatible) {
  auto a = covenant::schema_set::parse(v1).model("Answer");
  auto b = covenant::schema_set::parse(R"(
enum Tone {
  NEUTRAL
  FORMAL
  CASUAL
  PLAYFUL
}
class Answer {
  text string @assert({{ this|length <= 500 }})
  confidence float @assert({{ this >= 0 and this <= 1 }})
  sources (string | int)[]
  tone Tone?
  note string?
  legacy float?
  summary string?
  @@check(soft_rule, {{ this.confidence > 0.5 }})
}
)").model("Answer");
  const auto report = covenant::check_compatibility(a, b);
  EXPECT_TRUE(report.compatible()) << report.to_string();
  EXPECT_EQ(report.to_string(),
            "compatible: text: maximum length 200 -> 500\n"
            "compatible: sources[]: alternative int added\n"
            "compatible: tone: value \"PLAYFUL\" added\n"
            "compatible: legacy: required field became optional\n"
            "compatible: legacy: null now accepted\n"
            "compatible: legacy: int -> float\n"
            "compatible: summary: optional field added\n");
  // Backwards, every widening is a narrowing.
  const auto back = covenant::check_compatibility(b, a);
  EXPECT_FALSE(back.compatible());
  EXPECT_EQ(back.breaking().size(), 7u) << back.to_string();
}

TEST(SchemaCompat, NestedRecursiveAndJsonSchemaVersionsCompare) {
  covenant::schema_registry reg;
  reg.add_type<models::FinalAnswer>("FinalAnswer", "v1");
  reg.add_schema_file("FinalAnswer", "v2", R"(
class TokenUsage {
  input_tokens int? @assert({{ this >= 10 }})
  output_tokens int?
}
class AnswerMetadata {
  timestamp string?
  model_used string?
  token_usage TokenUsage?
}
class FinalAnswer {
  answer string @assert({{ this|length > 0 }}) @assert({{ this|length <= 10000 }})
  confidence float @assert({{ this >= 0.0 and this <= 1.0 }})
  sources (string @assert({{ this|length > 0 }}))[] @assert({{ this|length >= 1 and this|length <= 50 }})
  reasoning string? @assert({{ this|length <= 5000 }}) @assert({{ this|regex_match("^[A-Z]") }})
  metadata AnswerMetadata?
}
)");
  const auto report = reg.check_compatibility("FinalAnswer", "v1", "v2");
  EXPECT_EQ(report.to_string(),
            "breaking: reasoning: pattern ^[A-Z] added\n"
            "compatible: metadata.token_usage.input_tokens: integer range widened\n"  // C++ int to 64-bit
            "breaking: metadata.token_usage.input_tokens: minimum >= 0 -> >= 10\n"
            "compatible: metadata.token_usage.output_tokens: integer range widened\n"
            "compatible: metadata.token_usage.output_tokens: minimum >= 0 removed\n"
            "breaking: metadata.program_version: field removed\n");
  EXPECT_EQ(code_of([&] { (void)reg.check_compatibility("FinalAnswer", "v1", "v3"); }), registry_error_code::unknown_version);

  auto tree = covenant::schema_set::parse("class Node {\n  name string\n  children Node[]\n}");
  auto tree2 = covenant::schema_set::parse("class Node {\n  name string?\n  children Node[]\n  tag string?\n}");
  EXPECT_EQ(covenant::check_compatibility(tree.model("Node"), tree2.model("Node")).to_string(),
            "compatible: name: required field became optional\n"
            "compatible: name: null now accepted\n"
            "compatible: tag: optional field added\n");
}

}  // namespace
