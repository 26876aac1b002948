// covenant/contract/detail/run_hook.hpp - running an application hook (pre, act, post, a tool's hooks)
// and turning what it throws into issues.
#pragma once

#include <boost/core/demangle.hpp>

#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>

#include "covenant/contract/detail/call.hpp"
#include "covenant/contract/violation.hpp"
#include "covenant/types/issues.hpp"

namespace covenant::detail {

/// Runs a hook; collects covenant::violation issues (with `code`) or records another exception.
template <class F>
void run_hook(std::string_view hook, issue_code code, issue_list& out, F&& f) {
  try {
    f();
  } catch (const violation& v) {
    if (v.issues().empty()) {
      issue i;
      i.code = code;
      i.message = std::string(hook) + " rejected the value";
      out.push_back(std::move(i));
    }
    for (issue i : v.issues()) {
      if (i.code == issue_code::postcondition_violation || i.code == issue_code::precondition_violation) i.code = code;
      out.push_back(std::move(i));
    }
  } catch (const std::exception& e) {
    out.push_back(hook_exception_issue(hook, boost::core::demangle(typeid(e).name()), e.what()));
  } catch (...) {
    out.push_back(hook_exception_issue(hook, "unknown exception", ""));
  }
}

}  // namespace covenant::detail
