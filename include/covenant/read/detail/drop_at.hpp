// covenant/detail/drop_at.hpp - the on-fail action filter on a C++ value: drops the list item or
// optional field a hook's violation points at (or the nearest one around it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "covenant/types/detail/traits.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/reflect.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant::detail {

template <class F, class Default>
std::size_t drop_field(F& f, const schema::model& m, const schema::field& field, const path& p, std::size_t k,
                       Default&& fresh);

// Drops what `p` (from segment k on) points into, inside `v` (the value at p[0..k), of schema
// `node`): the deepest position on the way that holds the target and can go - a list item (erased)
// or a field that is not required (an optional one reset, a defaulted one back to its default).
// Map values never go. Returns the number of segments of the dropped value's path (0: nothing
// dropped).
template <class T>
std::size_t drop_at(T& v, const schema::model& m, const schema::type& node, const path& p, std::size_t k) {
  if (k >= p.size()) return 0;
  const path_segment& seg = p.segments()[k];
  if constexpr (is_optional<T>::value) {
    return v.has_value() ? drop_at(*v, m, node, p, k) : 0;
  } else if constexpr (is_vector<T>::value) {
    if (!seg.is_index || seg.index >= v.size()) return 0;
    if (const std::size_t d = drop_at(v[seg.index], m, node.args.at(0), p, k + 1)) return d;
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(seg.index));
    return k + 1;
  } else if constexpr (is_string_map<T>::value) {
    if (seg.is_index) return 0;
    auto it = v.find(seg.key);
    if (it == v.end()) return 0;
    return drop_at(it->second, m, node.args.at(1), p, k + 1);
  } else if constexpr (std::is_class_v<T> && std::is_aggregate_v<T> && !is_variant<T>::value) {
    if (seg.is_index || node.def == schema::no_def) return 0;
    const schema::object_def* def = m.defs[node.def].object();
    if (def == nullptr) return 0;
    std::size_t j = def->fields.size();
    for (std::size_t i = 0; i < def->fields.size(); ++i)
      if (def->fields[i].key == seg.key) j = i;
    if (j == def->fields.size()) return 0;
    std::size_t dropped = 0;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (void)((I == j && (dropped = drop_field(boost::pfr::get<I>(v), m, def->fields[I], p, k,
                                               [] {
                                                 if constexpr (std::is_default_constructible_v<T>) return std::optional(boost::pfr::get<I>(T{}));
                                                 else return std::optional<std::remove_cvref_t<decltype(boost::pfr::get<I>(std::declval<T&>()))>>();
                                               }),
                         true)) ||
             ...);
    }(std::make_index_sequence<field_count_v<T>>{});
    return dropped;
  } else {
    (void)v, (void)m, (void)node, (void)seg;
    return 0;
  }
}

// A field of an object at p[k]: inside it first; else the field itself when it is optional (reset)
// or defaulted (back to the value `fresh()` gives, the field of a default-made object), as a
// field that is absent reads.
template <class F, class Default>
std::size_t drop_field(F& f, const schema::model& m, const schema::field& field, const path& p, std::size_t k,
                       Default&& fresh) {
  if (const std::size_t d = drop_at(f, m, field.type, p, k + 1)) return d;
  if constexpr (is_optional<F>::value) {
    if (!f.has_value()) return 0;
    f.reset();
    return k + 1;
  } else {
    if (field.required) return 0;
    auto made = fresh();
    if (!made) return 0;
    if constexpr (std::is_move_assignable_v<F>) {
      f = std::move(*made);
      return k + 1;
    } else {
      return 0;
    }
  }
}

// The number of items of the list at `p` (segments from k on) inside `v`; -1 when `p` does not
// lead to a list.
template <class T>
long list_size_at(const T& v, const schema::model& m, const schema::type& node, const path& p, std::size_t k) {
  if constexpr (is_optional<T>::value) {
    return v.has_value() ? list_size_at(*v, m, node, p, k) : -1;
  } else if constexpr (is_vector<T>::value) {
    if (k == p.size()) return static_cast<long>(v.size());
    const path_segment& seg = p.segments()[k];
    if (!seg.is_index || seg.index >= v.size()) return -1;
    return list_size_at(v[seg.index], m, node.args.at(0), p, k + 1);
  } else if constexpr (is_string_map<T>::value) {
    if (k == p.size() || p.segments()[k].is_index) return -1;
    auto it = v.find(p.segments()[k].key);
    return it == v.end() ? -1 : list_size_at(it->second, m, node.args.at(1), p, k + 1);
  } else if constexpr (std::is_class_v<T> && std::is_aggregate_v<T> && !is_variant<T>::value) {
    if (k == p.size() || p.segments()[k].is_index || node.def == schema::no_def) return -1;
    const schema::object_def* def = m.defs[node.def].object();
    if (def == nullptr) return -1;
    std::size_t j = def->fields.size();
    for (std::size_t i = 0; i < def->fields.size(); ++i)
      if (def->fields[i].key == p.segments()[k].key) j = i;
    long n = -1;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (void)((I == j && (n = list_size_at(boost::pfr::get<I>(v), m, def->fields[I].type, p, k + 1), true)) || ...);
    }(std::make_index_sequence<field_count_v<T>>{});
    return n;
  } else {
    (void)v, (void)m, (void)node, (void)p, (void)k;
    return -1;
  }
}

// Later items first, so that dropping one does not move the others.
inline bool later_path_first(const issue& a, const issue& b) {
  const auto& x = a.path.segments();
  const auto& y = b.path.segments();
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (x[i] == y[i]) continue;
    if (x[i].is_index && y[i].is_index) return x[i].index > y[i].index;
    return x[i].key < y[i].key;
  }
  return x.size() > y.size();
}

/// Applies the filter violations of a hook: each drops its list item or optional field (one
/// `filtered` note each) and leaves `issues`; one that has nothing to drop stays (the contract
/// asks about it again). `drop(path)` drops what the path points into and returns the number of
/// segments of the dropped value's path (0: nothing dropped); `list_size(path)` is the number of
/// items of the list at the path (-1: not a list). Returns whether anything was dropped.
template <class Drop, class ListSize>
bool apply_filters_with(issue_list& issues, note_list& notes, Drop&& drop, ListSize&& list_size) {
  std::vector<issue> filters;
  issue_list rest;
  for (issue& i : issues) (i.action == fail_action::filter ? filters : rest).push_back(std::move(i));
  if (filters.empty()) {
    issues = std::move(rest);
    return false;
  }
  std::stable_sort(filters.begin(), filters.end(), later_path_first);
  std::vector<path> dropped;
  std::vector<std::pair<path, std::string>> emptied;  // lists whose filters carry a reason
  const std::size_t first_note = notes.size();
  bool any = false;
  for (issue& i : filters) {
    const auto& segs = i.path.segments();
    const bool gone = std::any_of(dropped.begin(), dropped.end(), [&](const path& d) {
      return d.size() <= segs.size() && std::equal(d.begin(), d.end(), segs.begin());
    });
    if (gone) continue;
    const std::size_t d = drop(i.path);
    if (d == 0) {
      rest.push_back(std::move(i));
      continue;
    }
    path at(std::vector<path_segment>(segs.begin(), segs.begin() + static_cast<std::ptrdiff_t>(d)));
    note n;
    n.kind = note_kind::filtered;
    n.path = at;
    n.detail = "dropped: " + i.to_string();
    notes.push_back(std::move(n));
    if (!i.reason.empty() && at.segments().back().is_index) {
      path list(std::vector<path_segment>(at.begin(), at.end() - 1));
      const bool known = std::any_of(emptied.begin(), emptied.end(), [&](const auto& e) { return e.first == list; });
      if (!known) emptied.emplace_back(std::move(list), i.reason);
    }
    dropped.push_back(std::move(at));
    any = true;
  }
  issues = std::move(rest);
  std::reverse(notes.begin() + static_cast<std::ptrdiff_t>(first_note), notes.end());  // in document order
  // A list that lost every item to filters with a reason: the call refrains with it.
  for (auto& entry : emptied) {
    const path& list = entry.first;
    std::string& reason = entry.second;
    if (list_size(list) != 0) continue;
    const auto items = std::count_if(dropped.begin(), dropped.end(), [&](const path& d) {
      return d.size() == list.size() + 1 && std::equal(list.begin(), list.end(), d.begin());
    });
    issue i;
    i.path = list;
    i.code = issue_code::constraint_violation;
    i.expected = "at least one valid item";
    i.actual = std::to_string(items) + " dropped";
    i.message = "every item was dropped";
    i.action = fail_action::refrain;
    i.reason = std::move(reason);
    issues.push_back(std::move(i));
  }
  return any;
}

/// apply_filters_with() on a C++ value.
template <class T>
bool apply_filters(T& value, issue_list& issues, note_list& notes) {
  const schema::model& m = schema_of<T>();
  return apply_filters_with(
      issues, notes, [&](const path& p) { return drop_at(value, m, m.root, p, 0); },
      [&](const path& p) { return list_size_at(value, m, m.root, p, 0); });
}

}  // namespace covenant::detail
