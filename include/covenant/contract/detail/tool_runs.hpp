// covenant/contract/detail/tool_runs.hpp - finding the values of a typed output that tool checks apply to
// (covenant/contract/tool_check.hpp), running them, and turning the verdicts into issues.
#pragma once

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include "covenant/types/detail/traits.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/reflect.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant::detail {

/// One value a tool check applies to.
struct tool_job {
  const schema::custom_check* check;      ///< a tool check (is_tool())
  const schema::constraint* constraint;   ///< its constraint (action, reason, rule)
  const void* value;                      ///< the C++ value
  covenant::path where;
  bool ok = false;                        ///< set by run_tool_checks
  std::string shown;                      ///< the value as text (set by run_tool_checks)
};

/// Runs every job (concurrently per check, within its bound; each distinct value once).
COVENANT_API void run_tool_checks(std::vector<tool_job>& jobs);
/// Whether any constraint of the model is a tool check.
COVENANT_API bool model_has_tools(const schema::model& m) noexcept;

template <class T>
void collect_tool_jobs(const T& v, const schema::model& m, const schema::type& node, covenant::path& at,
                       std::vector<tool_job>& jobs) {
  if constexpr (is_optional<T>::value) {
    if (v.has_value()) collect_tool_jobs(*v, m, node, at, jobs);
    return;
  } else {
    for (const auto& c : node.constraints)
      if (c.custom && c.custom->is_tool()) jobs.push_back(tool_job{c.custom.get(), &c, &v, at, false, {}});
    if constexpr (is_vector<T>::value) {
      if (node.args.empty()) return;
      for (std::size_t i = 0; i < v.size(); ++i) {
        at.index(i);
        collect_tool_jobs(v[i], m, node.args[0], at, jobs);
        at.pop();
      }
    } else if constexpr (is_string_map<T>::value) {
      if (node.args.size() < 2) return;
      for (const auto& [k, x] : v) {
        at.key(k);
        collect_tool_jobs(x, m, node.args[1], at, jobs);
        at.pop();
      }
    } else if constexpr (is_variant<T>::value) {
      std::visit([&](const auto& x) { collect_tool_jobs(x, m, node.args.at(v.index()), at, jobs); }, v);
    } else if constexpr (std::is_class_v<T> && std::is_aggregate_v<T> && !std::is_same_v<T, std::string>) {
      if (node.def == schema::no_def) return;
      const schema::object_def* def = m.defs[node.def].object();
      if (def == nullptr) return;
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((at.key(def->fields[I].key), collect_tool_jobs(boost::pfr::get<I>(v), m, def->fields[I].type, at, jobs),
          at.pop()),
         ...);
      }(std::make_index_sequence<field_count_v<T>>{});
    }
  }
}

/// Runs the tool checks of T's schema on `value`; each failure is an issue with its check's
/// action (filter, noop... are applied by the caller like those of post()). Returns whether any
/// check ran.
template <class T>
bool apply_tool_checks(const T& value, issue_list& issues) {
  const schema::model& m = schema_of<T>();
  static const bool any = model_has_tools(m);
  if (!any) return false;
  std::vector<tool_job> jobs;
  covenant::path at;
  collect_tool_jobs(value, m, m.root, at, jobs);
  if (jobs.empty()) return false;
  run_tool_checks(jobs);
  for (auto& j : jobs) {
    if (j.ok) continue;
    issue i;
    i.path = std::move(j.where);
    i.code = issue_code::constraint_violation;
    i.expected = j.constraint->text;
    i.actual = elide(j.shown);
    i.message = j.constraint->text.empty() ? std::string("must pass its check") : j.constraint->text;
    i.action = j.constraint->on_fail;
    i.reason = j.constraint->reason;
    issues.push_back(std::move(i));
  }
  return true;
}

}  // namespace covenant::detail
