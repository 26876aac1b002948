#include <covenant/read/decode.hpp>
#include <covenant/types/encode.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <variant>

#include "../../examples/models/final_answer.hpp"

namespace {

using models::FinalAnswer;

std::string read_shared(const std::string& rel) {
  std::ifstream f(std::string(COVENANT_SHARED_DIR) + "/" + rel, std::ios::binary);
  if (!f) return {};
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const char* valid_answer =
    R"({"answer": "The Eiffel Tower is 330 m tall.", "confidence": 0.87, "sources": ["https://en.wikipedia.org/wiki/Eiffel_Tower"], "metadata": {"timestamp": "2025-01-15T10:30:00Z", "token_usage": {"input_tokens": 512, "output_tokens": 128}}})";

TEST(Decode, ValidFinalAnswerDecodesEveryField) {
  auto r = covenant::try_decode<FinalAnswer>(valid_answer);
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value->answer, "The Eiffel Tower is 330 m tall.");
  EXPECT_DOUBLE_EQ(r.value->confidence, 0.87);
  ASSERT_EQ(r.value->sources.size(), 1u);
  EXPECT_FALSE(r.value->reasoning.has_value());
  ASSERT_TRUE(r.value->metadata.has_value());
  EXPECT_EQ(r.value->metadata->timestamp, "2025-01-15T10:30:00Z");
  EXPECT_FALSE(r.value->metadata->model_used.has_value());
  EXPECT_EQ(r.value->metadata->token_usage->output_tokens, 128);
}

TEST(Decode, InvalidSampleReportsExactlyThreeIssues) {
  std::string text = read_shared("bench/python/samples/invalid_final_answer.json");
  if (text.empty()) GTEST_SKIP() << "shared samples absent";
  auto r = covenant::try_decode<FinalAnswer>(text);
  ASSERT_EQ(r.issues.size(), 3u) << covenant::render_feedback(r.issues);
  EXPECT_FALSE(r.value.has_value());
  EXPECT_EQ(covenant::render_feedback(r.issues),
            "confidence: must be <= 1 (got 1.7)\n"
            "sources[1]: must not be empty (got \"\")\n"
            "answer: required field is missing\n");
  EXPECT_EQ(r.issues[0].code, covenant::issue_code::constraint_violation);
  EXPECT_EQ(r.issues[0].expected, "<= 1");
  EXPECT_EQ(r.issues[0].actual, "1.7");
  EXPECT_EQ(r.issues[1].path.to_string(), "sources[1]");
  EXPECT_EQ(r.issues[2].code, covenant::issue_code::missing_field);
  EXPECT_EQ(r.issues[2].path.to_string(), "answer");
}

TEST(Decode, MalformedJsonGivesOneParseErrorWithLineAndColumn) {
  auto r = covenant::try_decode<FinalAnswer>("{\"answer\": \"x\",\n  \"confidence\": 0.5,, }");
  ASSERT_EQ(r.issues.size(), 1u);
  const auto& i = r.issues[0];
  EXPECT_EQ(i.code, covenant::issue_code::parse_error);
  EXPECT_EQ(i.line, 2u);
  EXPECT_EQ(i.column, 21u);
  EXPECT_NE(i.message.find("line 2, column 21"), std::string::npos) << i.message;
}

TEST(Decode, EmptyAndTrailingTextAreParseErrors) {
  EXPECT_EQ(covenant::try_decode<FinalAnswer>("").issues.at(0).code, covenant::issue_code::parse_error);
  auto r = covenant::try_decode<FinalAnswer>(std::string(valid_answer) + " trailing");
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].code, covenant::issue_code::parse_error);
}

TEST(Decode, TypeMismatchesAreReportedWithExpectedAndActual) {
  auto r = covenant::try_decode<FinalAnswer>(R"({"answer": 42, "confidence": "high", "sources": "a"})");
  ASSERT_EQ(r.issues.size(), 3u) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.issues[0].to_string(), "answer: expected string (got 42)");
  EXPECT_EQ(r.issues[1].to_string(), "confidence: expected number (got \"high\")");
  EXPECT_EQ(r.issues[2].to_string(), "sources: expected array (got \"a\")");
  for (const auto& i : r.issues) EXPECT_EQ(i.code, covenant::issue_code::type_mismatch);
}

TEST(Decode, NestedPathsAreFull) {
  auto r = covenant::try_decode<FinalAnswer>(
      R"({"answer": "a", "confidence": 1, "sources": ["s"], "metadata": {"token_usage": {"input_tokens": -3}}})");
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].path.to_string(), "metadata.token_usage.input_tokens");
  EXPECT_EQ(r.issues[0].to_string(), "metadata.token_usage.input_tokens: must be >= 0 (got -3)");
}

TEST(Decode, UnknownFieldsIgnoredByDefaultReportedInStrictMode) {
  const char* text = R"({"answer": "a", "confidence": 1, "sources": ["s"], "extra": {"x": [1, 2]}})";
  EXPECT_TRUE(covenant::try_decode<FinalAnswer>(text));
  covenant::decode_options strict;
  strict.reject_unknown_fields = true;
  auto r = covenant::try_decode<FinalAnswer>(text, strict);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].code, covenant::issue_code::unknown_field);
  EXPECT_EQ(r.issues[0].to_string(), "extra: unknown field");
}

TEST(Decode, NullForRequiredFieldIsATypeMismatchAndForOptionalMeansAbsent) {
  auto r = covenant::try_decode<FinalAnswer>(R"({"answer": null, "confidence": 1, "sources": ["s"], "reasoning": null})");
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].to_string(), "answer: expected string (got null)");
}

TEST(Decode, StringEscapesAndUnicodeAreDecoded) {
  auto r = covenant::try_decode<FinalAnswer>(
      R"({"answer": "a\"b\\c\n\u00e9\ud83d\ude00 — ok", "confidence": 0, "sources": ["s"]})");
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value->answer, "a\"b\\c\n\xc3\xa9\xf0\x9f\x98\x80 \xe2\x80\x94 ok");
}

TEST(Decode, InvalidUtf8IsAParseError) {
  std::string text = "{\"answer\": \"\xff\", \"confidence\": 0, \"sources\": [\"s\"]}";
  auto r = covenant::try_decode<FinalAnswer>(text);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].code, covenant::issue_code::parse_error);
}

TEST(Decode, LengthCountsCodePointsNotBytes) {
  // 10 000 two-byte characters: 20 000 bytes but exactly the limit in code points.
  std::string answer;
  for (int i = 0; i < 10000; ++i) answer += "\xc3\xa9";
  auto ok = covenant::try_decode<FinalAnswer>(R"({"answer": ")" + answer + R"(", "confidence": 0, "sources": ["s"]})");
  EXPECT_TRUE(ok) << covenant::render_feedback(ok.issues);
  auto bad = covenant::try_decode<FinalAnswer>(R"({"answer": ")" + answer + "x" + R"(", "confidence": 0, "sources": ["s"]})");
  ASSERT_EQ(bad.issues.size(), 1u);
  EXPECT_EQ(bad.issues[0].to_string(), "answer: must have at most 10000 characters (got 10001 characters)");
}

TEST(Decode, DepthLimitIsAParseErrorNotACrash) {
  std::string deep(100000, '[');
  auto r = covenant::try_decode<FinalAnswer>(R"({"answer": "a", "confidence": 0, "sources": ["s"], "x": )" + deep);
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_EQ(r.issues[0].code, covenant::issue_code::parse_error);
  EXPECT_NE(r.issues[0].message.find("nesting too deep"), std::string::npos);
}

TEST(Decode, DecodeIntoReusesAndResetsAbsentOptionalFields) {
  FinalAnswer a;
  ASSERT_TRUE(covenant::try_decode_into(valid_answer, a).empty());
  ASSERT_TRUE(a.metadata.has_value());
  auto issues = covenant::try_decode_into(R"({"answer": "b", "confidence": 0.1, "sources": ["x", "y"]})", a);
  ASSERT_TRUE(issues.empty());
  EXPECT_EQ(a.answer, "b");
  EXPECT_FALSE(a.metadata.has_value());
  EXPECT_EQ(a.sources.size(), 2u);
}

TEST(Decode, FromBoostJsonValue) {
  boost::json::value v = boost::json::parse(valid_answer);
  auto r = covenant::try_from_value<FinalAnswer>(v);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value->metadata->token_usage->input_tokens, 512);
}

TEST(Decode, ThrowingFormCarriesEveryIssue) {
  try {
    (void)covenant::decode<FinalAnswer>(R"({"confidence": 2})");
    FAIL() << "expected decode_error";
  } catch (const covenant::decode_error& e) {
    EXPECT_EQ(e.issues().size(), 3u);  // answer, sources missing; confidence > 1
  }
}

TEST(Decode, ThrowingFormsReturnTheValueOrThrowTheIssuesOfTheirTryForms) {
  EXPECT_EQ(covenant::decode<FinalAnswer>(valid_answer).answer,
            covenant::try_decode<FinalAnswer>(valid_answer).value->answer);
  const boost::json::value v = boost::json::parse(valid_answer);
  EXPECT_EQ(covenant::from_value<FinalAnswer>(v).confidence,
            covenant::try_from_value<FinalAnswer>(v).value->confidence);
  FinalAnswer a;
  covenant::decode_into(valid_answer, a);
  EXPECT_EQ(a.confidence, covenant::decode<FinalAnswer>(valid_answer).confidence);

  const char* bad = R"({"answer": "b", "confidence": 2, "sources": []})";
  const covenant::issue_list expected = covenant::try_decode<FinalAnswer>(bad).issues;
  ASSERT_FALSE(expected.empty());
  try {
    (void)covenant::from_value<FinalAnswer>(boost::json::parse(bad));
    ADD_FAILURE() << "from_value: expected decode_error";
  } catch (const covenant::decode_error& e) {
    EXPECT_EQ(e.issues(), expected);
  }
  try {
    covenant::decode_into(bad, a);
    ADD_FAILURE() << "decode_into: expected decode_error";
  } catch (const covenant::decode_error& e) {
    EXPECT_EQ(e.issues(), expected);
  }
}

TEST(Encode, RoundTripsTheValidSample) {
  std::string text = read_shared("bench/python/samples/valid_final_answer.json");
  if (text.empty()) GTEST_SKIP() << "shared samples absent";
  auto r = covenant::try_decode<FinalAnswer>(text);
  ASSERT_TRUE(r);
  const std::string again = covenant::to_json(*r.value);
  EXPECT_EQ(boost::json::parse(again), boost::json::parse(text));
  auto r2 = covenant::try_decode<FinalAnswer>(again);
  ASSERT_TRUE(r2);
  EXPECT_EQ(covenant::to_json(*r2.value), again);
}

}  // namespace
