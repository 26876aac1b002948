// FinalAnswer: the structured answer of a retrieval-augmented QA system, with every constraint of
// its specification (answer non-empty and at most 10 000 characters, confidence in [0, 1],
// 1 to 50 non-empty sources, reasoning at most 5 000 characters, optional metadata).
#pragma once

#include <covenant/types/describe.hpp>

#include <optional>
#include <string>
#include <vector>

namespace models {

struct TokenUsage {
  std::optional<int> input_tokens;
  std::optional<int> output_tokens;
};

struct AnswerMetadata {
  std::optional<std::string> timestamp;
  std::optional<std::string> model_used;
  std::optional<TokenUsage> token_usage;
  std::optional<std::string> program_version;
};

struct FinalAnswer {
  std::string answer;
  double confidence = 0;
  std::vector<std::string> sources;
  std::optional<std::string> reasoning;
  std::optional<AnswerMetadata> metadata;
};

}  // namespace models

template <>
struct covenant::describe<models::TokenUsage> {
  static constexpr std::string_view description = "Tokens spent producing the answer.";
  static constexpr auto fields = covenant::fields<models::TokenUsage>(
      covenant::field<&models::TokenUsage::input_tokens>("Prompt tokens.", covenant::non_negative{}),
      covenant::field<&models::TokenUsage::output_tokens>("Completion tokens.", covenant::non_negative{}));
};

template <>
struct covenant::describe<models::AnswerMetadata> {
  static constexpr std::string_view description = "Additional metadata about how the answer was produced.";
  static constexpr auto fields = covenant::fields<models::AnswerMetadata>(
      covenant::field<&models::AnswerMetadata::timestamp>("When the answer was produced (ISO 8601)."),
      covenant::field<&models::AnswerMetadata::model_used>("Model that produced the answer."),
      covenant::field<&models::AnswerMetadata::token_usage>("Token usage."),
      covenant::field<&models::AnswerMetadata::program_version>("Version of the producing program."));
};

template <>
struct covenant::describe<models::FinalAnswer> {
  static constexpr std::string_view description = "The final, validated answer to the user's query.";
  static constexpr auto fields = covenant::fields<models::FinalAnswer>(
      covenant::field<&models::FinalAnswer::answer>("The final answer text.", covenant::non_empty{},
                                                    covenant::max_length{10000}),
      covenant::field<&models::FinalAnswer::confidence>("Confidence score.", covenant::range{0.0, 1.0}),
      covenant::field<&models::FinalAnswer::sources>("Identifiers of the source documents.",
                                                     covenant::item_count{1, 50},
                                                     covenant::each{covenant::non_empty{}}),
      covenant::field<&models::FinalAnswer::reasoning>("Explanation of the answer.", covenant::max_length{5000}),
      covenant::field<&models::FinalAnswer::metadata>("Additional metadata."));
};
