#include <covenant/read/decode.hpp>
#include <covenant/read/lenient.hpp>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "../../examples/models/final_answer.hpp"

#define LDQ "\xE2\x80\x9C"  // “
#define RDQ "\xE2\x80\x9D"  // ”
#define LSQ "\xE2\x80\x98"  // ‘
#define RSQ "\xE2\x80\x99"  // ’

namespace {

using covenant::candidate;
using covenant::candidate_kind;
using covenant::extract_candidates;
using covenant::lenient_options;
using covenant::note_kind;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool strict_json(const std::string& text) {
  boost::json::parse_options po;
  po.max_depth = 4096;
  boost::system::error_code ec;
  boost::json::parse(text, ec, {}, po);
  return !ec;
}

lenient_options partial_mode() {
  lenient_options o;
  o.partial = true;
  return o;
}

// The first candidate, which must exist.
candidate first(std::string_view text, const lenient_options& o = {}) {
  auto c = extract_candidates(text, o);
  if (c.empty()) {
    ADD_FAILURE() << "no candidate for: " << text;
    return {};
  }
  return c.front();
}

std::string first_json(std::string_view text, const lenient_options& o = {}) { return first(text, o).json; }

// "kind at path: detail" of every note, one per line.
std::string notes_of(const candidate& c) {
  std::string out;
  for (const auto& n : c.notes) out += n.to_string() + "\n";
  return out;
}

bool has_note(const candidate& c, note_kind kind, std::string_view path, std::string_view detail_part) {
  for (const auto& n : c.notes)
    if (n.kind == kind && n.path.to_string() == path && n.detail.find(detail_part) != std::string::npos) return true;
  return false;
}

// ---- fast path and strict level ------------------------------------------------------------

TEST(Lenient, LooksLikeStrictJsonIsTrueForEveryJsonShape) {
  for (const char* t : {"{}", " {\"a\": [1, 2]}\n", "[]", "\"x\"", "0", "-1.5e3", "true", "false", "null", "\t12 "})
    EXPECT_TRUE(covenant::looks_like_strict_json(t)) << t;
  for (const char* t : {"", "   ", "Sure! {\"a\": 1}", "```json\n{}\n```", "{\"a\": \"cut", "[1, 2", "'x'", "True", "\""})
    EXPECT_FALSE(covenant::looks_like_strict_json(t)) << t;
}

TEST(Lenient, StrictJsonComesBackUnchangedInMeaningWithoutNotes) {
  const char* text = R"({"a": [1, 2.5e3, -0, "x\"y\\u00e9\n"], "b": {"c": null, "d": true}, "e": ""})";
  const auto c = first(text);
  EXPECT_EQ(c.kind, candidate_kind::whole_text);
  EXPECT_EQ(c.origin, "whole text");
  EXPECT_TRUE(c.notes.empty()) << notes_of(c);
  EXPECT_FALSE(c.truncated);
  EXPECT_EQ(c.json, R"({"a":[1,2.5e3,-0,"x\"y\\u00e9\n"],"b":{"c":null,"d":true},"e":""})");
  EXPECT_EQ(boost::json::parse(c.json), boost::json::parse(text));
}

TEST(Lenient, StrictLevelOffersTheTextUnchanged) {
  lenient_options o;
  o.level = covenant::strictness::strict;
  const auto c = extract_candidates("Sure: {'a': 1,}", o);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].json, "Sure: {'a': 1,}");
  EXPECT_TRUE(c[0].notes.empty());
}

// ---- candidates ------------------------------------------------------------------------------

TEST(Lenient, FencedBlockWithLanguageTag) {
  const auto c = first("Sure! Here it is:\n\n```json\n{\"a\": 1}\n```\nAnything else?");
  EXPECT_EQ(c.kind, candidate_kind::fenced_block);
  EXPECT_EQ(c.origin, "fenced block 1 (json)");
  EXPECT_EQ(c.json, R"({"a": 1})");  // strict JSON already: copied as written
  ASSERT_EQ(c.notes.size(), 1u) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::extracted, "", "fenced block 1 (json)")) << notes_of(c);
  EXPECT_EQ(first_json("```json\n{'a': 1,}\n```"), R"({"a":1})");  // repaired: compact
}

TEST(Lenient, FencedStrictJsonIsCopiedAsWrittenWhateverItHolds) {
  const auto block = [](const std::string& json) { return first_json("Here:\n```json\n" + json + "\n```\n"); };
  // strict JSON: as written (whitespace, escapes, \u escapes, nesting past 64 levels)
  for (const std::string& json :
       {std::string(R"({ "a" : [ 1 , -2.5e+3 , 0.5E-2 , true , false , null , "x\n\"y\/" ] , "" : { } })"),
        std::string(R"([ [ ] , { } , "\u00e9 \ud83d\ude00" , "é" ])"), std::string(R"({"k\t": [[["deep"]]]})"),
        std::string(70, '[') + std::string(70, ']'), std::string("[0, -0, 10, 1e5]")}) {
    EXPECT_EQ(block(json), json);
  }
  // a one-element array: as written, then its object
  const auto c = extract_candidates("```json\n[ {\"a\": [1, {\"b\": 2}]} ]\n```");
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0].json, R"([ {"a": [1, {"b": 2}]} ])");
  EXPECT_EQ(c[1].json, R"({"a": [1, {"b": 2}]})");
  EXPECT_EQ(c[1].kind, candidate_kind::array_element);
  const auto two = extract_candidates("```json\n[{\"a\": 1}, 2]\n```");
  ASSERT_GE(two.size(), 1u);
  EXPECT_EQ(two[0].json, R"([{"a": 1}, 2])");
  EXPECT_TRUE(two.size() < 2 || two[1].kind != candidate_kind::array_element);
  // not strict JSON: repaired, written compactly
  EXPECT_EQ(block("[01, 2]"), "[1,2]");
  EXPECT_EQ(block("[1 2]"), "[1,2]");
  EXPECT_EQ(block("[1., 2]"), "[1,2]");
  EXPECT_EQ(block("{\"a\": tru}"), R"({"a":"tru"})");
  EXPECT_EQ(block("[\"a\\x41\"]"), R"(["aA"])");
  EXPECT_EQ(block("[\"a\tb\"]"), R"(["a\tb"])");
  EXPECT_EQ(block("[1e99999]"), "[0.1e9999]");
  EXPECT_EQ(block("[\"1e123456\" ]"), R"(["1e123456"])");  // looks like a huge exponent: repaired path
}

TEST(Lenient, FencedBlocksWithoutTagIndentedAndUnclosed) {
  auto c = extract_candidates("text\n```\n[1, 2]\n```\nmore\n    ```json\n    {\"b\": 2}\n");
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0].origin, "fenced block 1");
  EXPECT_EQ(c[0].json, "[1, 2]");
  EXPECT_EQ(c[1].origin, "fenced block 2 (json)");
  EXPECT_EQ(c[1].json, R"({"b": 2})");
}

TEST(Lenient, TripleBackticksInsideAJsonValueDoNotCloseTheFence) {
  const auto c = first("```json\n{\n  \"code\": ```\n  x = {}\n```,\n  \"type\": \"code\",\n}\n```\n");
  EXPECT_EQ(c.origin, "fenced block 1 (json)");
  EXPECT_EQ(c.json, R"({"code":"x = {}","type":"code"})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "code", "read ``` block as a string")) << notes_of(c);
}

TEST(Lenient, ObjectsAndArraysInProseInOrder) {
  auto c = extract_candidates("The result is {\"key\": \"value1\"} and also\nthis: [1, 2] and {\"key\": \"value2\"}.");
  ASSERT_GE(c.size(), 4u);
  EXPECT_EQ(c[0].json, R"({"key":"value1"})");
  EXPECT_EQ(c[0].kind, candidate_kind::in_prose);
  EXPECT_EQ(c[0].origin, "object in prose at line 1");
  EXPECT_EQ(c[1].json, "[1,2]");
  EXPECT_EQ(c[1].origin, "array in prose at line 2");
  EXPECT_EQ(c[2].json, R"({"key":"value2"})");
  // every object of the text, as one array
  EXPECT_EQ(c[3].kind, candidate_kind::all_values);
  EXPECT_EQ(c[3].json, R"([{"key":"value1"},{"key":"value2"}])");
}

TEST(Lenient, BracesInProseDoNotHideTheValue) {
  auto c = extract_candidates("Hello {{playername}\n\nJSON Output:\n  {\n    \"id\": \"{{hi} there\"\n  }\n");
  bool found = false;
  for (const auto& x : c) found = found || x.json == R"({"id":"{{hi} there"})";
  EXPECT_TRUE(found);
  // a markdown link is not an array
  for (const auto& x : extract_candidates("See [the docs](https://x.y) for {\"a\": 1}")) EXPECT_NE(x.json, R"(["the docs"])");
}

TEST(Lenient, ValueAfterAReasoningBlockComesFirst) {
  auto c = extract_candidates("<think>\nMaybe {\"answer\": \"draft\"}?\n</think>\n{\"answer\": \"final\"}");
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0].kind, candidate_kind::after_reasoning);
  EXPECT_EQ(c[0].origin, "after </think>");
  EXPECT_EQ(c[0].json, R"({"answer": "final"})");
  EXPECT_EQ(c[1].json, R"({"answer":"draft"})");
  EXPECT_EQ(c[1].origin, "object in prose at line 2 inside <think>");

  // a closing tag without an opening one, and <thinking>
  EXPECT_EQ(first_json("reasoning...</thinking>\n```json\n[1]\n```"), "[1]");
  // an unclosed block: what is inside is still read
  auto u = extract_candidates("<think>\nI will answer {\"a\": 1}");
  ASSERT_FALSE(u.empty());
  EXPECT_EQ(u[0].json, R"({"a":1})");
  EXPECT_EQ(u[0].origin, "object in prose at line 2 inside unclosed <think>");
}

TEST(Lenient, ReasoningTagsInsideAJsonValueAreText) {
  // found by the fuzzer: a valid JSON string mentioning a tag was split at it
  EXPECT_EQ(first("\"{\\\"ne<thinking>, e\"").json, "\"{\\\"ne<thinking>, e\"");
  const auto c = first(R"({"note": "after </think> comes the answer", "n": 1})");
  EXPECT_EQ(c.kind, candidate_kind::whole_text);
  EXPECT_EQ(c.json, R"({"note":"after </think> comes the answer","n":1})");
}

TEST(Lenient, JsonInsideAJsonString) {
  auto c = extract_candidates(R"("{\"a\": 1, \"b\": [true]}")");
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0].json, R"("{\"a\": 1, \"b\": [true]}")");
  EXPECT_EQ(c[1].kind, candidate_kind::string_encoded);
  EXPECT_EQ(c[1].json, R"({"a":1,"b":[true]})");
  EXPECT_EQ(c[1].origin, "JSON inside the string of whole text");
  EXPECT_TRUE(has_note(c[1], note_kind::extracted, "", "JSON text inside the string"));
}

TEST(Lenient, OneElementArrayOffersTheObjectInside) {
  auto c = extract_candidates("[{'answer': 'x',}]");
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0].json, R"([{"answer":"x"}])");
  EXPECT_TRUE(has_note(c[0], note_kind::repaired, "[0]", "removed trailing comma")) << notes_of(c[0]);
  EXPECT_EQ(c[1].kind, candidate_kind::array_element);
  EXPECT_EQ(c[1].json, R"({"answer":"x"})");
  EXPECT_EQ(c[1].origin, "only element of whole text");
  // the notes now speak of the object's own paths
  EXPECT_TRUE(has_note(c[1], note_kind::repaired, "", "replaced single quotes with double quotes (1 key, 1 value)"))
      << notes_of(c[1]);
  EXPECT_TRUE(has_note(c[1], note_kind::repaired, "", "removed trailing comma")) << notes_of(c[1]);
}

TEST(Lenient, WholeTextAsAStringOnlyAtCoerceLevel) {
  auto c = extract_candidates("The answer is **True**");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, candidate_kind::scalar_text);
  EXPECT_EQ(c[0].json, R"("The answer is **True**")");
  lenient_options repair;
  repair.level = covenant::strictness::repair;
  EXPECT_TRUE(extract_candidates("The answer is **True**", repair).empty());
  // a bare literal is a value of its own
  EXPECT_EQ(first_json("True"), "true");
  EXPECT_EQ(first_json("None\n"), "null");
  EXPECT_EQ(first_json("  42 "), "42");
  EXPECT_EQ(first(" 12,111").kind, candidate_kind::scalar_text);
}

TEST(Lenient, CandidatesAreDeduplicatedAndBounded) {
  auto c = extract_candidates("```json\n{\"a\": 1}\n```\n```\n{\"a\":1}\n```\n{\"a\" : 1}");
  std::size_t same = 0;
  for (const auto& x : c) same += x.json == R"({"a":1})" ? 1 : 0;
  EXPECT_EQ(same, 1u);

  std::string many;
  for (int i = 0; i < 50; ++i) many += "{\"n\": " + std::to_string(i) + "} ";
  lenient_options o;
  o.max_candidates = 3;
  const auto x = covenant::extract(many, o);
  EXPECT_EQ(x.candidates.size(), 3u);
  EXPECT_TRUE(x.more_candidates);
  EXPECT_EQ(x.candidates[2].json, R"({"n":2})");
  o.max_candidates = 1;
  EXPECT_EQ(covenant::extract(many, o).candidates.size(), 1u);
}

// ---- repairs (each with its note and path) ---------------------------------------------------

TEST(Lenient, TrailingCommas) {
  const auto c = first("{\"sources\": [\"a\", \"b\",], \"m\": {\"x\": 1,},}");
  EXPECT_EQ(c.json, R"({"sources":["a","b"],"m":{"x":1}})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "sources", "removed trailing comma")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::repaired, "m", "removed trailing comma"));
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "removed trailing comma"));
  EXPECT_EQ(first_json("[1,,2]"), "[1,2]");
}

TEST(Lenient, SingleBacktickAndTypographicQuotes) {
  auto c = first("{'name': 'it\\'s', 'code': `print(\"hi\")`}");
  EXPECT_EQ(c.json, R"j({"name":"it's","code":"print(\"hi\")"})j");
  // the quote style is cosmetic: one note per object (or array) and kind, at its path
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "replaced single quotes with double quotes (2 keys, 1 value)"))
      << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "replaced backticks with double quotes (1 value)"));
  EXPECT_TRUE(has_note(c, note_kind::repaired, "name", "repaired invalid escapes"));  // \' is not JSON
  c = first("{" LDQ "name" RDQ ": " LDQ "Ada \"the first\"" RDQ ", " LSQ "b" RSQ ": " LSQ "don" RSQ "t" RSQ "}");
  EXPECT_EQ(c.json, "{\"name\":\"Ada \\\"the first\\\"\",\"b\":\"don" RSQ "t\"}");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "replaced typographic quotes with double quotes (2 keys, 2 values)"))
      << notes_of(c);
  c = first("{\"list\": ['a', 'b'], \"m\": {'k': 1}}");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "list", "replaced single quotes with double quotes (2 values)"));
  EXPECT_TRUE(has_note(c, note_kind::repaired, "m", "replaced single quotes with double quotes (1 key)"));
  // an apostrophe inside a single-quoted string is text
  EXPECT_EQ(first_json("['it's fine', 'x']"), R"(["it's fine","x"])");
}

TEST(Lenient, UnquotedAndEmphasisedKeys) {
  auto c = first("{answer: 1, **confidence**: 0.5, \"ok\": true, 5: \"n\", my key: 2}");
  EXPECT_EQ(c.json, R"({"answer":1,"confidence":0.5,"ok":true,"5":"n","my key":2})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "quoted 3 unquoted keys")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "removed markdown emphasis around 1 key"));
  EXPECT_EQ(c.notes.size(), 2u) << notes_of(c);
}

TEST(Lenient, UnquotedValuesWhereUnambiguous) {
  auto c = first("{\n  status: active,\n  description: Landing page, with list,\n  sig: f(a: int, b: str): void\n  tags: [red, dark blue],\n  route: /\n}");
  EXPECT_EQ(c.json,
            R"({"status":"active","description":"Landing page, with list","sig":"f(a: int, b: str): void","tags":["red","dark blue"],"route":"/"})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "status", "quoted unquoted text \"active\"")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::repaired, "tags[1]", "quoted unquoted text"));
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "inserted 1 missing comma"));  // after sig
  // a value running over lines, until the next key
  EXPECT_EQ(first_json("{b: hey world\n    so we can test,\n res: 1}"), R"({"b":"hey world\n    so we can test","res":1})");
  // numbers and literals followed by words are text
  EXPECT_EQ(first_json("{\"a\": 5 apples, \"b\": true love, \"c\": 87%}"), R"({"a":"5 apples","b":"true love","c":"87%"})");
}

TEST(Lenient, CommentsOutsideStrings) {
  auto c = first("{\n  // the url\n  \"url\": \"https://example.com/a//b\", /* note */ \"n\": 1 // end\n}");
  EXPECT_EQ(c.json, R"({"url":"https://example.com/a//b","n":1})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "removed 3 comments")) << notes_of(c);
  EXPECT_EQ(first_json("{url: https://example.com/x}"), R"({"url":"https://example.com/x"})");
}

TEST(Lenient, PythonLiteralsAndDictPrintouts) {
  auto c = first("{'a': True, 'b': False, 'c': None, 'd': [1, 'x'], 'e': 'don\\'t'}");
  EXPECT_EQ(c.json, R"({"a":true,"b":false,"c":null,"d":[1,"x"],"e":"don't"})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "a", "read True as true")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::repaired, "c", "read None as null"));
  EXPECT_TRUE(has_note(c, note_kind::repaired, "e", "invalid escapes"));
}

TEST(Lenient, TripleQuotedStringsAreDedented) {
  auto c = first("{\n  \"code\": \"\"\"\n      def main():\n        print(\"hi\")\n  \"\"\",\n  \"t\": '''a 'b' c'''\n}");
  EXPECT_EQ(c.json, R"j({"code":"def main():\n  print(\"hi\")","t":"a 'b' c"})j");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "code", "read triple-quoted string")) << notes_of(c);
}

TEST(Lenient, RawNewlinesInvalidEscapesAndUnescapedQuotesInStrings) {
  auto c = first("{\"a\": \"line 1\nline 2\", \"b\": \"C:\\dir \\x41\", \"c\": \"she said \"hi\", and \"bye\"\", \"d\": 1}");
  EXPECT_EQ(c.json, R"({"a":"line 1\nline 2","b":"C:\\dir A","c":"she said \"hi\", and \"bye\"","d":1})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "a", "escaped raw line breaks")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::repaired, "b", "invalid escapes"));
  EXPECT_TRUE(has_note(c, note_kind::repaired, "c", "escaped quotes inside string"));
  // a quote followed by something that can continue the JSON closes the string
  EXPECT_EQ(first_json(R"(["a "quoted" word", "b"])"), R"(["a \"quoted\" word","b"])");
  EXPECT_EQ(first_json("{\"code\": \"print(\"Hello, world!\")\"\n}"), R"j({"code":"print(\"Hello, world!\")"})j");
}

TEST(Lenient, MissingCommasBetweenMembersAndElements) {
  auto c = first("{\"a\": 1\n \"b\": \"x\"\n c: [1 2 \"3\"]}");
  EXPECT_EQ(c.json, R"({"a":1,"b":"x","c":[1,2,"3"]})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "inserted 2 missing commas")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::repaired, "c", "inserted 2 missing commas"));
}

TEST(Lenient, NumbersInJsonFiveAndGroupedSpellings) {
  auto c = first("{\"a\": +1, \"b\": .5, \"c\": 007, \"d\": -2,000.50, \"e\": 5., \"f\": [1,234]}");
  EXPECT_EQ(c.json, R"({"a":1,"b":0.5,"c":7,"d":-2000.50,"e":5,"f":[1,234]})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "d", "read number -2,000.50 as -2000.50")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::repaired, "a", "read number +1 as 1"));
}

TEST(Lenient, HugeExponentsAreRewrittenAsTheSameValue) {
  // found by the fuzzer: valid JSON, but past what common parsers accept (Boost.JSON: overflow)
  const auto c = first("[1, 66661e6666666666, -12.5e+000012345, 0.000123e-100000, 0.0e99999, 2.5e300]");
  EXPECT_EQ(c.json, "[1,0.66661e9999,-0.125e9999,0.123e-9999,0,2.5e300]");
  EXPECT_TRUE(strict_json(c.json));
  EXPECT_TRUE(has_note(c, note_kind::repaired, "[1]", "read number 66661e6666666666 as 0.66661e9999")) << notes_of(c);
  // also where strict JSON is otherwise copied as written (found by the fuzzer)
  EXPECT_EQ(first_json("```\n6666666666666e66666666766\n```"), "0.6666666666666e9999");
  EXPECT_EQ(first_json("```json\n{\"a\": 1e5, \"b\": \"e12345\"}\n```"), R"({"a": 1e5, "b": "e12345"})");
  // valid JSON too: the same value (infinite as a double), noted
  const auto v = first("66666666666666666666666661e66666\r\r");
  EXPECT_EQ(v.json, "0.66666666666666666666666661e9999");
  EXPECT_EQ(v.kind, candidate_kind::whole_text);
  EXPECT_EQ(v.notes.size(), 1u) << notes_of(v);
}

TEST(Lenient, MismatchedAndStrayBrackets) {
  auto c = first("{\"a\": [1, 2}");
  EXPECT_EQ(c.json, R"({"a":[1,2]})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "a", "inserted missing ]")) << notes_of(c);
  EXPECT_FALSE(c.truncated);
  c = first("{\"a\": 1], \"b\": [2])}");
  EXPECT_EQ(c.json, R"({"a":1,"b":[2]})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "removed stray ]")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "removed stray )"));
  EXPECT_EQ(c.notes.size(), 2u) << notes_of(c);
}

TEST(Lenient, GarbageInsideObjectsIsDroppedWithANote) {
  auto c = first("{\"type\": \"code\", \"code\": \"\"\"print(\"\"\"Hello, world!\"\"\")\"\"\"\n}");
  EXPECT_EQ(c.json, R"({"type":"code","code":"print("})");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "", "dropped unexpected text")) << notes_of(c);
}

TEST(Lenient, InvalidUtf8AndControlCharactersBecomeValidJson) {
  auto c = first("{\"a\": \"x\xff\x01y\", b: z\xc3}");
  EXPECT_TRUE(strict_json(c.json)) << c.json;
  EXPECT_EQ(c.json, "{\"a\":\"x\\ufffd\\u0001y\",\"b\":\"z\\ufffd\"}");
  EXPECT_TRUE(has_note(c, note_kind::repaired, "a", "invalid UTF-8")) << notes_of(c);
  EXPECT_TRUE(strict_json(first_json("\"\\ud800 \\udc00 \\ud83d\\ude00\"")));
}

// ---- truncation --------------------------------------------------------------------------------

TEST(Lenient, FinalModeDropsTheCutValueNeverCompletesIt) {
  const auto c = first("{\"answer\": \"yes\", \"model_used\": \"gpt-4o");
  EXPECT_EQ(c.json, R"({"answer":"yes"})");
  EXPECT_TRUE(c.truncated);
  EXPECT_EQ(c.json.find("gpt-4o"), std::string::npos);
  EXPECT_TRUE(has_note(c, note_kind::truncated, "model_used", "dropped unfinished string \"gpt-4o\"")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::truncated, "", "closed 1 bracket left open"));
}

TEST(Lenient, FinalModeDropsCutNumbersLiteralsItemsAndKeysWithoutValue) {
  EXPECT_EQ(first_json("{\"a\": 1, \"n\": 51"), R"({"a":1})");  // 51 may have been 512
  EXPECT_EQ(first_json("{\"a\": 1, \"n\": 51\n"), R"({"a":1,"n":51})");  // a line break ends it
  EXPECT_EQ(first_json("[1234, 5678"), "[1234]");
  EXPECT_EQ(first_json("{\"a\": 1, \"ok\": tr"), R"({"a":1})");
  EXPECT_EQ(first_json("{\"a\": 1, \"b\":"), R"({"a":1})");
  EXPECT_EQ(first_json("{\"a\": 1, \"b"), R"({"a":1})");
  EXPECT_EQ(first_json("{\"a\": 1, status: acti"), R"({"a":1})");
  EXPECT_EQ(first_json("[\"a\", \"b"), R"(["a"])");
  // complete fields and items are kept, open brackets closed, cut containers with nothing
  // complete are dropped
  const auto c = first("{\"a\": [1, 2], \"b\": {\"c\": true, \"d\": [\"x\", \"y\"], \"e\": {\"f\": \"cu");
  EXPECT_EQ(c.json, R"({"a":[1,2],"b":{"c":true,"d":["x","y"]}})");
  EXPECT_TRUE(has_note(c, note_kind::truncated, "b.e.f", "dropped unfinished string")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::truncated, "b.e", "dropped unfinished object"));
  EXPECT_TRUE(has_note(c, note_kind::truncated, "b", "closed 2 brackets left open"));
  EXPECT_EQ(first_json("[{\"name\": \"a\"}, {\"name\": \"add_rem"), R"([{"name":"a"}])");
}

TEST(Lenient, PartialModeKeepsTheUnfinishedValueAsIncomplete) {
  const auto o = partial_mode();
  auto c = first("{\"answer\": \"yes\", \"model_used\": \"gpt-4o", o);
  EXPECT_EQ(c.json, R"({"answer":"yes","model_used":"gpt-4o"})");
  EXPECT_TRUE(c.truncated);
  EXPECT_TRUE(has_note(c, note_kind::incomplete, "model_used", "unfinished string kept as \"gpt-4o\"")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::incomplete, "", "unfinished object"));

  EXPECT_EQ(first_json("{\"x\": \"caf\xC3", o), R"({"x":"caf"})");  // cut inside a character
  EXPECT_EQ(first_json("{\"a\": {\"b\": ", o), R"({"a":{}})");
  EXPECT_EQ(first_json("```json\n{\"Description\": \"Test", o), R"({"Description":"Test"})");
}

TEST(Lenient, PartialModeShowsANumberOnlyOnceItIsFinished) {
  const auto o = partial_mode();
  // `25` may still become `250`: left out, with a note, until something after it ends it
  auto c = first("{\"nums\": [1, 25", o);
  EXPECT_EQ(c.json, R"({"nums":[1]})");
  EXPECT_TRUE(has_note(c, note_kind::incomplete, "nums[1]", "dropped unfinished number")) << notes_of(c);
  EXPECT_TRUE(has_note(c, note_kind::incomplete, "nums", "unfinished array"));
  // whitespace alone does not end it (`10 000`, `10%` may follow), also in an object
  EXPECT_EQ(first_json("{\"nums\": [1, 25\n  ", o), R"({"nums":[1]})");
  EXPECT_EQ(first_json("{\"a\": \"x\", \"n\": 10 \n", o), R"({"a":"x"})");
  // a comma, a closing bracket or the next key does
  EXPECT_EQ(first_json("{\"nums\": [1, 25,", o), R"({"nums":[1,25]})");
  EXPECT_EQ(first_json("{\"nums\": [1, 25]", o), R"({"nums":[1,25]})");
  EXPECT_EQ(first_json("{n: 10\n m: \"a", o), R"({"n":10,"m":"a"})");
  // a number that is the whole reply is complete JSON, read as it is (as any complete JSON)
  for (const char* text : {"42", "42\r\r", "-1.5\n"}) {
    const auto cands = extract_candidates(text, o);
    ASSERT_FALSE(cands.empty()) << text;
    EXPECT_EQ(boost::json::parse(cands[0].json), boost::json::parse(text)) << cands[0].json;
    EXPECT_TRUE(cands[0].notes.empty()) << text;
  }
  // the final mode keeps a number that a line break ends, and drops one the text ends in
  EXPECT_EQ(first_json("{\"nums\": [1, 25\n  "), R"({"nums":[1,25]})");
  EXPECT_EQ(first_json("{\"nums\": [1, 25"), R"({"nums":[1]})");
  EXPECT_EQ(first_json("42"), "42");
  EXPECT_EQ(first_json("{\"x\": 1.5e", o), "{}");  // not a number yet
}

// ---- the malformed samples -------------------------------------------------------------------

std::string sample(const std::string& name) {
  return read_file(std::string(COVENANT_SHARED_DIR) + "/bench/python/samples/malformed/" + name);
}

TEST(Lenient, EachMalformedSampleYieldsACandidateFinalAnswerAccepts) {
  for (const char* name : {"fenced.txt", "fenced_bare.txt", "trailing_commas.txt", "single_quotes.txt",
                           "unquoted_keys.txt"}) {
    const std::string text = sample(name);
    if (text.empty()) GTEST_SKIP() << "shared samples absent";
    const auto cands = extract_candidates(text);
    ASSERT_FALSE(cands.empty()) << name;
    // the first candidate is the one
    const auto r = covenant::try_decode<models::FinalAnswer>(cands[0].json);
    ASSERT_TRUE(r) << name << ": " << covenant::render_feedback(r.issues) << "\n" << cands[0].json;
    EXPECT_FALSE(cands[0].truncated) << name;
    EXPECT_EQ(r.value->metadata->model_used, "gpt-4o-mini") << name;
    EXPECT_EQ(r.value->sources.size(), 2u) << name;
    EXPECT_EQ(r.value->metadata->token_usage->input_tokens, 512) << name;
  }
}

TEST(Lenient, TruncatedSampleLosesModelUsedAndSaysSo) {
  const std::string text = sample("truncated.txt");
  if (text.empty()) GTEST_SKIP() << "shared samples absent";
  const auto c = first(text);
  EXPECT_TRUE(c.truncated);
  EXPECT_TRUE(has_note(c, note_kind::truncated, "metadata.model_used", "dropped unfinished string \"gpt-4o\""))
      << notes_of(c);
  const auto r = covenant::try_decode<models::FinalAnswer>(c.json);
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  ASSERT_TRUE(r.value->metadata.has_value());
  EXPECT_EQ(r.value->metadata->timestamp, "2025-01-15T10:30:00Z");
  EXPECT_FALSE(r.value->metadata->model_used.has_value());
  EXPECT_EQ(r.value->reasoning, "Both sources agree on 330 m.");

  // streaming: the unfinished value is kept and marked
  const auto p = first(text, partial_mode());
  EXPECT_TRUE(has_note(p, note_kind::incomplete, "metadata.model_used", "gpt-4o")) << notes_of(p);
  const auto rp = covenant::try_decode<models::FinalAnswer>(p.json);
  ASSERT_TRUE(rp) << covenant::render_feedback(rp.issues);
  EXPECT_EQ(rp.value->metadata->model_used, "gpt-4o");
}

// ---- every candidate is strict JSON ----------------------------------------------------------

TEST(Lenient, EveryCandidateForEveryCorpusInputIsStrictJson) {
  const std::string corpus = read_file(std::string(COVENANT_SHARED_DIR) + "/conformance/baml/corpus.jsonl");
  if (corpus.empty()) GTEST_SKIP() << "BAML corpus absent";
  std::istringstream lines(corpus);
  std::string line;
  std::size_t cases = 0;
  std::size_t candidates = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const auto row = boost::json::parse(line).as_object();
    const std::string input(row.at("input").as_string());
    for (bool partial : {false, true}) {
      lenient_options o;
      o.partial = partial;
      for (const auto& c : extract_candidates(input, o)) {
        ++candidates;
        EXPECT_TRUE(strict_json(c.json)) << row.at("id").as_string() << (partial ? " (partial)" : "") << ":\n" << c.json;
      }
    }
    ++cases;
  }
  EXPECT_EQ(cases, 423u);
  EXPECT_GT(candidates, 800u);
}

// ---- bad input -------------------------------------------------------------------------------

TEST(Lenient, LimitsGiveClearProblems) {
  lenient_options o;
  o.max_input_bytes = 10;
  auto x = covenant::extract("{\"a\": \"long enough\"}", o);
  EXPECT_TRUE(x.candidates.empty());
  ASSERT_EQ(x.issues.size(), 1u);
  EXPECT_EQ(x.issues[0].message, "input is larger than the configured maximum size (20 > 10 bytes)");

  o = {};
  o.max_depth = 3;
  x = covenant::extract("[[[[1]]]]", o);
  ASSERT_FALSE(x.issues.empty());
  EXPECT_EQ(x.issues[0].message, "nesting deeper than 3 levels at line 1, column 4");
  EXPECT_EQ(x.issues[0].code, covenant::issue_code::parse_error);
  for (const auto& c : x.candidates) EXPECT_NE(c.kind, candidate_kind::whole_text);
  EXPECT_EQ(first_json("[[[1]]]", o), "[[[1]]]");
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

TEST(Lenient, PathologicalInputsFinishQuicklyWithStrictJson) {
  const std::size_t n = 1 << 20;
  auto repeat = [&](std::string head, const std::string& unit) {
    while (head.size() < n) head += unit;
    return head;
  };
  const std::vector<std::pair<const char*, std::string>> inputs = {
      {"1 MB of [", std::string(n, '[')},
      {"1 MB of {", std::string(n, '{')},
      {"{\"a\": repeated", repeat("", "{\"a\":")},
      {"{a: repeated", repeat("", "{a:")},
      {"1 MB of \"", std::string(n, '"')},
      {"1 MB of '", std::string(n, '\'')},
      {"100k backticks", std::string(100000, '`')},
      {"``` lines", repeat("", "```\n")},
      {"``` values", repeat("{", "a: ```x\n")},
      {"unbalanced quotes", repeat("{\"a\": \"", "x\", ")},
      {"quotes and commas", repeat("[", "\"a\" , ")},
      {"unquoted commas", repeat("{\"a\": ", "x, ")},
      {"quotes and comments", repeat("{\"a\": \"x", "\" /* \"")},
      {"line breaks in garbage", "{\"a\": 1 garbage" + std::string(n, '\n') + "x"},
      {"mismatched brackets", repeat("", "{]")},
      {"braces in prose", repeat("", "a {b ")},
      {"many objects", repeat("", "{\"a\":1} ")},
      {"reasoning tags", repeat("", "<think>")},
      {"open comments", repeat("", "/*")},
      {"triple quotes", repeat("{", "\"k\": \"\"\"x")},
      {"cut escapes", repeat("{", "\"\\u")},
      {"invalid UTF-8", repeat("{\"a\":\"", "\xff\xfe")},
  };
  for (const auto& [name, text] : inputs) {
    for (bool partial : {false, true}) {
      lenient_options o;
      o.partial = partial;
      const double t0 = thread_cpu_seconds();
      const auto x = covenant::extract(text, o);
      const double s = thread_cpu_seconds() - t0;
      // A guard against super-linear work, not a speed target (benchmarks/lenient.cpp is): about
      // 0.1 s of CPU in a Release build; generous for Debug and sanitizer builds. CPU time of
      // this thread, so that other processes on the machine do not count.
      EXPECT_LT(s, 30.0) << name;
      EXPECT_LE(x.candidates.size(), o.max_candidates);
      for (const auto& c : x.candidates) EXPECT_TRUE(strict_json(c.json)) << name;
    }
  }
}

// The properties fuzz/lenient.cpp checks, on its seed corpus (regressions included).
TEST(Lenient, FuzzSeedCorpusKeepsTheFuzzerProperties) {
  const std::filesystem::path dir = std::filesystem::path(COVENANT_SOURCE_DIR) / "fuzz" / "corpus" / "lenient";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no seed corpus";
  std::size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string text = read_file(entry.path().string());
    const std::string name = entry.path().filename().string();
    boost::json::parse_options po;
    po.max_depth = 64;
    boost::system::error_code ec;
    const boost::json::value whole = boost::json::parse(text, ec, {}, po);
    const bool valid = !ec;
    if (valid) {
      EXPECT_TRUE(covenant::looks_like_strict_json(text)) << name;
    }
    for (bool partial : {false, true}) {
      lenient_options o;
      o.partial = partial;
      const auto cands = extract_candidates(text, o);
      for (const auto& c : cands) EXPECT_TRUE(strict_json(c.json)) << name << ":\n" << c.json;
      if (valid && name.find("huge-exponent") == std::string::npos) {
        ASSERT_FALSE(cands.empty()) << name;
        EXPECT_EQ(cands[0].kind, candidate_kind::whole_text) << name;
        EXPECT_TRUE(cands[0].notes.empty()) << name;
        EXPECT_EQ(boost::json::parse(cands[0].json), whole) << name;
      }
    }
    ++files;
  }
  EXPECT_GE(files, 9u);
}

TEST(Lenient, ExtractIntoReusesStorageAndGivesTheSameResult) {
  covenant::extraction x;
  const std::string a = "```json\n{'a': [1, 2,], b: None}\n```";
  const std::string b = "{\"c\": \"cut";
  covenant::extract_into(a, {}, x);
  const auto first_a = x.candidates;
  covenant::extract_into(b, {}, x);
  ASSERT_FALSE(x.candidates.empty());
  EXPECT_EQ(x.candidates[0].json, "{}");
  covenant::extract_into(a, {}, x);
  ASSERT_EQ(x.candidates.size(), first_a.size());
  for (std::size_t i = 0; i < first_a.size(); ++i) {
    EXPECT_EQ(x.candidates[i].json, first_a[i].json);
    EXPECT_EQ(x.candidates[i].notes, first_a[i].notes);
    EXPECT_EQ(x.candidates[i].origin, first_a[i].origin);
  }
}

}  // namespace
