// The contract the contract and cache benchmarks call: a question in, a FinalAnswer out, and no
// pre, act or post hooks. The contract checks the input, renders the prompt, reads and validates
// the reply, and forward returns the result.
#pragma once

#include <covenant/contract/contract.hpp>

#include <string>
#include <string_view>

#include "../examples/models/final_answer.hpp"

namespace bench {

struct Question {
  std::string text;
};

struct AnswerQuestion {
  static constexpr std::string_view prompt = "Answer the question with sources.";
  models::FinalAnswer forward(const Question&, const covenant::outcome<models::FinalAnswer>& o) const {
    return o.result ? *o.result : models::FinalAnswer{};
  }
};

}  // namespace bench
