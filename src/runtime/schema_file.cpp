// The schema-file reader: BAML type declarations (and the `model Name { field?: type }` form) into schema::model.
//
// Three stages: a lexer (tokens with line and column; schema_file_lexer.cpp), a recursive-descent
// parser that builds definitions straight into the model (recording where every field, value and
// type name was written; schema_file_parse.cpp), and the resolver here, which links names, checks
// the whole set and turns simple @assert rules into keyword constraints. Problems are collected,
// never thrown past the loader.
#include "covenant/runtime/schema_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema_checks.hpp"
#include "schema_formula.hpp"
#include "schema_file_syntax.hpp"
#include "text_file.hpp"

namespace covenant {

namespace {

using namespace schema_file_impl;
using schema::kind;

// ---- resolution ---------------------------------------------------------------------------------

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const char x = static_cast<char>(std::tolower(static_cast<unsigned char>(a[i - 1])));
      const char y = static_cast<char>(std::tolower(static_cast<unsigned char>(b[j - 1])));
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x == y ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

template <class F>
void for_each_type_mut(schema::type& t, F&& f) {
  f(t);
  for (auto& a : t.args) for_each_type_mut(a, f);
}

template <class F>
void for_each_def_type(schema::model& m, F&& f) {
  for (auto& d : m.defs) {
    if (auto* o = std::get_if<schema::object_def>(&d.body)) {
      for (auto& fl : o->fields) for_each_type_mut(fl.type, f);
    } else if (auto* a = std::get_if<schema::alias_def>(&d.body)) {
      for_each_type_mut(a->target, f);
    }
  }
}

}  // namespace

struct detail::schema_file_access {
  // Links ref types to definitions by name (declared or final).
  static void link(const schema_set& set, schema::type& root) {
    for_each_type_mut(root, [&](schema::type& t) {
      if (t.kind != kind::ref) return;
      auto it = set.by_name_.find(t.name);
      if (it != set.by_name_.end()) {
        t.def = it->second;
        t.name = set.all_.defs[it->second].name;
      }
    });
  }

  // Hard @assert predicates that are simple rules become keyword constraints; enum rules are
  // attached to every use of the enum.
  static void refine(const schema_set& set, schema::type& root) {
    for_each_type_mut(root, [&](schema::type& t) {
      if (!t.constraints.empty()) {
        std::vector<schema::constraint> out;
        const schema::type* base = set.all_.unalias(t);
        const kind k = base == nullptr ? kind::any : base->kind;
        for (auto& c : t.constraints) {
          const auto* check = dynamic_cast<const detail::formula_check*>(c.custom.get());
          if (c.kind == schema::constraint_kind::predicate && check != nullptr && c.on_fail != fail_action::noop) {
            const std::size_t before = out.size();
            if (check->expr().to_constraints(k, out)) {
              for (std::size_t i = before; i < out.size(); ++i) {
                out[i].label = c.label;
                out[i].on_fail = c.on_fail;
              }
              continue;
            }
          }
          out.push_back(std::move(c));
        }
        t.constraints = std::move(out);
      }
      if (t.kind == kind::ref && t.def != schema::no_def && t.def < set.enum_rules_.size()) {
        for (const auto& c : set.enum_rules_[t.def]) t.constraints.push_back(c);
      }
    });
  }

  static schema_load_result load(std::string_view text, const schema_load_options& options) {
    schema_load_result result;
    schema_set& set = result.set;
    set.limits_ = options.limits;
    auto report = [&](schema_error_code code, location loc, std::string message) {
      result.issues.push_back(diagnostic_at(code, options.file, loc, std::move(message)));
    };
    if (text.size() > options.limits.max_bytes) {
      report(schema_error_code::limit_exceeded, {},
             "schema text is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                 std::to_string(options.limits.max_bytes));
      return result;
    }
    const source_map map(text);
    lexer lx(text, map);
    token_stream toks(lx);

    std::vector<def_info> info;
    parse_state st;
    st.file = options.file;
    st.limits = options.limits;
    st.all = &set.all_;
    st.info = &info;
    st.enum_rules = &set.enum_rules_;
    st.errors = &result.issues;
    st.notes = &result.notes;
    st.hints = &set.stream_hints_;
    parse_declarations(toks, map, st);
    if (toks.error) report(schema_error_code::syntax_error, map.at(toks.error->offset), toks.error->message);
    if (!result.issues.empty() && result.issues.back().code == schema_error_code::limit_exceeded) return result;

    schema::model& all = set.all_;
    all.root = schema::make_primitive(kind::any);
    // names
    for (std::uint32_t i = 0; i < all.defs.size(); ++i) {
      set.declared_.push_back(info[i].declared);
      auto [it, fresh] = set.by_name_.emplace(info[i].declared, i);
      if (!fresh) {
        const auto& first = info[it->second].loc;
        report(schema_error_code::duplicate_type, info[i].loc,
               "type '" + info[i].declared + "' is already defined at line " + std::to_string(first.line));
      }
    }
    // unknown names
    for (const auto& r : st.refs) {
      if (set.by_name_.count(r.name) != 0) continue;
      std::string best;
      std::size_t best_d = 3;
      for (const auto& n : set.declared_) {
        const std::size_t d = edit_distance(n, r.name);
        if (d < best_d) {
          best_d = d;
          best = n;
        }
      }
      report(schema_error_code::unknown_type, r.loc,
             "unknown type '" + r.name + "'" + (best.empty() ? std::string() : " (did you mean '" + best + "'?)"));
    }
    for_each_def_type(all, [&](schema::type& t) {
      if (t.kind == kind::ref) {
        auto it = set.by_name_.find(t.name);
        if (it != set.by_name_.end()) t.def = it->second;
      }
    });
    // members
    for (std::uint32_t i = 0; i < all.defs.size(); ++i) {
      auto& d = all.defs[i];
      const auto& locs = info[i].member_locs;
      if (auto* o = std::get_if<schema::object_def>(&d.body)) {
        for (std::size_t a = 0; a < o->fields.size(); ++a) {
          const location at = a < locs.size() ? locs[a] : info[i].loc;
          for (std::size_t b = 0; b < a; ++b) {
            if (o->fields[b].name == o->fields[a].name) {
              report(schema_error_code::duplicate_field, at,
                     "field '" + o->fields[a].name + "' of '" + info[i].declared + "' is already declared at line " +
                         std::to_string(b < locs.size() ? locs[b].line : 0));
              break;
            }
            if (o->fields[b].key == o->fields[a].key) {
              report(schema_error_code::conflicting_alias, at,
                     "fields '" + o->fields[b].name + "' and '" + o->fields[a].name + "' of '" + info[i].declared +
                         "' both use the JSON key \"" + o->fields[a].key + "\"");
              break;
            }
          }
          for_each_type_mut(o->fields[a].type, [&](schema::type& t) {
            if (t.kind == kind::map && t.args.size() == 2 && !detail::valid_map_key(all, t.args[0]))
              report(schema_error_code::invalid_map_key, at,
                     "map keys must be string, an enum or string literals, not " +
                         schema::type_expression(t.args[0]));
          });
        }
      } else if (auto* e = std::get_if<schema::enum_def>(&d.body)) {
        for (std::size_t a = 0; a < e->values.size(); ++a) {
          const location at = a < locs.size() ? locs[a] : info[i].loc;
          bool reported = false;
          for (std::size_t b = 0; b < a && !reported; ++b) {
            const auto& x = e->values[b];
            const auto& y = e->values[a];
            if (x.declared_name == y.declared_name) {
              report(schema_error_code::duplicate_value, at,
                     "value '" + y.declared_name + "' of enum '" + info[i].declared + "' is already declared");
              reported = true;
              break;
            }
            auto spellings = [](const schema::enum_value& v) {
              std::vector<std::string> s{v.name};
              for (const auto& al : v.aliases) s.push_back(al);
              return s;
            };
            for (const auto& s1 : spellings(x)) {
              for (const auto& s2 : spellings(y)) {
                if (s1 == s2 && !reported) {
                  report(schema_error_code::conflicting_alias, at,
                         "values '" + x.declared_name + "' and '" + y.declared_name + "' of enum '" +
                             info[i].declared + "' both accept \"" + s1 + "\"");
                  reported = true;
                }
              }
            }
          }
        }
      } else if (auto* al = std::get_if<schema::alias_def>(&d.body)) {
        for_each_type_mut(al->target, [&](schema::type& t) {
          if (t.kind == kind::map && t.args.size() == 2 && !detail::valid_map_key(all, t.args[0]))
            report(schema_error_code::invalid_map_key, info[i].loc,
                   "map keys must be string, an enum or string literals, not " + schema::type_expression(t.args[0]));
        });
      }
    }
    // recursion and nesting depth (the structural checks of check_model; names and keys were
    // checked above with better locations)
    for (auto& p : detail::find_model_problems(all, options.limits.max_depth)) {
      if (p.code != schema_error_code::unescaped_recursion && p.code != schema_error_code::limit_exceeded) continue;
      location at = p.def < info.size() ? info[p.def].loc : location{};
      if (p.def < info.size() && !p.field.empty()) {
        if (const auto* o = all.defs[p.def].object()) {
          for (std::size_t f = 0; f < o->fields.size(); ++f)
            if (o->fields[f].name == p.field && f < info[p.def].member_locs.size()) at = info[p.def].member_locs[f];
        }
      }
      report(p.code, at, std::move(p.message));
    }
    // @@alias renames
    for (std::uint32_t i = 0; i < all.defs.size(); ++i) {
      if (info[i].rename.empty() || info[i].rename == info[i].declared) continue;
      auto it = set.by_name_.find(info[i].rename);
      if (it != set.by_name_.end() && it->second != i) {
        report(schema_error_code::conflicting_alias, info[i].rename_loc,
               "@@alias(\"" + info[i].rename + "\") of '" + info[i].declared + "' is the name of another type");
        continue;
      }
      all.defs[i].name = info[i].rename;
      set.by_name_.emplace(info[i].rename, i);
    }
    for_each_def_type(all, [&](schema::type& t) {
      if (t.kind == kind::ref && t.def != schema::no_def) t.name = all.defs[t.def].name;
    });
    // keyword constraints and enum rules
    for (auto& d : all.defs) {
      if (auto* o = std::get_if<schema::object_def>(&d.body)) {
        for (auto& f : o->fields) refine(set, f.type);
      } else if (auto* a = std::get_if<schema::alias_def>(&d.body)) {
        refine(set, a->target);
      }
    }
    std::stable_sort(result.issues.begin(), result.issues.end(), [](const schema_diagnostic& a, const schema_diagnostic& b) {
      return a.line != b.line ? a.line < b.line : a.column < b.column;
    });
    set.notes_ = result.notes;
    return result;
  }

  static bool model_for(const schema_set& set, std::string_view expr, schema::model& out, schema_diagnostics& errors) {
    const std::size_t before = errors.size();
    const std::string file = "type expression";
    auto report = [&](schema_error_code code, location loc, std::string message) {
      errors.push_back(diagnostic_at(code, file, loc, std::move(message)));
    };
    if (expr.size() > set.limits_.max_bytes) {
      report(schema_error_code::limit_exceeded, {}, "type expression is larger than the limit");
      return false;
    }
    const source_map map(expr);
    lexer lx(expr, map);
    token_stream toks(lx);
    schema::model scratch;
    std::vector<def_info> info;
    std::vector<std::vector<schema::constraint>> rules;
    schema_diagnostics notes;
    std::vector<stream_hint> hints;
    parse_state st;
    st.file = file;
    st.limits = set.limits_;
    st.all = &scratch;
    st.info = &info;
    st.enum_rules = &rules;
    st.errors = &errors;
    st.notes = &notes;
    st.hints = &hints;
    std::optional<schema::type> root = parse_type_expression(toks, map, st);
    if (toks.error) {
      errors.resize(before);
      report(schema_error_code::syntax_error, map.at(toks.error->offset), toks.error->message);
      return false;
    }
    if (!root || errors.size() != before) return false;
    for (const auto& r : st.refs) {
      if (set.by_name_.count(r.name) == 0) report(schema_error_code::unknown_type, r.loc, "unknown type '" + r.name + "'");
    }
    if (errors.size() != before) return false;
    link(set, *root);
    bool bad_key = false;
    for_each_type_mut(*root, [&](schema::type& t) {
      if (t.kind == kind::map && t.args.size() == 2 && !detail::valid_map_key(set.all_, t.args[0])) bad_key = true;
    });
    if (bad_key) {
      report(schema_error_code::invalid_map_key, {}, "map keys must be string, an enum or string literals");
      return false;
    }
    refine(set, *root);
    out = reachable_model(set.all_, *root);
    return true;
  }
};

schema_set schema_set::parse(std::string_view text, const schema_load_options& options) {
  schema_load_result r = try_parse(text, options);
  if (!r.ok()) throw schema_error(std::move(r.issues));
  return std::move(r.set);
}

schema_load_result schema_set::try_parse(std::string_view text, const schema_load_options& options) {
  return detail::schema_file_access::load(text, options);
}

schema_set schema_set::load(const std::filesystem::path& file, schema_load_options options) {
  schema_load_result r = try_load(file, std::move(options));
  if (!r.ok()) throw schema_error(std::move(r.issues));
  return std::move(r.set);
}

schema_load_result schema_set::try_load(const std::filesystem::path& file, schema_load_options options) {
  if (options.file.empty()) options.file = file.string();
  const detail::file_text f = detail::read_text_file(file, options.limits.max_bytes);
  if (f.error.empty()) return try_parse(f.text, options);
  schema_load_result result;
  schema_diagnostic d;
  d.code = f.too_large ? schema_error_code::limit_exceeded : schema_error_code::io_error;
  d.file = options.file;
  d.message = f.too_large ? "file " + f.error : "cannot read the file: " + f.error;
  result.issues.push_back(std::move(d));
  return result;
}

schema_set schema_set::from_model(schema::model m) {
  if (schema_diagnostics problems = check_model(m); !problems.empty()) throw schema_error(std::move(problems));
  schema_set set;
  set.all_.defs = std::move(m.defs);
  set.all_.root = schema::make_primitive(kind::any);
  for (std::uint32_t i = 0; i < set.all_.defs.size(); ++i) {
    set.declared_.push_back(set.all_.defs[i].name);
    set.by_name_.emplace(set.all_.defs[i].name, i);
  }
  set.enum_rules_.resize(set.all_.defs.size());
  return set;
}

std::vector<std::string> schema_set::names() const { return declared_; }

bool schema_set::contains(std::string_view name) const noexcept { return find(name) != nullptr; }

const schema::definition* schema_set::find(std::string_view name) const noexcept {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &all_.defs[it->second];
}

schema::model schema_set::model(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  if (it == by_name_.end()) {
    schema_diagnostic d;
    d.code = schema_error_code::unknown_type;
    d.message = "unknown type '" + std::string(name) + "'";
    throw schema_error({d});
  }
  schema::type root;
  root.kind = kind::ref;
  root.def = it->second;
  root.name = all_.defs[it->second].name;
  return reachable_model(all_, root);
}

schema::model schema_set::model_for(std::string_view type_expression) const {
  schema_model_result r = try_model_for(type_expression);
  if (!r.ok()) throw schema_error(std::move(r.issues));
  return std::move(*r.model);
}

schema_model_result schema_set::try_model_for(std::string_view type_expression) const {
  schema_model_result r;
  schema::model m;
  if (detail::schema_file_access::model_for(*this, type_expression, m, r.issues)) r.model = std::move(m);
  return r;
}

}  // namespace covenant
