// A small question-answering contract shared by the engine tests: a question in, an answer with a
// confidence in [0, 1] out (the answer must not be empty).
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
