// A small question-answering contract shared by the tests: a question in, an answer with a
// confidence in [0, 1] out (the answer must not be empty). Tests whose contract has hooks of its own
// write their QA over this Question and Answer. Also an answer that states its confidence first
// (confidence_first::Answer), for the tests of streamed replies that are judged on it early.
#pragma once

#include <covenant/contract/contract.hpp>

#include <string>
#include <string_view>

namespace covenant_test::qa {

struct Question {
  std::string text;
};

struct Answer {
  std::string answer;
  double confidence = 0;
};

struct QA {
  static constexpr std::string_view prompt = "Answer the question.";
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

}  // namespace covenant_test::qa

template <>
struct covenant::describe<covenant_test::qa::Answer> {
  static constexpr auto fields = covenant::fields<covenant_test::qa::Answer>(
      covenant::field<&covenant_test::qa::Answer::answer>("The answer.", covenant::non_empty{}),
      covenant::field<&covenant_test::qa::Answer::confidence>("Confidence.", covenant::range{0.0, 1.0}));
};

namespace covenant_test::confidence_first {

using covenant_test::qa::Question;

// Confidence first, so that a stream can be judged on it before the rest arrives.
struct Answer {
  double confidence = 0;
  std::string answer;
  std::string reasoning;
};

}  // namespace covenant_test::confidence_first

template <>
struct covenant::describe<covenant_test::confidence_first::Answer> {
  static constexpr auto fields = covenant::fields<covenant_test::confidence_first::Answer>(
      covenant::field<&covenant_test::confidence_first::Answer::confidence>("Confidence.", covenant::range{0.0, 1.0}),
      covenant::field<&covenant_test::confidence_first::Answer::answer>("The answer.", covenant::non_empty{}));
};
