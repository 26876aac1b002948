// Retrieval-pipeline validation models: the query sent to a book-aware retrieval system, the
// chunks it returns, a request to validate the pipeline against criteria, the response with its
// quality metrics, and the metrics aggregated over a validation run. Every rule of the
// specification is declared beside the structs, so the decoder checks it and a model is told
// about it.
//
// Rules, by entity (F = field constraint, I = cross-field invariant):
//   RetrievalFilters    F min_similarity in [0, 1]
//   RetrievalQuery      F query_text 5..1000 characters; F top_k in [1, 20];
//                       F query_embedding has exactly 1024 values (when given)
//   RetrievalResult     F id is a UUID; F content non-empty, at most 5000 characters;
//                       F source_url is an absolute URL; F chapter non-empty;
//                       F similarity_score, confidence_score in [0, 1];
//                       F retrieval_timestamp is ISO 8601 and between 2000-01-01T00:00:00Z and now
//   ValidationCriteria  F min_precision in [0, 1]; F max_latency_ms > 0
//   ValidationRequest   F query non-empty, at most 1000 characters (when given);
//                       F each expected source non-empty, a URL or a document ID without spaces;
//                       I at least one of query or expected_sources is given;
//                       I require_expected_sources = true needs at least one expected source
//   ValidationDetails   F counts >= 0; F sources_match_ratio in [0, 1];
//                       I expected_sources_found <= total_expected_sources;
//                       I sources_match_ratio = expected_sources_found / total_expected_sources
//   ValidationResponse  F query non-empty; F result ids unique within the response;
//                       F semantic_alignment_score, precision_metric, recall_metric in [0, 1];
//                       F latency_ms > 0;
//                       I validation_passed = every entry of criteria_evaluations is true;
//                       I precision_metric and recall_metric are both 0 or both > 0;
//                       I precision_metric is 0 when retrieved_results is empty
//   ValidationMetrics   F validation_run_id is a UUID; F timestamp is ISO 8601;
//                       F query_types_tested non-empty, of non-empty strings;
//                       F overall_precision, overall_recall, success_rate in [0, 1];
//                       F avg_latency_ms > 0; F total_queries_tested > 0; F queries_passed >= 0;
//                       I queries_passed <= total_queries_tested;
//                       I success_rate = queries_passed / total_queries_tested;
//                       I overall_precision and overall_recall are both 0 or both > 0
//
// Where the specification contradicts itself, these are the readings chosen:
//   * Identifiers. RetrievalResult.id and ValidationMetrics.validation_run_id must be UUIDs,
//     although the examples ("chunk-12345-abcde", "validation-run-12345-abcde") are not: the
//     format rule wins over the examples.
//   * top_k is required in JSON and also documented with a default of 5: it stays required (a
//     document must state it); the member initializer 5 is the default for C++ callers only.
//   * query_text is "non-empty, at most 1000" in the field list and "5 to 1000 characters" in the
//     business rules: the stricter 5..1000 applies.
//   * query_embedding is not marked required and is derived from query_text, so it is optional;
//     when present it must have exactly the model's dimension (1024).
//   * ValidationRequest.query is listed as required, yet the business rule asks for "at least one
//     of query or expected_sources": query is optional so that rule can hold; an empty
//     expected_sources list does not count as given.
//   * queries_passed is called a "positive integer", but success_rate = queries_passed /
//     total_queries_tested may be 0: a run where every query failed must be reportable, so
//     queries_passed >= 0.
//   * "Precision and recall values must be mathematically consistent": with only the two
//     numbers known, both are 0 exactly when no relevant result was retrieved, so they are both 0
//     or both > 0 (recall only when given); and a response that retrieved nothing has precision 0
//     (a precision above 0 needs a relevant retrieved result).
//   * "Success rate must equal queries_passed / total_queries_tested": equal within 0.005, so a
//     rate rounded to two decimals (2/3 written as 0.67) is accepted.
//   * sources_match_ratio is checked only when total_expected_sources > 0 (0/0 has no value);
//     validation_passed is checked only when criteria_evaluations has at least one entry.
//   * "Retrieved timestamps must be within reasonable bounds": not before 2000-01-01T00:00:00Z
//     and not in the future (5 minutes of clock skew allowed).
//   * validation_details lists its four members without marking any optional: when the object
//     is present, all four are required.
//   * "Validation run IDs must be globally unique" cannot be checked on one document; it is the
//     job of whatever stores the runs.
#pragma once

#include <covenant/types/describe.hpp>
#include <covenant/types/formats.hpp>

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace models {

/// Dimension of the query embedding (Cohere embedding model).
inline constexpr std::size_t embedding_dimension = 1024;

/// Largest difference accepted between a stated ratio and the ratio of its counts.
inline constexpr double ratio_tolerance = 0.005;

struct RetrievalFilters {
  std::optional<std::string> chapter;
  std::optional<std::string> section;
  std::optional<double> min_similarity;
};

struct RetrievalQuery {
  std::string query_text;
  RetrievalFilters filters;
  int top_k = 5;
  std::optional<std::vector<double>> query_embedding;
};

struct RetrievalResult {
  std::string id;
  std::string content;
  std::string source_url;
  std::string chapter;
  std::optional<std::string> section;
  double similarity_score = 0;
  double confidence_score = 0;
  std::string retrieval_timestamp;
};

struct ValidationCriteria {
  std::optional<double> min_precision;
  std::optional<double> max_latency_ms;
  std::optional<bool> require_expected_sources;
};

struct ValidationRequest {
  std::optional<std::string> query;
  std::optional<std::vector<std::string>> expected_sources;
  std::optional<RetrievalFilters> filters;
  std::optional<ValidationCriteria> validation_criteria;
};

struct ValidationDetails {
  int expected_sources_found = 0;
  int total_expected_sources = 0;
  double sources_match_ratio = 0;
  std::map<std::string, bool> criteria_evaluations;
};

struct ValidationResponse {
  std::string query;
  std::vector<RetrievalResult> retrieved_results;
  double semantic_alignment_score = 0;
  double precision_metric = 0;
  std::optional<double> recall_metric;
  double latency_ms = 0;
  bool validation_passed = false;
  std::optional<ValidationDetails> validation_details;
};

struct ValidationMetrics {
  std::string validation_run_id;
  std::string timestamp;
  std::vector<std::string> query_types_tested;
  double overall_precision = 0;
  double overall_recall = 0;
  double avg_latency_ms = 0;
  double success_rate = 0;
  int total_queries_tested = 0;
  int queries_passed = 0;
};

namespace rules {

/// Shortest text that reads back as `v` (0.95, 1, 1e-07).
inline std::string number(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// `v` with at most four significant digits (0.6667), for computed values.
inline std::string rounded(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 4);
  return std::string(buf, r.ptr);
}

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/// An expected source: an absolute URL (scheme://host...) or a document ID; neither has spaces.
/// The empty string passes here (non_empty reports it).
inline bool is_source_reference(const std::string& s) {
  if (s.find("://") != std::string::npos) return covenant::formats::is_url(s);
  for (char c : s)
    if (is_space(c) || static_cast<unsigned char>(c) < 0x20) return false;
  return true;
}

/// Retrieval timestamps lie between 2000-01-01T00:00:00Z and now (plus 5 minutes of clock skew).
inline std::optional<std::string> retrieval_time_in_bounds(const std::string& s) {
  const auto t = covenant::formats::parse_date_time(s);
  if (!t) return std::nullopt;
  const std::chrono::sys_days earliest{std::chrono::year{2000} / std::chrono::January / 1};
  if (*t < earliest) return std::string("must not be earlier than 2000-01-01T00:00:00Z");
  // In seconds: nanosecond time points overflow after the year 2262.
  const auto latest = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()) + std::chrono::minutes{5};
  if (*t > latest) return std::string("must not be in the future");
  return std::nullopt;
}

/// Precision and recall are both 0 (no relevant result retrieved) or both > 0.
inline std::optional<std::string> recall_matches_precision(const char* precision_name, double precision,
                                                           double recall) {
  if ((precision == 0) == (recall == 0)) return std::nullopt;
  if (precision == 0)
    return "must be 0 because " + std::string(precision_name) + " is 0 (got " + number(recall) + ")";
  return "must be > 0 because " + std::string(precision_name) + " is " + number(precision) + " (got 0)";
}

}  // namespace rules
}  // namespace models

template <>
struct covenant::describe<models::RetrievalFilters> {
  static constexpr std::string_view description = "Metadata filters that narrow the search; every member is optional.";
  static constexpr auto fields = covenant::fields<models::RetrievalFilters>(
      covenant::field<&models::RetrievalFilters::chapter>("Only chunks from this chapter title."),
      covenant::field<&models::RetrievalFilters::section>("Only chunks from this section title."),
      covenant::field<&models::RetrievalFilters::min_similarity>("Drop chunks scoring below this similarity.",
                                                                 covenant::range{0.0, 1.0}));
};

template <>
struct covenant::describe<models::RetrievalQuery> {
  static constexpr std::string_view description = "A search over the book's chunks.";
  static constexpr auto fields = covenant::fields<models::RetrievalQuery>(
      covenant::field<&models::RetrievalQuery::query_text>("What the user is looking for.",
                                                           covenant::length{5, 1000}),
      covenant::field<&models::RetrievalQuery::filters>("Metadata filters; {} for none.", covenant::defaulted{}),
      covenant::field<&models::RetrievalQuery::top_k>("How many chunks to return (usually 5).",
                                                      covenant::range{1, 20}),
      covenant::field<&models::RetrievalQuery::query_embedding>(
          "Embedding of query_text, one value per dimension.",
          covenant::item_count{models::embedding_dimension, models::embedding_dimension}));
};

template <>
struct covenant::describe<models::RetrievalResult> {
  static constexpr std::string_view description = "One retrieved chunk with its scores and provenance.";
  static constexpr auto fields = covenant::fields<models::RetrievalResult>(
      covenant::field<&models::RetrievalResult::id>("Identifier of the chunk.", covenant::uuid{}),
      covenant::field<&models::RetrievalResult::content>("Text of the chunk.", covenant::non_empty{},
                                                         covenant::max_length{5000}),
      covenant::field<&models::RetrievalResult::source_url>("Where the chunk's document lives.", covenant::url{}),
      covenant::field<&models::RetrievalResult::chapter>("Chapter title of the chunk.", covenant::non_empty{}),
      covenant::field<&models::RetrievalResult::section>("Section title of the chunk; may be empty."),
      covenant::field<&models::RetrievalResult::similarity_score>("Similarity between query and chunk.",
                                                                  covenant::range{0.0, 1.0}),
      covenant::field<&models::RetrievalResult::confidence_score>("Confidence that the chunk is relevant.",
                                                                  covenant::range{0.0, 1.0}),
      covenant::field<&models::RetrievalResult::retrieval_timestamp>(
          "When the chunk was retrieved.", covenant::iso8601{},
          covenant::predicate{&models::rules::retrieval_time_in_bounds,
                              "must be between 2000-01-01T00:00:00Z and the current time"}));
};

template <>
struct covenant::describe<models::ValidationCriteria> {
  static constexpr std::string_view description = "Thresholds a validation response is judged against.";
  static constexpr auto fields = covenant::fields<models::ValidationCriteria>(
      covenant::field<&models::ValidationCriteria::min_precision>("Lowest acceptable precision.",
                                                                  covenant::range{0.0, 1.0}),
      covenant::field<&models::ValidationCriteria::max_latency_ms>("Highest acceptable latency, milliseconds.",
                                                                   covenant::positive{}),
      covenant::field<&models::ValidationCriteria::require_expected_sources>(
          "Whether the expected sources must be among the results."));
};

template <>
struct covenant::describe<models::ValidationRequest> {
  static constexpr std::string_view description =
      "A request to test the retrieval pipeline on one query; give query, expected_sources, or both.";
  static constexpr auto fields = covenant::fields<models::ValidationRequest>(
      covenant::field<&models::ValidationRequest::query>("The user query to validate.", covenant::non_empty{},
                                                         covenant::max_length{1000}),
      covenant::field<&models::ValidationRequest::expected_sources>(
          "Sources (URLs or document IDs) the retrieval should return.",
          covenant::each{covenant::non_empty{},
                         covenant::predicate{&models::rules::is_source_reference,
                                             "must be an absolute URL or a document ID without spaces"}}),
      covenant::field<&models::ValidationRequest::filters>("Metadata filters applied while validating."),
      covenant::field<&models::ValidationRequest::validation_criteria>("Thresholds to judge the results by."));
  static constexpr auto invariants = covenant::invariants<models::ValidationRequest>(
      covenant::invariant<&models::ValidationRequest::query>(
          "at least one of query or expected_sources is given",
          [](const models::ValidationRequest& r) -> std::optional<std::string> {
            if (r.query || (r.expected_sources && !r.expected_sources->empty())) return std::nullopt;
            return "required when expected_sources is absent or empty (give at least one of them)";
          }),
      covenant::invariant<&models::ValidationRequest::expected_sources>(
          "validation_criteria.require_expected_sources = true needs at least one expected source",
          [](const models::ValidationRequest& r) -> std::optional<std::string> {
            const bool required = r.validation_criteria && r.validation_criteria->require_expected_sources.value_or(false);
            if (!required || (r.expected_sources && !r.expected_sources->empty())) return std::nullopt;
            return "must list at least one source when validation_criteria.require_expected_sources is true";
          }));
};

template <>
struct covenant::describe<models::ValidationDetails> {
  static constexpr std::string_view description = "How the validation reached its verdict.";
  static constexpr auto fields = covenant::fields<models::ValidationDetails>(
      covenant::field<&models::ValidationDetails::expected_sources_found>(
          "How many expected sources were among the results.", covenant::non_negative{}),
      covenant::field<&models::ValidationDetails::total_expected_sources>("How many sources were expected.",
                                                                          covenant::non_negative{}),
      covenant::field<&models::ValidationDetails::sources_match_ratio>(
          "expected_sources_found / total_expected_sources.", covenant::range{0.0, 1.0}),
      covenant::field<&models::ValidationDetails::criteria_evaluations>(
          "Verdict per criterion, e.g. {\"precision\": true, \"latency\": false}."));
  static constexpr auto invariants = covenant::invariants<models::ValidationDetails>(
      covenant::invariant<&models::ValidationDetails::expected_sources_found>(
          "expected_sources_found <= total_expected_sources",
          [](const models::ValidationDetails& d) -> std::optional<std::string> {
            if (d.expected_sources_found <= d.total_expected_sources) return std::nullopt;
            return "must be <= total_expected_sources = " + std::to_string(d.total_expected_sources) + " (got " +
                   std::to_string(d.expected_sources_found) + ")";
          }),
      covenant::invariant<&models::ValidationDetails::sources_match_ratio>(
          "sources_match_ratio = expected_sources_found / total_expected_sources",
          [](const models::ValidationDetails& d) -> std::optional<std::string> {
            if (d.total_expected_sources <= 0 || d.expected_sources_found > d.total_expected_sources) return std::nullopt;
            const double want = static_cast<double>(d.expected_sources_found) / d.total_expected_sources;
            if (std::fabs(d.sources_match_ratio - want) <= models::ratio_tolerance + 1e-12) return std::nullopt;
            return "must equal expected_sources_found / total_expected_sources = " +
                   std::to_string(d.expected_sources_found) + "/" + std::to_string(d.total_expected_sources) +
                   " = " + models::rules::rounded(want) + " (got " + models::rules::number(d.sources_match_ratio) +
                   ")";
          }));
};

template <>
struct covenant::describe<models::ValidationResponse> {
  static constexpr std::string_view description = "Outcome of one validation request, with quality metrics.";
  static constexpr auto fields = covenant::fields<models::ValidationResponse>(
      covenant::field<&models::ValidationResponse::query>("The query that was validated.", covenant::non_empty{}),
      covenant::field<&models::ValidationResponse::retrieved_results>(
          "Chunks the pipeline returned; ids are unique.", covenant::unique_by<&models::RetrievalResult::id>{}),
      covenant::field<&models::ValidationResponse::semantic_alignment_score>(
          "How well the results match the intent of the query.", covenant::range{0.0, 1.0}),
      covenant::field<&models::ValidationResponse::precision_metric>("Precision of the results.",
                                                                     covenant::range{0.0, 1.0}),
      covenant::field<&models::ValidationResponse::recall_metric>("Recall of the results.",
                                                                  covenant::range{0.0, 1.0}),
      covenant::field<&models::ValidationResponse::latency_ms>("Retrieval time, milliseconds.", covenant::positive{}),
      covenant::field<&models::ValidationResponse::validation_passed>(
          "True when every criterion passed (all criteria_evaluations are true)."),
      covenant::field<&models::ValidationResponse::validation_details>("Counts and per-criterion verdicts."));
  static constexpr auto invariants = covenant::invariants<models::ValidationResponse>(
      covenant::invariant<&models::ValidationResponse::validation_passed>(
          "validation_passed is true exactly when every validation_details.criteria_evaluations entry is true",
          [](const models::ValidationResponse& r) -> std::optional<std::string> {
            if (!r.validation_details || r.validation_details->criteria_evaluations.empty()) return std::nullopt;
            std::string failed;
            for (const auto& [name, ok] : r.validation_details->criteria_evaluations) {
              if (ok) continue;
              if (!failed.empty()) failed += ", ";
              failed += name;
            }
            if (r.validation_passed && !failed.empty())
              return "must be false because validation_details.criteria_evaluations has failed criteria: " + failed;
            if (!r.validation_passed && failed.empty())
              return std::string("must be true because every criterion in validation_details.criteria_evaluations "
                                 "passed");
            return std::nullopt;
          }),
      covenant::invariant<&models::ValidationResponse::precision_metric>(
          "precision_metric is 0 when retrieved_results is empty",
          [](const models::ValidationResponse& r) -> std::optional<std::string> {
            if (!r.retrieved_results.empty() || r.precision_metric == 0) return std::nullopt;
            return "must be 0 because retrieved_results is empty (got " + models::rules::number(r.precision_metric) +
                   ")";
          }),
      covenant::invariant<&models::ValidationResponse::recall_metric>(
          "precision_metric and recall_metric are both 0 or both > 0",
          [](const models::ValidationResponse& r) -> std::optional<std::string> {
            if (!r.recall_metric) return std::nullopt;
            return models::rules::recall_matches_precision("precision_metric", r.precision_metric, *r.recall_metric);
          }));
};

template <>
struct covenant::describe<models::ValidationMetrics> {
  static constexpr std::string_view description = "Metrics aggregated over one validation run.";
  static constexpr auto fields = covenant::fields<models::ValidationMetrics>(
      covenant::field<&models::ValidationMetrics::validation_run_id>("Identifier of the run.", covenant::uuid{}),
      covenant::field<&models::ValidationMetrics::timestamp>("When the run was performed.", covenant::iso8601{}),
      covenant::field<&models::ValidationMetrics::query_types_tested>(
          "Kinds of queries exercised, e.g. general, chapter-specific.", covenant::non_empty{},
          covenant::each{covenant::non_empty{}}),
      covenant::field<&models::ValidationMetrics::overall_precision>("Mean precision over the run's queries.",
                                                                     covenant::range{0.0, 1.0}),
      covenant::field<&models::ValidationMetrics::overall_recall>("Mean recall over the run's queries.",
                                                                  covenant::range{0.0, 1.0}),
      covenant::field<&models::ValidationMetrics::avg_latency_ms>("Mean latency, milliseconds.",
                                                                  covenant::positive{}),
      covenant::field<&models::ValidationMetrics::success_rate>("queries_passed / total_queries_tested.",
                                                                covenant::range{0.0, 1.0}),
      covenant::field<&models::ValidationMetrics::total_queries_tested>("Queries tested in the run.",
                                                                        covenant::positive{}),
      covenant::field<&models::ValidationMetrics::queries_passed>("Queries that passed validation.",
                                                                  covenant::non_negative{}));
  static constexpr auto invariants = covenant::invariants<models::ValidationMetrics>(
      covenant::invariant<&models::ValidationMetrics::queries_passed>(
          "queries_passed <= total_queries_tested",
          [](const models::ValidationMetrics& m) -> std::optional<std::string> {
            if (m.queries_passed <= m.total_queries_tested) return std::nullopt;
            return "must be <= total_queries_tested = " + std::to_string(m.total_queries_tested) + " (got " +
                   std::to_string(m.queries_passed) + ")";
          }),
      covenant::invariant<&models::ValidationMetrics::success_rate>(
          "success_rate = queries_passed / total_queries_tested",
          [](const models::ValidationMetrics& m) -> std::optional<std::string> {
            if (m.total_queries_tested <= 0 || m.queries_passed > m.total_queries_tested) return std::nullopt;
            const double want = static_cast<double>(m.queries_passed) / m.total_queries_tested;
            if (std::fabs(m.success_rate - want) <= models::ratio_tolerance + 1e-12) return std::nullopt;
            return "must equal queries_passed / total_queries_tested = " + std::to_string(m.queries_passed) + "/" +
                   std::to_string(m.total_queries_tested) + " = " + models::rules::rounded(want) + " (got " +
                   models::rules::number(m.success_rate) + ")";
          }),
      covenant::invariant<&models::ValidationMetrics::overall_recall>(
          "overall_precision and overall_recall are both 0 or both > 0",
          [](const models::ValidationMetrics& m) -> std::optional<std::string> {
            return models::rules::recall_matches_precision("overall_precision", m.overall_precision, m.overall_recall);
          }));
};
