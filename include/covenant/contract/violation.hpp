// covenant/contract/violation.hpp - how pre() and post() say "this is wrong".
//
//     void post(const Answer& a) const {
//       covenant::violation v;
//       if (a.coverage_score < 0.55) v.add("coverage_score", "must be at least 0.55");
//       if (a.evidence.empty()) v.add("evidence", "must cite at least one snippet");
//       v.raise_if_any();          // throws v when it holds anything: all violations at once
//     }
//
// or simply `throw covenant::violation("The query must not be empty.");`.
// Any other exception escaping a hook is caught by the contract, recorded as a hook_exception
// issue and treated as a violation too.
#pragma once

#include <exception>
#include <string>
#include <string_view>
#include <utility>

#include "covenant/types/config.hpp"
#include "covenant/types/issues.hpp"

namespace covenant {

class COVENANT_API violation : public std::exception {
 public:
  /// An empty collection; add() violations, then raise_if_any().
  violation() = default;
  /// One violation of the whole value.
  explicit violation(std::string message) { add(std::move(message)); }
  /// One violation at a field path (`evidence[2].doc_id`).
  violation(std::string_view path, std::string message) { add(path, std::move(message)); }

  /// Adds a violation of the whole value.
  violation& add(std::string message);
  /// Adds a violation at a path (rendered form, e.g. `evidence[2].doc_id`).
  violation& add(std::string_view path, std::string message);
  /// Adds a fully specified issue (its code is kept as given).
  violation& add(issue i);
  /// Adds a violation at a path with an on-fail action (docs/policies.md): filter drops the list
  /// item or optional field at (or around) the path and accepts the rest; noop accepts and notes
  /// it; refrain and exception end the call. A hook has no fix: fail_action::fix throws
  /// std::invalid_argument.
  violation& add(std::string_view path, std::string message, fail_action action);
  /// The same with a reason: refrain and exception report it as the outcome's reason; filter
  /// refrains with it when the filters drop every item of a list.
  violation& add(std::string_view path, std::string message, fail_action action, std::string reason);

  /// Gives up on this value without asking the model again: every violation held so far becomes
  /// refrain, and the outcome's reason is `reason` ("refrained" when empty).
  violation& refrain(std::string reason = {});

  [[nodiscard]] bool empty() const noexcept { return issues_.empty(); }
  [[nodiscard]] const issue_list& issues() const noexcept { return issues_; }

  /// Throws *this when it holds at least one violation.
  void raise_if_any() const {
    if (!empty()) throw *this;
  }

  [[nodiscard]] const char* what() const noexcept override;

 private:
  issue_list issues_;
  std::string what_;
};

}  // namespace covenant
