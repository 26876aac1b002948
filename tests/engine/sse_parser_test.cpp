// The Server-Sent Events parser: the format's rules, and events split across reads at any byte.
#include "engine/sse.hpp"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace {

using covenant::detail::sse_event;
using covenant::detail::sse_parser;

struct seen {
  std::string type;
  std::string data;
  std::string id;
  friend bool operator==(const seen&, const seen&) = default;
};

std::ostream& operator<<(std::ostream& os, const seen& s) {
  return os << "{" << s.type << ", \"" << s.data << "\", " << s.id << "}";
}

std::vector<seen> parse_in_pieces(const std::string& text, const std::vector<std::size_t>& cuts, bool* incomplete = nullptr) {
  std::vector<seen> out;
  sse_parser p([&](const sse_event& e) {
    out.push_back({std::string(e.type), std::string(e.data), std::string(e.id)});
    return true;
  });
  std::size_t at = 0;
  for (std::size_t cut : cuts) {
    p.feed(std::string_view(text).substr(at, cut - at));
    at = cut;
  }
  p.feed(std::string_view(text).substr(at));
  const bool left = p.finish();
  if (incomplete != nullptr) *incomplete = left;
  return out;
}

std::vector<seen> parse(const std::string& text, bool* incomplete = nullptr) { return parse_in_pieces(text, {}, incomplete); }

TEST(SseParser, DataLinesWithAndWithoutTheSpace) {
  EXPECT_THAT(parse("data: a\n\ndata:b\n\ndata:  c\n\n"),
              ::testing::ElementsAre(seen{"message", "a", ""}, seen{"message", "b", ""}, seen{"message", " c", ""}));
}

TEST(SseParser, LineEndingsCrLfLfAndCr) {
  EXPECT_THAT(parse("data: a\r\n\r\ndata: b\n\ndata: c\r\rdata: d\r\n\n"),
              ::testing::ElementsAre(seen{"message", "a", ""}, seen{"message", "b", ""}, seen{"message", "c", ""},
                                     seen{"message", "d", ""}));
}

TEST(SseParser, CommentsFieldsAndMultiLineData) {
  const std::string text =
      ": keep-alive\n"
      "event: update\nid: 7\ndata: one\ndata: two\nretry: 3000\nunknown: x\n\n"
      ":\n"
      "data\n\n"          // a field without a colon: data with an empty value
      "event: only\n\n"   // no data: not dispatched
      "data: after\n\n";
  bool incomplete = true;
  EXPECT_THAT(parse(text, &incomplete),
              ::testing::ElementsAre(seen{"update", "one\ntwo", "7"}, seen{"message", "", "7"}, seen{"message", "after", "7"}));
  EXPECT_FALSE(incomplete);
}

TEST(SseParser, ALeadingByteOrderMarkIsDropped) {
  EXPECT_THAT(parse("\xEF\xBB\xBF" "data: x\n\n"), ::testing::ElementsAre(seen{"message", "x", ""}));
  // Split inside the mark.
  EXPECT_THAT(parse_in_pieces("\xEF\xBB\xBF" "data: x\n\n", {1, 2}), ::testing::ElementsAre(seen{"message", "x", ""}));
  // Only at the very start.
  EXPECT_THAT(parse("data: \xEF\xBB\xBFx\n\n"), ::testing::ElementsAre(seen{"message", "\xEF\xBB\xBFx", ""}));
}

TEST(SseParser, AnEventNotClosedByAnEmptyLineIsNotDispatched) {
  bool incomplete = false;
  EXPECT_THAT(parse("data: done\n\ndata: half", &incomplete), ::testing::ElementsAre(seen{"message", "done", ""}));
  EXPECT_TRUE(incomplete);
  EXPECT_THAT(parse("data: done\n\ndata: [DONE]\n", &incomplete), ::testing::ElementsAre(seen{"message", "done", ""}));
  EXPECT_TRUE(incomplete);
  // What the unfinished event held stays readable.
  sse_parser p([](const sse_event&) { return true; });
  p.feed("data: a\n\ndata: [DONE]");
  EXPECT_TRUE(p.finish());
  EXPECT_EQ(p.unfinished_data(), "[DONE]");
}

TEST(SseParser, SplitAtEveryByteGivesTheSameEvents) {
  // UTF-8 in the data, CRLF framing, comments: cut at every position, and at two positions.
  const std::string text =
      ": ping\r\ndata: {\"content\": \"h\xC3\xA9llo \xE2\x82\xAC\"}\r\n\r\n"
      "data: second\r\ndata: line\r\n\r\nevent: x\r\ndata: [DONE]\r\n\r\n";
  const std::vector<seen> whole = parse(text);
  ASSERT_EQ(whole.size(), 3u);
  EXPECT_EQ(whole[0].data, "{\"content\": \"h\xC3\xA9llo \xE2\x82\xAC\"}");
  EXPECT_EQ(whole[1].data, "second\nline");
  EXPECT_EQ(whole[2].type, "x");
  for (std::size_t i = 1; i < text.size(); ++i) {
    EXPECT_EQ(parse_in_pieces(text, {i}), whole) << "cut at " << i;
  }
  std::mt19937 rng(5);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::size_t> cuts;
    std::size_t at = 0;
    while (true) {
      at += 1 + rng() % 7;
      if (at >= text.size()) break;
      cuts.push_back(at);
    }
    EXPECT_EQ(parse_in_pieces(text, cuts), whole);
  }
}

TEST(SseParser, TheCallbackCanStopTheParser) {
  int n = 0;
  sse_parser p([&](const sse_event&) { return ++n < 2; });
  p.feed("data: 1\n\ndata: 2\n\ndata: 3\n\n");
  EXPECT_EQ(n, 2);
  EXPECT_TRUE(p.stopped());
  p.feed("data: 4\n\n");
  EXPECT_EQ(n, 2);
}

TEST(SseParser, RetryKeepsOnlyDigits) {
  sse_parser p([](const sse_event&) { return true; });
  p.feed("retry: 1500\n\nretry: soon\n\n");
  ASSERT_TRUE(p.retry_ms().has_value());
  EXPECT_EQ(*p.retry_ms(), 1500u);
}

}  // namespace
