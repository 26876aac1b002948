// Coerce level: an object or a list where the schema wants a string is read as the text it was
// written as in the reply (its source text, not a re-serialization), at any depth, by the typed and
// the runtime-schema decoders alike; never below the coerce level, never for a string given a
// string, never where an object is wanted.
#include <covenant/read/decode.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/read/lenient.hpp>
#include <covenant/runtime/schema_file.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "reading.hpp"

namespace object_as_text_test {

struct Meta {
  std::string model;
  int tokens = 0;
};

struct Component {
  std::string name;
  std::string props;
  std::vector<std::string> tags;
  std::optional<std::string> note;
};

struct Page {
  std::string title;
  std::vector<Component> components;
};

struct WithMeta {
  std::string name;
  Meta meta;
};

struct Either {
  std::variant<std::string, Meta> value;
};

}  // namespace object_as_text_test

namespace {

using covenant_test::reading::rendered;
using covenant_test::reading::coerced_notes;
using covenant_test::reading::read_typed;

using namespace object_as_text_test;

const covenant::schema_set& schemas() {
  static const covenant::schema_set set = covenant::schema_set::parse(R"(
    class Meta {
      model string
      tokens int
    }
    class Component {
      name string
      props string
      tags string[]
      note string?
    }
    class Page {
      title string
      components Component[]
    }
    class WithMeta {
      name string
      meta Meta
    }
    class Either {
      value string | Meta
    }
  )");
  return set;
}

covenant::read_result try_read_dynamic(std::string_view reply, const char* target,
                                       covenant::strictness level = covenant::strictness::coerce, bool partial = false) {
  return covenant_test::reading::read_against(reply, schemas().model(target), level, partial);
}

constexpr const char* unquoted_page = R"(Here is the page:
{
  title: Home,
  components: [
    {name: PostCard, props: {title: string, excerpt: string, onClick: () => void}, tags: [card]},
    {name: Filter, props: [sort: 'asc' | 'desc',  limit: number], tags: []}
  ]
}
Hope this helps.)";

TEST(CoerceObjectAsText, TheReaderRecordsWhereEachObjectAndListWasRead) {
  const std::string reply = "Here: {a: {b: 1}, c: [x, 'y'], d: {}} ok";
  const auto candidates = covenant::extract_candidates(reply);
  ASSERT_FALSE(candidates.empty());
  const covenant::candidate& c = candidates.front();
  EXPECT_EQ(c.json, R"({"a":{"b":1},"c":["x","y"],"d":{}})");
  std::vector<std::pair<std::string, std::string>> spans;  // JSON text start, source text
  for (const auto& s : c.spans) {
    EXPECT_TRUE(s.closed);
    spans.emplace_back(c.json.substr(s.json_offset, 4), reply.substr(s.source_offset, s.source_length));
  }
  EXPECT_EQ(spans, (std::vector<std::pair<std::string, std::string>>{
                       {R"({"a")", "{a: {b: 1}, c: [x, 'y'], d: {}}"},
                       {R"({"b")", "{b: 1}"},
                       {R"(["x")", "[x, 'y']"},
                       {"{}}", "{}"},
                   }));
  // A value that is strict JSON where it was found is its own text: no spans.
  const auto fenced = covenant::extract_candidates("```json\n{\"a\": {\"b\": 1}}\n```");
  ASSERT_FALSE(fenced.empty());
  EXPECT_EQ(fenced.front().kind, covenant::candidate_kind::fenced_block);
  EXPECT_TRUE(fenced.front().spans.empty());
  // A cut object: not closed; its span ends where the text does (whitespace left out).
  const std::string cut = "{a: 1, b: {c: 2, \n";
  const auto cut_candidates = covenant::extract_candidates(cut);
  ASSERT_FALSE(cut_candidates.empty());
  ASSERT_EQ(cut_candidates.front().spans.size(), 2u);
  EXPECT_FALSE(cut_candidates.front().spans[1].closed);
  EXPECT_EQ(cut.substr(cut_candidates.front().spans[1].source_offset, cut_candidates.front().spans[1].source_length),
            "{c: 2,");
}

TEST(CoerceObjectAsText, ANestedStringFieldGivenAnUnquotedObjectOrListIsItsSourceText) {
  const auto r = read_typed<Page>(unquoted_page);
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  ASSERT_EQ(r.value->components.size(), 2u);
  EXPECT_EQ(r.value->components[0].props, "{title: string, excerpt: string, onClick: () => void}");
  EXPECT_EQ(r.value->components[1].props, "[sort: 'asc' | 'desc',  limit: number]");
  EXPECT_EQ(coerced_notes(r.notes), (std::vector<std::string>{
                                        "coerced at components[0].props: an object read as its text",
                                        "coerced at components[1].props: a list read as its text",
                                    }));

  const auto d = try_read_dynamic(unquoted_page, "Page");
  ASSERT_TRUE(d.ok()) << rendered(d.issues);
  EXPECT_EQ(d.value.at("components").at(0).at("props").as_string(),
            "{title: string, excerpt: string, onClick: () => void}");
  EXPECT_EQ(d.value.at("components").at(1).at("props").as_string(), "[sort: 'asc' | 'desc',  limit: number]");
  EXPECT_EQ(coerced_notes(d.notes), coerced_notes(r.notes));
}

TEST(CoerceObjectAsText, CommentsAndLineBreaksInsideAreKeptAsWritten) {
  const char* reply = "{name: x, props: {\n  a: 1, // the first\n  b: 'two'\n}, tags: []}";
  const char* expected = "{\n  a: 1, // the first\n  b: 'two'\n}";
  const auto r = read_typed<Component>(reply);
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_EQ(r.value->props, expected);
  const auto d = try_read_dynamic(reply, "Component");
  ASSERT_TRUE(d.ok()) << rendered(d.issues);
  EXPECT_EQ(d.value.at("props").as_string(), expected);
}

TEST(CoerceObjectAsText, StrictJsonIsItsJsonTextExactlyAsWritten) {
  const char* reply = R"({"name": "x", "props": {"a": 1,   "b": [1, 2]}, "tags": {"k":  "v"}, "note": [ ]})";
  const auto r = read_typed<Component>(reply);
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_EQ(r.value->props, R"({"a": 1,   "b": [1, 2]})");
  // a list of strings given an object: the object is its one item, as its text
  EXPECT_EQ(r.value->tags, std::vector<std::string>{R"({"k":  "v"})"});
  EXPECT_EQ(r.value->note, "[ ]");
  covenant::decode_options coerce;
  coerce.coerce = true;
  const auto direct = covenant::try_decode<Component>(reply, coerce);
  ASSERT_TRUE(direct.ok()) << rendered(direct.issues);
  EXPECT_EQ(direct.value->props, r.value->props);

  const auto d = try_read_dynamic(reply, "Component");
  ASSERT_TRUE(d.ok()) << rendered(d.issues);
  EXPECT_EQ(d.value.at("props").as_string(), R"({"a": 1,   "b": [1, 2]})");
  EXPECT_EQ(d.value.at("tags").at(0).as_string(), R"({"k":  "v"})");
  EXPECT_EQ(d.value.at("note").as_string(), "[ ]");
}

TEST(CoerceObjectAsText, AFencedBlockOfStrictJsonIsItsTextAsWritten) {
  const char* reply = "Sure:\n```json\n{\"name\": \"x\",\n \"props\": {\"a\":  1},\n \"tags\": []}\n```\n";
  const auto r = read_typed<Component>(reply);
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_EQ(r.value->props, R"({"a":  1})");
  const auto d = try_read_dynamic(reply, "Component");
  ASSERT_TRUE(d.ok()) << rendered(d.issues);
  EXPECT_EQ(d.value.at("props").as_string(), R"({"a":  1})");
}

TEST(CoerceObjectAsText, TheWholeReplyForAStringIsItsText) {
  const char* reply = "{hi: 'hello',  there: 1}";
  const auto r = read_typed<std::string>(reply);
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_EQ(*r.value, reply);
  const auto strict = read_typed<std::string>(R"({"hi":  "hello"})");
  ASSERT_TRUE(strict.ok()) << rendered(strict.issues);
  EXPECT_EQ(*strict.value, R"({"hi":  "hello"})");
}

TEST(CoerceObjectAsText, NotBelowTheCoerceLevel) {
  for (const auto level : {covenant::strictness::strict, covenant::strictness::repair}) {
    const auto r = read_typed<Page>(unquoted_page, level);
    EXPECT_FALSE(r.ok()) << covenant::to_string(level);
    const auto d = try_read_dynamic(unquoted_page, "Page", level);
    EXPECT_FALSE(d.ok()) << covenant::to_string(level);
  }
  const char* valid = R"({"name": "x", "props": {"a": 1}, "tags": []})";
  const auto r = read_typed<Component>(valid, covenant::strictness::repair);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.issues[0].path.to_string(), "props");
  EXPECT_EQ(r.issues[0].code, covenant::issue_code::type_mismatch);
  const auto strict = covenant::try_decode<Component>(valid);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.issues[0].path.to_string(), "props");
}

TEST(CoerceObjectAsText, AStringHoldingJsonTextStaysThatString) {
  for (const char* reply : {R"({"name": "x", "props": "{\"a\":  1}", "tags": ["[1, 2]"]})",
                            R"({name: x, props: '{"a":  1}', tags: ['[1, 2]']})"}) {
    const auto r = read_typed<Component>(reply);
    ASSERT_TRUE(r.ok()) << reply << "\n" << rendered(r.issues);
    EXPECT_EQ(r.value->props, R"({"a":  1})");
    EXPECT_EQ(r.value->tags, std::vector<std::string>{"[1, 2]"});
    EXPECT_TRUE(coerced_notes(r.notes).empty()) << reply;
    const auto d = try_read_dynamic(reply, "Component");
    ASSERT_TRUE(d.ok()) << reply << "\n" << rendered(d.issues);
    EXPECT_EQ(d.value.at("props").as_string(), R"({"a":  1})");
    EXPECT_TRUE(coerced_notes(d.notes).empty()) << reply;
  }
}

TEST(CoerceObjectAsText, AFieldThatWantsAnObjectReadsTheObject) {
  const char* reply = "{name: x, meta: {model: gpt-4o, tokens: 12}}";
  const auto r = read_typed<WithMeta>(reply);
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_EQ(r.value->meta.model, "gpt-4o");
  EXPECT_EQ(r.value->meta.tokens, 12);
  EXPECT_TRUE(coerced_notes(r.notes).empty());
  const auto d = try_read_dynamic(reply, "WithMeta");
  ASSERT_TRUE(d.ok()) << rendered(d.issues);
  EXPECT_EQ(d.value.at("meta").at("tokens").as_int64(), 12);
  EXPECT_TRUE(coerced_notes(d.notes).empty());
}

TEST(CoerceObjectAsText, AUnionReadsItsTextOnlyWhenNoOtherAlternativeFits) {
  // Meta fits, with a coercion: it wins over the string alternative, listed first.
  const char* fits = R"({value: {model: x, tokens: "12"}})";
  const auto r = read_typed<Either>(fits);
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  ASSERT_EQ(r.value->value.index(), 1u);
  EXPECT_EQ(std::get<1>(r.value->value).tokens, 12);
  const auto d = try_read_dynamic(fits, "Either");
  ASSERT_TRUE(d.ok()) << rendered(d.issues);
  EXPECT_EQ(d.value.at("value").at("tokens").as_int64(), 12);

  // Meta does not fit: the text.
  const char* other = R"({value: {colour: blue}})";
  const auto t = read_typed<Either>(other);
  ASSERT_TRUE(t.ok()) << rendered(t.issues);
  ASSERT_EQ(t.value->value.index(), 0u);
  EXPECT_EQ(std::get<0>(t.value->value), "{colour: blue}");
  EXPECT_EQ(coerced_notes(t.notes), std::vector<std::string>{"coerced at value: an object read as its text"});
  const auto dt = try_read_dynamic(other, "Either");
  ASSERT_TRUE(dt.ok()) << rendered(dt.issues);
  EXPECT_EQ(dt.value.at("value").as_string(), "{colour: blue}");
  EXPECT_EQ(coerced_notes(dt.notes), coerced_notes(t.notes));
}

TEST(CoerceObjectAsText, AnObjectCutByTheEndOfAFinalReplyIsNotText) {
  const char* reply = "{name: x, tags: [], props: {a: 1, b: 'two";
  const auto r = read_typed<Component>(reply);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.issues[0].path.to_string(), "props") << rendered(r.issues);
  const auto d = try_read_dynamic(reply, "Component");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.issues[0].path.to_string(), "props") << rendered(d.issues);

  // While the reply is still being written, the text so far.
  const auto partial = try_read_dynamic(reply, "Component", covenant::strictness::coerce, true);
  ASSERT_TRUE(partial.ok()) << rendered(partial.issues);
  EXPECT_EQ(partial.value.at("props").as_string(), "{a: 1, b: 'two");
}

TEST(CoerceObjectAsText, ItemsBeforeADroppedUnfinishedItemKeepTheirText) {
  const char* reply = "{title: t, components: [{name: a, props: {x:  1}, tags: []}, {name: b, props: {y:";
  const auto r = read_typed<Page>(reply);
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  ASSERT_EQ(r.value->components.size(), 1u);
  EXPECT_EQ(r.value->components[0].props, "{x:  1}");
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const covenant::note& n) {
    return n.kind == covenant::note_kind::truncated && n.detail.starts_with("dropped the unfinished last item");
  }));
  const auto d = try_read_dynamic(reply, "Page");
  ASSERT_TRUE(d.ok()) << rendered(d.issues);
  ASSERT_EQ(d.value.at("components").as_array().size(), 1u);
  EXPECT_EQ(d.value.at("components").at(0).at("props").as_string(), "{x:  1}");
}

TEST(CoerceObjectAsText, JsonReadFromInsideAStringIsItsJsonText) {
  // A value read from a string that holds JSON text has no text of its own in the reply: an
  // object in it is read as its (repaired, compact) JSON text.
  const char* reply = R"("{\"title\": \"t\", \"components\": [{\"name\": \"x\", \"props\": {a:  1}, \"tags\": []}]}")";
  const auto r = read_typed<Page>(reply);
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  ASSERT_EQ(r.value->components.size(), 1u);
  EXPECT_EQ(r.value->components[0].props, R"({"a":1})");
  const auto d = try_read_dynamic(reply, "Page");
  ASSERT_TRUE(d.ok()) << rendered(d.issues);
  EXPECT_EQ(d.value.at("components").at(0).at("props").as_string(), R"({"a":1})");
}

}  // namespace
