// covenant/testing/gtest.hpp - GoogleTest matchers for outcomes and issues, and for what an agent did.
//
//     using namespace covenant::testing;
//     EXPECT_THAT(outcome, Succeeded());
//     EXPECT_THAT(outcome, FailedAt(covenant::stage::post));
//     EXPECT_THAT(outcome.issues, Contains(IssueAt("coverage_score")));
//     EXPECT_THAT(result.issues, ElementsAre(IssueRendered("confidence: must be <= 1 (got 1.7)")));
//     EXPECT_THAT(outcome, CalledTool<WeatherArgs>("get_weather", Field(&WeatherArgs::city, "Paris")));
//     EXPECT_THAT(outcome, TookSteps(1));
//     std::vector<WeatherArgs> asked = tool_arguments<WeatherArgs>(outcome, "get_weather");
//
// Failure messages print the outcome's summary and every issue; the agent matchers list the tool
// calls made.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/types/issues.hpp"
#include "covenant/contract/outcome.hpp"
#include "covenant/read/decode.hpp"

namespace covenant {

inline void PrintTo(const issue& i, std::ostream* os) { *os << i.to_string(); }
inline void PrintTo(const outcome_base& o, std::ostream* os) {
  *os << o.summary();
  for (const auto& i : o.issues) *os << "\n  " << i.to_string();
}
inline void PrintTo(stage s, std::ostream* os) { *os << to_string(s); }
inline void PrintTo(tool_status s, std::ostream* os) { *os << to_string(s); }

namespace testing {

namespace detail {
inline const outcome_base& outcome_of(const outcome_base& o) { return o; }
template <class Result, class Output>
const outcome_base& outcome_of(const contract_result<Result, Output>& r) {
  return r.outcome;
}

/// The arguments of a tool call as read, else as the model wrote them.
inline const std::string& arguments_of(const tool_run& r) { return r.arguments.empty() ? r.call.arguments : r.arguments; }

/// The tool calls of an outcome, one per line ("step 1: get_weather {"city":"Paris"} (ok)"), or
/// "no tool was called".
inline std::string tool_calls_made(const outcome_base& o) {
  std::string out;
  for (const agent_step& s : o.steps) {
    for (const tool_run& r : s.tools) {
      out += "\n  step " + std::to_string(s.number) + ": " + r.call.name + " " + arguments_of(r) + " (" +
             std::string(to_string(r.status)) + ")";
    }
  }
  return out.empty() ? std::string("no tool was called") : "the tool calls made:" + out;
}

/// CalledTool(name): some call of the tool `name`.
class called_tool_matcher {
 public:
  explicit called_tool_matcher(std::string name) : name_(std::move(name)) {}

  template <class T>
  bool MatchAndExplain(const T& arg, ::testing::MatchResultListener* listener) const {
    const outcome_base& o = outcome_of(arg);
    for (const agent_step& s : o.steps) {
      for (const tool_run& r : s.tools) {
        if (r.call.name != name_) continue;
        *listener << "step " << s.number << " calls it with " << arguments_of(r) << " (" << to_string(r.status) << ")";
        return true;
      }
    }
    *listener << tool_calls_made(o);
    return false;
  }
  void DescribeTo(std::ostream* os) const { *os << "called the tool \"" << name_ << "\""; }
  void DescribeNegationTo(std::ostream* os) const { *os << "did not call the tool \"" << name_ << "\""; }

 private:
  std::string name_;
};

/// CalledTool<Args>(name, inner): some call of the tool `name` whose arguments, as read and decoded
/// as Args, match `inner`.
template <class Args>
class called_tool_with_matcher {
 public:
  called_tool_with_matcher(std::string name, ::testing::Matcher<const Args&> inner)
      : name_(std::move(name)), inner_(std::move(inner)) {}

  template <class T>
  bool MatchAndExplain(const T& arg, ::testing::MatchResultListener* listener) const {
    const outcome_base& o = outcome_of(arg);
    std::string why;  // why each call of the tool does not match
    for (const agent_step& s : o.steps) {
      for (const tool_run& r : s.tools) {
        if (r.call.name != name_) continue;
        why += "\n  step " + std::to_string(s.number) + ": " + arguments_of(r) + " ";
        if (r.arguments.empty()) {
          why += "were not read (" + std::string(to_string(r.status)) + ")";
          continue;
        }
        decoded<Args> d = covenant::try_decode<Args>(r.arguments);
        if (!d) {
          why += "do not decode:";
          for (const issue& i : d.issues) why += " " + i.to_string() + ";";
          why.pop_back();
          continue;
        }
        ::testing::StringMatchResultListener inner;
        if (inner_.MatchAndExplain(*d.value, &inner)) {
          *listener << "step " << s.number << " calls it with " << r.arguments << " (" << to_string(r.status) << ")";
          return true;
        }
        why += "do not match";
        if (!inner.str().empty()) why += ", " + inner.str();
      }
    }
    if (why.empty()) *listener << "it never called \"" << name_ << "\"; " << tool_calls_made(o);
    else *listener << "the arguments of its calls of \"" << name_ << "\":" << why;
    return false;
  }
  void DescribeTo(std::ostream* os) const {
    *os << "called the tool \"" << name_ << "\" with arguments that ";
    inner_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "did not call the tool \"" << name_ << "\" with arguments that ";
    inner_.DescribeTo(os);
  }

 private:
  std::string name_;
  ::testing::Matcher<const Args&> inner_;
};

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

/// The arguments of the calls of `tool` in an agent's outcome, in the order they were made, decoded
/// as Args: every call whose arguments were read (tool_run::arguments), whatever came of it
/// afterwards (ok, pre, failed, ...). Throws std::invalid_argument when read arguments do not
/// decode as Args (Args is not the tool's argument type).
template <class Args>
std::vector<Args> tool_arguments(const outcome_base& o, std::string_view tool) {
  std::vector<Args> out;
  for (const tool_run* r : o.tool_runs()) {
    if (r->call.name != tool || r->arguments.empty()) continue;
    decoded<Args> d = covenant::try_decode<Args>(r->arguments);
    if (!d) {
      std::string why = "covenant::testing::tool_arguments: the arguments of " + r->call.name + " call " + r->call.id +
                        " (" + r->arguments + ") do not decode:";
      for (const issue& i : d.issues) why += " " + i.to_string() + ";";
      why.pop_back();
      throw std::invalid_argument(why);
    }
    out.push_back(std::move(*d.value));
  }
  return out;
}

/// The agent called the tool `name` (an outcome, or what a contract's run() returns), whatever
/// came of the call.
inline ::testing::PolymorphicMatcher<detail::called_tool_matcher> CalledTool(std::string name) {
  return ::testing::MakePolymorphicMatcher(detail::called_tool_matcher(std::move(name)));
}

/// The agent called the tool `name` with arguments that, read and decoded as Args, match `inner`
/// (a matcher of Args, or an Args value to compare with ==): for example
/// `CalledTool<WeatherArgs>("get_weather", Field(&WeatherArgs::city, "Paris"))`.
template <class Args, class Inner>
::testing::PolymorphicMatcher<detail::called_tool_with_matcher<Args>> CalledTool(std::string name, Inner inner) {
  return ::testing::MakePolymorphicMatcher(
      detail::called_tool_with_matcher<Args>(std::move(name), ::testing::MatcherCast<const Args&>(std::move(inner))));
}

/// The agent took `n` steps: model replies that called tools (outcome_base::steps).
MATCHER_P(TookSteps, n, "took " + ::testing::PrintToString(n) + (n == 1 ? " agent step" : " agent steps")) {
  const covenant::outcome_base& o = covenant::testing::detail::outcome_of(arg);
  *result_listener << "it took " << o.steps.size() << (o.steps.size() == 1 ? " step" : " steps");
  if (!o.steps.empty()) *result_listener << "; " << covenant::testing::detail::tool_calls_made(o);
  return o.steps.size() == static_cast<std::size_t>(n);
}

}  // namespace testing
}  // namespace covenant
