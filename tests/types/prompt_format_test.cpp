#include <covenant/types/prompt_format.hpp>
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "../../examples/models/final_answer.hpp"

// Test types live at namespace scope: types local to a function cannot be reflected.
namespace pft {

enum class Priority { low, medium, high };

struct Task {
  std::string title;
  Priority priority = Priority::low;
  std::optional<Priority> previous;
  std::vector<Priority> history;
};

struct Circle {
  double radius = 0;
};
struct Rect {
  double w = 0;
  double h = 0;
};
struct Figure {
  std::variant<Circle, Rect> shape;
  std::variant<std::monostate, int, std::string> id;
  std::vector<std::variant<int, std::string>> cells;
};

struct Votes {
  std::map<std::string, int> counts;
  std::map<std::string, Circle> circles;
};

struct Node {
  std::string name;
  std::vector<Node> children;
};

struct Tree {
  std::string label;
  Node root;
};

struct Item {
  std::string id;
  std::uint8_t weight = 0;
};

struct Interval {
  int lo = 0;
  int hi = 0;
  std::vector<Item> items;
};

struct Dial {
  double speed = 1;
  std::optional<std::string> mode;
};

struct Query {
  std::string q;
  int max_snippets = 3;
  std::string lang = "en";
};

}  // namespace pft

template <>
struct covenant::describe<pft::Priority> {
  static constexpr std::string_view description = "How soon the task must be done.";
  static constexpr auto values = covenant::values<pft::Priority>(
      covenant::value<pft::Priority::low>("Whenever there is time.", covenant::alias{"LOW"},
                                          covenant::also_accept{"minor"}),
      covenant::value<pft::Priority::high>("Today."));
};

template <>
struct covenant::describe<pft::Task> {
  static constexpr auto fields =
      covenant::fields<pft::Task>(covenant::field<&pft::Task::title>("Short title.", covenant::length{3, 80}),
                                  covenant::field<&pft::Task::previous>("Priority before the last change."),
                                  covenant::field<&pft::Task::history>(covenant::max_items{3}));
};

template <>
struct covenant::describe<pft::Votes> {
  static constexpr auto fields = covenant::fields<pft::Votes>(covenant::field<&pft::Votes::counts>(
      "Votes per option.", covenant::item_count{1, 10}, covenant::each{covenant::range{0, 5}}));
};

template <>
struct covenant::describe<pft::Node> {
  static constexpr std::string_view description = "A node of a tree.";
};

template <>
struct covenant::describe<pft::Interval> {
  static constexpr std::string_view description = "A closed interval with weighted items.";
  static constexpr auto fields = covenant::fields<pft::Interval>(
      covenant::field<&pft::Interval::lo>("Lower end.", covenant::predicate{[](int x) { return x % 2 == 0; },
                                                                            "must be even"}),
      covenant::field<&pft::Interval::items>(covenant::unique_by<&pft::Item::id>{}, covenant::non_empty{}));
  static constexpr auto invariants = covenant::invariants<pft::Interval>(
      covenant::invariant<&pft::Interval::hi>("hi must not be less than lo",
                                              [](const pft::Interval& i) { return i.hi >= i.lo; }),
      covenant::invariant("items must fit between lo and hi", [](const pft::Interval&) { return true; }));
};

template <>
struct covenant::describe<pft::Query> {
  static constexpr auto fields = covenant::fields<pft::Query>(
      covenant::field<&pft::Query::max_snippets>("How many snippets to return.", covenant::defaulted{},
                                                 covenant::range{1, 10}),
      covenant::field<&pft::Query::lang>(covenant::defaulted{}, covenant::pattern{"^[a-z]{2}$"}));
};

template <>
struct covenant::describe<pft::Dial> {
  static constexpr auto fields = covenant::fields<pft::Dial>(
      covenant::field<&pft::Dial::speed>("Turns per second.", covenant::one_of{1.0, 2.5}),
      covenant::field<&pft::Dial::mode>(covenant::one_of{"slow", "fast"}));
};

namespace {

TEST(PromptFormat, FinalAnswerTextIsExact) {
  EXPECT_EQ(covenant::prompt_of<models::FinalAnswer>(),
            R"(Answer with a JSON object in this schema:
// The final, validated answer to the user's query.
{
  // The final answer text. Non-empty, at most 10000 characters.
  "answer": string,
  // Confidence score. Between 0 and 1.
  "confidence": float,
  // Identifiers of the source documents. 1 to 50 items; each item non-empty.
  "sources": string[],
  // Explanation of the answer. At most 5000 characters. Optional.
  "reasoning": string or null,
  // Additional metadata. Optional.
  "metadata": {
    // When the answer was produced (ISO 8601). Optional.
    "timestamp": string or null,
    // Model that produced the answer. Optional.
    "model_used": string or null,
    // Token usage. Optional.
    "token_usage": {
      // Prompt tokens. At least 0. Optional.
      "input_tokens": int or null,
      // Completion tokens. At least 0. Optional.
      "output_tokens": int or null
    } or null,
    // Version of the producing program. Optional.
    "program_version": string or null
  } or null
})");
}

TEST(PromptFormat, PromptOfReturnsTheSameCachedObject) {
  const std::string* first = &covenant::prompt_of<models::FinalAnswer>();
  EXPECT_EQ(first, &covenant::prompt_of<models::FinalAnswer>());
  EXPECT_EQ(*first, covenant::prompt_text(covenant::schema_of<models::FinalAnswer>()));
}

TEST(PromptFormat, HeaderCanBeLeftOut) {
  covenant::prompt_options o;
  o.header = false;
  const std::string text = covenant::prompt_text(covenant::schema_of<models::FinalAnswer>(), o);
  EXPECT_EQ(text.rfind("// The final, validated answer to the user's query.\n{\n", 0), 0u) << text;
  EXPECT_EQ(text.find("Answer with"), std::string::npos);
}

TEST(PromptFormat, IndentIsConfigurable) {
  covenant::prompt_options o;
  o.indent = 4;
  const std::string text = covenant::prompt_text(covenant::schema_of<models::FinalAnswer>(), o);
  EXPECT_NE(text.find("\n    \"answer\": string,\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\n        \"timestamp\": string or null,\n"), std::string::npos) << text;
}

TEST(PromptFormat, EnumsInlineTheirJsonSpellingsAndValueDescriptions) {
  EXPECT_EQ(covenant::prompt_of<pft::Task>(), R"(Answer with a JSON object in this schema:
{
  // Short title. 3 to 80 characters.
  "title": string,
  // How soon the task must be done. "LOW": Whenever there is time; "high": Today.
  "priority": "LOW" | "medium" | "high",
  // Priority before the last change. "LOW": Whenever there is time; "high": Today. Optional.
  "previous": "LOW" | "medium" | "high" or null,
  // How soon the task must be done. At most 3 items. "LOW": Whenever there is time; "high": Today.
  "history": ("LOW" | "medium" | "high")[]
})");
}

TEST(PromptFormat, UnionsListTheirAlternatives) {
  EXPECT_EQ(covenant::prompt_of<pft::Figure>(), R"(Answer with a JSON object in this schema:
{
  "shape": {
    "radius": float
  } | {
    "w": float,
    "h": float
  },
  "id": null | int | string,
  "cells": (int | string)[]
})");
}

TEST(PromptFormat, MapsShowKeyAndValueTypesAndEntryCounts) {
  EXPECT_EQ(covenant::prompt_of<pft::Votes>(), R"(Answer with a JSON object in this schema:
{
  // Votes per option. 1 to 10 entries; each value between 0 and 5.
  "counts": map<string, int>,
  "circles": map<string, {
    "radius": float
  }>
})");
}

TEST(PromptFormat, RecursiveRootIsNamedAndReferencedByName) {
  EXPECT_EQ(covenant::prompt_of<pft::Node>(), R"(Answer with a JSON object in this schema:
// A node of a tree.
Node {
  "name": string,
  "children": Node[]
})");
}

TEST(PromptFormat, RecursiveDefinitionsArePrintedOnceAfterTheRoot) {
  EXPECT_EQ(covenant::prompt_of<pft::Tree>(), R"(Answer with a JSON object in this schema:
{
  "label": string,
  "root": Node
}

// A node of a tree.
Node {
  "name": string,
  "children": Node[]
})");
}

TEST(PromptFormat, InvariantsAndPredicatesAreSpelledOut) {
  EXPECT_EQ(covenant::prompt_of<pft::Interval>(), R"(Answer with a JSON object in this schema:
// A closed interval with weighted items.
{
  // Lower end. Must be even.
  "lo": int,
  "hi": int,
  // At least 1 item, no two items with the same id.
  "items": [
    {
      "id": string,
      // Between 0 and 255.
      "weight": int
    }
  ]
  // Rule: hi must not be less than lo
  // Rule: items must fit between lo and hi
})");
}

TEST(PromptFormat, DefaultedFieldsAreOptionalWithTheirDefault) {
  EXPECT_EQ(covenant::prompt_of<pft::Query>(), R"(Answer with a JSON object in this schema:
{
  "q": string,
  // How many snippets to return. Between 1 and 10. Optional (default: 3).
  "max_snippets": int,
  // Matching the regular expression ^[a-z]{2}$. Optional (default: "en").
  "lang": string
})");
}

TEST(PromptFormat, OneOfListsTheChoicesInJson) {
  EXPECT_EQ(covenant::prompt_of<pft::Dial>(), R"(Answer with a JSON object in this schema:
{
  // Turns per second. One of 1, 2.5.
  "speed": float,
  // One of "slow", "fast". Optional.
  "mode": string or null
})");
}

TEST(PromptFormat, NonObjectRootsUseTheirTypeExpression) {
  EXPECT_EQ(covenant::prompt_text(covenant::schema_of<std::vector<std::string>>()),
            "Answer with a JSON array in this schema:\nstring[]");
  EXPECT_EQ(covenant::prompt_text(covenant::schema_of<pft::Priority>()),
            "Answer with a JSON value in this schema:\n"
            "// How soon the task must be done.\n"
            "// \"LOW\": Whenever there is time; \"high\": Today.\n"
            "\"LOW\" | \"medium\" | \"high\"");
  EXPECT_EQ(covenant::prompt_text(covenant::schema_of<std::vector<pft::Circle>>()),
            "Answer with a JSON array in this schema:\n[\n  {\n    \"radius\": float\n  }\n]");
}

TEST(PromptFormat, SkippedFieldsAreOmitted) {
  covenant::schema::model m = covenant::schema_of<pft::Query>();
  auto& fields = std::get<covenant::schema::object_def>(m.defs[m.root.def].body).fields;
  fields[2].skip = true;
  EXPECT_EQ(covenant::prompt_text(m), R"(Answer with a JSON object in this schema:
{
  "q": string,
  // How many snippets to return. Between 1 and 10. Optional (default: 3).
  "max_snippets": int
})");
}

TEST(PromptFormat, ConstraintClausesMergeBounds) {
  using covenant::schema::constraint;
  using covenant::schema::constraint_kind;
  using covenant::schema::kind;
  auto num = [](constraint_kind k, double v) {
    constraint c;
    c.kind = k;
    c.number = v;
    return c;
  };
  auto cnt = [](constraint_kind k, std::size_t n) {
    constraint c;
    c.kind = k;
    c.count = n;
    return c;
  };
  EXPECT_EQ(covenant::constraint_clause({num(constraint_kind::minimum, 0), num(constraint_kind::maximum, 1)}, kind::number),
            "between 0 and 1");
  EXPECT_EQ(covenant::constraint_clause({num(constraint_kind::exclusive_minimum, 0), num(constraint_kind::maximum, 1.5)},
                                        kind::number),
            "greater than 0 and at most 1.5");
  EXPECT_EQ(covenant::constraint_clause({cnt(constraint_kind::min_length, 2), cnt(constraint_kind::max_length, 2)}, kind::string),
            "exactly 2 characters");
  EXPECT_EQ(covenant::constraint_clause({cnt(constraint_kind::min_items, 1)}, kind::map), "at least 1 entry");
  EXPECT_EQ(covenant::constraint_clause({cnt(constraint_kind::min_items, 2), cnt(constraint_kind::max_items, 2)}, kind::array),
            "exactly 2 items");
  EXPECT_EQ(covenant::constraint_clause({num(constraint_kind::multiple_of, 0.5)}, kind::number), "a multiple of 0.5");
  EXPECT_EQ(covenant::constraint_clause({}, kind::string), "");
}

TEST(PromptFormat, EffectiveConstraintsKeepTheTightestBounds) {
  covenant::schema::type t = covenant::schema::make_primitive(covenant::schema::kind::integer);
  t.int_bits = 8;
  t.is_unsigned = true;
  covenant::schema::constraint lo;
  lo.kind = covenant::schema::constraint_kind::minimum;
  lo.number = -5;
  covenant::schema::constraint hi;
  hi.kind = covenant::schema::constraint_kind::exclusive_maximum;
  hi.number = 100;
  t.constraints = {lo, hi};
  EXPECT_EQ(covenant::constraint_clause(t), "at least 0 and less than 100");
}

}  // namespace
