#include "covenant/contract/violation.hpp"

#include <stdexcept>

namespace covenant {

violation& violation::add(std::string message) { return add(std::string_view{}, std::move(message)); }

violation& violation::add(std::string_view p, std::string message) {
  issue i;
  i.path = path::parse(p);
  // The contract sets precondition_violation or postcondition_violation by where it was thrown.
  i.code = issue_code::postcondition_violation;
  i.message = std::move(message);
  return add(std::move(i));
}

violation& violation::add(issue i) {
  if (!what_.empty()) what_ += "; ";
  what_ += i.path.empty() ? i.message : i.to_string();
  issues_.push_back(std::move(i));
  return *this;
}

violation& violation::add(std::string_view p, std::string message, fail_action action) {
  if (action == fail_action::fix)
    throw std::invalid_argument("covenant::violation: a hook's violation has no fix (use reask, filter, refrain, noop "
                                "or exception)");
  issue i;
  i.path = path::parse(p);
  i.code = issue_code::postcondition_violation;
  i.message = std::move(message);
  i.action = action;
  return add(std::move(i));
}

violation& violation::add(std::string_view p, std::string message, fail_action action, std::string reason) {
  add(p, std::move(message), action);
  issues_.back().reason = std::move(reason);
  return *this;
}

violation& violation::refrain(std::string reason) {
  for (issue& i : issues_) {
    i.action = fail_action::refrain;
    i.reason = reason;
  }
  return *this;
}

const char* violation::what() const noexcept { return what_.empty() ? "covenant::violation" : what_.c_str(); }

}  // namespace covenant
