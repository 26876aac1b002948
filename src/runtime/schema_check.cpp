// Schema diagnostics, structural checks of runtime models, and reachable-definition compaction.
#include <algorithm>
#include <ostream>
#include <string>
#include <unordered_map>
#include <utility>

#include "schema_checks.hpp"
#include "covenant/runtime/schema_diagnostic.hpp"

namespace covenant {

std::string_view to_string(schema_error_code code) noexcept {
  switch (code) {
    case schema_error_code::syntax_error: return "syntax_error";
    case schema_error_code::unsupported: return "unsupported";
    case schema_error_code::unknown_type: return "unknown_type";
    case schema_error_code::duplicate_type: return "duplicate_type";
    case schema_error_code::duplicate_field: return "duplicate_field";
    case schema_error_code::duplicate_value: return "duplicate_value";
    case schema_error_code::conflicting_alias: return "conflicting_alias";
    case schema_error_code::unescaped_recursion: return "unescaped_recursion";
    case schema_error_code::invalid_constraint: return "invalid_constraint";
    case schema_error_code::unknown_attribute: return "unknown_attribute";
    case schema_error_code::invalid_attribute: return "invalid_attribute";
    case schema_error_code::invalid_map_key: return "invalid_map_key";
    case schema_error_code::limit_exceeded: return "limit_exceeded";
    case schema_error_code::io_error: return "io_error";
    case schema_error_code::invalid_json_schema: return "invalid_json_schema";
    case schema_error_code::skipped: return "skipped";
  }
  return "unknown";
}

std::string schema_diagnostic::to_string() const {
  std::string out;
  if (!file.empty()) out += file;
  if (line != 0) {
    if (!out.empty()) out += ':';
    out += std::to_string(line);
    if (column != 0) {
      // Appended piece by piece: ":" + std::to_string(column) makes GCC 12 report a false
      // -Wrestrict in Release builds.
      out += ':';
      out += std::to_string(column);
    }
  }
  if (!pointer.empty()) {
    if (!out.empty()) out += ':';
    out += pointer;
  }
  if (!out.empty()) out += ": ";
  out += code == schema_error_code::skipped ? "note: " : "error: ";
  out += message;
  out += " [";
  out += covenant::to_string(code);
  out += "]";
  return out;
}

std::string render_diagnostics(const schema_diagnostics& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) {
    out += d.to_string();
    out.push_back('\n');
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const schema_diagnostic& d) { return os << d.to_string(); }

namespace {
std::string first_line(const schema_diagnostics& d) {
  if (d.empty()) return "invalid schema";
  std::string s = d.front().to_string();
  if (d.size() > 1) s += " (and " + std::to_string(d.size() - 1) + " more)";
  return s;
}
}  // namespace

schema_error::schema_error(schema_diagnostics issues)
    : std::runtime_error(first_line(issues)), issues_(std::move(issues)) {}

namespace detail {

namespace {

using schema::kind;

std::uint32_t def_index(const schema::model& m, const schema::type& t) {
  const schema::definition* d = m.resolve(t);
  return d == nullptr ? schema::no_def : static_cast<std::uint32_t>(d - m.defs.data());
}

template <class F>
void for_each_type(const schema::type& t, F&& f) {
  f(t);
  for (const auto& a : t.args) for_each_type(a, f);
}

class problem_finder {
 public:
  problem_finder(const schema::model& m, std::size_t max_depth) : m_(m), max_depth_(max_depth) {}

  std::vector<model_problem> run() {
    check_refs_and_keys();
    check_duplicates();
    check_alias_cycles();
    check_finite();
    check_nesting();
    return std::move(out_);
  }

 private:
  void add(schema_error_code code, std::uint32_t def, std::string field, std::string message) {
    out_.push_back(model_problem{code, def, std::move(field), std::move(message)});
  }

  std::string where(std::uint32_t def, const std::string& field) const {
    if (def == schema::no_def) return "the root type";
    std::string s = "'" + m_.defs[def].name;
    if (!field.empty()) s += "." + field;
    return s + "'";
  }

  void check_type(const schema::type& t, std::uint32_t def, const std::string& field) {
    for_each_type(t, [&](const schema::type& x) {
      if (x.kind == kind::ref && m_.resolve(x) == nullptr)
        add(schema_error_code::unknown_type, def, field, "unknown type '" + x.name + "' in " + where(def, field));
      if (x.kind == kind::map && x.args.size() == 2 && !valid_map_key(m_, x.args[0]))
        add(schema_error_code::invalid_map_key, def, field,
            "map keys must be strings, an enum or string literals, not " + schema::type_expression(x.args[0]) +
                " (in " + where(def, field) + ")");
      if ((x.kind == kind::array && x.args.size() != 1) || (x.kind == kind::map && x.args.size() != 2))
        add(schema_error_code::syntax_error, def, field, "malformed " + schema::type_expression(x) + " in " + where(def, field));
    });
  }

  void check_refs_and_keys() {
    check_type(m_.root, schema::no_def, "");
    for (std::uint32_t i = 0; i < m_.defs.size(); ++i) {
      const auto& d = m_.defs[i];
      if (const auto* o = d.object()) {
        for (const auto& f : o->fields) check_type(f.type, i, f.name);
      } else if (const auto* a = d.alias()) {
        check_type(a->target, i, "");
      }
    }
  }

  void check_duplicates() {
    std::unordered_map<std::string, std::uint32_t> names;
    for (std::uint32_t i = 0; i < m_.defs.size(); ++i) {
      const auto& d = m_.defs[i];
      if (!names.emplace(d.name, i).second)
        add(schema_error_code::duplicate_type, i, "", "type '" + d.name + "' is defined more than once");
      if (const auto* o = d.object()) {
        std::unordered_map<std::string, std::string> keys;
        for (const auto& f : o->fields) {
          auto [it, fresh] = keys.emplace(f.key, f.name);
          if (!fresh)
            add(schema_error_code::conflicting_alias, i, f.name,
                "fields '" + it->second + "' and '" + f.name + "' of '" + d.name + "' have the same JSON key \"" +
                    f.key + "\"");
        }
      } else if (const auto* e = d.enumeration()) {
        std::unordered_map<std::string, std::string> spellings;
        for (const auto& v : e->values) {
          auto claim = [&](const std::string& s) {
            auto [it, fresh] = spellings.emplace(s, v.declared_name);
            if (!fresh && it->second != v.declared_name)
              add(schema_error_code::conflicting_alias, i, v.declared_name,
                  "values '" + it->second + "' and '" + v.declared_name + "' of '" + d.name + "' both accept \"" + s +
                      "\"");
          };
          claim(v.name);
          for (const auto& a : v.aliases) claim(a);
        }
      }
    }
  }

  // Alias -> aliases reachable from its target without passing through a list, map or object.
  void alias_edges(const schema::type& t, std::vector<std::uint32_t>& out) const {
    switch (t.kind) {
      case kind::ref: {
        const std::uint32_t j = def_index(m_, t);
        if (j != schema::no_def && m_.defs[j].alias() != nullptr) out.push_back(j);
        break;
      }
      case kind::union_:
        for (const auto& a : t.args) alias_edges(a, out);
        break;
      default: break;
    }
  }

  void check_alias_cycles() {
    const std::size_t n = m_.defs.size();
    std::vector<std::vector<std::uint32_t>> edges(n);
    for (std::uint32_t i = 0; i < n; ++i)
      if (const auto* a = m_.defs[i].alias()) alias_edges(a->target, edges[i]);
    // Iterative DFS with colours; report each alias that lies on a cycle once.
    std::vector<std::uint8_t> colour(n, 0);
    std::vector<bool> reported(n, false);
    for (std::uint32_t s = 0; s < n; ++s) {
      if (colour[s] != 0 || m_.defs[s].alias() == nullptr) continue;
      std::vector<std::pair<std::uint32_t, std::size_t>> stack{{s, 0}};
      colour[s] = 1;
      while (!stack.empty()) {
        auto& [v, next] = stack.back();
        if (next < edges[v].size()) {
          const std::uint32_t w = edges[v][next++];
          if (colour[w] == 0) {
            colour[w] = 1;
            stack.emplace_back(w, 0);
          } else if (colour[w] == 1 && !reported[w]) {
            reported[w] = true;
            add(schema_error_code::unescaped_recursion, w, "",
                "type alias '" + m_.defs[w].name +
                    "' refers to itself without passing through a list, a map or a class");
          }
        } else {
          colour[v] = 2;
          stack.pop_back();
        }
      }
    }
  }

  bool finite(const schema::type& t) const {
    if (t.nullable) return true;
    switch (t.kind) {
      case kind::ref: {
        const std::uint32_t j = def_index(m_, t);
        return j == schema::no_def || finite_[j];
      }
      case kind::union_:
        for (const auto& a : t.args)
          if (finite(a)) return true;
        return t.args.empty();
      default: return true;
    }
  }

  bool def_finite(std::uint32_t i) const {
    const auto& d = m_.defs[i];
    if (const auto* o = d.object()) {
      for (const auto& f : o->fields)
        if (f.required && !f.skip && !finite(f.type)) return false;
      return true;
    }
    if (const auto* a = d.alias()) return finite(a->target);
    return true;
  }

  void check_finite() {
    const std::size_t n = m_.defs.size();
    finite_.assign(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (std::uint32_t i = 0; i < n; ++i) {
        if (!finite_[i] && def_finite(i)) {
          finite_[i] = true;
          changed = true;
        }
      }
    }
    for (std::uint32_t i = 0; i < n; ++i) {
      if (finite_[i]) continue;
      const auto& d = m_.defs[i];
      if (const auto* o = d.object()) {
        for (const auto& f : o->fields) {
          if (!f.required || f.skip || finite(f.type)) continue;
          add(schema_error_code::unescaped_recursion, i, f.name,
              "class '" + d.name + "' can never be satisfied: its required field '" + f.name + "' (" +
                  schema::type_expression(f.type) +
                  ") leads back to it; make the field optional, a list, or a union with a non-recursive type");
          break;
        }
      }
      // Aliases without a finite value are cycles, already reported by check_alias_cycles, or
      // lead to a class reported here.
    }
  }

  // Definitions each definition refers to (through fields, lists, maps, unions and aliases).
  std::vector<std::vector<std::uint32_t>> reference_graph() const {
    std::vector<std::vector<std::uint32_t>> g(m_.defs.size());
    for (std::uint32_t i = 0; i < m_.defs.size(); ++i) {
      auto collect = [&](const schema::type& t) {
        for_each_type(t, [&](const schema::type& x) {
          if (x.kind != kind::ref) return;
          const std::uint32_t j = def_index(m_, x);
          if (j != schema::no_def) g[i].push_back(j);
        });
      };
      if (const auto* o = m_.defs[i].object()) {
        for (const auto& f : o->fields) collect(f.type);
      } else if (const auto* a = m_.defs[i].alias()) {
        collect(a->target);
      }
    }
    return g;
  }

  // Longest chain of definitions containing one another, with each recursive group (strongly
  // connected component) counted once. Iterative Tarjan, then longest paths over the components,
  // which Tarjan emits in reverse topological order.
  void check_nesting() {
    const std::size_t n = m_.defs.size();
    if (n == 0) return;
    const auto g = reference_graph();
    constexpr std::uint32_t unset = schema::no_def;
    std::vector<std::uint32_t> index(n, unset), low(n, 0), comp(n, unset);
    std::vector<bool> on_stack(n, false);
    std::vector<std::uint32_t> stack;
    std::uint32_t counter = 0;
    std::uint32_t comps = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      if (index[s] != unset) continue;
      std::vector<std::pair<std::uint32_t, std::size_t>> work{{s, 0}};
      index[s] = low[s] = counter++;
      stack.push_back(s);
      on_stack[s] = true;
      while (!work.empty()) {
        auto& [v, next] = work.back();
        if (next < g[v].size()) {
          const std::uint32_t w = g[v][next++];
          if (index[w] == unset) {
            index[w] = low[w] = counter++;
            stack.push_back(w);
            on_stack[w] = true;
            work.emplace_back(w, 0);
          } else if (on_stack[w]) {
            low[v] = std::min(low[v], index[w]);
          }
          continue;
        }
        if (low[v] == index[v]) {
          for (;;) {
            const std::uint32_t w = stack.back();
            stack.pop_back();
            on_stack[w] = false;
            comp[w] = comps;
            if (w == v) break;
          }
          ++comps;
        }
        const std::uint32_t done = v;
        work.pop_back();
        if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
      }
    }
    // Components are numbered in reverse topological order: successors first.
    std::vector<std::vector<std::uint32_t>> members(comps);
    for (std::uint32_t v = 0; v < n; ++v) members[comp[v]].push_back(v);
    std::vector<std::size_t> depth(comps, 1);
    std::size_t deepest = 0;
    std::uint32_t where = 0;
    for (std::uint32_t c = 0; c < comps; ++c) {
      for (std::uint32_t v : members[c])
        for (std::uint32_t w : g[v])
          if (comp[w] != c) depth[c] = std::max(depth[c], depth[comp[w]] + 1);
      if (depth[c] > deepest) {
        deepest = depth[c];
        where = members[c].front();
      }
    }
    if (deepest > max_depth_)
      add(schema_error_code::limit_exceeded, where, "",
          "'" + m_.defs[where].name + "' nests types " + std::to_string(deepest) + " levels deep, more than the limit of " +
              std::to_string(max_depth_));
  }

  const schema::model& m_;
  std::size_t max_depth_;
  std::vector<model_problem> out_;
  std::vector<bool> finite_;
};

}  // namespace

bool valid_map_key(const schema::model& m, const schema::type& key) {
  if (key.nullable) return false;
  const schema::type* t = m.unalias(key);
  if (t == nullptr) return true;  // reported as an unknown type or a cycle
  switch (t->kind) {
    case kind::string: return true;
    case kind::literal: return t->literal.is_string();
    case kind::ref: {
      const schema::definition* d = m.resolve(*t);
      return d != nullptr && d->enumeration() != nullptr;
    }
    case kind::union_:
      for (const auto& a : t->args)
        if (!valid_map_key(m, a)) return false;
      return !t->args.empty();
    default: return false;
  }
}

std::vector<model_problem> find_model_problems(const schema::model& m, std::size_t max_depth) {
  return problem_finder(m, max_depth).run();
}

}  // namespace detail

schema_diagnostics check_model(const schema::model& m) {
  schema_diagnostics out;
  for (auto& p : detail::find_model_problems(m)) {
    schema_diagnostic d;
    d.code = p.code;
    if (p.def != schema::no_def) {
      const auto& w = m.defs[p.def].where;
      d.file = w.file;
      d.line = w.line;
      d.column = w.column;
    }
    d.message = std::move(p.message);
    out.push_back(std::move(d));
  }
  return out;
}

namespace {

class compactor {
 public:
  explicit compactor(const schema::model& all) : all_(all), map_(all.defs.size(), schema::no_def) {}

  schema::model run(const schema::type& root) {
    visit(root);
    schema::model out;
    out.root = root;
    remap(out.root);
    out.defs.reserve(order_.size());
    for (std::uint32_t old : order_) {
      schema::definition d = all_.defs[old];
      if (auto* o = std::get_if<schema::object_def>(&d.body)) {
        for (auto& f : o->fields) remap(f.type);
      } else if (auto* a = std::get_if<schema::alias_def>(&d.body)) {
        remap(a->target);
      }
      out.defs.push_back(std::move(d));
    }
    return out;
  }

 private:
  std::uint32_t index_of(const schema::type& t) const {
    const schema::definition* d = all_.resolve(t);
    return d == nullptr ? schema::no_def : static_cast<std::uint32_t>(d - all_.defs.data());
  }

  // Pre-order, depth first, like schema_of<T>(): a definition is numbered when first met, then
  // what it refers to, in field order. Iterative, so long chains of definitions cannot exhaust
  // the stack.
  void visit(const schema::type& root) {
    std::vector<const schema::type*> pending{&root};
    while (!pending.empty()) {
      const schema::type* t = pending.back();
      pending.pop_back();
      std::vector<const schema::type*> next;
      if (t->kind == schema::kind::ref) {
        const std::uint32_t i = index_of(*t);
        if (i != schema::no_def && map_[i] == schema::no_def) {
          map_[i] = static_cast<std::uint32_t>(order_.size());
          order_.push_back(i);
          const auto& d = all_.defs[i];
          if (const auto* o = d.object()) {
            for (const auto& f : o->fields) next.push_back(&f.type);
          } else if (const auto* a = d.alias()) {
            next.push_back(&a->target);
          }
        }
      }
      for (const auto& a : t->args) next.push_back(&a);
      for (auto it = next.rbegin(); it != next.rend(); ++it) pending.push_back(*it);
    }
  }

  void remap(schema::type& t) const {
    if (t.kind == schema::kind::ref) {
      const std::uint32_t i = index_of(t);
      if (i != schema::no_def) {
        t.def = map_[i];
        t.name = all_.defs[i].name;
      } else {
        t.def = schema::no_def;
      }
    }
    for (auto& a : t.args) remap(a);
  }

  const schema::model& all_;
  std::vector<std::uint32_t> map_;
  std::vector<std::uint32_t> order_;
};

}  // namespace

schema::model reachable_model(const schema::model& all, const schema::type& root) { return compactor(all).run(root); }

}  // namespace covenant
