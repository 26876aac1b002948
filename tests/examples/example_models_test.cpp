// The example models (FinalAnswer, the retrieval-validation entities): every valid document decodes, and each rule,
// broken alone, yields exactly one issue with its rendered line and code.
#include <covenant/read/decode.hpp>
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../../examples/models/final_answer.hpp"
#include "../../examples/models/retrieval.hpp"

namespace {

using covenant::issue_code;

/// A JSON object kept as (key, raw JSON text) pairs, so one member can be replaced or removed
/// and numbers stay exactly as written.
class doc {
 public:
  doc(std::initializer_list<std::pair<std::string, std::string>> members) : members_(members) {}

  [[nodiscard]] doc with(const std::string& key, std::string raw) const {
    doc d = *this;
    for (auto& [k, v] : d.members_) {
      if (k == key) {
        v = std::move(raw);
        return d;
      }
    }
    d.members_.emplace_back(key, std::move(raw));
    return d;
  }

  [[nodiscard]] doc without(const std::string& key) const {
    doc d = *this;
    std::erase_if(d.members_, [&](const auto& m) { return m.first == key; });
    return d;
  }

  [[nodiscard]] std::string str() const {
    std::string out = "{";
    for (const auto& [k, v] : members_) {
      if (out.size() > 1) out += ", ";
      out += "\"" + k + "\": " + v;
    }
    return out + "}";
  }

  [[nodiscard]] std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const auto& m : members_) out.push_back(m.first);
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> members_;
};

std::string jstr(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string list(std::initializer_list<std::string> items) {
  std::string out = "[";
  for (const auto& i : items) {
    if (out.size() > 1) out += ", ";
    out += i;
  }
  return out + "]";
}

/// `n` copies of the JSON value `item` as an array.
std::string repeated(std::size_t n, std::string_view item) {
  std::string out = "[";
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    out += item;
  }
  return out + "]";
}

template <class T>
testing::AssertionResult decodes(const doc& d) {
  auto r = covenant::try_decode<T>(d.str());
  if (r.ok() && r.value) return testing::AssertionSuccess();
  return testing::AssertionFailure() << "expected no issue, got:\n" << covenant::render_feedback(r.issues);
}

/// Decoding `d` yields exactly one issue, rendered as `line`, with `code`, and no value.
template <class T>
testing::AssertionResult fails_with(const doc& d, std::string_view line, issue_code code) {
  auto r = covenant::try_decode<T>(d.str());
  if (r.issues.size() != 1)
    return testing::AssertionFailure() << "expected exactly one issue, got " << r.issues.size() << ":\n"
                                       << covenant::render_feedback(r.issues);
  const auto& i = r.issues.front();
  if (i.to_string() != line)
    return testing::AssertionFailure() << "line\n  actual:   " << i.to_string() << "\n  expected: " << line;
  if (i.code != code)
    return testing::AssertionFailure() << "code " << covenant::to_string(i.code) << ", expected "
                                       << covenant::to_string(code);
  if (r.value) return testing::AssertionFailure() << "a value was produced despite the issue";
  return testing::AssertionSuccess();
}

/// Removing each of `keys` alone yields `<key>: required field is missing`.
template <class T>
void expect_each_required(const doc& d, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    EXPECT_TRUE(fails_with<T>(d.without(k), std::string(k) + ": required field is missing", issue_code::missing_field))
        << "field " << k;
  }
}

// =============================================================================================
// FinalAnswer
// =============================================================================================

const doc final_answer{
    {"answer", jstr("Neural networks learn weighted connections between layers.")},
    {"confidence", "0.87"},
    {"sources", list({jstr("chapter-3.md"), jstr("https://book.example.com/chapter-3")})},
    {"reasoning", jstr("Both sources define a network as layers of weighted nodes.")},
    {"metadata", R"({"timestamp": "2025-01-15T10:30:00Z", "model_used": "gpt-4o", )"
                 R"("token_usage": {"input_tokens": 512, "output_tokens": 128}, "program_version": "1.2.0"})"}};

TEST(FinalAnswer, ValidDocumentDecodes) {
  EXPECT_TRUE(decodes<models::FinalAnswer>(final_answer));
  EXPECT_TRUE(decodes<models::FinalAnswer>(final_answer.without("reasoning").without("metadata")));
  EXPECT_TRUE(decodes<models::FinalAnswer>(final_answer.with("metadata", "{}")));
}

TEST(FinalAnswer, BoundaryValuesAreAccepted) {
  EXPECT_TRUE(decodes<models::FinalAnswer>(final_answer.with("confidence", "0")));
  EXPECT_TRUE(decodes<models::FinalAnswer>(final_answer.with("confidence", "1")));
  EXPECT_TRUE(decodes<models::FinalAnswer>(final_answer.with("answer", jstr(std::string(10000, 'a')))));
  EXPECT_TRUE(decodes<models::FinalAnswer>(final_answer.with("reasoning", jstr(std::string(5000, 'r')))));
  EXPECT_TRUE(decodes<models::FinalAnswer>(final_answer.with("sources", repeated(50, "\"s\""))));
}

TEST(FinalAnswer, RequiredFieldsMustBePresent) {
  expect_each_required<models::FinalAnswer>(final_answer, {"answer", "confidence", "sources"});
}

TEST(FinalAnswer, EmptyAnswerIsRejected) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("answer", "\"\""), "answer: must not be empty (got \"\")",
                                              issue_code::constraint_violation));
}

TEST(FinalAnswer, AnswerLongerThan10000CharactersIsRejected) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("answer", jstr(std::string(10001, 'a'))),
                                              "answer: must have at most 10000 characters (got 10001 characters)",
                                              issue_code::constraint_violation));
}

TEST(FinalAnswer, ConfidenceAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("confidence", "1.7"), "confidence: must be <= 1 (got 1.7)",
                                              issue_code::constraint_violation));
}

TEST(FinalAnswer, NegativeConfidenceIsRejected) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("confidence", "-0.1"),
                                              "confidence: must be >= 0 (got -0.1)", issue_code::constraint_violation));
}

TEST(FinalAnswer, ConfidenceThatIsNotANumberIsATypeMismatch) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("confidence", "\"high\""),
                                              "confidence: expected number (got \"high\")", issue_code::type_mismatch));
}

TEST(FinalAnswer, EmptySourceListIsRejected) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("sources", "[]"), "sources: must not be empty (got [])",
                                              issue_code::constraint_violation));
}

TEST(FinalAnswer, MoreThan50SourcesAreRejected) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("sources", repeated(51, "\"s\"")),
                                              "sources: must have at most 50 items (got 51 items)",
                                              issue_code::constraint_violation));
}

TEST(FinalAnswer, EmptySourceStringIsRejected) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("sources", R"(["chapter-3.md", ""])"),
                                              "sources[1]: must not be empty (got \"\")",
                                              issue_code::constraint_violation));
}

TEST(FinalAnswer, SourceThatIsNotAStringIsATypeMismatch) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("sources", R"(["chapter-3.md", 7])"),
                                              "sources[1]: expected string (got 7)", issue_code::type_mismatch));
}

TEST(FinalAnswer, ReasoningLongerThan5000CharactersIsRejected) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("reasoning", jstr(std::string(5001, 'r'))),
                                              "reasoning: must have at most 5000 characters (got 5001 characters)",
                                              issue_code::constraint_violation));
}

TEST(FinalAnswer, MetadataThatIsNotAnObjectIsATypeMismatch) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("metadata", "\"none\""),
                                              "metadata: expected object (AnswerMetadata) or null (got \"none\")",
                                              issue_code::type_mismatch));
}

TEST(FinalAnswer, NegativeTokenCountIsRejected) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(
      final_answer.with("metadata", R"({"token_usage": {"input_tokens": 512, "output_tokens": -1}})"),
      "metadata.token_usage.output_tokens: must be >= 0 (got -1)", issue_code::constraint_violation));
}

TEST(FinalAnswer, FractionalTokenCountIsATypeMismatch) {
  EXPECT_TRUE(fails_with<models::FinalAnswer>(final_answer.with("metadata", R"({"token_usage": {"input_tokens": 1.5}})"),
                                              "metadata.token_usage.input_tokens: expected integer or null (got 1.5)",
                                              issue_code::type_mismatch));
}

// =============================================================================================
// RetrievalQuery
// =============================================================================================

const std::string embedding_1024 = repeated(models::embedding_dimension, "0.01");

const doc retrieval_query{
    {"query_text", jstr("What are the key concepts in neural networks?")},
    {"filters", R"({"chapter": "Chapter 3", "section": "Introduction", "min_similarity": 0.5})"},
    {"top_k", "5"},
    {"query_embedding", embedding_1024}};

TEST(RetrievalQuery, ValidDocumentDecodes) {
  auto r = covenant::try_decode<models::RetrievalQuery>(retrieval_query.str());
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value->top_k, 5);
  EXPECT_EQ(r.value->filters.chapter, "Chapter 3");
  ASSERT_TRUE(r.value->query_embedding.has_value());
  EXPECT_EQ(r.value->query_embedding->size(), 1024u);
}

TEST(RetrievalQuery, FiltersAndEmbeddingMayBeOmitted) {
  auto r = covenant::try_decode<models::RetrievalQuery>(retrieval_query.without("filters").without("query_embedding").str());
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_FALSE(r.value->filters.chapter.has_value());
  EXPECT_FALSE(r.value->filters.min_similarity.has_value());
  EXPECT_FALSE(r.value->query_embedding.has_value());
  EXPECT_TRUE(decodes<models::RetrievalQuery>(retrieval_query.with("filters", "{}")));
}

TEST(RetrievalQuery, BoundaryValuesAreAccepted) {
  EXPECT_TRUE(decodes<models::RetrievalQuery>(retrieval_query.with("query_text", jstr("abcde"))));
  EXPECT_TRUE(decodes<models::RetrievalQuery>(retrieval_query.with("query_text", jstr(std::string(1000, 'q')))));
  EXPECT_TRUE(decodes<models::RetrievalQuery>(retrieval_query.with("top_k", "1")));
  EXPECT_TRUE(decodes<models::RetrievalQuery>(retrieval_query.with("top_k", "20")));
}

TEST(RetrievalQuery, QueryTextAndTopKAreRequired) {
  // top_k is documented with a default of 5 but also as required: the document must state it.
  expect_each_required<models::RetrievalQuery>(retrieval_query, {"query_text", "top_k"});
}

TEST(RetrievalQuery, QueryTextShorterThan5CharactersIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalQuery>(retrieval_query.with("query_text", jstr("nets")),
                                                 "query_text: must have at least 5 characters (got 4 characters)",
                                                 issue_code::constraint_violation));
}

TEST(RetrievalQuery, EmptyQueryTextIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalQuery>(retrieval_query.with("query_text", "\"\""),
                                                 "query_text: must have at least 5 characters (got \"\")",
                                                 issue_code::constraint_violation));
}

TEST(RetrievalQuery, QueryTextLongerThan1000CharactersIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalQuery>(retrieval_query.with("query_text", jstr(std::string(1001, 'q'))),
                                                 "query_text: must have at most 1000 characters (got 1001 characters)",
                                                 issue_code::constraint_violation));
}

TEST(RetrievalQuery, TopKZeroIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalQuery>(retrieval_query.with("top_k", "0"), "top_k: must be >= 1 (got 0)",
                                                 issue_code::constraint_violation));
}

TEST(RetrievalQuery, TopKAbove20IsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalQuery>(retrieval_query.with("top_k", "21"), "top_k: must be <= 20 (got 21)",
                                                 issue_code::constraint_violation));
}

TEST(RetrievalQuery, FractionalTopKIsATypeMismatch) {
  EXPECT_TRUE(fails_with<models::RetrievalQuery>(retrieval_query.with("top_k", "2.5"), "top_k: expected integer (got 2.5)",
                                                 issue_code::type_mismatch));
}

TEST(RetrievalQuery, EmbeddingShorterThan1024ValuesIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalQuery>(retrieval_query.with("query_embedding", repeated(1023, "0.01")),
                                                 "query_embedding: must have exactly 1024 items (got 1023 items)",
                                                 issue_code::constraint_violation));
}

TEST(RetrievalQuery, EmbeddingLongerThan1024ValuesIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalQuery>(retrieval_query.with("query_embedding", repeated(1025, "0.01")),
                                                 "query_embedding: must have exactly 1024 items (got 1025 items)",
                                                 issue_code::constraint_violation));
}

TEST(RetrievalQuery, NonNumericEmbeddingValueIsATypeMismatch) {
  std::string embedding = repeated(1023, "0.01");
  embedding.insert(embedding.size() - 1, ", \"x\"");
  EXPECT_TRUE(fails_with<models::RetrievalQuery>(retrieval_query.with("query_embedding", embedding),
                                                 "query_embedding[1023]: expected number (got \"x\")",
                                                 issue_code::type_mismatch));
}

TEST(RetrievalQuery, MinSimilarityFilterAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalQuery>(retrieval_query.with("filters", R"({"min_similarity": 1.5})"),
                                                 "filters.min_similarity: must be <= 1 (got 1.5)",
                                                 issue_code::constraint_violation));
}

TEST(RetrievalQuery, NegativeMinSimilarityFilterIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalQuery>(retrieval_query.with("filters", R"({"min_similarity": -0.2})"),
                                                 "filters.min_similarity: must be >= 0 (got -0.2)",
                                                 issue_code::constraint_violation));
}

// =============================================================================================
// RetrievalResult
// =============================================================================================

const doc retrieval_result{
    {"id", jstr("3f2b8c1e-9a4d-4e6b-8c2a-1d5e7f9a0b3c")},
    {"content", jstr("Neural networks consist of layers of interconnected nodes.")},
    {"source_url", jstr("https://book.example.com/chapter-3-neural-networks")},
    {"chapter", jstr("Chapter 3: Neural Networks")},
    {"section", jstr("Introduction to Neural Networks")},
    {"similarity_score", "0.87"},
    {"confidence_score", "0.92"},
    {"retrieval_timestamp", jstr("2025-12-16T10:30:00Z")}};

TEST(RetrievalResult, ValidDocumentDecodes) {
  auto r = covenant::try_decode<models::RetrievalResult>(retrieval_result.str());
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value->chapter, "Chapter 3: Neural Networks");
  EXPECT_DOUBLE_EQ(r.value->similarity_score, 0.87);
}

TEST(RetrievalResult, SectionMayBeAbsentOrEmpty) {
  EXPECT_TRUE(decodes<models::RetrievalResult>(retrieval_result.without("section")));
  EXPECT_TRUE(decodes<models::RetrievalResult>(retrieval_result.with("section", "\"\"")));
  EXPECT_TRUE(decodes<models::RetrievalResult>(retrieval_result.with("section", "null")));
}

TEST(RetrievalResult, BoundaryValuesAreAccepted) {
  EXPECT_TRUE(decodes<models::RetrievalResult>(retrieval_result.with("similarity_score", "0").with("confidence_score", "1")));
  EXPECT_TRUE(decodes<models::RetrievalResult>(retrieval_result.with("content", jstr(std::string(5000, 'c')))));
  EXPECT_TRUE(decodes<models::RetrievalResult>(retrieval_result.with("retrieval_timestamp", jstr("2000-01-01T00:00:00Z"))));
  EXPECT_TRUE(
      decodes<models::RetrievalResult>(retrieval_result.with("retrieval_timestamp", jstr("2025-12-16T11:30:00.250+01:00"))));
}

TEST(RetrievalResult, EveryFieldButSectionIsRequired) {
  expect_each_required<models::RetrievalResult>(retrieval_result, {"id", "content", "source_url", "chapter",
                                                                   "similarity_score", "confidence_score",
                                                                   "retrieval_timestamp"});
}

TEST(RetrievalResult, IdThatIsNotAUuidIsRejected) {
  // The specification's example id "chunk-12345-abcde" breaks its own UUID rule; the rule wins.
  EXPECT_TRUE(fails_with<models::RetrievalResult>(
      retrieval_result.with("id", jstr("chunk-12345-abcde")),
      "id: must be a UUID (8-4-4-4-12 hexadecimal digits) (got \"chunk-12345-abcde\")", issue_code::constraint_violation));
}

TEST(RetrievalResult, EmptyContentIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(retrieval_result.with("content", "\"\""),
                                                  "content: must not be empty (got \"\")", issue_code::constraint_violation));
}

TEST(RetrievalResult, ContentLongerThan5000CharactersIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(retrieval_result.with("content", jstr(std::string(5001, 'c'))),
                                                  "content: must have at most 5000 characters (got 5001 characters)",
                                                  issue_code::constraint_violation));
}

TEST(RetrievalResult, SourceUrlThatIsNotAUrlIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(retrieval_result.with("source_url", jstr("chapter-3.md")),
                                                  "source_url: must be an absolute URL (got \"chapter-3.md\")",
                                                  issue_code::constraint_violation));
}

TEST(RetrievalResult, EmptyChapterIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(retrieval_result.with("chapter", "\"\""),
                                                  "chapter: must not be empty (got \"\")", issue_code::constraint_violation));
}

TEST(RetrievalResult, SimilarityAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(retrieval_result.with("similarity_score", "1.2"),
                                                  "similarity_score: must be <= 1 (got 1.2)",
                                                  issue_code::constraint_violation));
}

TEST(RetrievalResult, NegativeSimilarityIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(retrieval_result.with("similarity_score", "-0.3"),
                                                  "similarity_score: must be >= 0 (got -0.3)",
                                                  issue_code::constraint_violation));
}

TEST(RetrievalResult, ConfidenceAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(retrieval_result.with("confidence_score", "92"),
                                                  "confidence_score: must be <= 1 (got 92)",
                                                  issue_code::constraint_violation));
}

TEST(RetrievalResult, NegativeConfidenceIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(retrieval_result.with("confidence_score", "-1"),
                                                  "confidence_score: must be >= 0 (got -1)",
                                                  issue_code::constraint_violation));
}

TEST(RetrievalResult, TimestampThatIsNotIso8601IsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(
      retrieval_result.with("retrieval_timestamp", jstr("16/12/2025 10:30")),
      "retrieval_timestamp: must be an ISO 8601 date-time with time zone, such as 2025-01-15T10:30:00Z "
      "(got \"16/12/2025 10:30\")",
      issue_code::constraint_violation));
}

TEST(RetrievalResult, TimestampWithoutTimeZoneIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(
      retrieval_result.with("retrieval_timestamp", jstr("2025-12-16T10:30:00")),
      "retrieval_timestamp: must be an ISO 8601 date-time with time zone, such as 2025-01-15T10:30:00Z "
      "(got \"2025-12-16T10:30:00\")",
      issue_code::constraint_violation));
}

TEST(RetrievalResult, TimestampInTheFutureIsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(retrieval_result.with("retrieval_timestamp", jstr("2999-01-01T00:00:00Z")),
                                                  "retrieval_timestamp: must not be in the future (got \"2999-01-01T00:00:00Z\")",
                                                  issue_code::constraint_violation));
}

TEST(RetrievalResult, TimestampBefore2000IsRejected) {
  EXPECT_TRUE(fails_with<models::RetrievalResult>(
      retrieval_result.with("retrieval_timestamp", jstr("1999-12-31T23:59:59Z")),
      "retrieval_timestamp: must not be earlier than 2000-01-01T00:00:00Z (got \"1999-12-31T23:59:59Z\")",
      issue_code::constraint_violation));
}

TEST(RetrievalResult, TimestampBoundsHonourTheUtcOffset) {
  // 00:30 at +01:00 is 23:30 UTC on the previous day, before the earliest accepted instant.
  EXPECT_TRUE(fails_with<models::RetrievalResult>(
      retrieval_result.with("retrieval_timestamp", jstr("2000-01-01T00:30:00+01:00")),
      "retrieval_timestamp: must not be earlier than 2000-01-01T00:00:00Z (got \"2000-01-01T00:30:00+01:00\")",
      issue_code::constraint_violation));
  EXPECT_TRUE(decodes<models::RetrievalResult>(retrieval_result.with("retrieval_timestamp", jstr("1999-12-31T23:30:00-01:00"))));
}

// =============================================================================================
// ValidationRequest
// =============================================================================================

const doc validation_request{
    {"query", jstr("What are the key concepts in neural networks?")},
    {"expected_sources", list({jstr("chapter-3-neural-networks.md"), jstr("https://book.example.com/chapter-3")})},
    {"filters", R"({"chapter": "Chapter 3"})"},
    {"validation_criteria", R"({"min_precision": 0.8, "max_latency_ms": 1500, "require_expected_sources": true})"}};

TEST(ValidationRequest, ValidDocumentDecodes) {
  auto r = covenant::try_decode<models::ValidationRequest>(validation_request.str());
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  ASSERT_TRUE(r.value->expected_sources.has_value());
  EXPECT_EQ(r.value->expected_sources->size(), 2u);
  EXPECT_EQ(r.value->validation_criteria->require_expected_sources, true);
}

TEST(ValidationRequest, QueryAloneOrExpectedSourcesAloneIsEnough) {
  EXPECT_TRUE(decodes<models::ValidationRequest>(doc{{"query", jstr("neural networks")}}));
  EXPECT_TRUE(decodes<models::ValidationRequest>(doc{{"expected_sources", list({jstr("chapter-3.md")})}}));
  EXPECT_TRUE(decodes<models::ValidationRequest>(validation_request.with("validation_criteria", "{}")));
}

TEST(ValidationRequest, NeitherQueryNorExpectedSourcesIsRejected) {
  const char* line = "query: required when expected_sources is absent or empty (give at least one of them)";
  EXPECT_TRUE(fails_with<models::ValidationRequest>(doc{}, line, issue_code::invariant_violation));
  // An empty list gives no source either.
  EXPECT_TRUE(fails_with<models::ValidationRequest>(doc{{"expected_sources", "[]"}}, line, issue_code::invariant_violation));
}

TEST(ValidationRequest, EmptyQueryIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(validation_request.with("query", "\"\""),
                                                    "query: must not be empty (got \"\")",
                                                    issue_code::constraint_violation));
}

TEST(ValidationRequest, QueryLongerThan1000CharactersIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(validation_request.with("query", jstr(std::string(1001, 'q'))),
                                                    "query: must have at most 1000 characters (got 1001 characters)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationRequest, EmptyExpectedSourceIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(validation_request.with("expected_sources", R"(["chapter-3.md", ""])"),
                                                    "expected_sources[1]: must not be empty (got \"\")",
                                                    issue_code::constraint_violation));
}

TEST(ValidationRequest, ExpectedSourceWithSpacesIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(
      validation_request.with("expected_sources", R"(["chapter 3 notes.md"])"),
      "expected_sources[0]: must be an absolute URL or a document ID without spaces (got \"chapter 3 notes.md\")",
      issue_code::constraint_violation));
}

TEST(ValidationRequest, ExpectedSourceThatIsABrokenUrlIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(
      validation_request.with("expected_sources", R"(["chapter-3.md", "https:///chapter-3"])"),
      "expected_sources[1]: must be an absolute URL or a document ID without spaces (got \"https:///chapter-3\")",
      issue_code::constraint_violation));
}

TEST(ValidationRequest, ExpectedSourcesThatIsNotAListIsATypeMismatch) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(validation_request.with("expected_sources", jstr("chapter-3.md")),
                                                    "expected_sources: expected array or null (got \"chapter-3.md\")",
                                                    issue_code::type_mismatch));
}

TEST(ValidationRequest, MinPrecisionAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(validation_request.with("validation_criteria", R"({"min_precision": 1.2})"),
                                                    "validation_criteria.min_precision: must be <= 1 (got 1.2)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationRequest, NegativeMinPrecisionIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(validation_request.with("validation_criteria", R"({"min_precision": -0.5})"),
                                                    "validation_criteria.min_precision: must be >= 0 (got -0.5)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationRequest, MaxLatencyThatIsNotPositiveIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(validation_request.with("validation_criteria", R"({"max_latency_ms": 0})"),
                                                    "validation_criteria.max_latency_ms: must be > 0 (got 0)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationRequest, RequireExpectedSourcesThatIsNotABooleanIsATypeMismatch) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(
      validation_request.with("validation_criteria", R"({"require_expected_sources": "yes"})"),
      "validation_criteria.require_expected_sources: expected boolean or null (got \"yes\")", issue_code::type_mismatch));
}

TEST(ValidationRequest, MinSimilarityFilterOutOfRangeIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(validation_request.with("filters", R"({"min_similarity": 2})"),
                                                    "filters.min_similarity: must be <= 1 (got 2)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationRequest, RequiringExpectedSourcesWithoutListingAnyIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationRequest>(
      validation_request.without("expected_sources"),
      "expected_sources: must list at least one source when validation_criteria.require_expected_sources is true",
      issue_code::invariant_violation));
  EXPECT_TRUE(decodes<models::ValidationRequest>(
      validation_request.without("expected_sources").with("validation_criteria", R"({"require_expected_sources": false})")));
}

// =============================================================================================
// ValidationResponse
// =============================================================================================

const std::string second_result =
    retrieval_result.with("id", jstr("8d0e6a52-1c3f-4b7a-9e21-5f4c3b2a1d0e"))
        .with("source_url", jstr("https://book.example.com/chapter-3-1-introduction"))
        .with("similarity_score", "0.81")
        .str();

const doc validation_details{{"expected_sources_found", "2"},
                             {"total_expected_sources", "2"},
                             {"sources_match_ratio", "1.0"},
                             {"criteria_evaluations", R"({"precision": true, "latency": true})"}};

const doc validation_response{{"query", jstr("What are the key concepts in neural networks?")},
                              {"retrieved_results", list({retrieval_result.str(), second_result})},
                              {"semantic_alignment_score", "0.91"},
                              {"precision_metric", "0.89"},
                              {"recall_metric", "0.85"},
                              {"latency_ms", "420.5"},
                              {"validation_passed", "true"},
                              {"validation_details", validation_details.str()}};

doc with_details(const doc& details) { return validation_response.with("validation_details", details.str()); }

TEST(ValidationResponse, ValidDocumentDecodes) {
  auto r = covenant::try_decode<models::ValidationResponse>(validation_response.str());
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  ASSERT_EQ(r.value->retrieved_results.size(), 2u);
  EXPECT_TRUE(r.value->validation_passed);
  ASSERT_TRUE(r.value->validation_details.has_value());
  EXPECT_EQ(r.value->validation_details->criteria_evaluations.at("latency"), true);
}

TEST(ValidationResponse, OptionalPartsMayBeOmitted) {
  EXPECT_TRUE(decodes<models::ValidationResponse>(validation_response.without("recall_metric").without("validation_details")));
  // Without evaluated criteria there is nothing to hold validation_passed against.
  EXPECT_TRUE(decodes<models::ValidationResponse>(
      with_details(validation_details.with("criteria_evaluations", "{}")).with("validation_passed", "false")));
}

TEST(ValidationResponse, RequiredFieldsMustBePresent) {
  expect_each_required<models::ValidationResponse>(validation_response,
                                                   {"query", "retrieved_results", "semantic_alignment_score",
                                                    "precision_metric", "latency_ms", "validation_passed"});
}

TEST(ValidationResponse, EmptyQueryIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("query", "\"\""),
                                                     "query: must not be empty (got \"\")",
                                                     issue_code::constraint_violation));
}

TEST(ValidationResponse, DuplicateResultIdsAreRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(
      validation_response.with("retrieved_results", list({retrieval_result.str(), second_result, retrieval_result.str()})),
      "retrieved_results: id values must be unique (\"3f2b8c1e-9a4d-4e6b-8c2a-1d5e7f9a0b3c\" appears at [0] and [2])",
      issue_code::constraint_violation));
}

TEST(ValidationResponse, ResultRulesAreReportedAtTheResultsPath) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(
      validation_response.with("retrieved_results",
                               list({retrieval_result.str(), retrieval_result.with("id", jstr("chunk-123")).str()})),
      "retrieved_results[1].id: must be a UUID (8-4-4-4-12 hexadecimal digits) (got \"chunk-123\")",
      issue_code::constraint_violation));
}

TEST(ValidationResponse, SemanticAlignmentAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("semantic_alignment_score", "1.01"),
                                                     "semantic_alignment_score: must be <= 1 (got 1.01)",
                                                     issue_code::constraint_violation));
}

TEST(ValidationResponse, NegativeSemanticAlignmentIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("semantic_alignment_score", "-0.01"),
                                                     "semantic_alignment_score: must be >= 0 (got -0.01)",
                                                     issue_code::constraint_violation));
}

TEST(ValidationResponse, PrecisionAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("precision_metric", "89"),
                                                     "precision_metric: must be <= 1 (got 89)",
                                                     issue_code::constraint_violation));
}

TEST(ValidationResponse, NegativePrecisionIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("precision_metric", "-0.89"),
                                                     "precision_metric: must be >= 0 (got -0.89)",
                                                     issue_code::constraint_violation));
}

TEST(ValidationResponse, RecallAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("recall_metric", "1.5"),
                                                     "recall_metric: must be <= 1 (got 1.5)",
                                                     issue_code::constraint_violation));
}

TEST(ValidationResponse, NegativeRecallIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("recall_metric", "-0.85"),
                                                     "recall_metric: must be >= 0 (got -0.85)",
                                                     issue_code::constraint_violation));
}

TEST(ValidationResponse, ZeroLatencyIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("latency_ms", "0"),
                                                     "latency_ms: must be > 0 (got 0)", issue_code::constraint_violation));
}

TEST(ValidationResponse, NegativeLatencyIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("latency_ms", "-420.5"),
                                                     "latency_ms: must be > 0 (got -420.5)",
                                                     issue_code::constraint_violation));
}

TEST(ValidationResponse, ValidationPassedThatIsNotABooleanIsATypeMismatch) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("validation_passed", "\"yes\""),
                                                     "validation_passed: expected boolean (got \"yes\")",
                                                     issue_code::type_mismatch));
}

TEST(ValidationResponse, PassedWithAFailedCriterionIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(
      with_details(validation_details.with("criteria_evaluations", R"({"precision": true, "latency": false})")),
      "validation_passed: must be false because validation_details.criteria_evaluations has failed criteria: latency",
      issue_code::invariant_violation));
}

TEST(ValidationResponse, FailedWhenEveryCriterionPassedIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(
      validation_response.with("validation_passed", "false"),
      "validation_passed: must be true because every criterion in validation_details.criteria_evaluations passed",
      issue_code::invariant_violation));
  EXPECT_TRUE(decodes<models::ValidationResponse>(
      with_details(validation_details.with("criteria_evaluations", R"({"precision": false, "latency": true})"))
          .with("validation_passed", "false")));
}

TEST(ValidationResponse, RecallAboveZeroWithZeroPrecisionIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("precision_metric", "0"),
                                                     "recall_metric: must be 0 because precision_metric is 0 (got 0.85)",
                                                     issue_code::invariant_violation));
}

TEST(ValidationResponse, ZeroRecallWithPrecisionAboveZeroIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("recall_metric", "0"),
                                                     "recall_metric: must be > 0 because precision_metric is 0.89 (got 0)",
                                                     issue_code::invariant_violation));
  EXPECT_TRUE(decodes<models::ValidationResponse>(validation_response.with("recall_metric", "0").with("precision_metric", "0")));
}

TEST(ValidationResponse, PrecisionAboveZeroWithoutResultsIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(validation_response.with("retrieved_results", "[]"),
                                                     "precision_metric: must be 0 because retrieved_results is empty (got 0.89)",
                                                     issue_code::invariant_violation));
  EXPECT_TRUE(decodes<models::ValidationResponse>(
      validation_response.with("retrieved_results", "[]").with("precision_metric", "0").with("recall_metric", "0")));
}

TEST(ValidationResponse, DetailsNeedEveryMember) {
  for (const auto& key : validation_details.keys()) {
    EXPECT_TRUE(fails_with<models::ValidationResponse>(with_details(validation_details.without(key)),
                                                       "validation_details." + key + ": required field is missing",
                                                       issue_code::missing_field))
        << "field " << key;
  }
}

TEST(ValidationResponse, NegativeSourceCountIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(
      with_details(validation_details.with("expected_sources_found", "-1")),
      "validation_details.expected_sources_found: must be >= 0 (got -1)", issue_code::constraint_violation));
  EXPECT_TRUE(fails_with<models::ValidationResponse>(
      with_details(validation_details.with("total_expected_sources", "-2")),
      "validation_details.total_expected_sources: must be >= 0 (got -2)", issue_code::constraint_violation));
}

TEST(ValidationResponse, SourcesMatchRatioAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(with_details(validation_details.with("sources_match_ratio", "1.5")),
                                                     "validation_details.sources_match_ratio: must be <= 1 (got 1.5)",
                                                     issue_code::constraint_violation));
}

TEST(ValidationResponse, MoreSourcesFoundThanExpectedIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(
      with_details(validation_details.with("expected_sources_found", "3")),
      "validation_details.expected_sources_found: must be <= total_expected_sources = 2 (got 3)",
      issue_code::invariant_violation));
}

TEST(ValidationResponse, SourcesMatchRatioMustEqualFoundOverTotal) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(
      with_details(validation_details.with("expected_sources_found", "1")),
      "validation_details.sources_match_ratio: must equal expected_sources_found / total_expected_sources = 1/2 = 0.5 "
      "(got 1)",
      issue_code::invariant_violation));
  // Rounded to two decimals is close enough; with nothing expected there is no ratio to check.
  EXPECT_TRUE(decodes<models::ValidationResponse>(with_details(
      validation_details.with("expected_sources_found", "2").with("total_expected_sources", "3").with("sources_match_ratio", "0.67"))));
  EXPECT_TRUE(decodes<models::ValidationResponse>(with_details(
      validation_details.with("expected_sources_found", "0").with("total_expected_sources", "0").with("sources_match_ratio", "0"))));
}

TEST(ValidationResponse, CriterionVerdictThatIsNotABooleanIsATypeMismatch) {
  EXPECT_TRUE(fails_with<models::ValidationResponse>(
      with_details(validation_details.with("criteria_evaluations", R"({"precision": "yes", "latency": true})")),
      "validation_details.criteria_evaluations.precision: expected boolean (got \"yes\")", issue_code::type_mismatch));
}

// =============================================================================================
// ValidationMetrics
// =============================================================================================

const doc validation_metrics{{"validation_run_id", jstr("0b9c7a1e-5d2f-4c8e-a3b1-7e6d5c4b3a29")},
                             {"timestamp", jstr("2025-12-16T10:30:00Z")},
                             {"query_types_tested", list({jstr("general"), jstr("chapter-specific"),
                                                          jstr("paragraph-level")})},
                             {"overall_precision", "0.88"},
                             {"overall_recall", "0.82"},
                             {"avg_latency_ms", "380.2"},
                             {"success_rate", "0.95"},
                             {"total_queries_tested", "100"},
                             {"queries_passed", "95"}};

TEST(ValidationMetrics, ValidDocumentDecodes) {
  auto r = covenant::try_decode<models::ValidationMetrics>(validation_metrics.str());
  ASSERT_TRUE(r) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.value->queries_passed, 95);
  EXPECT_EQ(r.value->query_types_tested.size(), 3u);
}

TEST(ValidationMetrics, EveryFieldIsRequired) {
  expect_each_required<models::ValidationMetrics>(
      validation_metrics, {"validation_run_id", "timestamp", "query_types_tested", "overall_precision", "overall_recall",
                           "avg_latency_ms", "success_rate", "total_queries_tested", "queries_passed"});
}

TEST(ValidationMetrics, RunWhereNoQueryPassedIsAccepted) {
  EXPECT_TRUE(decodes<models::ValidationMetrics>(validation_metrics.with("queries_passed", "0").with("success_rate", "0")));
}

TEST(ValidationMetrics, SuccessRateRoundedToTwoDecimalsIsAccepted) {
  EXPECT_TRUE(decodes<models::ValidationMetrics>(
      validation_metrics.with("total_queries_tested", "3").with("queries_passed", "2").with("success_rate", "0.67")));
  EXPECT_TRUE(decodes<models::ValidationMetrics>(
      validation_metrics.with("total_queries_tested", "3").with("queries_passed", "1").with("success_rate", "0.33")));
}

TEST(ValidationMetrics, RunIdThatIsNotAUuidIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(
      validation_metrics.with("validation_run_id", jstr("validation-run-12345-abcde")),
      "validation_run_id: must be a UUID (8-4-4-4-12 hexadecimal digits) (got \"validation-run-12345-abcde\")",
      issue_code::constraint_violation));
}

TEST(ValidationMetrics, TimestampThatIsNotIso8601IsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(
      validation_metrics.with("timestamp", jstr("yesterday")),
      "timestamp: must be an ISO 8601 date-time with time zone, such as 2025-01-15T10:30:00Z (got \"yesterday\")",
      issue_code::constraint_violation));
}

TEST(ValidationMetrics, EmptyQueryTypeListIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("query_types_tested", "[]"),
                                                    "query_types_tested: must not be empty (got [])",
                                                    issue_code::constraint_violation));
}

TEST(ValidationMetrics, EmptyQueryTypeIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("query_types_tested", R"(["general", ""])"),
                                                    "query_types_tested[1]: must not be empty (got \"\")",
                                                    issue_code::constraint_violation));
}

TEST(ValidationMetrics, OverallPrecisionAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("overall_precision", "1.1"),
                                                    "overall_precision: must be <= 1 (got 1.1)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationMetrics, NegativeOverallPrecisionIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("overall_precision", "-0.88"),
                                                    "overall_precision: must be >= 0 (got -0.88)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationMetrics, OverallRecallAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("overall_recall", "82"),
                                                    "overall_recall: must be <= 1 (got 82)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationMetrics, NegativeOverallRecallIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("overall_recall", "-0.82"),
                                                    "overall_recall: must be >= 0 (got -0.82)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationMetrics, AverageLatencyThatIsNotPositiveIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("avg_latency_ms", "0"),
                                                    "avg_latency_ms: must be > 0 (got 0)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationMetrics, SuccessRateAboveOneIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("success_rate", "95"),
                                                    "success_rate: must be <= 1 (got 95)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationMetrics, NegativeSuccessRateIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("success_rate", "-0.95"),
                                                    "success_rate: must be >= 0 (got -0.95)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationMetrics, ZeroQueriesTestedIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(
      validation_metrics.with("total_queries_tested", "0").with("queries_passed", "0").with("success_rate", "0"),
      "total_queries_tested: must be > 0 (got 0)", issue_code::constraint_violation));
}

TEST(ValidationMetrics, NegativeQueriesPassedIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("queries_passed", "-1"),
                                                    "queries_passed: must be >= 0 (got -1)",
                                                    issue_code::constraint_violation));
}

TEST(ValidationMetrics, FractionalQueryCountIsATypeMismatch) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("total_queries_tested", "\"100\""),
                                                    "total_queries_tested: expected integer (got \"100\")",
                                                    issue_code::type_mismatch));
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("queries_passed", "95.5"),
                                                    "queries_passed: expected integer (got 95.5)",
                                                    issue_code::type_mismatch));
}

TEST(ValidationMetrics, MoreQueriesPassedThanTestedIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(
      validation_metrics.with("queries_passed", "120").with("success_rate", "1"),
      "queries_passed: must be <= total_queries_tested = 100 (got 120)", issue_code::invariant_violation));
}

TEST(ValidationMetrics, SuccessRateMustEqualPassedOverTested) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(
      validation_metrics.with("success_rate", "0.9"),
      "success_rate: must equal queries_passed / total_queries_tested = 95/100 = 0.95 (got 0.9)",
      issue_code::invariant_violation));
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(
      validation_metrics.with("total_queries_tested", "3").with("queries_passed", "2").with("success_rate", "0.66"),
      "success_rate: must equal queries_passed / total_queries_tested = 2/3 = 0.6667 (got 0.66)",
      issue_code::invariant_violation));
}

TEST(ValidationMetrics, RecallAboveZeroWithZeroPrecisionIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("overall_precision", "0"),
                                                    "overall_recall: must be 0 because overall_precision is 0 (got 0.82)",
                                                    issue_code::invariant_violation));
}

TEST(ValidationMetrics, ZeroRecallWithPrecisionAboveZeroIsRejected) {
  EXPECT_TRUE(fails_with<models::ValidationMetrics>(validation_metrics.with("overall_recall", "0"),
                                                    "overall_recall: must be > 0 because overall_precision is 0.88 (got 0)",
                                                    issue_code::invariant_violation));
}

// =============================================================================================
// Every issue of a document at once
// =============================================================================================

TEST(ExampleModels, EveryFieldIssueOfADocumentIsReportedTogether) {
  auto r = covenant::try_decode<models::RetrievalResult>(retrieval_result.with("id", jstr("chunk-12345-abcde"))
                                                         .with("similarity_score", "1.3")
                                                         .with("chapter", "\"\"")
                                                         .without("retrieval_timestamp")
                                                         .str());
  EXPECT_EQ(covenant::render_feedback(r.issues),
            "id: must be a UUID (8-4-4-4-12 hexadecimal digits) (got \"chunk-12345-abcde\")\n"
            "chapter: must not be empty (got \"\")\n"
            "similarity_score: must be <= 1 (got 1.3)\n"
            "retrieval_timestamp: required field is missing\n");
}

TEST(ExampleModels, InvariantsAreCheckedOnlyOnceTheFieldsAreValid) {
  // success_rate is out of range and also disagrees with 95/100: the cross-field rule waits until
  // the fields it reads are valid, so only the range issue is reported.
  auto r = covenant::try_decode<models::ValidationMetrics>(validation_metrics.with("success_rate", "9.5").str());
  ASSERT_EQ(r.issues.size(), 1u) << covenant::render_feedback(r.issues);
  EXPECT_EQ(r.issues[0].code, issue_code::constraint_violation);
}

}  // namespace
