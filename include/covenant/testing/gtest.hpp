// covenant/testing/gtest.hpp - GoogleTest matchers for outcomes and issues.
//
//     using namespace covenant::testing;
//     EXPECT_THAT(outcome, Succeeded());
//     EXPECT_THAT(outcome, FailedAt(covenant::stage::post));
//     EXPECT_THAT(outcome.issues, Contains(IssueAt("coverage_score")));
//     EXPECT_THAT(result.issues, ElementsAre(IssueRendered("confidence: must be <= 1 (got 1.7)")));
//
// Failure messages print the outcome's summary and every issue.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "covenant/types/issues.hpp"
#include "covenant/contract/outcome.hpp"

namespace covenant {

inline void PrintTo(const issue& i, std::ostream* os) { *os << i.to_string(); }
inline void PrintTo(const outcome_base& o, std::ostream* os) {
  *os << o.summary();
  for (const auto& i : o.issues) *os << "\n  " << i.to_string();
}
inline void PrintTo(stage s, std::ostream* os) { *os << to_string(s); }

namespace testing {

namespace detail {
inline const outcome_base& outcome_of(const outcome_base& o) { return o; }
template <class Result, class Output>
const outcome_base& outcome_of(const contract_result<Result, Output>& r) {
  return r.outcome;
}
}  // namespace detail

/// The outcome succeeded (an outcome, or what a contract's run() returns).
MATCHER(Succeeded, "the contract succeeded") {
  const covenant::outcome_base& o = covenant::testing::detail::outcome_of(arg);
  if (!o.success) *result_listener << o.summary();
  return o.success;
}

/// The outcome failed at the given stage (an outcome, or what a contract's run() returns).
MATCHER_P(FailedAt, where, "the contract failed at stage " + std::string(covenant::to_string(where))) {
  const covenant::outcome_base& o = covenant::testing::detail::outcome_of(arg);
  if (o.success) {
    *result_listener << "it succeeded";
    return false;
  }
  *result_listener << o.summary();
  return o.failed_stage == where;
}

/// An issue at this path (rendered form, e.g. "sources[1]").
MATCHER_P(IssueAt, path_text, "an issue at " + std::string(path_text)) {
  const covenant::issue& i = arg;
  return i.path.to_string() == std::string(path_text);
}

/// An issue at this path with this code.
MATCHER_P2(IssueAtWithCode, path_text, code,
           "an issue at " + std::string(path_text) + " with code " + std::string(covenant::to_string(code))) {
  const covenant::issue& i = arg;
  return i.path.to_string() == std::string(path_text) && i.code == code;
}

/// An issue whose one-line rendering is exactly this text.
MATCHER_P(IssueRendered, text, "an issue rendered as \"" + std::string(text) + "\"") {
  const covenant::issue& i = arg;
  *result_listener << "rendered as \"" << i.to_string() << "\"";
  return i.to_string() == std::string(text);
}

}  // namespace testing
}  // namespace covenant
