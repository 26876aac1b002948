// The flagship agent (examples/models/multidoc_qa.hpp): retrieval, its rules, and the story the
// demo tells (a cut-off reply, a post() violation fed back, a valid answer), pinned down.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/gtest.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../../examples/models/multidoc_qa.hpp"

namespace {

using covenant::testing::instant;
using covenant::testing::IssueRendered;
using covenant::testing::scripted_engine;
using covenant::testing::step;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<qa::Document> corpus() {
  return {
      {"A1",
       "Symbolic reasoning systems manipulate explicit rules and facts. They make every step of an inference "
       "inspectable."},
      {"B2",
       "A vector database stores embeddings, numeric representations of text. It answers nearest-neighbour "
       "queries over those embeddings in milliseconds. This makes semantic search practical."},
      {"C3", "Hybrid search combines keyword matching with dense vector similarity."},
  };
}

const qa::MultiDocQAInput question{"Why are vector databases useful for semantic search?", corpus(), 2};

TEST(Bm25, RanksTheDocumentThatSharesRareTermsFirst) {
  const qa::bm25 index({"the cat sat on the mat", "vector databases store embeddings for semantic search",
                        "a vector is an arrow"});
  EXPECT_THAT(index.top("semantic vector databases", 3), ElementsAre(1u, 2u, 0u));
  // A term found in every text weighs less than one found in a single text.
  const qa::bm25 idf({"alpha beta", "alpha gamma", "alpha delta"});
  EXPECT_GT(idf.score(1, {"gamma"}), idf.score(1, {"alpha"}));
  EXPECT_EQ(idf.score(0, {"gamma"}), 0.0);
}

TEST(Bm25, TokenizeLowerCasesAndDropsStopWords) {
  EXPECT_THAT(qa::bm25::tokenize("What IS the Vector-DB of 2024?"), ElementsAre("vector", "db", "2024"));
}

TEST(MultiDocQA, ActRetrievesTheBestDocumentsAndSentences) {
  const qa::MultiDocQA agent;
  const qa::IntermediateRetrieved r = agent.act(question);
  EXPECT_EQ(r.query, question.query);
  EXPECT_EQ(r.target_snippet_count, 2);
  ASSERT_EQ(r.top_docs.size(), 3u);
  EXPECT_EQ(r.top_docs[0].id, "B2");
  ASSERT_FALSE(r.selected_sentences.empty());
  EXPECT_THAT(r.selected_sentences[0], HasSubstr("semantic search"));
}

TEST(MultiDocQA, PreRejectsABlankQueryAndNoDocumentsAtOnce) {
  scripted_engine model;
  const covenant::contract<qa::MultiDocQA> agent{model, instant()};
  auto r = agent.run(qa::MultiDocQAInput{"   ", {}, 3});
  EXPECT_THAT(r.outcome, covenant::testing::FailedAt(covenant::stage::pre));
  EXPECT_THAT(r.outcome.issues,
              ElementsAre(IssueRendered("query: must not be blank"),
                          IssueRendered("documents: must contain at least one document")));
  EXPECT_EQ(model.calls(), 0u);
}

TEST(MultiDocQA, PostChecksCoverageEvidenceCountSourcesAndQuotations) {
  const qa::MultiDocQA agent{.min_coverage = 0.6};
  const qa::IntermediateRetrieved ctx = agent.act(question);
  auto issues_of = [&](const qa::AnswerWithEvidence& a) {
    try {
      agent.post(a, ctx);
    } catch (const covenant::violation& v) {
      std::vector<std::string> out;
      for (const auto& i : v.issues()) out.push_back(i.to_string());
      return out;
    }
    return std::vector<std::string>{};
  };
  EXPECT_THAT(issues_of({"ok", {{"B2", "It answers nearest-neighbour queries over those embeddings"}}, 0.9}),
              ::testing::IsEmpty());
  EXPECT_THAT(issues_of({"ok", {}, 0.3}),
              ElementsAre("coverage_score: must be at least 0.60; cite more evidence or answer more narrowly (got "
                          "0.30)"));
  EXPECT_THAT(issues_of({"ok", {}, 0.85}),
              ElementsAre("evidence: a coverage score of 0.8 or more needs at least one evidence snippet"));
  EXPECT_THAT(issues_of({"ok", {{"B2", "A vector database"}, {"B2", "numeric"}, {"B2", "semantic"}}, 0.7}),
              ElementsAre("evidence: must have at most 2 snippets (got 3)"));
  EXPECT_THAT(issues_of({"ok", {{"Z9", "anything"}, {"B2", "not in the text"}}, 0.7}),
              ElementsAre("evidence[0].doc_id: must be one of the retrieved documents: B2, C3, A1 (got \"Z9\")",
                          "evidence[1].snippet: must be copied word for word from document B2"));
  // Quotations are compared without regard to case and runs of whitespace.
  EXPECT_THAT(issues_of({"ok", {{"B2", "a VECTOR   database stores"}}, 0.7}), ::testing::IsEmpty());
}

TEST(MultiDocQA, CutOffReplyThenPostViolationFedBackThenValidAnswer) {
  scripted_engine model{
      step(R"({"answer": "Vector databases keep embeddings", "evidence": [{"doc_id": "B2", "snippet": "It answers)",
           {400, 40}, "length"),
      step(R"({"answer": "They find text by meaning.", "evidence": [{"doc_id": "B2", "snippet": "A vector database stores embeddings, numeric representations of text."}], "coverage_score": 0.45})",
           {500, 40}),
      step(R"({"answer": "They answer nearest-neighbour queries over embeddings quickly.", "evidence": [{"doc_id": "B2", "snippet": "It answers nearest-neighbour queries over those embeddings in milliseconds."}], "coverage_score": 0.9})",
           {600, 70}),
  };
  auto options = instant({.tries = 3});
  options.accumulate_errors = true;
  const covenant::contract<qa::MultiDocQA> agent{model, options, qa::MultiDocQA{.min_coverage = 0.6}};
  auto [answer, outcome] = agent.run(question);
  ASSERT_THAT(outcome, covenant::testing::Succeeded());
  ASSERT_EQ(outcome.attempts.size(), 3u);
  EXPECT_EQ(outcome.usage, (covenant::usage{1500, 150}));
  // 1: cut off inside a snippet: the unfinished string is dropped, never completed, and so is the
  // evidence item left without its snippet; coverage_score is missing: rejected at validation,
  // and the model is told it was cut off.
  EXPECT_THAT(outcome.attempts[0].issues, ElementsAre(IssueRendered("coverage_score: required field is missing")));
  EXPECT_TRUE(std::any_of(outcome.attempts[0].notes.begin(), outcome.attempts[0].notes.end(), [](const auto& n) {
    return n.to_string() ==
           "truncated at evidence[0]: dropped the unfinished last item, which does not read: evidence[0].snippet: "
           "required field is missing";
  }));
  EXPECT_THAT(model.request(1).messages.back().content,
              HasSubstr("- coverage_score: required field is missing\nYour reply was cut off before its end"));
  // 2: valid JSON, rejected by post(); the violation reaches attempt 3 with attempt 1's issues.
  EXPECT_EQ(model.request(2).messages.back().content,
            "Your previous reply was rejected:\n"
            "- coverage_score: must be at least 0.60; cite more evidence or answer more narrowly (got 0.45)\n"
            "Earlier replies were rejected too:\n"
            "Reply 1 (" +
                covenant::elide(outcome.attempts[0].text) +
                "):\n"
                "  - coverage_score: required field is missing\n"
                "Reply again with the complete corrected JSON object only, fixing every problem listed.");
  // 3: accepted; forward returns it.
  EXPECT_EQ(answer.coverage_score, 0.9);
  EXPECT_EQ(answer.evidence.at(0).doc_id, "B2");
  // The model saw the retrieved context, not the raw corpus order.
  EXPECT_THAT(model.request(0).messages[1].content, HasSubstr(R"("top_docs":[{"id":"B2")"));
}

TEST(MultiDocQA, FallbackCitesTheBestSentenceOfTheCorpus) {
  scripted_engine model{R"({"answer": "x", "evidence": [], "coverage_score": 0.1})"};
  const covenant::contract<qa::MultiDocQA> agent{model, instant({.tries = 0})};
  auto [answer, outcome] = agent.run(question);
  EXPECT_THAT(outcome, covenant::testing::FailedAt(covenant::stage::post));
  EXPECT_EQ(answer.coverage_score, 0.0);
  EXPECT_THAT(answer.answer, HasSubstr("not confident enough"));
  ASSERT_EQ(answer.evidence.size(), 1u);
  EXPECT_EQ(answer.evidence[0].doc_id, "B2");
  EXPECT_EQ(answer.evidence[0].snippet, "This makes semantic search practical.");
}

}  // namespace
