// JSON Schema documents into the schema model (the inverse of json_schema.cpp's exporter).
#include "covenant/runtime/json_schema_import.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "covenant/read/detail/json_reader.hpp"
#include "schema_checks.hpp"

namespace covenant {

namespace {

namespace json = boost::json;
using schema::constraint;
using schema::constraint_kind;
using schema::kind;

struct stop_import {};

std::string escape_pointer_token(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out.push_back(c);
  }
  return out;
}

std::string unescape_pointer_token(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '~' && i + 1 < s.size() && (s[i + 1] == '0' || s[i + 1] == '1')) {
      out.push_back(s[i + 1] == '0' ? '~' : '/');
      ++i;
    } else if (c == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
               std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool is_primitive_name(std::string_view n) { return n == "string" || n == "integer" || n == "number" || n == "boolean"; }

// Keywords that change what is valid but have no place in the model.
bool unsupported_keyword(std::string_view k) {
  static constexpr std::string_view list[] = {
      "not",          "if",       "then",        "else",          "dependentSchemas",      "dependentRequired",
      "patternProperties", "prefixItems", "contains", "minContains", "maxContains", "unevaluatedProperties",
      "unevaluatedItems",  "$dynamicRef", "$recursiveRef", "additionalItems", "dependencies"};
  for (auto x : list)
    if (x == k) return true;
  return false;
}

class importer {
 public:
  importer(const json::value& doc, const json_schema_import_options& o) : doc_(doc), o_(o) {}

  json_schema_import_result run() {
    json_schema_import_result result;
    try {
      import_document();
    } catch (const stop_import&) {
    }
    if (errors_.empty()) {
      for (auto& p : detail::find_model_problems(m_, o_.limits.max_depth)) {
        schema_diagnostic d;
        d.code = p.code;
        d.file = o_.file;
        d.pointer = p.def < pointers_.size() ? pointers_[p.def] : std::string();
        if (d.pointer.empty() && p.def != schema::no_def) d.pointer = "/";
        d.message = std::move(p.message);
        errors_.push_back(std::move(d));
      }
    }
    result.issues = std::move(errors_);
    if (result.issues.empty()) result.model = reachable_model(m_, m_.root);
    return result;
  }

 private:
  // ---- diagnostics ----
  void error(schema_error_code code, const std::string& pointer, std::string message) {
    schema_diagnostic d;
    d.code = code;
    d.file = o_.file;
    d.pointer = pointer.empty() ? "/" : pointer;
    d.message = std::move(message);
    errors_.push_back(std::move(d));
    if (errors_.size() >= o_.limits.max_errors) {
      schema_diagnostic stop;
      stop.code = schema_error_code::limit_exceeded;
      stop.file = o_.file;
      stop.pointer = pointer.empty() ? "/" : pointer;
      stop.message = "too many problems; stopped after " + std::to_string(o_.limits.max_errors);
      errors_.push_back(std::move(stop));
      throw stop_import{};
    }
  }

  [[noreturn]] void limit(const std::string& pointer, std::string message) {
    schema_diagnostic d;
    d.code = schema_error_code::limit_exceeded;
    d.file = o_.file;
    d.pointer = pointer.empty() ? "/" : pointer;
    d.message = std::move(message);
    errors_.push_back(std::move(d));
    throw stop_import{};
  }

  // ---- definitions ----
  std::uint32_t new_def(std::string name, const std::string& pointer) {
    if (m_.defs.size() >= o_.limits.max_types)
      limit(pointer, "more than " + std::to_string(o_.limits.max_types) + " types");
    const std::string base = name;
    for (int n = 2; m_.find(name) != nullptr; ++n) name = base + "_" + std::to_string(n);
    schema::definition d;
    d.name = std::move(name);
    d.where.file = o_.file;
    m_.defs.push_back(std::move(d));
    pointers_.push_back(pointer);
    return static_cast<std::uint32_t>(m_.defs.size() - 1);
  }

  static schema::type ref_to(const schema::model& m, std::uint32_t idx) {
    schema::type t = schema::make_ref(m.defs[idx].name);
    t.def = idx;
    return t;
  }

  static const json::object* as_object(const json::value& v) { return v.if_object(); }

  static bool has_properties(const json::object& o) { return o.contains("properties"); }

  static bool is_string_enum(const json::object& o) {
    const auto* t = o.if_contains("type");
    const auto* e = o.if_contains("enum");
    if (t == nullptr || e == nullptr || !t->is_string() || t->get_string() != "string" || !e->is_array()) return false;
    if (e->get_array().empty()) return false;
    for (const auto& v : e->get_array())
      if (!v.is_string()) return false;
    return true;
  }

  static std::string description_of(const json::object& o) {
    if (const auto* d = o.if_contains("description"); d != nullptr && d->is_string()) return std::string(d->get_string());
    return {};
  }

  void import_document() {
    if (doc_.is_bool()) {
      if (!doc_.get_bool()) error(schema_error_code::unsupported, "", "the schema `false` accepts nothing");
      m_.root = schema::make_primitive(kind::any);
      return;
    }
    const json::object* root = as_object(doc_);
    if (root == nullptr) {
      error(schema_error_code::invalid_json_schema, "", "a JSON Schema document must be an object");
      return;
    }
    // Register every $defs / definitions entry first, so references can point anywhere.
    for (const char* container : {"$defs", "definitions"}) {
      const auto* defs = root->if_contains(container);
      if (defs == nullptr) continue;
      const std::string base = std::string("/") + container;
      if (!defs->is_object()) {
        error(schema_error_code::invalid_json_schema, base, std::string(container) + " must be an object");
        continue;
      }
      for (const auto& kv : defs->get_object()) {
        const std::string ptr = base + "/" + escape_pointer_token(kv.key());
        const std::uint32_t idx = new_def(std::string(kv.key()), ptr);
        by_pointer_["#" + ptr] = idx;
        pending_.push_back({idx, &kv.value(), ptr});
      }
    }
    std::string title;
    if (const auto* t = root->if_contains("title"); t != nullptr && t->is_string()) title = std::string(t->get_string());
    // The root is a named definition when it is an object, or when its title is not the type
    // expression of its type (the exporter titles a root definition by its name, any other root
    // by its type expression).
    if (has_properties(*root)) {
      const std::uint32_t idx = new_def(title.empty() ? o_.root_name : title, "");
      by_pointer_["#"] = idx;
      m_.root = ref_to(m_, idx);
      fill_def(idx, doc_, "", 0);
    } else if (!title.empty()) {
      const std::uint32_t idx = new_def(title, "");
      by_pointer_["#"] = idx;
      if (is_string_enum(*root) && title != "string") {
        fill_def(idx, doc_, "", 0);
        m_.root = ref_to(m_, idx);
      } else {
        schema::type t = import_type(doc_, "", 0, title);
        if (!root_referenced_ && title == schema::type_expression(t)) {
          m_.root = std::move(t);  // the definition stays unused
        } else {
          m_.defs[idx].description = description_of(*root);
          m_.defs[idx].body = schema::alias_def{std::move(t)};
          m_.root = ref_to(m_, idx);
        }
      }
    } else {
      m_.root = import_type(doc_, "", 0, o_.root_name);
    }
    for (std::size_t i = 0; i < pending_.size(); ++i) fill_def(pending_[i].idx, *pending_[i].json, pending_[i].pointer, 1);
  }

  // The body of a named definition: an object, an enum or an alias.
  void fill_def(std::uint32_t idx, const json::value& v, const std::string& ptr, std::size_t depth) {
    const json::object* o = as_object(v);
    if (o != nullptr) m_.defs[idx].description = description_of(*o);
    if (o != nullptr && has_properties(*o)) {
      schema::object_def body = object_body(*o, ptr, m_.defs[idx].name, depth);
      m_.defs[idx].body = std::move(body);
    } else if (o != nullptr && is_string_enum(*o) && !o->contains("const")) {
      schema::enum_def e;
      for (const auto& x : o->at("enum").get_array()) {
        count_member(ptr);
        schema::enum_value ev;
        ev.name = std::string(x.get_string());
        ev.declared_name = ev.name;
        ev.number = static_cast<std::int64_t>(e.values.size());
        e.values.push_back(std::move(ev));
      }
      m_.defs[idx].body = std::move(e);
    } else {
      schema::alias_def a;
      a.target = import_type(v, ptr, depth, m_.defs[idx].name);
      m_.defs[idx].body = std::move(a);
    }
  }

  void count_member(const std::string& ptr) {
    if (++members_ > o_.limits.max_fields)
      limit(ptr, "more than " + std::to_string(o_.limits.max_fields) + " properties and enum values");
  }

  schema::object_def object_body(const json::object& o, const std::string& ptr, const std::string& name,
                                 std::size_t depth) {
    schema::object_def body;
    const json::value& props = o.at("properties");
    if (!props.is_object()) {
      error(schema_error_code::invalid_json_schema, ptr + "/properties", "properties must be an object");
      return body;
    }
    std::vector<std::string> required;
    if (const auto* r = o.if_contains("required")) {
      if (!r->is_array()) {
        error(schema_error_code::invalid_json_schema, ptr + "/required", "required must be an array of names");
      } else {
        for (std::size_t i = 0; i < r->get_array().size(); ++i) {
          const auto& n = r->get_array()[i];
          if (!n.is_string()) {
            error(schema_error_code::invalid_json_schema, ptr + "/required/" + std::to_string(i), "must be a property name");
            continue;
          }
          if (!props.get_object().contains(n.get_string()))
            error(schema_error_code::invalid_json_schema, ptr + "/required/" + std::to_string(i),
                  "required property '" + std::string(n.get_string()) + "' is not declared in properties");
          required.emplace_back(n.get_string());
        }
      }
    }
    if (const auto* ap = o.if_contains("additionalProperties"); ap != nullptr && !ap->is_bool())
      error(schema_error_code::unsupported, ptr + "/additionalProperties",
            "an object with both properties and an additionalProperties schema is not supported");
    for (const char* k : {"minProperties", "maxProperties", "propertyNames"})
      if (o.contains(k))
        error(schema_error_code::unsupported, ptr + "/" + k, std::string(k) + " on an object with properties is not supported");
    for (const auto& kv : props.get_object()) {
      const std::string fptr = ptr + "/properties/" + escape_pointer_token(kv.key());
      count_member(fptr);
      schema::field f;
      f.name = std::string(kv.key());
      f.key = f.name;
      if (const auto* fo = kv.value().if_object()) {
        f.description = description_of(*fo);
        if (const auto* d = fo->if_contains("default")) f.default_value = *d;
      }
      f.type = import_type(kv.value(), fptr, depth + 1, name + "_" + f.name);
      f.required = false;
      for (const auto& r : required) f.required = f.required || r == f.name;
      body.fields.push_back(std::move(f));
    }
    return body;
  }

  // ---- types ----
  schema::type import_type(const json::value& v, const std::string& ptr, std::size_t depth, const std::string& hint) {
    if (depth > o_.limits.max_depth)
      limit(ptr, "schema nested more than " + std::to_string(o_.limits.max_depth) + " levels deep");
    if (v.is_bool()) {
      if (!v.get_bool()) error(schema_error_code::unsupported, ptr, "the schema `false` accepts nothing");
      return schema::make_primitive(kind::any);
    }
    const json::object* op = as_object(v);
    if (op == nullptr) {
      error(schema_error_code::invalid_json_schema, ptr, "a schema must be an object or a boolean");
      return schema::make_primitive(kind::any);
    }
    const json::object& o = *op;
    for (const auto& kv : o) {
      if (unsupported_keyword(kv.key()))
        error(schema_error_code::unsupported, ptr + "/" + escape_pointer_token(kv.key()),
              "keyword '" + std::string(kv.key()) + "' is not supported");
    }
    schema::type t = import_shape(o, ptr, depth, hint);
    if (const auto* n = o.if_contains("nullable"); n != nullptr && n->is_bool() && n->get_bool() && t.kind != kind::any &&
                                                    t.kind != kind::null)
      t.nullable = true;
    return t;
  }

  schema::type import_shape(const json::object& o, const std::string& ptr, std::size_t depth, const std::string& hint) {
    if (const auto* r = o.if_contains("$ref")) return reference(*r, ptr + "/$ref");
    if (const auto* a = o.if_contains("allOf")) {
      if (!a->is_array() || a->get_array().size() != 1) {
        error(schema_error_code::unsupported, ptr + "/allOf", "allOf is supported with exactly one subschema");
        return schema::make_primitive(kind::any);
      }
      return import_type(a->get_array()[0], ptr + "/allOf/0", depth + 1, hint);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (const auto* a = o.if_contains(key)) return alternatives(*a, ptr + "/" + key, depth, hint);
    }
    if (const auto* c = o.if_contains("const")) {
      schema::type t;
      t.kind = kind::literal;
      t.literal = *c;
      return t;
    }
    // The type names: explicit, or implied by the keywords present.
    std::vector<std::string> names;
    bool nullable = false;
    if (const auto* ty = o.if_contains("type")) {
      auto add = [&](const json::value& n, const std::string& at) {
        if (!n.is_string()) {
          error(schema_error_code::invalid_json_schema, at, "type names are strings");
          return;
        }
        const std::string s(n.get_string());
        if (s == "null") nullable = true;
        else if (is_primitive_name(s) || s == "array" || s == "object") names.push_back(s);
        else error(schema_error_code::invalid_json_schema, at, "unknown type '" + s + "'");
      };
      if (ty->is_array()) {
        for (std::size_t i = 0; i < ty->get_array().size(); ++i) add(ty->get_array()[i], ptr + "/type/" + std::to_string(i));
      } else {
        add(*ty, ptr + "/type");
      }
      if (names.empty() && nullable) return schema::make_primitive(kind::null);
    } else if (o.contains("properties") || o.contains("additionalProperties")) {
      names.push_back("object");
    } else if (o.contains("items")) {
      names.push_back("array");
    } else if (const auto* e = o.if_contains("enum")) {
      return literal_union(*e, ptr + "/enum");
    } else {
      return schema::make_primitive(kind::any);
    }
    if (names.size() == 1) {
      schema::type t = single(names[0], o, ptr, depth, hint);
      if (nullable) t.nullable = true;
      return t;
    }
    schema::type u;
    u.kind = kind::union_;
    for (const auto& n : names) u.args.push_back(single(n, o, ptr, depth, hint));
    u.nullable = nullable;
    return u;
  }

  schema::type reference(const json::value& r, const std::string& ptr) {
    if (!r.is_string()) {
      error(schema_error_code::invalid_json_schema, ptr, "$ref must be a string");
      return schema::make_primitive(kind::any);
    }
    const std::string target(r.get_string());
    std::string key = target;
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      const std::string p(prefix);
      if (target.rfind(p, 0) == 0) key = p + escape_pointer_token(unescape_pointer_token(target.substr(p.size())));
    }
    auto it = by_pointer_.find(key);
    if (key == "#" && it != by_pointer_.end()) root_referenced_ = true;
    if (it == by_pointer_.end()) {
      if (target == "#") {
        error(schema_error_code::unsupported, ptr, "$ref \"#\" needs a root object");
      } else if (target.rfind("#/$defs/", 0) == 0 || target.rfind("#/definitions/", 0) == 0) {
        error(schema_error_code::unknown_type, ptr, "$ref \"" + target + "\" names no definition");
      } else {
        error(schema_error_code::unsupported, ptr,
              "$ref \"" + target + "\" is not supported (only \"#\", \"#/$defs/Name\" and \"#/definitions/Name\")");
      }
      return schema::make_primitive(kind::any);
    }
    return ref_to(m_, it->second);
  }

  static bool is_null_schema(const json::value& v) {
    const auto* o = v.if_object();
    if (o == nullptr) return false;
    const auto* t = o->if_contains("type");
    return t != nullptr && t->is_string() && t->get_string() == "null" && o->size() == 1;
  }

  static bool primitive_typed(const json::value& v) {
    const auto* o = v.if_object();
    if (o == nullptr) return false;
    const auto* t = o->if_contains("type");
    return t != nullptr && t->is_string() && is_primitive_name(t->get_string());
  }

  schema::type alternatives(const json::value& a, const std::string& ptr, std::size_t depth, const std::string& hint) {
    if (!a.is_array() || a.get_array().empty()) {
      error(schema_error_code::invalid_json_schema, ptr, "must be a non-empty array of schemas");
      return schema::make_primitive(kind::any);
    }
    const auto& arr = a.get_array();
    std::vector<schema::type> alts;
    for (std::size_t i = 0; i < arr.size(); ++i)
      alts.push_back(import_type(arr[i], ptr + "/" + std::to_string(i), depth + 1, hint));
    if (alts.size() == 1) return std::move(alts.front());
    // The exporter's nullable forms: [X, {"type": "null"}] for refs, lists, maps and literals, and
    // a trailing null after two or more alternatives of a nullable union.
    if (is_null_schema(arr.back())) {
      if (alts.size() == 2 && !primitive_typed(arr.front())) {
        schema::type t = std::move(alts.front());
        if (t.kind != kind::any) t.nullable = true;
        return t;
      }
      if (alts.size() >= 3) {
        alts.pop_back();
        schema::type u;
        u.kind = kind::union_;
        u.args = std::move(alts);
        u.nullable = true;
        return u;
      }
    }
    schema::type u;
    u.kind = kind::union_;
    u.args = std::move(alts);
    return u;
  }

  schema::type literal_union(const json::value& e, const std::string& ptr) {
    if (!e.is_array() || e.get_array().empty()) {
      error(schema_error_code::invalid_json_schema, ptr, "enum must be a non-empty array");
      return schema::make_primitive(kind::any);
    }
    std::vector<schema::type> alts;
    bool nullable = false;
    for (const auto& v : e.get_array()) {
      if (v.is_null()) {
        nullable = true;
        continue;
      }
      schema::type t;
      t.kind = kind::literal;
      t.literal = v;
      alts.push_back(std::move(t));
    }
    if (alts.empty()) return schema::make_primitive(kind::null);
    if (alts.size() == 1) {
      alts.front().nullable = nullable;
      return std::move(alts.front());
    }
    schema::type u;
    u.kind = kind::union_;
    u.args = std::move(alts);
    u.nullable = nullable;
    return u;
  }

  // ---- one named type with its constraint keywords ----
  bool number_of(const json::object& o, std::string_view key, const std::string& ptr, double& out) {
    const auto* v = o.if_contains(key);
    if (v == nullptr) return false;
    if (v->is_int64()) out = static_cast<double>(v->get_int64());
    else if (v->is_uint64()) out = static_cast<double>(v->get_uint64());
    else if (v->is_double() && std::isfinite(v->get_double())) out = v->get_double();
    else {
      error(schema_error_code::invalid_json_schema, ptr + "/" + std::string(key),
            std::string(key) + " must be a number" + (v->is_bool() ? " (draft-04 boolean form is not supported)" : ""));
      return false;
    }
    return true;
  }

  bool count_of(const json::object& o, std::string_view key, const std::string& ptr, std::size_t& out) {
    const auto* v = o.if_contains(key);
    if (v == nullptr) return false;
    double d = -1;
    if (v->is_int64()) d = static_cast<double>(v->get_int64());
    else if (v->is_uint64()) d = static_cast<double>(v->get_uint64());
    else if (v->is_double()) d = v->get_double();
    if (!(d >= 0) || std::trunc(d) != d || d > 1e15) {
      error(schema_error_code::invalid_json_schema, ptr + "/" + std::string(key),
            std::string(key) + " must be a non-negative integer");
      return false;
    }
    out = static_cast<std::size_t>(d);
    return true;
  }

  schema::type single(const std::string& name, const json::object& o, const std::string& ptr, std::size_t depth,
                      const std::string& hint) {
    schema::type t;
    if (name == "string") t = schema::make_primitive(kind::string);
    else if (name == "integer") t = schema::make_primitive(kind::integer);
    else if (name == "number") t = schema::make_primitive(kind::number);
    else if (name == "boolean") t = schema::make_primitive(kind::boolean);
    else if (name == "array") {
      const auto* items = o.if_contains("items");
      if (items != nullptr && items->is_array()) {
        error(schema_error_code::unsupported, ptr + "/items", "tuple form of items (an array) is not supported");
        t = schema::make_array(schema::make_primitive(kind::any));
      } else {
        t = schema::make_array(items == nullptr ? schema::make_primitive(kind::any)
                                                : import_type(*items, ptr + "/items", depth + 1, hint + "_item"));
      }
    } else {  // object
      if (o.contains("properties")) {
        const std::string title = [&] {
          const auto* ti = o.if_contains("title");
          return ti != nullptr && ti->is_string() ? std::string(ti->get_string()) : std::string();
        }();
        // An object written inline: a definition, shared with an identical one of the same title.
        if (!title.empty()) {
          auto it = inline_by_title_.find(title);
          if (it != inline_by_title_.end() && *it->second.second == o) return ref_to(m_, it->second.first);
          if (const schema::definition* d = m_.find(title); d != nullptr && it == inline_by_title_.end()) {
            const auto idx = static_cast<std::uint32_t>(d - m_.defs.data());
            const json::value* src = pending_source(idx);
            if (src != nullptr && src->is_object() && src->get_object() == o)
              return ref_to(m_, idx);
          }
        }
        const std::uint32_t idx = new_def(title.empty() ? hint : title, ptr);
        if (!title.empty()) inline_by_title_.emplace(title, std::make_pair(idx, &o));
        m_.defs[idx].description = description_of(o);
        schema::object_def body = object_body(o, ptr, m_.defs[idx].name, depth);
        m_.defs[idx].body = std::move(body);
        return ref_to(m_, idx);
      }
      schema::type value = schema::make_primitive(kind::any);
      if (const auto* ap = o.if_contains("additionalProperties"); ap != nullptr && !ap->is_bool())
        value = import_type(*ap, ptr + "/additionalProperties", depth + 1, hint + "_value");
      t = schema::make_map(std::move(value));
      if (const auto* pn = o.if_contains("propertyNames")) t.args[0] = key_type(*pn, ptr + "/propertyNames", depth);
    }
    // Constraint keywords, in document order.
    for (const auto& kv : o) {
      const std::string_view k = kv.key();
      double x = 0;
      std::size_t n = 0;
      const bool numeric = t.kind == kind::integer || t.kind == kind::number;
      const bool text = t.kind == kind::string;
      const bool items = t.kind == kind::array;
      const bool map = t.kind == kind::map;
      auto add_number = [&](constraint_kind ck) {
        if (number_of(o, k, ptr, x)) {
          constraint c;
          c.kind = ck;
          c.number = x;
          t.constraints.push_back(std::move(c));
        }
      };
      auto add_count = [&](constraint_kind ck) {
        if (count_of(o, k, ptr, n)) {
          constraint c;
          c.kind = ck;
          c.count = n;
          t.constraints.push_back(std::move(c));
        }
      };
      if (numeric && k == "minimum") add_number(constraint_kind::minimum);
      else if (numeric && k == "maximum") add_number(constraint_kind::maximum);
      else if (numeric && k == "exclusiveMinimum") add_number(constraint_kind::exclusive_minimum);
      else if (numeric && k == "exclusiveMaximum") add_number(constraint_kind::exclusive_maximum);
      else if (numeric && k == "multipleOf") {
        if (number_of(o, "multipleOf", ptr, x)) {
          if (!(x > 0)) {
            error(schema_error_code::invalid_json_schema, ptr + "/multipleOf", "multipleOf must be greater than 0");
          } else {
            constraint c;
            c.kind = constraint_kind::multiple_of;
            c.number = x;
            t.constraints.push_back(std::move(c));
          }
        }
      } else if (text && k == "minLength") add_count(constraint_kind::min_length);
      else if (text && k == "maxLength") add_count(constraint_kind::max_length);
      else if (text && k == "pattern") {
        if (!kv.value().is_string()) {
          error(schema_error_code::invalid_json_schema, ptr + "/pattern", "pattern must be a string");
          continue;
        }
        constraint c;
        c.kind = constraint_kind::pattern;
        c.text = std::string(kv.value().get_string());
        std::string why;
        c.regex = schema::compile_pattern(c.text, &why);
        if (!c.regex) {
          error(schema_error_code::invalid_constraint, ptr + "/pattern", "invalid regular expression: " + why);
          continue;
        }
        t.constraints.push_back(std::move(c));
      } else if (text && k == "contentMediaType" && kv.value().is_string()) {
        // A media field of an input (docs/media.md): "image/png", "image/*", "application/pdf", "audio/*".
        const std::string_view mt(kv.value().get_string().data(), kv.value().get_string().size());
        if (const std::optional<media_kind> m = kind_of_media_type(mt)) t.constraints.push_back(schema::media_format(*m));
      } else if (text && k == "format") {
        if (!kv.value().is_string()) {
          error(schema_error_code::invalid_json_schema, ptr + "/format", "format must be a string");
          continue;
        }
        constraint c;
        c.kind = constraint_kind::format;
        c.text = std::string(kv.value().get_string());
        t.constraints.push_back(std::move(c));
      } else if (items && k == "minItems") add_count(constraint_kind::min_items);
      else if (items && k == "maxItems") add_count(constraint_kind::max_items);
      else if (map && k == "minProperties") add_count(constraint_kind::min_items);
      else if (map && k == "maxProperties") add_count(constraint_kind::max_items);
      else if (items && k == "uniqueItems") {
        if (!kv.value().is_bool()) {
          error(schema_error_code::invalid_json_schema, ptr + "/uniqueItems", "uniqueItems must be true or false");
        } else if (kv.value().get_bool()) {
          constraint c;
          c.kind = constraint_kind::unique_items;
          t.constraints.push_back(std::move(c));
        }
      } else if (items && k == "x-unique-by") {
        if (!kv.value().is_string() || kv.value().get_string().empty()) {
          error(schema_error_code::invalid_json_schema, ptr + "/x-unique-by",
                "x-unique-by must name the member that must differ between items");
        } else {
          constraint c;
          c.kind = constraint_kind::unique_by;
          c.text = std::string(kv.value().get_string());
          t.constraints.push_back(std::move(c));
        }
      } else if (k == "enum" && (numeric || text || t.kind == kind::boolean)) {
        if (!kv.value().is_array() || kv.value().get_array().empty()) {
          error(schema_error_code::invalid_json_schema, ptr + "/enum", "enum must be a non-empty array");
          continue;
        }
        constraint c;
        c.kind = constraint_kind::one_of;
        for (const auto& v : kv.value().get_array())
          if (!v.is_null()) c.values.push_back(v);
        t.constraints.push_back(std::move(c));
      }
    }
    if (const auto* of = o.if_contains("x-on-fail")) on_fail(*of, t, ptr + "/x-on-fail");
    if (t.kind == kind::integer) integer_width(t);
    return t;
  }

  // x-on-fail: one action for every constraint of this schema ("fix"), or one per keyword
  // ({"maxLength": "fix", "pattern": "filter"}).
  void on_fail(const json::value& v, schema::type& t, const std::string& ptr) {
    auto set = [&](schema::constraint& c, const json::value& name, const std::string& where) {
      const std::optional<fail_action> parsed =
          name.is_string() ? parse_fail_action(name.get_string()) : std::nullopt;
      if (!parsed) {
        error(schema_error_code::invalid_json_schema, where,
              "x-on-fail: expected one of reask, fix, filter, refrain, noop, exception");
        return;
      }
      const fail_action a = *parsed;
      if (a == fail_action::fix && !schema::has_fix(c, t.kind)) {
        error(schema_error_code::invalid_json_schema, where,
              "x-on-fail: " + std::string(schema::keyword_of(c, t.kind)) + " has no fix");
        return;
      }
      c.on_fail = a;
    };
    if (v.is_string()) {
      for (auto& c : t.constraints) set(c, v, ptr);
      return;
    }
    if (!v.is_object()) {
      error(schema_error_code::invalid_json_schema, ptr, "x-on-fail must be an action name or an object of keyword: action");
      return;
    }
    for (const auto& kv : v.get_object()) {
      bool found = false;
      for (auto& c : t.constraints) {
        if (schema::keyword_of(c, t.kind) != kv.key()) continue;
        found = true;
        set(c, kv.value(), ptr + "/" + std::string(kv.key()));
      }
      if (!found)
        error(schema_error_code::invalid_json_schema, ptr + "/" + std::string(kv.key()),
              "x-on-fail names " + std::string(kv.key()) + ", which this schema does not use");
    }
  }

  schema::type key_type(const json::value& v, const std::string& ptr, std::size_t depth) {
    const auto* o = v.if_object();
    if (o != nullptr) {
      if (const auto* e = o->if_contains("enum")) return literal_union(*e, ptr + "/enum");
    }
    return import_type(v, ptr, depth + 1, "Key");
  }

  // minimum and maximum that are exactly the range of an 8- or 16-bit C++ integer type (as the
  // exporter writes them for such fields) become that type.
  static void integer_width(schema::type& t) {
    std::size_t lo = t.constraints.size();
    std::size_t hi = t.constraints.size();
    for (std::size_t i = 0; i < t.constraints.size(); ++i) {
      if (t.constraints[i].kind == constraint_kind::minimum && lo == t.constraints.size()) lo = i;
      if (t.constraints[i].kind == constraint_kind::maximum && hi == t.constraints.size()) hi = i;
    }
    if (lo == t.constraints.size() || hi == t.constraints.size()) return;
    const double a = t.constraints[lo].number;
    const double b = t.constraints[hi].number;
    struct width {
      double lo, hi;
      std::uint8_t bits;
      bool is_unsigned;
    };
    static constexpr width widths[] = {
        {-128.0, 127.0, 8, false},
        {0.0, 255.0, 8, true},
        {-32768.0, 32767.0, 16, false},
        {0.0, 65535.0, 16, true},
    };
    for (const auto& w : widths) {
      if (a == w.lo && b == w.hi) {
        t.int_bits = w.bits;
        t.is_unsigned = w.is_unsigned;
        t.constraints.erase(t.constraints.begin() + static_cast<std::ptrdiff_t>(std::max(lo, hi)));
        t.constraints.erase(t.constraints.begin() + static_cast<std::ptrdiff_t>(std::min(lo, hi)));
        return;
      }
    }
  }

  const json::value* pending_source(std::uint32_t idx) const {
    for (const auto& p : pending_)
      if (p.idx == idx) return p.json;
    return nullptr;
  }

  struct pending_def {
    std::uint32_t idx;
    const json::value* json;
    std::string pointer;
  };

  const json::value& doc_;
  const json_schema_import_options& o_;
  schema::model m_;
  schema_diagnostics errors_;
  std::vector<std::string> pointers_;  // by definition index
  std::unordered_map<std::string, std::uint32_t> by_pointer_;
  std::unordered_map<std::string, std::pair<std::uint32_t, const json::object*>> inline_by_title_;
  std::vector<pending_def> pending_;
  bool root_referenced_ = false;
  std::size_t members_ = 0;
};

}  // namespace

json_schema_import_result try_import_json_schema(const boost::json::value& document,
                                                 const json_schema_import_options& options) {
  return importer(document, options).run();
}

namespace {

// Byte offset in `text` (a valid JSON document) of the value a JSON pointer names: for an object
// member, where its key starts; for an array item, where the item starts. The deepest part of
// the pointer that exists when the rest does not.
std::size_t locate_pointer(std::string_view text, std::string_view pointer, std::size_t max_depth) {
  detail::json_reader r(text, max_depth);
  std::size_t found = static_cast<std::size_t>(r.position() - text.data());
  std::size_t at = 0;
  while (at < pointer.size() && pointer[at] == '/') {
    std::size_t next = pointer.find('/', at + 1);
    if (next == std::string_view::npos) next = pointer.size();
    std::string token;
    for (std::size_t i = at + 1; i < next; ++i) {
      if (pointer[i] == '~' && i + 1 < next && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
        token.push_back(pointer[i + 1] == '0' ? '~' : '/');
        ++i;
      } else {
        token.push_back(pointer[i]);
      }
    }
    at = next;
    const char c = r.peek();
    bool hit = false;
    if (c == '{') {
      if (!r.begin_object()) return found;
      std::string scratch;
      std::string_view key;
      bool first = true;
      for (;;) {
        const char* before = r.position();
        if (!r.next_key(first, key, scratch)) return found;
        first = false;
        if (key == token) {
          // where the key's opening quote is
          const char* q = before;
          while (q < r.position() && *q != '"') ++q;
          found = static_cast<std::size_t>(q - text.data());
          hit = true;
          break;
        }
        std::string_view ignored;
        if (!r.skip_value(ignored)) return found;
      }
    } else if (c == '[') {
      std::size_t index = 0;
      for (const char ch : token) {
        if (ch < '0' || ch > '9') return found;
        index = index * 10 + static_cast<std::size_t>(ch - '0');
      }
      if (token.empty() || !r.begin_array()) return found;
      bool first = true;
      for (std::size_t i = 0;; ++i) {
        if (!r.next_element(first)) return found;
        first = false;
        if (i == index) {
          found = static_cast<std::size_t>(r.position() - text.data());
          hit = true;
          break;
        }
        std::string_view ignored;
        if (!r.skip_value(ignored)) return found;
      }
    }
    if (!hit) return found;
  }
  return found;
}

}  // namespace

json_schema_import_result try_import_json_schema_text(std::string_view text, const json_schema_import_options& options) {
  json_schema_import_result result;
  auto fail = [&](schema_error_code code, std::uint32_t line, std::uint32_t column, std::string message) {
    schema_diagnostic d;
    d.code = code;
    d.file = options.file;
    d.line = line;
    d.column = column;
    d.message = std::move(message);
    result.issues.push_back(std::move(d));
    return std::move(result);
  };
  if (text.size() > options.limits.max_bytes)
    return fail(schema_error_code::limit_exceeded, 0, 0,
                "document is " + std::to_string(text.size()) + " bytes, more than the limit of " +
                    std::to_string(options.limits.max_bytes));
  // Syntax first, with the strict reader (line and column of the first error).
  const std::size_t max_depth = options.limits.max_depth * 4 + 8;
  detail::json_reader r(text, max_depth);
  std::string_view ignored;
  if (!r.skip_value(ignored) || !r.finish()) {
    const auto [line, column] = detail::line_column(text, r.error_offset());
    const bool deep = std::string_view(r.error_message()) == "nesting too deep";
    return fail(deep ? schema_error_code::limit_exceeded : schema_error_code::syntax_error, line, column,
                std::string("invalid JSON: ") + r.error_message());
  }
  boost::json::parse_options po;
  po.max_depth = max_depth;
  boost::system::error_code ec;
  const boost::json::value doc = boost::json::parse(text, ec, {}, po);
  if (ec) return fail(schema_error_code::syntax_error, 0, 0, "invalid JSON: " + ec.message());
  json_schema_import_result imported = try_import_json_schema(doc, options);
  // Problems found in the document point into it: give them the line and column of the text too.
  for (schema_diagnostic& d : imported.issues) {
    if (d.pointer.empty() || d.line != 0) continue;
    const auto [line, column] = detail::line_column(text, locate_pointer(text, d.pointer, max_depth));
    d.line = line;
    d.column = column;
  }
  return imported;
}

schema::model import_json_schema(const boost::json::value& document, const json_schema_import_options& options) {
  auto r = try_import_json_schema(document, options);
  if (!r.ok()) throw schema_error(std::move(r.issues));
  return std::move(*r.model);
}

schema::model import_json_schema_text(std::string_view text, const json_schema_import_options& options) {
  auto r = try_import_json_schema_text(text, options);
  if (!r.ok()) throw schema_error(std::move(r.issues));
  return std::move(*r.model);
}

}  // namespace covenant
