// A reply cut off inside the last item of a list: the item is dropped when it does not read (a
// required field missing), like an unfinished string is, and the rest is judged on its own.
#include <covenant/contract/contract.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/testing/testing.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reading.hpp"

namespace unfinished_item_test {

struct Doc {
  std::string text;
};

struct Person {
  std::string name;
  int age = 0;
};

struct People {
  std::vector<Person> people;
  std::string source;
};

struct Extract {
  static constexpr std::string_view prompt = "List the people in the text.";
  People forward(const Doc&, const covenant::outcome<People>& o) const { return o.result.value_or(People{}); }
};

}  // namespace unfinished_item_test

namespace {

using covenant_test::reading::rendered;

using namespace unfinished_item_test;
using covenant::testing::instant;
using covenant::testing::scripted_engine;

bool has_note(const covenant::note_list& notes, covenant::note_kind kind, std::string_view path,
              std::string_view starts) {
  for (const auto& n : notes)
    if (n.kind == kind && n.path.to_string() == path && n.detail.rfind(starts, 0) == 0) return true;
  return false;
}

std::string all(const covenant::note_list& notes) {
  std::string s;
  for (const auto& n : notes) s += n.to_string() + "\n";
  return s;
}

TEST(UnfinishedItem, TypedTheCutItemIsDroppedAndTheRestKept) {
  // The cut removes the unfinished age, so the last person misses a required field.
  scripted_engine model{R"({"source": "register", "people": [{"name": "Ada", "age": 36}, {"name": "Alan", "ag)"};
  covenant::contract<Extract> c{model, instant({.tries = 0})};
  auto r = c.run(Doc{"..."});
  ASSERT_TRUE(r.outcome.success) << covenant::render_feedback(r.outcome.attempts.back().issues);
  ASSERT_EQ(r.value.people.size(), 1u);
  EXPECT_EQ(r.value.people[0].name, "Ada");
  EXPECT_EQ(r.value.source, "register");
  const auto& notes = r.outcome.attempts.back().notes;
  EXPECT_TRUE(has_note(notes, covenant::note_kind::truncated, "people[1]",
                       "dropped the unfinished last item, which does not read: people[1].age"))
      << all(notes);
}

TEST(UnfinishedItem, ACutItemThatReadsIsKept) {
  // Only the optional text after the last complete field was cut: the item reads, it stays.
  scripted_engine model{R"({"source": "register", "people": [{"name": "Ada", "age": 36}, {"age": 41, "name": "Alan")"};
  covenant::contract<Extract> c{model, instant({.tries = 0})};
  auto r = c.run(Doc{"..."});
  ASSERT_TRUE(r.outcome.success);
  ASSERT_EQ(r.value.people.size(), 2u);
  EXPECT_EQ(r.value.people[1].name, "Alan");
}

TEST(UnfinishedItem, AFinishedItemWithAnIssueIsNeverDropped) {
  // The reply is cut after the list: its items are finished, the missing age stays an issue.
  scripted_engine model{R"({"people": [{"name": "Ada", "age": 36}, {"name": "Alan"}], "source": "regi)"};
  covenant::contract<Extract> c{model, instant({.tries = 0})};
  auto r = c.run(Doc{"..."});
  ASSERT_FALSE(r.outcome.success);
  const auto& issues = r.outcome.attempts.back().issues;
  ASSERT_FALSE(issues.empty());
  bool age = false;
  for (const auto& i : issues) age = age || i.path.to_string() == "people[1].age";
  EXPECT_TRUE(age) << rendered(issues);
}

const covenant::schema::model& people_model() {
  static const covenant::schema::model m = covenant::schema_set::parse(R"(
    class Part {
      id int
      label string
    }
    class Person {
      name string
      age int
      parts Part[]
    }
    class People {
      people Person[] @assert({{ this|length >= 2 }})
    }
  )").model("People");
  return m;
}

TEST(UnfinishedItem, DynamicInnermostItemFirst) {
  // Cut inside the second part of the second person: that part misses its label and goes; the
  // person reads without it and stays.
  const auto r = covenant::try_read_dynamic(
      R"({"people": [{"name": "Ada", "age": 36, "parts": []}, {"name": "Alan", "age": 41, "parts": [{"id": 1, "label": "a"}, {"id": 2, "lab)",
      people_model());
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  ASSERT_EQ(r.value.at("people").as_array().size(), 2u);
  EXPECT_EQ(r.value.at("people").at(1).at("parts").as_array().size(), 1u);
  EXPECT_TRUE(has_note(r.notes, covenant::note_kind::truncated, "people[1].parts[1]", "dropped the unfinished last item"))
      << all(r.notes);
}

TEST(UnfinishedItem, DynamicTheListBoundsStillApply) {
  // Dropping the cut person leaves one: the list's own minimum is the issue now.
  const auto r = covenant::try_read_dynamic(
      R"({"people": [{"name": "Ada", "age": 36, "parts": []}, {"name": "Alan", "ag)", people_model());
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.issues.size(), 1u) << rendered(r.issues);
  EXPECT_EQ(r.issues[0].path.to_string(), "people");
  EXPECT_TRUE(has_note(r.notes, covenant::note_kind::truncated, "people[1]", "dropped the unfinished last item"))
      << all(r.notes);
}

TEST(UnfinishedItem, PartialModeKeepsTheItemAsItStreams) {
  covenant::read_options o;
  o.partial = true;
  const auto r = covenant::try_read_dynamic(
      R"({"people": [{"name": "Ada", "age": 36, "parts": []}, {"name": "Alan", "ag)", people_model(), o);
  ASSERT_TRUE(r.value.is_object());
  ASSERT_EQ(r.value.at("people").as_array().size(), 2u);
  EXPECT_EQ(r.value.at("people").at(1).at("name").as_string(), "Alan");
}

}  // namespace
