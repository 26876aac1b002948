// Tool checks (covenant/contract/tool_check.hpp): each distinct value once per call, at most
// max_concurrency at once, verdicts kept across calls with a TTL, an exception counts as invalid,
// and the check's on-fail action applies.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>
#include <covenant/contract/tool_check.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace tool_test {

std::atomic<int> calls{0};
std::atomic<int> in_flight{0};
std::atomic<int> most_in_flight{0};

bool known_id(const std::string& id) {
  ++calls;
  const int now = ++in_flight;
  for (int seen = most_in_flight.load(); now > seen && !most_in_flight.compare_exchange_weak(seen, now);) {
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  --in_flight;
  if (id == "boom") throw std::runtime_error("lookup service down");
  return id.rfind("doc-", 0) == 0;
}

bool in_stock(const int& sku) {
  ++calls;
  return sku % 2 == 0;
}

struct Cited {
  std::vector<std::string> ids;
  int sku = 0;
};

struct Question {
  std::string text;
};

bool registered_doi(const std::string& doi) {
  ++calls;
  return doi.rfind("10.", 0) == 0;
}

struct Paper {
  std::string doi;
};
struct Book {
  std::string isbn;
};
// Tool checks below an optional, in a map's values and in a union's alternative.
struct Library {
  std::optional<Paper> featured;
  std::map<std::string, Paper> by_topic;
  std::vector<std::variant<Book, Paper>> shelf;
};

struct Catalogue {
  static constexpr std::string_view prompt = "List the library.";
  Library forward(const Question&, const covenant::outcome<Library>& o) const { return o.result.value_or(Library{}); }
};

struct Cite {
  static constexpr std::string_view prompt = "Cite.";
  Cited forward(const Question&, const covenant::outcome<Cited>& o) const { return o.result.value_or(Cited{}); }
};

}  // namespace tool_test

template <>
struct covenant::describe<tool_test::Cited> {
  static constexpr auto fields = covenant::fields<tool_test::Cited>(
      covenant::field<&tool_test::Cited::ids>(
          "Document ids.",
          covenant::each{covenant::on_fail::filter(covenant::tool_check{tool_test::known_id, "must be a known document id",
                                                                        {.max_concurrency = 3, .ttl = std::chrono::minutes(1)}})}),
      covenant::field<&tool_test::Cited::sku>(
          "Product.", covenant::on_fail::noop(covenant::tool_check{tool_test::in_stock, "must be in stock"})));
};

template <>
struct covenant::describe<tool_test::Paper> {
  static constexpr auto fields = covenant::fields<tool_test::Paper>(covenant::field<&tool_test::Paper::doi>(
      "DOI.", covenant::on_fail::noop(covenant::tool_check{tool_test::registered_doi, "must be a registered DOI"})));
};

namespace {

using namespace tool_test;
using covenant::testing::instant;
using covenant::testing::scripted_engine;

std::string reply(const std::vector<std::string>& ids, int sku) {
  std::string list;
  for (const auto& id : ids) list += (list.empty() ? "\"" : ", \"") + id + "\"";
  return R"({"ids": [)" + list + R"(], "sku": )" + std::to_string(sku) + "}";
}

TEST(ToolCheck, EachDistinctValueOnceAtMostMaxConcurrencyAtOnceFailuresFiltered) {
  calls = 0;
  most_in_flight = 0;
  scripted_engine model{reply({"doc-1", "x-2", "doc-3", "doc-1", "doc-5", "doc-6", "doc-7", "doc-8", "x-2"}, 4)};
  covenant::contract<Cite> c{model, instant()};
  auto [value, outcome] = c.run(Question{"q"});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(model.calls(), 1u);
  EXPECT_EQ(value.ids, (std::vector<std::string>{"doc-1", "doc-3", "doc-1", "doc-5", "doc-6", "doc-7", "doc-8"}));
  EXPECT_EQ(calls.load(), 7 + 1);  // 7 distinct ids, 1 sku
  EXPECT_LE(most_in_flight.load(), 3);
  EXPECT_GE(most_in_flight.load(), 2);
  int filtered = 0;
  for (const auto& n : outcome.notes) filtered += n.kind == covenant::note_kind::filtered ? 1 : 0;
  EXPECT_EQ(filtered, 2);
}

TEST(ToolCheck, VerdictsAreKeptForTheTtlAcrossCalls) {
  scripted_engine model{reply({"doc-ttl-1", "doc-ttl-2"}, 2), reply({"doc-ttl-1", "doc-ttl-2", "doc-ttl-3"}, 2)};
  covenant::contract<Cite> c{model, instant()};
  calls = 0;
  ASSERT_TRUE(c.run(Question{"a"}).outcome.success);
  EXPECT_EQ(calls.load(), 2 + 1);
  calls = 0;
  ASSERT_TRUE(c.run(Question{"b"}).outcome.success);
  EXPECT_EQ(calls.load(), 1 + 1);  // only doc-ttl-3 is new; the sku check keeps nothing (no ttl)
}

TEST(ToolCheck, AnExceptionCountsAsInvalidAndNoopOnlyNotes) {
  scripted_engine model{reply({"doc-a", "boom"}, 3)};
  covenant::contract<Cite> c{model, instant()};
  auto [value, outcome] = c.run(Question{"q"});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(value.ids, (std::vector<std::string>{"doc-a"}));
  EXPECT_EQ(value.sku, 3);
  bool noted = false;
  for (const auto& n : outcome.notes)
    noted = noted || (n.kind == covenant::note_kind::check_failed && n.path.to_string() == "sku");
  EXPECT_TRUE(noted);
}

TEST(ToolCheck, ValuesBelowOptionalsMapsAndUnionsAreCheckedAtTheirPaths) {
  scripted_engine model{R"({"featured": {"doi": "x-1"},
                            "by_topic": {"ai": {"doi": "bad"}, "ml": {"doi": "10.1/ok"}},
                            "shelf": [{"isbn": "978-0"}, {"doi": "nope"}, {"doi": "10.2/ok"}]})"};
  covenant::contract<Catalogue> c{model, instant()};
  calls = 0;
  auto [value, outcome] = c.run(Question{"q"});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(calls.load(), 5);  // x-1, bad, 10.1/ok, nope, 10.2/ok
  std::vector<std::string> failed;
  for (const auto& n : outcome.notes)
    if (n.kind == covenant::note_kind::check_failed) failed.push_back(n.path.to_string());
  std::sort(failed.begin(), failed.end());
  std::vector<std::string> expected{covenant::path{}.key("featured").key("doi").to_string(),
                                    covenant::path{}.key("by_topic").key("ai").key("doi").to_string(),
                                    covenant::path{}.key("shelf").index(1).key("doi").to_string()};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(failed, expected);
  ASSERT_EQ(value.shelf.size(), 3u);
  EXPECT_EQ(value.shelf[0].index(), 0u);
  EXPECT_EQ(value.shelf[1].index(), 1u);
}

TEST(ToolCheck, DecodeAloneDoesNotRunThem) {
  calls = 0;
  auto r = covenant::try_decode<Cited>(reply({"x-1"}, 1));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(calls.load(), 0);
}

}  // namespace
