// Every on-fail action on every kind of check, through a whole contract call: a field validator, a
// list-item validator, an invariant, a post() violation, a schema-file @assert and a JSON Schema
// x-on-fail keyword. The first reply breaks the check, the second keeps it.
#include <covenant/contract/contract.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/runtime/json_schema_import.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <optional>
#include <string>
#include <vector>

namespace matrix_test {

using covenant::fail_action;

template <fail_action A>
struct Pair {
  int low = 0;
  int high = 0;
};

template <fail_action A>
struct Doc {
  std::optional<int> value;
  std::vector<int> items;
  std::vector<Pair<A>> pairs;
};

struct Question {
  std::string text;
};

// The checks of each kind, one action for all (a post() violation when an item is 7).
template <fail_action A, bool Post>
struct Task {
  static constexpr std::string_view prompt = "Give a document.";
  void post(const Doc<A>& d) const {
    if constexpr (Post) {
      covenant::violation v;
      for (std::size_t i = 0; i < d.items.size(); ++i)
        if (d.items[i] == 7) v.add("items[" + std::to_string(i) + "]", "must not be 7", A);
      v.raise_if_any();
    }
  }
  Doc<A> forward(const Question&, const covenant::outcome<Doc<A>>& o) const { return o.result.value_or(Doc<A>{}); }
};

}  // namespace matrix_test

template <covenant::fail_action A>
struct covenant::describe<matrix_test::Pair<A>> {
  static constexpr std::string_view name = "Pair";
  static constexpr auto fields = covenant::fields<matrix_test::Pair<A>>(covenant::field<&matrix_test::Pair<A>::low>("Low."),
                                                                        covenant::field<&matrix_test::Pair<A>::high>("High."));
  static constexpr auto invariants = covenant::invariants<matrix_test::Pair<A>>(covenant::invariant(
      "low must not exceed high", [](const matrix_test::Pair<A>& p) { return p.low <= p.high; },
      covenant::on_fail::action_t<A == covenant::fail_action::fix ? covenant::fail_action::reask : A>{}));
};

template <covenant::fail_action A>
struct covenant::describe<matrix_test::Doc<A>> {
  static constexpr std::string_view name = "Doc";
  static constexpr auto fields = covenant::fields<matrix_test::Doc<A>>(
      covenant::field<&matrix_test::Doc<A>::value>("Value.", covenant::on_fail::action_t<A>{}(covenant::maximum{10})),
      covenant::field<&matrix_test::Doc<A>::items>("Items.",
                                                   covenant::each{covenant::on_fail::action_t<A>{}(covenant::maximum{10})}),
      covenant::field<&matrix_test::Doc<A>::pairs>("Pairs."));
};

namespace {

using namespace matrix_test;
using covenant::note_kind;
using covenant::testing::instant;
using covenant::testing::scripted_engine;

const char* passing = R"({"value": 1, "items": [1], "pairs": [{"low": 1, "high": 2}]})";

enum class kind { field, item, invariant, post, schema_file, json_schema };

const char* failing(kind k) {
  switch (k) {
    case kind::field: return R"({"value": 50, "items": [], "pairs": []})";
    case kind::item: return R"({"value": 1, "items": [1, 50, 2], "pairs": []})";
    case kind::invariant: return R"({"value": 1, "items": [], "pairs": [{"low": 1, "high": 2}, {"low": 5, "high": 3}]})";
    case kind::post: return R"({"value": 1, "items": [1, 7], "pairs": []})";
    case kind::schema_file:
    case kind::json_schema: return R"({"value": 50})";
  }
  return "";
}

struct observed {
  std::size_t calls = 0;
  bool success = false;
  std::string reason;
  std::vector<note_kind> notes;
};

template <fail_action A>
observed run_typed(kind k) {
  scripted_engine model{failing(k), passing};
  observed out;
  auto record = [&](const covenant::outcome_base& o) {
    out.calls = model.calls();
    out.success = o.success;
    out.reason = o.reason;
    for (const auto& n : o.notes)
      if (n.kind == note_kind::fixed || n.kind == note_kind::filtered || n.kind == note_kind::check_failed)
        out.notes.push_back(n.kind);
  };
  if (k == kind::post) {
    covenant::contract<Task<A, true>> c{model, instant()};
    record(c.run(Question{"q"}).outcome);
  } else {
    covenant::contract<Task<A, false>> c{model, instant()};
    record(c.run(Question{"q"}).outcome);
  }
  return out;
}

observed run_dynamic(kind k, fail_action a) {
  const std::string action(covenant::to_string(a));
  covenant::schema::model m;
  if (k == kind::schema_file) {
    m = covenant::schema_set::parse("class Doc {\n  value int? @assert({{ this < 10 }}, " + action + ")\n}\n").model("Doc");
  } else {
    m = covenant::import_json_schema(boost::json::parse(
        R"({"title": "Doc", "type": "object", "properties": {"value": {"type": "integer", "maximum": 10, "x-on-fail": ")" +
        action + R"("}}})"));
  }
  scripted_engine model{failing(k), R"({"value": 1})"};
  covenant::dynamic_task task;
  task.name = "doc";
  task.prompt = "Give a document.";
  task.output = m;
  covenant::contract_options o = instant();
  o.graceful = true;
  const covenant::dynamic_contract c{model, task, o};
  const auto r = c.run(boost::json::object{{"text", "q"}}).outcome;
  observed out;
  out.calls = model.calls();
  out.success = r.success;
  out.reason = r.reason;
  for (const auto& n : r.notes)
    if (n.kind == note_kind::fixed || n.kind == note_kind::filtered || n.kind == note_kind::check_failed)
      out.notes.push_back(n.kind);
  return out;
}

// What each action must do, whatever the kind of check.
void expect_action(fail_action a, const observed& o, const std::string& where) {
  SCOPED_TRACE(where + " / " + std::string(covenant::to_string(a)));
  switch (a) {
    case fail_action::reask:
      EXPECT_EQ(o.calls, 2u);
      EXPECT_TRUE(o.success);
      EXPECT_TRUE(o.notes.empty());
      break;
    case fail_action::fix:
      EXPECT_EQ(o.calls, 1u);
      EXPECT_TRUE(o.success);
      EXPECT_EQ(o.notes, std::vector<note_kind>{note_kind::fixed});
      break;
    case fail_action::filter:
      EXPECT_EQ(o.calls, 1u);
      EXPECT_TRUE(o.success);
      EXPECT_EQ(o.notes, std::vector<note_kind>{note_kind::filtered});
      break;
    case fail_action::noop:
      EXPECT_EQ(o.calls, 1u);
      EXPECT_TRUE(o.success);
      EXPECT_EQ(o.notes, std::vector<note_kind>{note_kind::check_failed});
      break;
    case fail_action::refrain:
      EXPECT_EQ(o.calls, 1u);
      EXPECT_FALSE(o.success);
      EXPECT_EQ(o.reason, "refrained");
      break;
    case fail_action::exception:
      EXPECT_EQ(o.calls, 1u);
      EXPECT_FALSE(o.success);
      EXPECT_EQ(o.reason, "exception");
      break;
  }
}

template <fail_action A>
void typed_kinds(bool with_fix) {
  expect_action(A, run_typed<A>(kind::field), "field validator");
  expect_action(A, run_typed<A>(kind::item), "list-item validator");
  if (with_fix) return;  // an invariant and a hook have no fix
  expect_action(A, run_typed<A>(kind::invariant), "invariant");
  expect_action(A, run_typed<A>(kind::post), "post() violation");
}

TEST(OnFailMatrix, EveryActionOnEveryKindOfCheck) {
  typed_kinds<fail_action::reask>(false);
  typed_kinds<fail_action::fix>(true);
  typed_kinds<fail_action::filter>(false);
  typed_kinds<fail_action::refrain>(false);
  typed_kinds<fail_action::noop>(false);
  typed_kinds<fail_action::exception>(false);
  for (fail_action a : {fail_action::reask, fail_action::filter, fail_action::refrain, fail_action::noop,
                        fail_action::exception}) {
    expect_action(a, run_dynamic(kind::schema_file, a), "schema-file @assert");
    expect_action(a, run_dynamic(kind::json_schema, a), "JSON Schema x-on-fail");
  }
  expect_action(fail_action::fix, run_dynamic(kind::json_schema, fail_action::fix), "JSON Schema x-on-fail");
}

}  // namespace
