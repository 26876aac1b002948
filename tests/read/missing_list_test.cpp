// Coerce level: a required list field that the reply does not have is read as an empty list, with
// a note, by the typed and the runtime-schema decoders alike; never below the coerce level, never
// for a list with bounds of its own, never when the reply was cut off (the missing list may be the
// one that was cut), never in partial mode (it may be written later).
#include <covenant/read/decode.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/read/lenient.hpp>
#include <covenant/runtime/schema_file.hpp>

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "reading.hpp"

namespace missing_list_test {

struct Tag {
  std::string name;
};

struct Note {
  std::string title;
  std::vector<std::string> children;
  std::vector<Tag> tags;
};

struct Bounded {
  std::string title;
  std::vector<std::string> sources;
};

}  // namespace missing_list_test

template <>
struct covenant::describe<missing_list_test::Bounded> {
  static constexpr auto fields = covenant::fields<missing_list_test::Bounded>(
      covenant::field<&missing_list_test::Bounded::title>("The title."),
      covenant::field<&missing_list_test::Bounded::sources>("Where it comes from.", covenant::min_items{1}));
};

namespace {

using covenant_test::reading::rendered;
using covenant_test::reading::coerced_notes;
using covenant_test::reading::read_typed;

using namespace missing_list_test;

const covenant::schema_set& schemas() {
  static const covenant::schema_set set = covenant::schema_set::parse(R"(
    class Tag {
      name string
    }
    class Note {
      title string
      children string[]
      tags Tag[]
    }
    class Bounded {
      title string
      sources string[] @assert({{ this|length >= 1 }})
    }
  )");
  return set;
}

covenant::read_result try_read_dynamic(std::string_view reply, const char* target,
                                       covenant::strictness level = covenant::strictness::coerce, bool partial = false) {
  return covenant_test::reading::read_against(reply, schemas().model(target), level, partial);
}

TEST(MissingList, ARequiredListThatIsNotThereIsReadAsEmptyWithANote) {
  const char* reply = R"({"title": "Groceries", "tags": [{"name": "home"}]})";
  const auto r = read_typed<Note>(reply);
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_TRUE(r.value->children.empty());
  ASSERT_EQ(r.value->tags.size(), 1u);
  EXPECT_EQ(coerced_notes(r.notes), std::vector<std::string>{"coerced at children: missing list read as empty"});

  const auto d = try_read_dynamic(reply, "Note");
  ASSERT_TRUE(d.ok()) << rendered(d.issues);
  EXPECT_TRUE(d.value.at("children").as_array().empty());
  EXPECT_EQ(coerced_notes(d.notes), coerced_notes(r.notes));
}

TEST(MissingList, AlsoInAMalformedReply) {
  const char* reply = "Here you go:\n```json\n{title: 'Groceries', tags: [{name: 'home'},],}\n```";
  const auto r = read_typed<Note>(reply);
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_TRUE(r.value->children.empty());
  const auto d = try_read_dynamic(reply, "Note");
  ASSERT_TRUE(d.ok()) << rendered(d.issues);
  EXPECT_TRUE(d.value.at("children").as_array().empty());
}

TEST(MissingList, BelowTheCoerceLevelItIsAMissingField) {
  const char* reply = R"({"title": "Groceries", "tags": []})";
  for (const auto level : {covenant::strictness::strict, covenant::strictness::repair}) {
    const auto r = read_typed<Note>(reply, level);
    EXPECT_EQ(rendered(r.issues), "children: required field is missing\n");
    const auto d = try_read_dynamic(reply, "Note", level);
    EXPECT_EQ(rendered(d.issues), "children: required field is missing\n");
  }
  // The decoder itself, without coercions.
  EXPECT_EQ(rendered(covenant::try_decode<Note>(reply).issues), "children: required field is missing\n");
}

TEST(MissingList, AListWithBoundsOfItsOwnIsStillMissing) {
  const char* reply = R"({"title": "Report"})";
  const auto r = read_typed<Bounded>(reply);
  EXPECT_EQ(rendered(r.issues), "sources: required field is missing\n");
  const auto d = try_read_dynamic(reply, "Bounded");
  EXPECT_EQ(rendered(d.issues), "sources: required field is missing\n");
}

TEST(MissingList, AListCutOffAtTheEndOfTheReplyIsNotReadAsEmpty) {
  // The reply stopped where `children` was about to be written: the field stays missing, so the
  // contract asks again instead of accepting an empty list.
  for (const char* reply : {R"({"title": "Groceries", "tags": [], "children": )", R"({"title": "Groceries", "tags": [], "chil)"}) {
    const auto r = read_typed<Note>(reply);
    EXPECT_EQ(rendered(r.issues), "children: required field is missing\n") << reply;
    const auto d = try_read_dynamic(reply, "Note");
    EXPECT_EQ(rendered(d.issues), "children: required field is missing\n") << reply;
  }
  // A list cut inside keeps what was finished (the unfinished item is dropped, as always).
  const auto r = read_typed<Note>(R"({"title": "Groceries", "tags": [], "children": ["milk", "br)");
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_EQ(r.value->children, std::vector<std::string>{"milk"});
}

TEST(MissingList, InPartialModeItIsNotWrittenYet) {
  const auto d = try_read_dynamic(R"({"title": "Groceries", "tags": [)", "Note", covenant::strictness::coerce, true);
  ASSERT_TRUE(d.value.is_object());
  EXPECT_FALSE(d.value.as_object().contains("children"));
  EXPECT_TRUE(coerced_notes(d.notes).empty());
}

}  // namespace
