// Backward-compatibility check between two versions of a schema, field by field.
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "covenant/types/config.hpp"
#include "schema_checks.hpp"
#include "schema_formula.hpp"
#include "covenant/runtime/registry.hpp"
#include "types/number_text.hpp"

namespace covenant {

std::string_view to_string(change_kind kind) noexcept {
  switch (kind) {
    case change_kind::field_removed: return "field_removed";
    case change_kind::field_added: return "field_added";
    case change_kind::became_required: return "became_required";
    case change_kind::became_optional: return "became_optional";
    case change_kind::type_changed: return "type_changed";
    case change_kind::type_narrowed: return "type_narrowed";
    case change_kind::type_widened: return "type_widened";
    case change_kind::enum_value_removed: return "enum_value_removed";
    case change_kind::enum_value_added: return "enum_value_added";
    case change_kind::constraint_tightened: return "constraint_tightened";
    case change_kind::constraint_loosened: return "constraint_loosened";
  }
  return "unknown";
}

std::string schema_change::to_string() const {
  return std::string(breaking ? "breaking: " : "compatible: ") + (path.empty() ? "(root)" : path) + ": " + detail;
}

bool compat_report::compatible() const noexcept {
  for (const auto& c : changes)
    if (c.breaking) return false;
  return true;
}

std::vector<schema_change> compat_report::breaking() const {
  std::vector<schema_change> out;
  for (const auto& c : changes)
    if (c.breaking) out.push_back(c);
  return out;
}

std::string compat_report::to_string() const {
  std::string out;
  for (const auto& c : changes) {
    out += c.to_string();
    out.push_back('\n');
  }
  return out;
}

namespace {

using schema::constraint;
using schema::constraint_kind;
using schema::kind;

using detail::number_text;

std::string json_text(const boost::json::value& v) {
  if (v.is_double()) return number_text(v.get_double());
  return boost::json::serialize(v);
}

bool soft(const constraint& c) {
  if (c.on_fail == fail_action::noop) return true;
  const auto* e = dynamic_cast<const detail::formula_check*>(c.custom.get());
  return e != nullptr && e->soft();
}

// A type seen through aliases: the final type, with nullability and constraints gathered on the way.
struct view {
  const schema::type* base = nullptr;
  bool nullable = false;
  std::vector<constraint> constraints;
};

view see(const schema::model& m, const schema::type& t) {
  view v;
  const schema::type* cur = &t;
  for (std::size_t steps = 0; steps <= m.defs.size(); ++steps) {
    v.nullable = v.nullable || cur->nullable;
    for (const auto& c : cur->constraints)
      if (!soft(c)) v.constraints.push_back(c);
    if (cur->kind != kind::ref) break;
    const schema::definition* d = m.resolve(*cur);
    if (d == nullptr || d->alias() == nullptr) break;
    cur = &d->alias()->target;
  }
  v.base = cur;
  return v;
}

std::string kind_key(const schema::model& m, const schema::type& t) {
  switch (t.kind) {
    case kind::any: return "any";
    case kind::null: return "null";
    case kind::boolean: return "bool";
    case kind::integer: return "int";
    case kind::number: return "float";
    case kind::string: return "string";
    case kind::array: return "array";
    case kind::map: return "map";
    case kind::union_: return "union";
    case kind::literal: return "literal " + json_text(t.literal);
    case kind::ref: {
      const schema::definition* d = m.resolve(t);
      return "ref " + (d == nullptr ? t.name : d->name);
    }
  }
  return "?";
}

std::string shown(const schema::type& t) {
  schema::type copy = t;
  copy.nullable = false;
  return schema::type_expression(copy);
}

// The JSON type a literal belongs to.
kind literal_kind(const boost::json::value& v) {
  if (v.is_string()) return kind::string;
  if (v.is_bool()) return kind::boolean;
  if (v.is_int64() || v.is_uint64()) return kind::integer;
  if (v.is_double()) return kind::number;
  if (v.is_null()) return kind::null;
  return kind::any;
}

struct bound {
  double value = 0;
  bool exclusive = false;
};

class comparer {
 public:
  comparer(const schema::model& a, const schema::model& b) : a_(a), b_(b) {}

  std::vector<schema_change> run() {
    compare(a_.root, b_.root, "");
    return std::move(out_);
  }

 private:
  void add(const std::string& path, change_kind k, bool breaking, std::string detail) {
    out_.push_back(schema_change{path, k, breaking, std::move(detail)});
  }

  void compare(const schema::type& x, const schema::type& y, const std::string& path) {
    const view vx = see(a_, x);
    const view vy = see(b_, y);
    if (vx.nullable && !vy.nullable && vy.base->kind != kind::any && vy.base->kind != kind::null)
      add(path, change_kind::type_narrowed, true, "null no longer accepted");
    else if (!vx.nullable && vy.nullable && vx.base->kind != kind::any && vx.base->kind != kind::null)
      add(path, change_kind::type_widened, false, "null now accepted");
    const schema::type& bx = *vx.base;
    const schema::type& by = *vy.base;
    if (bx.kind == kind::union_ || by.kind == kind::union_) {
      compare_alternatives(bx, by, path);
      constraints(vx.constraints, vy.constraints, path);
      return;
    }
    const std::string kx = kind_key(a_, bx);
    const std::string ky = kind_key(b_, by);
    if (kx == ky) {
      same(bx, by, path);
      constraints(vx.constraints, vy.constraints, path);
      return;
    }
    if (covers(by, bx, b_, a_)) {
      add(path, change_kind::type_widened, false, shown(bx) + " -> " + shown(by));
      constraints(vx.constraints, vy.constraints, path);
    } else if (covers(bx, by, a_, b_)) {
      add(path, change_kind::type_narrowed, true, shown(bx) + " -> " + shown(by));
      constraints(vx.constraints, vy.constraints, path);
    } else {
      add(path, change_kind::type_changed, true, shown(bx) + " -> " + shown(by));
    }
  }

  // Whether every value of `narrow` (in model mn) is a value of `wide` (in model mw), looking only
  // at kinds: integer within number, a literal within its base type, anything within any.
  static bool covers(const schema::type& wide, const schema::type& narrow, const schema::model& mw,
                     const schema::model& mn) {
    if (wide.kind == kind::any) return true;
    if (wide.kind == kind::number && narrow.kind == kind::integer) return true;
    if (narrow.kind == kind::literal) {
      const kind lk = literal_kind(narrow.literal);
      if (wide.kind == lk || (wide.kind == kind::number && lk == kind::integer)) return true;
    }
    if (wide.kind == kind::integer && narrow.kind == kind::integer) return true;
    if (wide.kind == narrow.kind && wide.kind != kind::ref) return kind_key(mw, wide) == kind_key(mn, narrow);
    return false;
  }

  void compare_alternatives(const schema::type& x, const schema::type& y, const std::string& path) {
    std::vector<const schema::type*> ax;
    std::vector<const schema::type*> ay;
    auto flatten = [](const schema::type& t, std::vector<const schema::type*>& out) {
      if (t.kind == kind::union_) {
        for (const auto& a : t.args) out.push_back(&a);
      } else {
        out.push_back(&t);
      }
    };
    flatten(x, ax);
    flatten(y, ay);
    std::vector<bool> used(ay.size(), false);
    for (const schema::type* a : ax) {
      const view va = see(a_, *a);
      const std::string ka = kind_key(a_, *va.base);
      bool found = false;
      for (std::size_t j = 0; j < ay.size() && !found; ++j) {
        if (kind_key(b_, *see(b_, *ay[j]).base) != ka) continue;
        used[j] = true;
        found = true;
        compare(*a, *ay[j], path);
      }
      for (std::size_t j = 0; j < ay.size() && !found; ++j) {
        if (!covers(*see(b_, *ay[j]).base, *va.base, b_, a_)) continue;
        used[j] = true;
        found = true;
        add(path, change_kind::type_widened, false, shown(*va.base) + " -> " + shown(*see(b_, *ay[j]).base));
      }
      if (!found) add(path, change_kind::type_narrowed, true, "alternative " + shown(*va.base) + " no longer accepted");
    }
    for (std::size_t j = 0; j < ay.size(); ++j) {
      if (used[j]) continue;
      add(path, change_kind::type_widened, false, "alternative " + shown(*see(b_, *ay[j]).base) + " added");
    }
  }

  static std::pair<std::int64_t, std::uint64_t> int_range(const schema::type& t) {
    if (t.is_unsigned) return {0, t.int_bits >= 64 ? UINT64_MAX : (std::uint64_t{1} << t.int_bits) - 1};
    if (t.int_bits >= 64) return {INT64_MIN, static_cast<std::uint64_t>(INT64_MAX)};
    return {-(std::int64_t{1} << (t.int_bits - 1)), (std::uint64_t{1} << (t.int_bits - 1)) - 1};
  }

  void same(const schema::type& x, const schema::type& y, const std::string& path) {
    switch (x.kind) {
      case kind::integer: {
        const auto rx = int_range(x);
        const auto ry = int_range(y);
        const bool contains = ry.first <= rx.first && ry.second >= rx.second;
        const bool contained = rx.first <= ry.first && rx.second >= ry.second;
        if (contains && !contained) add(path, change_kind::type_widened, false, "integer range widened");
        else if (contained && !contains) add(path, change_kind::type_narrowed, true, "integer range narrowed");
        break;
      }
      case kind::array: compare(x.args.at(0), y.args.at(0), path + "[]"); break;
      case kind::map:
        compare(x.args.at(0), y.args.at(0), path + "{key}");
        compare(x.args.at(1), y.args.at(1), path + "{}");
        break;
      case kind::ref: {
        const schema::definition* dx = a_.resolve(x);
        const schema::definition* dy = b_.resolve(y);
        if (dx == nullptr || dy == nullptr) break;
        if (dx->object() != nullptr && dy->object() != nullptr) objects(*dx, *dy, path);
        else if (dx->enumeration() != nullptr && dy->enumeration() != nullptr) enums(*dx->enumeration(), *dy->enumeration(), path);
        break;
      }
      default: break;
    }
  }

  static std::string join(const std::string& base, const std::string& key) { return base.empty() ? key : base + "." + key; }

  // Each pair of definitions is compared once, at the first path that reaches it (later paths
  // and recursive uses would repeat the same changes).
  void objects(const schema::definition& dx, const schema::definition& dy, const std::string& path) {
    if (!visited_.insert({&dx, &dy}).second) return;
    // Models that passed check_model nest at most COVENANT_SCHEMA_MAX_DEPTH levels; others stop
    // here rather than exhaust the stack.
    if (depth_ >= 4 * COVENANT_SCHEMA_MAX_DEPTH) {
      add(path, change_kind::type_changed, true, "not compared: types nest too deeply");
      return;
    }
    ++depth_;
    struct leave {
      std::size_t& d;
      ~leave() { --d; }
    } guard{depth_};
    const auto& ox = *dx.object();
    const auto& oy = *dy.object();
    for (const auto& f : ox.fields) {
      if (f.skip) continue;
      const schema::field* g = nullptr;
      for (const auto& c : oy.fields)
        if (!c.skip && c.key == f.key) g = &c;
      const std::string p = join(path, f.key);
      if (g == nullptr) {
        add(p, change_kind::field_removed, true, "field removed");
        continue;
      }
      if (!f.required && g->required) add(p, change_kind::became_required, true, "optional field became required");
      else if (f.required && !g->required) add(p, change_kind::became_optional, false, "required field became optional");
      compare(f.type, g->type, p);
    }
    for (const auto& g : oy.fields) {
      if (g.skip) continue;
      bool known = false;
      for (const auto& f : ox.fields) known = known || (!f.skip && f.key == g.key);
      if (known) continue;
      if (g.required && !g.default_value) add(join(path, g.key), change_kind::field_added, true, "required field added");
      else add(join(path, g.key), change_kind::field_added, false, "optional field added");
    }
    auto hard = [](const schema::invariant& i) { return i.on_fail != fail_action::noop; };
    for (const auto& i : oy.invariants) {
      if (!hard(i)) continue;
      bool known = false;
      for (const auto& j : ox.invariants) known = known || j.description == i.description;
      if (!known) add(path, change_kind::constraint_tightened, true, "rule added: " + i.description);
    }
    for (const auto& i : ox.invariants) {
      if (!hard(i)) continue;
      bool known = false;
      for (const auto& j : oy.invariants) known = known || j.description == i.description;
      if (!known) add(path, change_kind::constraint_loosened, false, "rule removed: " + i.description);
    }
  }

  static std::vector<std::string> spellings(const schema::enum_value& v) {
    std::vector<std::string> s;
    if (v.skip) return s;
    s.push_back(v.name);
    for (const auto& a : v.aliases) s.push_back(a);
    return s;
  }

  void enums(const schema::enum_def& x, const schema::enum_def& y, const std::string& path) {
    std::set<std::string> sx;
    std::set<std::string> sy;
    for (const auto& v : x.values)
      for (auto& s : spellings(v)) sx.insert(s);
    for (const auto& v : y.values)
      for (auto& s : spellings(v)) sy.insert(s);
    for (const auto& v : x.values) {
      if (v.skip) continue;
      if (sy.count(v.name) == 0) add(path, change_kind::enum_value_removed, true, "value \"" + v.name + "\" removed");
      for (const auto& a : v.aliases)
        if (sy.count(a) == 0 && a != v.name)
          add(path, change_kind::enum_value_removed, true, "spelling \"" + a + "\" of \"" + v.name + "\" no longer accepted");
    }
    for (const auto& v : y.values) {
      if (v.skip) continue;
      if (sx.count(v.name) == 0) add(path, change_kind::enum_value_added, false, "value \"" + v.name + "\" added");
    }
  }

  // ---- constraints ----
  static std::optional<bound> lower(const std::vector<constraint>& cs) {
    std::optional<bound> b;
    for (const auto& c : cs) {
      if (c.kind != constraint_kind::minimum && c.kind != constraint_kind::exclusive_minimum) continue;
      const bound n{c.number, c.kind == constraint_kind::exclusive_minimum};
      if (!b || n.value > b->value || (n.value == b->value && n.exclusive)) b = n;
    }
    return b;
  }
  static std::optional<bound> upper(const std::vector<constraint>& cs) {
    std::optional<bound> b;
    for (const auto& c : cs) {
      if (c.kind != constraint_kind::maximum && c.kind != constraint_kind::exclusive_maximum) continue;
      const bound n{c.number, c.kind == constraint_kind::exclusive_maximum};
      if (!b || n.value < b->value || (n.value == b->value && n.exclusive)) b = n;
    }
    return b;
  }
  static std::optional<std::size_t> count(const std::vector<constraint>& cs, constraint_kind k, bool take_max) {
    std::optional<std::size_t> n;
    for (const auto& c : cs) {
      if (c.kind != k) continue;
      if (!n || (take_max ? c.count > *n : c.count < *n)) n = c.count;
    }
    return n;
  }

  static std::string bound_text(const bound& b, bool is_lower) {
    return std::string(b.exclusive ? (is_lower ? "> " : "< ") : (is_lower ? ">= " : "<= ")) + number_text(b.value);
  }

  void bounds(const std::optional<bound>& x, const std::optional<bound>& y, bool is_lower, const std::string& path) {
    const char* name = is_lower ? "minimum" : "maximum";
    if (!x && !y) return;
    if (!x) {
      add(path, change_kind::constraint_tightened, true, std::string(name) + " " + bound_text(*y, is_lower) + " added");
      return;
    }
    if (!y) {
      add(path, change_kind::constraint_loosened, false, std::string(name) + " " + bound_text(*x, is_lower) + " removed");
      return;
    }
    if (x->value == y->value && x->exclusive == y->exclusive) return;
    // For a lower bound, a larger value (or the same value made exclusive) is stricter.
    bool stricter = is_lower ? (y->value > x->value || (y->value == x->value && y->exclusive))
                             : (y->value < x->value || (y->value == x->value && y->exclusive));
    add(path, stricter ? change_kind::constraint_tightened : change_kind::constraint_loosened, stricter,
        std::string(name) + " " + bound_text(*x, is_lower) + " -> " + bound_text(*y, is_lower));
  }

  void counts(const std::vector<constraint>& x, const std::vector<constraint>& y, constraint_kind k, bool is_min,
              const char* what, const std::string& path) {
    const auto a = count(x, k, is_min);
    const auto b = count(y, k, is_min);
    if (a == b) return;
    const std::string name = std::string(is_min ? "minimum " : "maximum ") + what;
    if (!a) {
      add(path, change_kind::constraint_tightened, true, name + " " + std::to_string(*b) + " added");
    } else if (!b) {
      add(path, change_kind::constraint_loosened, false, name + " " + std::to_string(*a) + " removed");
    } else {
      const bool stricter = is_min ? *b > *a : *b < *a;
      add(path, stricter ? change_kind::constraint_tightened : change_kind::constraint_loosened, stricter,
          name + " " + std::to_string(*a) + " -> " + std::to_string(*b));
    }
  }

  // Constraints compared by their text (patterns, formats, multiples, uniqueness, rules).
  void by_text(const std::vector<constraint>& x, const std::vector<constraint>& y, constraint_kind k, const char* what,
               const std::string& path) {
    auto texts = [&](const std::vector<constraint>& cs) {
      std::vector<std::string> out;
      for (const auto& c : cs) {
        if (c.kind != k) continue;
        std::string t = k == constraint_kind::multiple_of ? number_text(c.number) : c.text;
        if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(std::move(t));
      }
      return out;
    };
    const auto tx = texts(x);
    const auto ty = texts(y);
    auto label = [&](const std::string& t) { return t.empty() ? std::string(what) : std::string(what) + " " + t; };
    for (const auto& t : ty)
      if (std::find(tx.begin(), tx.end(), t) == tx.end()) add(path, change_kind::constraint_tightened, true, label(t) + " added");
    for (const auto& t : tx)
      if (std::find(ty.begin(), ty.end(), t) == ty.end()) add(path, change_kind::constraint_loosened, false, label(t) + " removed");
  }

  void one_of(const std::vector<constraint>& x, const std::vector<constraint>& y, const std::string& path) {
    auto values = [](const std::vector<constraint>& cs) -> std::optional<std::set<std::string>> {
      std::optional<std::set<std::string>> out;
      for (const auto& c : cs) {
        if (c.kind != constraint_kind::one_of) continue;
        std::set<std::string> s;
        for (const auto& v : c.values) s.insert(json_text(v));
        if (!out) {
          out = std::move(s);
        } else {
          std::set<std::string> both;
          for (const auto& v : *out)
            if (s.count(v) != 0) both.insert(v);
          out = std::move(both);
        }
      }
      return out;
    };
    const auto a = values(x);
    const auto b = values(y);
    if (a == b) return;
    auto list = [](const std::set<std::string>& s) {
      std::string out;
      for (const auto& v : s) out += (out.empty() ? "" : ", ") + v;
      return out;
    };
    if (!a) {
      add(path, change_kind::constraint_tightened, true, "one of " + list(*b) + " added");
      return;
    }
    if (!b) {
      add(path, change_kind::constraint_loosened, false, "one of " + list(*a) + " removed");
      return;
    }
    std::set<std::string> removed;
    std::set<std::string> added;
    for (const auto& v : *a)
      if (b->count(v) == 0) removed.insert(v);
    for (const auto& v : *b)
      if (a->count(v) == 0) added.insert(v);
    if (!removed.empty()) add(path, change_kind::constraint_tightened, true, "allowed values removed: " + list(removed));
    if (!added.empty()) add(path, change_kind::constraint_loosened, false, "allowed values added: " + list(added));
  }

  void constraints(const std::vector<constraint>& x, const std::vector<constraint>& y, const std::string& path) {
    if (x.empty() && y.empty()) return;
    bounds(lower(x), lower(y), true, path);
    bounds(upper(x), upper(y), false, path);
    counts(x, y, constraint_kind::min_length, true, "length", path);
    counts(x, y, constraint_kind::max_length, false, "length", path);
    counts(x, y, constraint_kind::min_items, true, "items", path);
    counts(x, y, constraint_kind::max_items, false, "items", path);
    by_text(x, y, constraint_kind::multiple_of, "multiple of", path);
    by_text(x, y, constraint_kind::pattern, "pattern", path);
    by_text(x, y, constraint_kind::format, "format", path);
    one_of(x, y, path);
    by_text(x, y, constraint_kind::unique_items, "unique items", path);
    by_text(x, y, constraint_kind::unique_by, "unique by", path);
    by_text(x, y, constraint_kind::predicate, "rule", path);
  }

  const schema::model& a_;
  const schema::model& b_;
  std::vector<schema_change> out_;
  std::set<std::pair<const schema::definition*, const schema::definition*>> visited_;
  std::size_t depth_ = 0;
};

}  // namespace

compat_report check_compatibility(const schema::model& older, const schema::model& newer) {
  compat_report r;
  r.changes = comparer(older, newer).run();
  return r;
}

}  // namespace covenant
