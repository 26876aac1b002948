// On-fail actions (reask, fix, filter, refrain, noop, exception) on every kind of check: field
// validators, list-item validators, invariants, post() violations, schema-file @check/@assert and
// JSON Schema x-on-fail; and their interplay with the remedy loop.
#include <covenant/contract/contract.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/runtime/json_schema_import.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace on_fail_test {

struct Link {
  std::string title;
  std::string url;
};

struct Report {
  std::string summary;
  double confidence = 0;
  int score = 0;
  std::string level;
  std::string code;
  std::vector<std::string> tags;
  std::vector<Link> links;
  std::optional<std::string> homepage;
};

struct Pair {
  int low = 0;
  int high = 0;
};

struct Pairs {
  std::vector<Pair> pairs;
};

struct Strict {
  int value = 0;
};

struct Question {
  std::string text;
};

struct Found {
  std::vector<Link> resources;
};

struct Rated {
  std::string summary;
  int score = 5;
};

}  // namespace on_fail_test

namespace of = covenant::on_fail;

template <>
struct covenant::describe<on_fail_test::Link> {
  static constexpr auto fields = covenant::fields<on_fail_test::Link>(
      covenant::field<&on_fail_test::Link::title>("Title.", covenant::non_empty{}),
      covenant::field<&on_fail_test::Link::url>("Address.", of::filter(covenant::url{})));
};

template <>
struct covenant::describe<on_fail_test::Report> {
  static constexpr auto fields = covenant::fields<on_fail_test::Report>(
      covenant::field<&on_fail_test::Report::summary>("Summary.", of::fix(covenant::max_length{12})),
      covenant::field<&on_fail_test::Report::confidence>("Confidence.", of::fix(covenant::range{0.0, 1.0})),
      covenant::field<&on_fail_test::Report::score>("Score.", of::fix(covenant::range{1, 10})),
      covenant::field<&on_fail_test::Report::level>("Level.", of::fix(covenant::one_of{"low", "high"})),
      covenant::field<&on_fail_test::Report::code>("Code.", of::fix(covenant::pattern{"^[A-Z]{3}$"})),
      covenant::field<&on_fail_test::Report::tags>("Tags.", of::fix(covenant::unique_items{}),
                                                    of::fix(covenant::max_items{3}),
                                                    covenant::each{of::noop(covenant::max_length{8})}),
      covenant::field<&on_fail_test::Report::links>("Links.", covenant::max_items{5}),
      covenant::field<&on_fail_test::Report::homepage>("Home page.", of::filter(covenant::url{})));
};

template <>
struct covenant::describe<on_fail_test::Pair> {
  static constexpr auto fields = covenant::fields<on_fail_test::Pair>(covenant::field<&on_fail_test::Pair::low>("Low."),
                                                                       covenant::field<&on_fail_test::Pair::high>("High."));
  static constexpr auto invariants = covenant::invariants<on_fail_test::Pair>(
      covenant::invariant("low must not exceed high", [](const on_fail_test::Pair& p) { return p.low <= p.high; },
                          of::filter));
};

template <>
struct covenant::describe<on_fail_test::Pairs> {
  static constexpr auto fields = covenant::fields<on_fail_test::Pairs>(
      covenant::field<&on_fail_test::Pairs::pairs>("Pairs.", covenant::min_items{1}));
};

template <>
struct covenant::describe<on_fail_test::Strict> {
  static constexpr auto fields = covenant::fields<on_fail_test::Strict>(
      covenant::field<&on_fail_test::Strict::value>("Value.", of::refrain(covenant::maximum{100}),
                                                    of::exception(covenant::minimum{0})));
};

template <>
struct covenant::describe<on_fail_test::Rated> {
  static constexpr auto fields = covenant::fields<on_fail_test::Rated>(
      covenant::field<&on_fail_test::Rated::score>("Score.", covenant::defaulted{}));
};

template <>
struct covenant::describe<on_fail_test::Found> {
  static constexpr auto fields = covenant::fields<on_fail_test::Found>(covenant::field<&on_fail_test::Found::resources>(
      "Resources.", covenant::each{of::filter(covenant::predicate{[](const on_fail_test::Link& l) { return l.title != "fake"; },
                                                                   "must be a real resource"},
                                              "no_valid_resources")}));
};

namespace {

using namespace on_fail_test;
using covenant::fail_action;
using covenant::note_kind;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using ::testing::HasSubstr;

std::vector<std::string> notes_of(const covenant::note_list& notes, note_kind kind) {
  std::vector<std::string> out;
  for (const auto& n : notes)
    if (n.kind == kind) out.push_back(n.path.to_string() + ": " + n.detail);
  return out;
}

const char* fixable = R"({"summary": "A very long summary indeed", "confidence": 1.7, "score": 42,
  "level": " High ", "code": "  ABC ", "tags": ["a", "b", "a", "c", "d", "verylongtag"],
  "links": [], "homepage": null})";

// ---- fix ----------------------------------------------------------------------------------------

TEST(OnFailFix, EachValidatorsFixIsAppliedAndNotedInsteadOfAnIssue) {
  Report r;
  covenant::note_list notes;
  const auto issues = covenant::try_decode_into(fixable, r, {}, &notes);
  EXPECT_TRUE(issues.empty()) << covenant::render_feedback(issues);
  EXPECT_EQ(r.summary, "A very long ");
  EXPECT_EQ(r.confidence, 1.0);
  EXPECT_EQ(r.score, 10);
  EXPECT_EQ(r.level, "high");
  EXPECT_EQ(r.code, "ABC");
  EXPECT_EQ(r.tags, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_THAT(notes_of(notes, note_kind::fixed),
              ::testing::ElementsAre("summary: cut to 12 characters (was 26)",
                                     "confidence: 1.7 changed to 1 (must be <= 1)",
                                     "score: 42 changed to 10 (must be <= 10)",
                                     "level: \" High \" read as \"high\" (must be one of \"low\", \"high\")",
                                     "code: surrounding whitespace removed (must match the regular expression ^[A-Z]{3}$)",
                                     HasSubstr("tags: dropped 1 duplicate"),
                                     "tags: cut to 3 items (was 5; the first are kept)"));
  // noop on the items: the long tag was noted before the list was cut.
  EXPECT_THAT(notes_of(notes, note_kind::check_failed),
              ::testing::ElementsAre("tags[5]: check failed: must have at most 8 characters (got 11 characters)"));
}

TEST(OnFailFix, AValueTheFixCannotMendIsStillAnIssueForTheModel) {
  Report r;
  const auto issues = covenant::try_decode_into(
      R"({"summary": "ok", "confidence": 0.5, "score": 3, "level": "medium", "code": "abcd", "tags": [], "links": []})", r);
  EXPECT_EQ(covenant::render_feedback(issues),
            "level: must be one of \"low\", \"high\" (got \"medium\")\n"
            "code: must match the regular expression ^[A-Z]{3}$ (got \"abcd\")\n");
  for (const auto& i : issues) EXPECT_EQ(i.action, fail_action::reask);
}

TEST(OnFailFix, IntegerBoundsClampToTheNearestWholeNumberInside) {
  Report r;
  const auto issues = covenant::try_decode_into(
      R"({"summary": "s", "confidence": -0.25, "score": -3, "level": "low", "code": "ABC", "tags": [], "links": []})", r);
  EXPECT_TRUE(issues.empty()) << covenant::render_feedback(issues);
  EXPECT_EQ(r.score, 1);
  EXPECT_EQ(r.confidence, 0.0);
}

// ---- filter -------------------------------------------------------------------------------------

TEST(OnFailFilter, AFailingListItemIsDroppedAndTheOrderOfTheRestKept) {
  Report r;
  covenant::note_list notes;
  const auto issues = covenant::try_decode_into(R"({"summary": "s", "confidence": 0.5, "score": 3, "level": "low",
      "code": "ABC", "tags": [], "links": [
        {"title": "one", "url": "https://a.example/1"},
        {"title": "two", "url": "not a url"},
        {"title": "three", "url": "https://a.example/3"},
        {"title": "four", "url": "ftp:/broken"}]})",
                                            r, {}, &notes);
  EXPECT_TRUE(issues.empty()) << covenant::render_feedback(issues);
  ASSERT_EQ(r.links.size(), 2u);
  EXPECT_EQ(r.links[0].title, "one");
  EXPECT_EQ(r.links[1].title, "three");
  EXPECT_THAT(notes_of(notes, note_kind::filtered),
              ::testing::ElementsAre("links[1]: dropped: links[1].url: must be an absolute URL (got \"not a url\")",
                                     "links[3]: dropped: links[3].url: must be an absolute URL (got \"ftp:/broken\")"));
}

TEST(OnFailFilter, OtherIssuesOfADroppedItemGoWithIt) {
  Report r;
  const auto issues = covenant::try_decode_into(R"({"summary": "s", "confidence": 0.5, "score": 3, "level": "low",
      "code": "ABC", "tags": [], "links": [{"title": "", "url": "nope"}, {"title": "", "url": "https://x.example"}]})",
                                            r);
  // The first item is dropped (its empty title with it); the second keeps its reask issue, at
  // its index in the reply.
  EXPECT_EQ(covenant::render_feedback(issues), "links[1].title: must not be empty (got \"\")\n");
}

TEST(OnFailFilter, AFailingOptionalFieldIsDropped) {
  Report r;
  r.homepage = "stale";
  covenant::note_list notes;
  const auto issues = covenant::try_decode_into(R"({"summary": "s", "confidence": 0.5, "score": 3, "level": "low",
      "code": "ABC", "tags": [], "links": [], "homepage": "my site"})",
                                            r, {}, &notes);
  EXPECT_TRUE(issues.empty()) << covenant::render_feedback(issues);
  EXPECT_FALSE(r.homepage.has_value());
  EXPECT_THAT(notes_of(notes, note_kind::filtered), ::testing::ElementsAre(HasSubstr("homepage: dropped:")));
}

TEST(OnFailFilter, AnInvariantWithFilterDropsItsObjectAndAListLeftTooShortIsANewIssue) {
  Pairs p;
  covenant::note_list notes;
  auto issues = covenant::try_decode_into(R"({"pairs": [{"low": 1, "high": 2}, {"low": 5, "high": 3}]})", p, {}, &notes);
  EXPECT_TRUE(issues.empty()) << covenant::render_feedback(issues);
  ASSERT_EQ(p.pairs.size(), 1u);
  EXPECT_EQ(p.pairs[0].high, 2);
  EXPECT_THAT(notes_of(notes, note_kind::filtered),
              ::testing::ElementsAre("pairs[1]: dropped: pairs[1]: must satisfy: low must not exceed high"));

  issues = covenant::try_decode_into(R"({"pairs": [{"low": 5, "high": 3}]})", p);
  EXPECT_EQ(covenant::render_feedback(issues), "pairs: must not be empty (got [])\n");
}

TEST(OnFailFilter, AFilterWithAReasonRefrainsWhenItDropsEveryItemOfAList) {
  Found f;
  auto issues = covenant::try_decode_into(R"({"resources": [{"title": "fake", "url": "https://a.example"},
      {"title": "fake", "url": "https://b.example"}]})",
                                      f);
  ASSERT_EQ(issues.size(), 1u) << covenant::render_feedback(issues);
  EXPECT_EQ(issues[0].path.to_string(), "resources");
  EXPECT_EQ(issues[0].action, fail_action::refrain);
  EXPECT_EQ(issues[0].reason, "no_valid_resources");
  // Some kept, or none listed at all: no issue.
  EXPECT_TRUE(covenant::try_decode_into(R"({"resources": [{"title": "fake", "url": "https://a.example"},
      {"title": "real", "url": "https://b.example"}]})",
                                    f)
                  .empty());
  EXPECT_TRUE(covenant::try_decode_into(R"({"resources": []})", f).empty());
}

// ---- contracts: refrain, exception, interplay with the remedy loop ----------------------------

struct StrictTask {
  static constexpr std::string_view prompt = "Give a value.";
  std::string forward(const Question&, const covenant::outcome<Strict>& o) const {
    return o.success ? "ok" : "forward saw " + o.reason;
  }
};

TEST(OnFailContract, RefrainEndsTheCallAfterOneModelCallAndForwardRuns) {
  scripted_engine model{R"({"value": 500})", R"({"value": 5})"};
  covenant::contract<StrictTask> c{model, instant()};
  auto [value, outcome] = c.run(Question{"q"});
  EXPECT_EQ(model.calls(), 1u);
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.reason, "refrained");
  EXPECT_EQ(outcome.failed_stage, covenant::stage::validate);
  ASSERT_EQ(outcome.issues.size(), 1u);
  EXPECT_EQ(outcome.issues[0].action, fail_action::refrain);
  EXPECT_EQ(value, "forward saw refrained");
  EXPECT_THAT(outcome.summary(), HasSubstr("failed at validate (refrained) after 1 model call"));
}

TEST(OnFailContract, ExceptionEndsTheCallAtOnceEvenBesideARefrain) {
  scripted_engine model{R"({"value": -1})"};
  covenant::contract<StrictTask> c{model, instant()};
  auto [value, outcome] = c.run(Question{"q"});
  EXPECT_EQ(model.calls(), 1u);
  EXPECT_EQ(outcome.reason, "exception");
  EXPECT_EQ(value, "forward saw exception");
}

struct ReportTask {
  static constexpr std::string_view prompt = "Report.";
  Report forward(const Question&, const covenant::outcome<Report>& o) const { return o.result.value_or(Report{}); }
};

TEST(OnFailContract, FixAndFilterNeverCostAModelCall) {
  scripted_engine model{fixable};
  covenant::contract<ReportTask> c{model, instant()};
  auto [value, outcome] = c.run(Question{"q"});
  EXPECT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(model.calls(), 1u);
  EXPECT_EQ(value.score, 10);
  EXPECT_FALSE(notes_of(outcome.notes, note_kind::fixed).empty());
}

TEST(OnFailContract, AReplyWithAReaskIssueAndAFilterIssueReasksOnlyAboutTheFirst) {
  const char* first = R"({"summary": "s", "confidence": 0.5, "score": 3, "level": "low", "code": "abc", "tags": [],
      "links": [{"title": "t", "url": "bad url"}]})";
  const char* second = R"({"summary": "s", "confidence": 0.5, "score": 3, "level": "low", "code": "ABC", "tags": [],
      "links": [{"title": "t", "url": "https://ok.example"}]})";
  scripted_engine model{first, second};
  covenant::contract<ReportTask> c{model, instant()};
  auto [value, outcome] = c.run(Question{"q"});
  EXPECT_TRUE(outcome.success);
  ASSERT_EQ(model.calls(), 2u);
  const std::string feedback = model.last_message(1);
  EXPECT_THAT(feedback, HasSubstr("- code: must match the regular expression ^[A-Z]{3}$ (got \"abc\")"));
  EXPECT_THAT(feedback, ::testing::Not(HasSubstr("url")));
  EXPECT_EQ(value.links.size(), 1u);
}

// post() with actions.
struct Checked {
  static constexpr std::string_view prompt = "Links.";
  void post(const Report& r) const {
    covenant::violation v;
    for (std::size_t i = 0; i < r.links.size(); ++i)
      if (r.links[i].title == "dead")
        v.add("links[" + std::to_string(i) + "].url", "does not resolve", fail_action::filter);
    if (r.summary == "meh") v.add("summary", "is vague", fail_action::noop);
    v.raise_if_any();
    if (r.links.empty() && r.summary == "links") throw covenant::violation("every link was dropped").refrain("no_valid_links");
  }
  Report forward(const Question&, const covenant::outcome<Report>& o) const { return o.result.value_or(Report{}); }
};

std::string reply_with_links(const std::string& summary, const std::vector<std::string>& titles) {
  std::string links;
  for (const auto& t : titles) {
    if (!links.empty()) links += ",";
    links += R"({"title": ")" + t + R"(", "url": "https://x.example/)" + t + "\"}";
  }
  return R"({"summary": ")" + summary +
         R"(", "confidence": 0.5, "score": 3, "level": "low", "code": "ABC", "tags": [], "links": [)" + links + "]}";
}

TEST(OnFailPost, FilterDropsTheItemsPostPointsAtAndNoopIsANote) {
  scripted_engine model{reply_with_links("meh", {"a", "dead", "b", "dead"})};
  covenant::contract<Checked> c{model, instant()};
  auto [value, outcome] = c.run(Question{"q"});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(model.calls(), 1u);
  ASSERT_EQ(value.links.size(), 2u);
  EXPECT_EQ(value.links[0].title, "a");
  EXPECT_EQ(value.links[1].title, "b");
  EXPECT_THAT(notes_of(outcome.notes, note_kind::filtered),
              ::testing::ElementsAre("links[1]: dropped: links[1].url: does not resolve",
                                     "links[3]: dropped: links[3].url: does not resolve"));
  EXPECT_THAT(notes_of(outcome.notes, note_kind::check_failed),
              ::testing::ElementsAre("summary: check failed: is vague"));
}

TEST(OnFailPost, RefrainWithAReasonOfItsOwn) {
  scripted_engine model{reply_with_links("links", {})};
  covenant::contract<Checked> c{model, instant()};
  auto [value, outcome] = c.run(Question{"q"});
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(model.calls(), 1u);
  EXPECT_EQ(outcome.reason, "no_valid_links");
  EXPECT_EQ(outcome.failed_stage, covenant::stage::post);
}

struct AllDead {
  static constexpr std::string_view prompt = "Links.";
  void post(const Report& r) const {
    covenant::violation v;
    for (std::size_t i = 0; i < r.links.size(); ++i)
      if (r.links[i].title == "dead")
        v.add("links[" + std::to_string(i) + "].url", "does not resolve", fail_action::filter, "no_valid_links");
    v.raise_if_any();
  }
  std::string forward(const Question&, const covenant::outcome<Report>& o) const {
    return o.success ? std::to_string(o.result->links.size()) + " links" : o.reason;
  }
};

TEST(OnFailPost, FiltersThatDropEveryItemRefrainWithTheirReasonButAnEmptyListIsFine) {
  scripted_engine all_dead{reply_with_links("s", {"dead", "dead"})};
  covenant::contract<AllDead> c{all_dead, instant()};
  auto r = c.run(Question{"q"});
  EXPECT_EQ(r.value, "no_valid_links");
  EXPECT_EQ(all_dead.calls(), 1u);
  EXPECT_EQ(r.outcome.failed_stage, covenant::stage::post);
  ASSERT_FALSE(r.outcome.issues.empty());
  EXPECT_EQ(r.outcome.issues.back().to_string(), "links: every item was dropped (got 2 dropped)");

  scripted_engine none{reply_with_links("s", {})};
  covenant::contract<AllDead> c2{none, instant()};
  EXPECT_EQ(c2.run(Question{"q"}).value, "0 links");

  scripted_engine some{reply_with_links("s", {"dead", "ok"})};
  covenant::contract<AllDead> c3{some, instant()};
  EXPECT_EQ(c3.run(Question{"q"}).value, "1 links");
}

struct RatedTask {
  static constexpr std::string_view prompt = "Rate.";
  void post(const Rated& r) const {
    covenant::violation v;
    if (r.score > 100) v.add("score", "is not a score", fail_action::filter);
    if (r.summary.empty()) v.add("summary", "is empty", fail_action::filter);
    v.raise_if_any();
  }
  Rated forward(const Question&, const covenant::outcome<Rated>& o) const { return o.result.value_or(Rated{}); }
};

TEST(OnFailPost, AFilteredDefaultedFieldTakesItsDefault) {
  // A field that is not required goes as if it were absent: a defaulted one reads as its default.
  scripted_engine model{R"({"summary": "s", "score": 500})"};
  covenant::contract<RatedTask> c{model, instant()};
  auto [value, outcome] = c.run(Question{"q"});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(model.calls(), 1u);
  EXPECT_EQ(value.score, 5);
  EXPECT_THAT(notes_of(outcome.notes, note_kind::filtered),
              ::testing::ElementsAre("score: dropped: score: is not a score"));
  // A required field has nowhere to go: the issue stays and the model is asked again.
  scripted_engine empty{R"({"summary": "", "score": 3})", R"({"summary": "s", "score": 3})"};
  covenant::contract<RatedTask> c2{empty, instant()};
  auto second = c2.run(Question{"q"});
  ASSERT_TRUE(second.outcome.success) << second.outcome.summary();
  EXPECT_EQ(empty.calls(), 2u);
}

TEST(OnFailPost, ADynamicContractsPostFiltersAsTheTypedOneDoes) {
  auto set = covenant::schema_set::parse(R"(
    class Link {
      title string
      url string
    }
    class Out {
      summary string
      links Link[] @assert({{ this|length > 0 }})
      note string?
    }
  )");
  covenant::dynamic_task task;
  task.name = "links";
  task.prompt = "Links.";
  task.output = set.model("Out");
  task.post = [](const boost::json::value& out, const boost::json::value&) {
    covenant::violation v;
    const auto& links = out.at("links").as_array();
    for (std::size_t i = 0; i < links.size(); ++i)
      if (links[i].at("title") == "dead")
        v.add("links[" + std::to_string(i) + "].url", "does not resolve", fail_action::filter);
    if (const auto* n = out.as_object().if_contains("note"); n != nullptr && *n == "spam")
      v.add("note", "is spam", fail_action::filter);
    v.raise_if_any();
  };
  const std::string reply =
      R"({"summary": "s", "note": "spam", "links": [{"title": "a", "url": "u1"}, {"title": "dead", "url": "u2"},)"
      R"( {"title": "b", "url": "u3"}]})";
  scripted_engine model{reply};
  covenant::dynamic_contract c{model, task, instant()};
  const auto [value, outcome] = c.run(boost::json::object{{"q", 1}});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(value, *outcome.result);
  EXPECT_EQ(model.calls(), 1u);  // a filter never costs a model call
  EXPECT_EQ(boost::json::serialize(outcome.result->at("links")),
            R"([{"title":"a","url":"u1"},{"title":"b","url":"u3"}])");
  EXPECT_FALSE(outcome.result->as_object().contains("note"));  // an optional field is dropped
  EXPECT_THAT(notes_of(outcome.notes, note_kind::filtered),
              ::testing::UnorderedElementsAre("links[1]: dropped: links[1].url: does not resolve",
                                              "note: dropped: note: is spam"));

  // Dropping every item leaves a list below its minimum: the list's own check asks again.
  scripted_engine all_dead{R"({"summary": "s", "links": [{"title": "dead", "url": "u"}]})",
                           R"({"summary": "s", "links": [{"title": "ok", "url": "u"}]})"};
  covenant::dynamic_contract c2{all_dead, task, instant({.tries = 1})};
  const auto second = c2.run(boost::json::object{{"q", 1}}).outcome;
  ASSERT_TRUE(second.success) << second.summary();
  EXPECT_EQ(all_dead.calls(), 2u);
  EXPECT_THAT(all_dead.last_message(1), HasSubstr("links"));
}

TEST(OnFailPost, AHookHasNoFix) {
  covenant::violation v;
  EXPECT_THROW(v.add("x", "y", fail_action::fix), std::invalid_argument);
}

// ---- schema files and JSON Schema -------------------------------------------------------------

TEST(OnFailSchemaFile, CheckIsNoopAssertIsReaskAndAnActionCanBeNamed) {
  auto set = covenant::schema_set::parse(R"(
    class Src {
      title string @check(short, {{ this|length < 20 }})
      url string @assert({{ this|length > 8 }}, filter)
    }
    class Out {
      sources Src[] @assert(some, {{ this|length > 0 }})
      grade int @assert({{ this < 5 }}, refrain)
    }
  )");
  const auto m = set.model("Out");
  auto r = covenant::try_decode_dynamic(R"({"sources": [
      {"title": "a title that is far too long", "url": "https://a.example"},
      {"title": "b", "url": "short"}], "grade": 3})",
                                    m);
  EXPECT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(boost::json::serialize(r.value.at("sources")),
            R"([{"title":"a title that is far too long","url":"https://a.example"}])");
  EXPECT_EQ(notes_of(r.notes, note_kind::check_failed).size(), 1u);
  EXPECT_EQ(notes_of(r.notes, note_kind::filtered).size(), 1u);

  auto bad = covenant::try_decode_dynamic(R"({"sources": [{"title": "b", "url": "short"}], "grade": 7})", m);
  ASSERT_EQ(bad.issues.size(), 2u) << covenant::render_feedback(bad.issues);
  EXPECT_EQ(bad.issues[0].path.to_string(), "sources");
  EXPECT_EQ(bad.issues[0].action, fail_action::reask);
  EXPECT_EQ(bad.issues[1].path.to_string(), "grade");
  EXPECT_EQ(bad.issues[1].action, fail_action::refrain);
}

TEST(OnFailSchemaFile, AnExpressionRuleHasNoFixAndUnknownActionsAreRefused) {
  auto fix = covenant::schema_set::try_parse("class A {\n  x int @assert({{ this < 5 }}, fix)\n}\n", {.file = "t.baml"});
  ASSERT_FALSE(fix.ok());
  EXPECT_THAT(fix.issues[0].message, HasSubstr("has no fix"));
  auto unknown = covenant::schema_set::try_parse("class A {\n  x int @assert({{ this < 5 }}, ignore)\n}\n", {.file = "t.baml"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.issues[0].message, HasSubstr("'ignore' is not an on-fail action"));
}

TEST(OnFailJsonSchema, XOnFailIsImportedAppliedAndExportedBack) {
  const auto doc = boost::json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 5, "pattern": "^[a-z ]+$", "x-on-fail": {"maxLength": "fix"}},
      "n": {"type": "integer", "minimum": 0, "maximum": 9, "x-on-fail": "fix"}
    },
    "required": ["name", "n"]
  })");
  const auto m = covenant::import_json_schema(doc);
  auto r = covenant::try_decode_dynamic(R"({"name": "abcdefgh", "n": 12})", m);
  EXPECT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(boost::json::serialize(r.value), R"({"name":"abcde","n":9})");

  const auto back = covenant::to_json_schema(m);
  const auto& props = back.at("properties");
  EXPECT_EQ(boost::json::serialize(props.at("name").at("x-on-fail")), R"({"maxLength":"fix"})");
  EXPECT_EQ(boost::json::serialize(props.at("n").at("x-on-fail")), R"("fix")");
  // The strict schema sent to OpenAI carries no covenant keywords.
  const auto strict = covenant::to_json_schema(m, {.openai_strict = true});
  EXPECT_FALSE(strict.at("properties").at("n").as_object().contains("x-on-fail"));
}

TEST(OnFailJsonSchema, AFixOnAKeywordWithoutOneIsALoadError) {
  auto r = covenant::try_import_json_schema(boost::json::parse(
      R"({"type": "object", "properties": {"s": {"type": "string", "minLength": 3, "x-on-fail": "fix"}}})"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.issues[0].message, HasSubstr("minLength has no fix"));
  EXPECT_EQ(r.issues[0].pointer, "/properties/s/x-on-fail");
}

TEST(OnFailJsonSchema, TypedValidatorsExportTheirActions) {
  const auto s = covenant::to_json_schema(covenant::schema_of<Report>());
  const auto& props = s.at("$defs").at("Link").at("properties");
  EXPECT_EQ(boost::json::serialize(props.at("url").at("x-on-fail")), R"("filter")");
}

}  // namespace
