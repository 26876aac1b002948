#include "covenant/types/prompt_format.hpp"
#include "number_text.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace covenant {

namespace {

using schema::constraint;
using schema::constraint_kind;
using schema::kind;

using detail::number_text;

std::string json_quoted(std::string_view s) { return boost::json::serialize(boost::json::string(s)); }

constraint bound(constraint_kind k, double v) {
  constraint c;
  c.kind = k;
  c.number = v;
  return c;
}

constraint count(constraint_kind k, std::size_t n) {
  constraint c;
  c.kind = k;
  c.count = n;
  return c;
}

/// Range of a C++ integer type worth telling a model about (unsigned, 8 and 16 bits).
void implicit_integer_range(const schema::type& t, std::optional<double>& lo, std::optional<double>& hi) {
  if (t.kind != kind::integer) return;
  if (t.is_unsigned) {
    lo = 0;
    if (t.int_bits == 8) hi = 255;
    else if (t.int_bits == 16) hi = 65535;
  } else if (t.int_bits == 8) {
    lo = -128;
    hi = 127;
  } else if (t.int_bits == 16) {
    lo = -32768;
    hi = 32767;
  }
}

struct numeric_bound {
  double value = 0;
  bool exclusive = false;
};

/// Keeps the tighter of two lower (`lower` = true) or upper bounds.
void tighten(std::optional<numeric_bound>& b, numeric_bound c, bool lower) {
  if (!b) {
    b = c;
    return;
  }
  const bool tighter = lower ? (c.value > b->value || (c.value == b->value && c.exclusive && !b->exclusive))
                             : (c.value < b->value || (c.value == b->value && c.exclusive && !b->exclusive));
  if (tighter) b = c;
}

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string ends_sentence(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\t')) s.pop_back();
  if (!s.empty() && s.back() != '.' && s.back() != '!' && s.back() != '?') s.push_back('.');
  return s;
}

}  // namespace

std::vector<constraint> effective_constraints(const schema::type& t) {
  std::optional<numeric_bound> lower;
  std::optional<numeric_bound> upper;
  std::optional<std::size_t> min_len, max_len, min_items, max_items;
  std::vector<constraint> rest;
  for (const auto& c : t.constraints) {
    switch (c.kind) {
      case constraint_kind::minimum: tighten(lower, {c.number, false}, true); break;
      case constraint_kind::exclusive_minimum: tighten(lower, {c.number, true}, true); break;
      case constraint_kind::maximum: tighten(upper, {c.number, false}, false); break;
      case constraint_kind::exclusive_maximum: tighten(upper, {c.number, true}, false); break;
      case constraint_kind::min_length: min_len = min_len ? std::max(*min_len, c.count) : c.count; break;
      case constraint_kind::max_length: max_len = max_len ? std::min(*max_len, c.count) : c.count; break;
      case constraint_kind::min_items: min_items = min_items ? std::max(*min_items, c.count) : c.count; break;
      case constraint_kind::max_items: max_items = max_items ? std::min(*max_items, c.count) : c.count; break;
      default: rest.push_back(c); break;
    }
  }
  std::optional<double> type_lo, type_hi;
  implicit_integer_range(t, type_lo, type_hi);
  if (type_lo) tighten(lower, {*type_lo, false}, true);
  if (type_hi) tighten(upper, {*type_hi, false}, false);

  std::vector<constraint> out;
  if (lower) out.push_back(bound(lower->exclusive ? constraint_kind::exclusive_minimum : constraint_kind::minimum, lower->value));
  if (upper) out.push_back(bound(upper->exclusive ? constraint_kind::exclusive_maximum : constraint_kind::maximum, upper->value));
  if (min_len) out.push_back(count(constraint_kind::min_length, *min_len));
  if (max_len) out.push_back(count(constraint_kind::max_length, *max_len));
  if (min_items) out.push_back(count(constraint_kind::min_items, *min_items));
  if (max_items) out.push_back(count(constraint_kind::max_items, *max_items));
  // The bounds kept carry the on-fail action of the constraint they came from.
  for (auto& c : out) {
    for (const auto& from : t.constraints) {
      if (from.kind == c.kind && from.number == c.number && from.count == c.count) {
        c.on_fail = from.on_fail;
        break;
      }
    }
  }
  for (auto& c : rest) out.push_back(std::move(c));
  return out;
}

std::string constraint_clause(const std::vector<constraint>& cs, kind k) {
  const constraint* lower = nullptr;
  const constraint* upper = nullptr;
  const constraint* min_len = nullptr;
  const constraint* max_len = nullptr;
  const constraint* min_items = nullptr;
  const constraint* max_items = nullptr;
  std::vector<const constraint*> rest;
  // The first constraint of each bound kind is merged below; any further one is listed as is.
  auto take = [&rest](const constraint*& slot, const constraint& c) {
    if (slot == nullptr) slot = &c;
    else rest.push_back(&c);
  };
  for (const auto& c : cs) {
    switch (c.kind) {
      case constraint_kind::minimum:
      case constraint_kind::exclusive_minimum: take(lower, c); break;
      case constraint_kind::maximum:
      case constraint_kind::exclusive_maximum: take(upper, c); break;
      case constraint_kind::min_length: take(min_len, c); break;
      case constraint_kind::max_length: take(max_len, c); break;
      case constraint_kind::min_items: take(min_items, c); break;
      case constraint_kind::max_items: take(max_items, c); break;
      default: rest.push_back(&c); break;
    }
  }

  std::vector<std::string> phrases;
  // Numeric bounds.
  if (lower && upper && lower->kind == constraint_kind::minimum && upper->kind == constraint_kind::maximum) {
    phrases.push_back(lower->number == upper->number ? "exactly " + number_text(lower->number)
                                                     : "between " + number_text(lower->number) + " and " +
                                                           number_text(upper->number));
  } else if (lower && upper) {
    phrases.push_back(schema::describe(*lower) + " and " + schema::describe(*upper));
  } else if (lower) {
    phrases.push_back(schema::describe(*lower));
  } else if (upper) {
    phrases.push_back(schema::describe(*upper));
  }
  // String lengths.
  if (min_len && min_len->count == 0) min_len = nullptr;
  if (min_len && max_len) {
    const std::size_t lo = min_len->count;
    const std::size_t hi = max_len->count;
    if (lo == hi) phrases.push_back("exactly " + plural(hi, "character", "characters"));
    else if (lo == 1) phrases.push_back("non-empty, " + schema::describe(*max_len));
    else phrases.push_back(std::to_string(lo) + " to " + plural(hi, "character", "characters"));
  } else if (min_len) {
    phrases.push_back(schema::describe(*min_len));
  } else if (max_len) {
    phrases.push_back(schema::describe(*max_len));
  }
  // Item counts (entries for maps).
  if (min_items && min_items->count == 0) min_items = nullptr;
  const bool is_map = k == kind::map;
  const std::string_view one = is_map ? "entry" : "item";
  const std::string_view many = is_map ? "entries" : "items";
  if (min_items && max_items) {
    const std::size_t lo = min_items->count;
    const std::size_t hi = max_items->count;
    if (lo == hi) phrases.push_back("exactly " + plural(hi, one, many));
    else phrases.push_back(std::to_string(lo) + " to " + plural(hi, one, many));
  } else if (min_items) {
    phrases.push_back(is_map ? "at least " + plural(min_items->count, one, many) : schema::describe(*min_items));
  } else if (max_items) {
    phrases.push_back(is_map ? "at most " + plural(max_items->count, one, many) : schema::describe(*max_items));
  }
  for (const constraint* c : rest) {
    std::string p = schema::describe(*c);
    if (!p.empty()) phrases.push_back(std::move(p));
  }

  std::string out;
  for (auto& p : phrases) {
    if (!out.empty()) out += ", ";
    out += p;
  }
  return out;
}

std::string constraint_clause(const schema::type& t) {
  std::vector<std::string> parts;
  if (std::string own = constraint_clause(effective_constraints(t), t.kind); !own.empty()) parts.push_back(std::move(own));
  if (t.kind == kind::array && !t.args.empty()) {
    if (std::string item = constraint_clause(t.args[0]); !item.empty()) parts.push_back("each item " + item);
  } else if (t.kind == kind::map && t.args.size() == 2) {
    if (std::string key = constraint_clause(t.args[0]); !key.empty()) parts.push_back("each key " + key);
    if (std::string value = constraint_clause(t.args[1]); !value.empty()) parts.push_back("each value " + value);
  } else if (t.kind == kind::union_) {
    for (const auto& alt : t.args)
      if (std::string a = constraint_clause(alt); !a.empty()) parts.push_back("as " + schema::type_expression(alt) + ": " + a);
  }
  std::string out;
  for (auto& p : parts) {
    if (!out.empty()) out += "; ";
    out += p;
  }
  return out;
}

namespace detail {

std::string sentence(std::string clause) {
  if (clause.empty()) return clause;
  if (clause.front() >= 'a' && clause.front() <= 'z') clause.front() = static_cast<char>(clause.front() - 'a' + 'A');
  return ends_sentence(std::move(clause));
}

std::string join_sentences(std::string a, const std::string& b) {
  a = ends_sentence(std::move(a));
  if (b.empty()) return a;
  if (a.empty()) return ends_sentence(b);
  a.push_back(' ');
  a += ends_sentence(b);
  return a;
}

std::string enum_value_notes(const schema::enum_def& e) {
  std::string out;
  for (const auto& v : e.values) {
    if (v.skip || v.description.empty()) continue;
    std::string d = v.description;
    while (!d.empty() && (d.back() == '.' || d.back() == ' ')) d.pop_back();
    if (!out.empty()) out += "; ";
    out += json_quoted(v.name) + ": " + d;
  }
  return out;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Prompt text
// ---------------------------------------------------------------------------------------------

namespace {

/// Calls f(index) for every definition `t` refers to directly.
template <class F>
void for_each_ref(const schema::model& s, const schema::type& t, F&& f) {
  if (t.kind == kind::ref) {
    if (const schema::definition* d = s.resolve(t)) f(static_cast<std::size_t>(d - s.defs.data()));
  }
  for (const auto& a : t.args) for_each_ref(s, a, f);
}

template <class F>
void for_each_ref(const schema::model& s, const schema::definition& d, F&& f) {
  if (const auto* o = d.object()) {
    for (const auto& fld : o->fields)
      if (!fld.skip) for_each_ref(s, fld.type, f);
  } else if (const auto* a = d.alias()) {
    for_each_ref(s, a->target, f);
  }
}

/// Definitions that can reach themselves through references.
std::vector<bool> recursive_defs(const schema::model& s) {
  const std::size_t n = s.defs.size();
  std::vector<bool> out(n, false);
  for (std::size_t start = 0; start < n; ++start) {
    std::vector<bool> seen(n, false);
    std::vector<std::size_t> stack;
    for_each_ref(s, s.defs[start], [&](std::size_t i) { stack.push_back(i); });
    while (!stack.empty() && !out[start]) {
      const std::size_t i = stack.back();
      stack.pop_back();
      if (i == start) out[start] = true;
      if (seen[i]) continue;
      seen[i] = true;
      for_each_ref(s, s.defs[i], [&](std::size_t j) { stack.push_back(j); });
    }
  }
  return out;
}

bool multi_line(const std::string& s) { return s.find('\n') != std::string::npos; }

bool type_has_metadata(const schema::type& t) {
  if (!t.constraints.empty()) return true;
  for (const schema::type& a : t.args)
    if (type_has_metadata(a)) return true;
  return false;
}

class prompt_renderer {
 public:
  prompt_renderer(const schema::model& s, const prompt_options& o) : s_(s), o_(o), recursive_(recursive_defs(s)) {
    queued_.assign(s.defs.size(), false);
  }

  std::string render() {
    std::string out;
    const schema::type& root = s_.root;
    const schema::definition* root_def = s_.resolve(root);
    if (o_.header) {
      std::string_view what = "value";
      if (is_object(root)) what = "object";
      else if (is_array(root)) what = "array";
      out += "Answer with a JSON ";
      out += what;
      out += " in this schema:\n";
    }
    if (root_def != nullptr && !root.nullable) {
      const auto idx = static_cast<std::size_t>(root_def - s_.defs.data());
      root_index_ = idx;
      queued_[idx] = true;
      out += named_block(*root_def, /*print_name=*/recursive_[idx]);
    } else {
      if (root_def != nullptr && !root_def->description.empty()) comment_lines(out, 0, root_def->description);
      if (std::string c = constraint_clause(root); !c.empty()) comment_lines(out, 0, detail::sentence(c));
      out += type_text(root, 0);
    }
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      out += "\n\n";
      out += named_block(s_.defs[pending_[i]], true);
    }
    return out;
  }

 private:
  /// A definition printed on its own: leading description comment, then `Name {...}` (object),
  /// `Name = ...` (alias) or the enum values.
  std::string named_block(const schema::definition& d, bool print_name) {
    std::string out;
    if (!d.description.empty()) comment_lines(out, 0, d.description);
    if (const auto* obj = d.object()) {
      if (print_name) out += d.name + " ";
      out += object_body(*obj, 0);
    } else if (const auto* e = d.enumeration()) {
      if (std::string notes = detail::enum_value_notes(*e); !notes.empty())
        comment_lines(out, 0, detail::sentence(notes));
      if (print_name) out += d.name + " = ";
      out += enum_text(*e);
    } else if (const auto* a = d.alias()) {
      if (std::string c = constraint_clause(a->target); !c.empty()) comment_lines(out, 0, detail::sentence(c));
      if (print_name) out += d.name + " = ";
      out += type_text(a->target, 0);
    }
    return out;
  }

  bool is_object(const schema::type& t) const {
    if (t.nullable) return false;
    const schema::definition* d = s_.resolve(t);
    if (d == nullptr) return false;
    if (d->object() != nullptr) return true;
    if (const auto* a = d->alias()) return is_object(a->target);
    return false;
  }

  bool is_array(const schema::type& t) const {
    if (t.nullable) return false;
    if (t.kind == kind::array) return true;
    const schema::definition* d = s_.resolve(t);
    if (d != nullptr)
      if (const auto* a = d->alias()) return is_array(a->target);
    return false;
  }

  std::string indent(std::size_t level) const { return std::string(level * o_.indent, ' '); }

  void comment_lines(std::string& out, std::size_t level, std::string_view text) const {
    std::size_t pos = 0;
    while (pos <= text.size()) {
      std::size_t nl = text.find('\n', pos);
      if (nl == std::string_view::npos) nl = text.size();
      std::string_view line = text.substr(pos, nl - pos);
      while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
      if (!line.empty()) {
        out += indent(level);
        out += "// ";
        out += line;
        out.push_back('\n');
      }
      pos = nl + 1;
    }
  }

  static std::string enum_text(const schema::enum_def& e) {
    std::string out;
    for (const auto& v : e.values) {
      if (v.skip) continue;
      if (!out.empty()) out += " | ";
      out += json_quoted(v.name);
    }
    return out.empty() ? std::string("never") : out;
  }

  /// The enum a field's type names, directly or as its items.
  const schema::enum_def* enum_of(const schema::type& t) const {
    if (const schema::definition* d = s_.resolve(t)) {
      if (const auto* e = d->enumeration()) return e;
      if (const auto* a = d->alias()) return enum_of(a->target);
    }
    if (t.kind == kind::array && !t.args.empty()) return enum_of(t.args[0]);
    return nullptr;
  }

  /// Description of the definition a field's type names (used when the field has none).
  const schema::definition* described_def(const schema::type& t) const {
    const schema::definition* d = s_.resolve(t);
    if (d == nullptr && t.kind == kind::array && !t.args.empty()) return described_def(t.args[0]);
    return d;
  }

  std::string field_comment(const schema::field& f) const {
    std::string text = f.description;
    if (text.empty()) {
      const schema::definition* d = described_def(f.type);
      // Recursive definitions print their description where they are defined.
      if (d != nullptr && !recursive_[static_cast<std::size_t>(d - s_.defs.data())]) text = d->description;
    }
    if (std::string c = constraint_clause(f.type); !c.empty()) text = detail::join_sentences(text, detail::sentence(c));
    if (const schema::enum_def* e = enum_of(f.type)) {
      if (std::string notes = detail::enum_value_notes(*e); !notes.empty()) text = detail::join_sentences(text, notes);
    }
    if (!f.required) {
      std::string opt = f.default_value ? "Optional (default: " + boost::json::serialize(*f.default_value) + ")."
                                        : std::string("Optional.");
      text = detail::join_sentences(text, opt);
    }
    return text;
  }

  std::string object_body(const schema::object_def& obj, std::size_t level) {
    std::string out = "{\n";
    std::vector<const schema::field*> shown;
    for (const auto& f : obj.fields)
      if (!f.skip) shown.push_back(&f);
    for (std::size_t i = 0; i < shown.size(); ++i) {
      const schema::field& f = *shown[i];
      comment_lines(out, level + 1, field_comment(f));
      out += indent(level + 1);
      out += json_quoted(f.key);
      out += ": ";
      out += type_text(f.type, level + 1);
      if (i + 1 < shown.size()) out.push_back(',');
      out.push_back('\n');
    }
    for (const auto& inv : obj.invariants) {
      if (inv.description.empty()) continue;
      comment_lines(out, level + 1, "Rule: " + inv.description);
    }
    out += indent(level);
    out += "}";
    return out;
  }

  std::string ref_text(const schema::type& t, std::size_t level) {
    const schema::definition* d = s_.resolve(t);
    if (d == nullptr) return t.name;
    const auto idx = static_cast<std::size_t>(d - s_.defs.data());
    if (recursive_[idx] || idx == root_index_) {
      if (!queued_[idx]) {
        queued_[idx] = true;
        pending_.push_back(idx);
      }
      return d->name;
    }
    if (const auto* obj = d->object()) return object_body(*obj, level);
    if (const auto* e = d->enumeration()) return enum_text(*e);
    if (const auto* a = d->alias()) return type_text(a->target, level);
    return d->name;
  }

  std::string type_text(const schema::type& t, std::size_t level) {
    std::string out;
    switch (t.kind) {
      case kind::any: out = "any"; break;
      case kind::null: out = "null"; break;
      case kind::boolean: out = "bool"; break;
      case kind::integer: out = "int"; break;
      case kind::number: out = "float"; break;
      case kind::string: out = "string"; break;
      case kind::literal: out = boost::json::serialize(t.literal); break;
      case kind::ref: out = ref_text(t, level); break;
      case kind::array: {
        if (t.args.empty()) {
          out = "any[]";
          break;
        }
        std::string item = type_text(t.args[0], level + 1);
        if (multi_line(item)) {
          out = "[\n" + indent(level + 1) + item + "\n" + indent(level) + "]";
        } else if (item.find(' ') != std::string::npos) {
          out = "(" + item + ")[]";
        } else {
          out = item + "[]";
        }
        break;
      }
      case kind::map: {
        if (t.args.size() != 2) {
          out = "map<string, any>";
          break;
        }
        out = "map<" + type_text(t.args[0], level) + ", " + type_text(t.args[1], level) + ">";
        break;
      }
      case kind::union_: {
        for (std::size_t i = 0; i < t.args.size(); ++i) {
          if (i) out += " | ";
          out += type_text(t.args[i], level);
        }
        break;
      }
    }
    if (t.nullable && t.kind != kind::null && t.kind != kind::any) out += " or null";
    return out;
  }

  const schema::model& s_;
  const prompt_options& o_;
  std::vector<bool> recursive_;
  std::vector<bool> queued_;
  std::vector<std::size_t> pending_;
  std::size_t root_index_ = static_cast<std::size_t>(-1);
};

}  // namespace

std::string prompt_text(const schema::model& s, const prompt_options& options) {
  return prompt_renderer(s, options).render();
}

bool has_prompt_metadata(const schema::model& s) {
  if (type_has_metadata(s.root)) return true;
  for (const schema::definition& d : s.defs) {
    if (!d.description.empty()) return true;
    if (const schema::object_def* o = d.object()) {
      if (!o->invariants.empty()) return true;
      for (const schema::field& f : o->fields)
        if (!f.description.empty() || type_has_metadata(f.type)) return true;
    } else if (const schema::enum_def* e = d.enumeration()) {
      for (const schema::enum_value& v : e->values)
        if (!v.description.empty()) return true;
    } else if (const schema::alias_def* a = d.alias()) {
      if (type_has_metadata(a->target)) return true;
    }
  }
  return false;
}

}  // namespace covenant
