// Decodes a valid and an invalid document of each retrieval-validation model and prints what the
// decoder found, one issue per line: exactly the feedback a model would be shown.
//
//     $ ./retrieval_validation
#include <covenant/read/decode.hpp>

#include <iostream>
#include <string_view>

#include "models/retrieval.hpp"

namespace {

template <class T>
void show(std::string_view title, std::string_view json) {
  std::cout << "== " << title << "\n";
  const auto r = covenant::try_decode<T>(json);
  if (r.ok()) {
    std::cout << "ok\n\n";
    return;
  }
  for (const auto& issue : r.issues)
    std::cout << issue.to_string() << "  [" << covenant::to_string(issue.code) << "]\n";
  std::cout << "\n";
}

}  // namespace

int main() {
  show<models::RetrievalQuery>("RetrievalQuery, valid",
                               R"({"query_text": "What are the key concepts in neural networks?",
                                   "filters": {"chapter": "Chapter 3", "min_similarity": 0.5},
                                   "top_k": 5})");
  show<models::RetrievalQuery>("RetrievalQuery, invalid",
                               R"({"query_text": "nets", "filters": {"min_similarity": 1.5},
                                   "top_k": 50, "query_embedding": [0.1, 0.2, 0.3]})");

  show<models::RetrievalResult>("RetrievalResult, valid",
                                R"({"id": "3f2b8c1e-9a4d-4e6b-8c2a-1d5e7f9a0b3c",
                                    "content": "Neural networks consist of layers of interconnected nodes.",
                                    "source_url": "https://book.example.com/chapter-3-neural-networks",
                                    "chapter": "Chapter 3: Neural Networks", "section": "Introduction",
                                    "similarity_score": 0.87, "confidence_score": 0.92,
                                    "retrieval_timestamp": "2025-12-16T10:30:00Z"})");
  show<models::RetrievalResult>("RetrievalResult, invalid",
                                R"({"id": "chunk-12345-abcde", "content": "",
                                    "source_url": "chapter-3-neural-networks.md", "chapter": "Chapter 3",
                                    "similarity_score": 1.3, "confidence_score": -0.2,
                                    "retrieval_timestamp": "2999-01-01T00:00:00Z"})");

  show<models::ValidationRequest>("ValidationRequest, valid",
                                  R"({"query": "What are the key concepts in neural networks?",
                                      "expected_sources": ["chapter-3-neural-networks.md"],
                                      "validation_criteria": {"min_precision": 0.8, "max_latency_ms": 1500}})");
  show<models::ValidationRequest>("ValidationRequest, invalid (field rules)",
                                  R"({"expected_sources": ["chapter 3 notes.md", ""],
                                      "validation_criteria": {"min_precision": 1.2, "max_latency_ms": 0}})");
  show<models::ValidationRequest>("ValidationRequest, invalid (cross-field rules)",
                                  R"({"validation_criteria": {"require_expected_sources": true}})");

  show<models::ValidationResponse>("ValidationResponse, valid",
                                   R"({"query": "What are the key concepts in neural networks?",
                                       "retrieved_results": [
                                         {"id": "3f2b8c1e-9a4d-4e6b-8c2a-1d5e7f9a0b3c",
                                          "content": "Neural networks consist of layers of interconnected nodes.",
                                          "source_url": "https://book.example.com/chapter-3", "chapter": "Chapter 3",
                                          "similarity_score": 0.87, "confidence_score": 0.92,
                                          "retrieval_timestamp": "2025-12-16T10:30:00Z"}],
                                       "semantic_alignment_score": 0.91, "precision_metric": 0.89,
                                       "recall_metric": 0.85, "latency_ms": 420.5, "validation_passed": true,
                                       "validation_details": {"expected_sources_found": 1, "total_expected_sources": 1,
                                                              "sources_match_ratio": 1.0,
                                                              "criteria_evaluations": {"precision": true, "latency": true}}})");
  show<models::ValidationResponse>("ValidationResponse, invalid (field rules)",
                                   R"({"query": "", "retrieved_results": [
                                         {"id": "3f2b8c1e-9a4d-4e6b-8c2a-1d5e7f9a0b3c", "content": "Layers of nodes.",
                                          "source_url": "https://book.example.com/chapter-3", "chapter": "Chapter 3",
                                          "similarity_score": 0.87, "confidence_score": 0.92,
                                          "retrieval_timestamp": "2025-12-16T10:30:00Z"},
                                         {"id": "3f2b8c1e-9a4d-4e6b-8c2a-1d5e7f9a0b3c", "content": "Weights and biases.",
                                          "source_url": "https://book.example.com/chapter-3", "chapter": "Chapter 3",
                                          "similarity_score": 1.4, "confidence_score": 0.8,
                                          "retrieval_timestamp": "2025-12-16T10:30:00Z"}],
                                       "semantic_alignment_score": 0.91, "precision_metric": 0.89,
                                       "latency_ms": 0, "validation_passed": "yes"})");
  show<models::ValidationResponse>("ValidationResponse, invalid (cross-field rules)",
                                   R"({"query": "neural networks", "retrieved_results": [],
                                       "semantic_alignment_score": 0.91, "precision_metric": 0.89,
                                       "recall_metric": 0.85, "latency_ms": 420.5, "validation_passed": true,
                                       "validation_details": {"expected_sources_found": 1, "total_expected_sources": 2,
                                                              "sources_match_ratio": 0.5,
                                                              "criteria_evaluations": {"precision": true, "latency": false}}})");

  show<models::ValidationMetrics>("ValidationMetrics, valid",
                                  R"({"validation_run_id": "0b9c7a1e-5d2f-4c8e-a3b1-7e6d5c4b3a29",
                                      "timestamp": "2025-12-16T10:30:00Z",
                                      "query_types_tested": ["general", "chapter-specific", "paragraph-level"],
                                      "overall_precision": 0.88, "overall_recall": 0.82, "avg_latency_ms": 380.2,
                                      "success_rate": 0.95, "total_queries_tested": 100, "queries_passed": 95})");
  show<models::ValidationMetrics>("ValidationMetrics, invalid",
                                  R"({"validation_run_id": "0b9c7a1e-5d2f-4c8e-a3b1-7e6d5c4b3a29",
                                      "timestamp": "2025-12-16T10:30:00Z", "query_types_tested": ["general"],
                                      "overall_precision": 0.88, "overall_recall": 0.82, "avg_latency_ms": 380.2,
                                      "success_rate": 0.9, "total_queries_tested": 100, "queries_passed": 95})");
  return 0;
}
