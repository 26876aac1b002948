// covenant/contract/detail/tool_runs.hpp - running the tool checks (covenant/contract/tool_check.hpp)
// of a typed output: the values they apply to are found by one walk in the library, through the
// value's table of operations (read/detail/value_ops.hpp), and each failing verdict is an issue.
#pragma once

#include "covenant/read/detail/value_ops.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant::detail {

/// Whether any constraint of the model is a tool check.
COVENANT_API bool model_has_tools(const schema::model& m) noexcept;

/// Runs the tool checks of `m` on the value `root` (concurrently per check, within its bound; each
/// distinct value once); each failure is an issue with its check's action (filter, noop... are
/// applied by the caller like those of post()). Returns whether any check ran.
COVENANT_API bool apply_tool_checks(value_ref root, const schema::model& m, issue_list& issues);

/// apply_tool_checks() on a C++ value; nothing to do, and nothing walked, when T's schema has no
/// tool check.
template <class T>
bool apply_tool_checks(T& value, issue_list& issues) {
  const schema::model& m = schema_of<T>();
  static const bool any = model_has_tools(m);
  if (!any) return false;
  return apply_tool_checks(value_ref{&value, &ops_of<T>()}, m, issues);
}

}  // namespace covenant::detail
