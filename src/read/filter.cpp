// The on-fail action filter after hooks (read/detail/filter.hpp), and the value_ops table of a
// boost::json::value (json_ops.hpp).
#include "covenant/read/detail/filter.hpp"

#include <boost/json/value.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "read/json_ops.hpp"

namespace covenant::detail {

namespace json = boost::json;

namespace {

value_ops make_json_ops() noexcept {
  value_ops o;
  o.kind = value_kind::json;
  o.item = &json_ops;
  // writing (the stream reader's dynamic target)
  o.clear = [](void* p) { *static_cast<json::value*>(p) = nullptr; };
  o.assign = [](void* p, const json::value& v, const decode_options&) {
    *static_cast<json::value*>(p) = v;
    return true;
  };
  o.append = [](void* p, std::string_view s) {
    auto& v = *static_cast<json::value*>(p);
    if (!v.is_string()) v = json::string();
    v.get_string().append(json::string_view(s.data(), s.size()));
  };
  o.emplace = [](void* p) -> void* { return &static_cast<json::value*>(p)->as_array().emplace_back(nullptr); };
  o.member = [](void* p, std::string_view key) -> void* {
    json::value& m = static_cast<json::value*>(p)->as_object()[key];
    m = nullptr;
    return &m;
  };
  o.size = [](const void* p) {
    const json::array* a = static_cast<const json::value*>(p)->if_array();
    return a != nullptr ? a->size() : not_a_list;
  };
  o.item_at = [](void* p, std::size_t i) -> void* { return &static_cast<json::value*>(p)->as_array()[i]; };
  o.erase = [](void* p, std::size_t i) {
    json::array& a = static_cast<json::value*>(p)->as_array();
    a.erase(a.begin() + static_cast<std::ptrdiff_t>(i));
  };
  o.find = [](void* p, std::string_view key) -> void* {
    json::object* obj = static_cast<json::value*>(p)->if_object();
    return obj != nullptr ? obj->if_contains(key) : nullptr;
  };
  o.field = [](void* p, const schema::object_def& def, std::size_t j) -> value_ref {
    json::object* obj = static_cast<json::value*>(p)->if_object();
    json::value* member = obj != nullptr ? obj->if_contains(def.fields[j].key) : nullptr;
    return {member != nullptr && !member->is_null() ? member : nullptr, &json_ops()};
  };
  o.drop_field = [](void* p, const schema::object_def& def, std::size_t j) {
    json::object* obj = static_cast<json::value*>(p)->if_object();
    const schema::field& f = def.fields[j];
    json::value* member = obj != nullptr ? obj->if_contains(f.key) : nullptr;
    if (member == nullptr || member->is_null()) return false;
    if (!f.required) {
      obj->erase(f.key);
      return true;
    }
    if (!f.type.nullable) return false;
    *member = nullptr;
    return true;
  };
  return o;
}

// Through optionals: the value inside (p null when one is empty).
value_ref inside(value_ref v) {
  while (v.p != nullptr && v.ops->kind == value_kind::optional) v = {v.ops->value(v.p), &v.ops->item()};
  return v;
}

// The part of `v` (of schema `node`) that segment `seg` names, and its schema; p null when there is
// none. Map values and list items are reached; fields of objects too.
std::pair<value_ref, const schema::type*> step(value_ref v, const schema::model& m, const schema::type& node,
                                               const path_segment& seg, std::size_t* field = nullptr) {
  v = inside(v);
  if (v.p == nullptr) return {};
  switch (node.kind) {
    case schema::kind::array: {
      if (!seg.is_index || node.args.empty() || v.ops->size == nullptr) return {};
      const std::size_t n = v.ops->size(v.p);
      if (n == not_a_list || seg.index >= n) return {};
      return {{v.ops->item_at(v.p, seg.index), &v.ops->item()}, &node.args[0]};
    }
    case schema::kind::map: {
      if (seg.is_index || node.args.size() < 2 || v.ops->find == nullptr) return {};
      return {{v.ops->find(v.p, seg.key), &v.ops->item()}, &node.args[1]};
    }
    case schema::kind::ref: {
      if (seg.is_index || v.ops->field == nullptr || node.def >= m.defs.size()) return {};
      const schema::object_def* def = m.defs[node.def].object();
      if (def == nullptr) return {};
      for (std::size_t j = 0; j < def->fields.size(); ++j) {
        if (def->fields[j].key != seg.key) continue;
        if (field != nullptr) *field = j;
        return {v.ops->field(v.p, *def, j), &def->fields[j].type};
      }
      return {};
    }
    default:
      return {};
  }
}

// Drops what `p` (from segment k on) points into, inside `v` (the value at p[0..k), of schema
// `node`): the deepest position on the way that holds the target and can go. Returns the number of
// segments of the dropped value's path (0: nothing dropped).
std::size_t drop_at(value_ref v, const schema::model& m, const schema::type& node, const path& p, std::size_t k) {
  if (k >= p.size()) return 0;
  const path_segment& seg = p.segments()[k];
  std::size_t j = 0;
  auto [part, part_node] = step(v, m, node, seg, &j);
  if (part.p == nullptr) return 0;
  if (const std::size_t d = drop_at(part, m, *part_node, p, k + 1)) return d;
  v = inside(v);
  switch (node.kind) {
    case schema::kind::array:
      v.ops->erase(v.p, seg.index);
      return k + 1;
    case schema::kind::ref:
      return v.ops->drop_field(v.p, *m.defs[node.def].object(), j) ? k + 1 : 0;
    default:
      return 0;  // map values never go
  }
}

// The number of items of the list at `p` inside `root`; -1 when `p` leads to no list.
long list_size_at(value_ref root, const schema::model& m, const path& p) {
  value_ref v = root;
  const schema::type* node = &m.root;
  for (const path_segment& seg : p.segments()) {
    auto [part, part_node] = step(v, m, *node, seg);
    if (part.p == nullptr) return -1;
    v = part;
    node = part_node;
  }
  v = inside(v);
  if (v.p == nullptr || node->kind != schema::kind::array || v.ops->size == nullptr) return -1;
  const std::size_t n = v.ops->size(v.p);
  return n == not_a_list ? -1 : static_cast<long>(n);
}

// Later items first, so that dropping one does not move the others.
bool later_path_first(const issue& a, const issue& b) {
  const auto& x = a.path.segments();
  const auto& y = b.path.segments();
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (x[i] == y[i]) continue;
    if (x[i].is_index && y[i].is_index) return x[i].index > y[i].index;
    return x[i].key < y[i].key;
  }
  return x.size() > y.size();
}

}  // namespace

const value_ops& json_ops() noexcept {
  static const value_ops ops = make_json_ops();
  return ops;
}

bool apply_filters(value_ref root, const schema::model& m, issue_list& issues, note_list& notes) {
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
    const std::size_t d = drop_at(root, m, m.root, i.path, 0);
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
    if (list_size_at(root, m, list) != 0) continue;
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

}  // namespace covenant::detail
