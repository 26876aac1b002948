#include "covenant/types/json_schema.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/types/prompt_format.hpp"

namespace covenant {

namespace {

namespace json = boost::json;
using schema::constraint;
using schema::constraint_kind;
using schema::kind;

constexpr std::size_t npos = static_cast<std::size_t>(-1);

/// Integral numbers as JSON integers ("maximum": 1, not 1.0).
json::value number_value(double v) {
  if (std::isfinite(v) && std::trunc(v) == v && std::fabs(v) < 9007199254740992.0)
    return json::value(static_cast<std::int64_t>(v));
  return json::value(v);
}

json::value count_value(std::size_t n) { return json::value(static_cast<std::int64_t>(n)); }

bool is_primitive(kind k) {
  return k == kind::boolean || k == kind::integer || k == kind::number || k == kind::string;
}

std::string_view primitive_name(kind k) {
  switch (k) {
    case kind::boolean: return "boolean";
    case kind::integer: return "integer";
    case kind::number: return "number";
    case kind::string: return "string";
    case kind::null: return "null";
    default: return "";
  }
}

std::string_view json_type_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "boolean";
    case json::kind::int64:
    case json::kind::uint64: return "integer";
    case json::kind::double_: return "number";
    case json::kind::string: return "string";
    case json::kind::array: return "array";
    case json::kind::object: return "object";
  }
  return "string";
}

/// Formats OpenAI's strict mode accepts as the `format` keyword.
bool strict_format(std::string_view f) {
  return f == "date-time" || f == "time" || f == "date" || f == "email" || f == "uuid";
}

std::string child_path(const std::string& base, std::string_view key) {
  return base.empty() ? std::string(key) : base + "." + std::string(key);
}

class exporter {
 public:
  exporter(const schema::model& s, const json_schema_options& o)
      : s_(s), strict_(o.openai_strict), schema_uri_(o.include_schema_uri && !o.openai_strict) {
    queued_.assign(s.defs.size(), false);
    in_progress_.assign(s.defs.size(), false);
  }

  json::value run() {
    json::object doc;
    if (schema_uri_) doc["$schema"] = json_schema_dialect;
    if (s_.root.kind == kind::ref && !s_.root.nullable) root_ = index_of(s_.root);
    if (strict_ && (root_ == npos || s_.defs[root_].object() == nullptr))
      throw std::invalid_argument("covenant::to_openai_strict_schema: the root must be an object, not " + s_.title());

    json::object body;
    if (root_ != npos) {
      queued_[root_] = true;
      body = def_body(root_, "");
    } else {
      doc["title"] = s_.title();
      body = type_schema(s_.root, "", "");
    }
    for (auto& kv : body) doc[kv.key()] = std::move(kv.value());

    std::vector<json::object> bodies(s_.defs.size());
    std::vector<bool> done(s_.defs.size(), false);
    for (std::size_t i = 0; i < queue_.size(); ++i) {
      const std::size_t idx = queue_[i].first;
      const std::string path = queue_[i].second;
      bodies[idx] = def_body(idx, path);
      done[idx] = true;
    }
    json::object defs;
    for (std::size_t i = 0; i < s_.defs.size(); ++i)
      if (done[i]) defs[s_.defs[i].name] = std::move(bodies[i]);
    if (!defs.empty()) doc["$defs"] = std::move(defs);
    return doc;
  }

 private:
  [[noreturn]] void fail(std::string_view what, const schema::type& t, const std::string& path) const {
    throw std::invalid_argument("covenant::to_openai_strict_schema: OpenAI strict mode cannot express " +
                                std::string(what) + " (" + (path.empty() ? std::string("root") : path) + ": " +
                                schema::type_expression(t) + ")");
  }

  std::size_t index_of(const schema::type& t) const {
    const schema::definition* d = s_.resolve(t);
    return d == nullptr ? npos : static_cast<std::size_t>(d - s_.defs.data());
  }

  json::object ref_schema(std::size_t idx, const std::string& path) {
    json::object o;
    if (idx == root_) {
      o["$ref"] = "#";
      return o;
    }
    if (!queued_[idx]) {
      queued_[idx] = true;
      queue_.emplace_back(idx, path);
    }
    o["$ref"] = "#/$defs/" + s_.defs[idx].name;
    return o;
  }

  /// Adds the keyword for `c` to `o` when the target can say it; false when it belongs in the
  /// description instead.
  bool add_keyword(json::object& o, const constraint& c, kind k) const {
    const bool numeric = k == kind::integer || k == kind::number;
    switch (c.kind) {
      case constraint_kind::minimum:
        if (!numeric || o.contains("minimum")) return false;
        o["minimum"] = number_value(c.number);
        return true;
      case constraint_kind::maximum:
        if (!numeric || o.contains("maximum")) return false;
        o["maximum"] = number_value(c.number);
        return true;
      case constraint_kind::exclusive_minimum:
        if (!numeric || o.contains("exclusiveMinimum")) return false;
        o["exclusiveMinimum"] = number_value(c.number);
        return true;
      case constraint_kind::exclusive_maximum:
        if (!numeric || o.contains("exclusiveMaximum")) return false;
        o["exclusiveMaximum"] = number_value(c.number);
        return true;
      case constraint_kind::multiple_of:
        if (!numeric || o.contains("multipleOf")) return false;
        o["multipleOf"] = number_value(c.number);
        return true;
      case constraint_kind::min_length:
        if (strict_ || k != kind::string || o.contains("minLength")) return false;
        o["minLength"] = count_value(c.count);
        return true;
      case constraint_kind::max_length:
        if (strict_ || k != kind::string || o.contains("maxLength")) return false;
        o["maxLength"] = count_value(c.count);
        return true;
      case constraint_kind::min_items: {
        const char* key = k == kind::array ? "minItems" : k == kind::map ? "minProperties" : nullptr;
        if (key == nullptr || o.contains(key)) return false;
        o[key] = count_value(c.count);
        return true;
      }
      case constraint_kind::max_items: {
        const char* key = k == kind::array ? "maxItems" : k == kind::map ? "maxProperties" : nullptr;
        if (key == nullptr || o.contains(key)) return false;
        o[key] = count_value(c.count);
        return true;
      }
      case constraint_kind::pattern:
        if (k != kind::string || o.contains("pattern")) return false;
        o["pattern"] = c.text;
        return true;
      case constraint_kind::format:
        if (k != kind::string || o.contains("format") || (strict_ && !strict_format(c.text))) return false;
        o["format"] = c.text;
        return true;
      case constraint_kind::one_of: {
        if (!is_primitive(k) || o.contains("enum")) return false;
        json::array values;
        for (const auto& v : c.values) values.push_back(v.is_double() ? number_value(v.get_double()) : v);
        o["enum"] = std::move(values);
        return true;
      }
      case constraint_kind::unique_items:
        if (strict_ || k != kind::array) return false;
        o["uniqueItems"] = true;
        return true;
      case constraint_kind::unique_by:
        // No standard keyword: covenant's own, read back by import_json_schema.
        if (strict_ || k != kind::array || c.text.empty() || o.contains("x-unique-by")) return false;
        o["x-unique-by"] = c.text;
        return true;
      case constraint_kind::predicate: return false;
    }
    return false;
  }

  /// Schema of a map's key type, or an empty object when keys are plain strings.
  json::object key_schema(const schema::type& key, const std::string& path) {
    if (key.kind == kind::string && key.constraints.empty() && !key.nullable) return {};
    if (key.kind == kind::literal) {
      json::object o;
      o["const"] = key.literal;
      return o;
    }
    if (key.kind == kind::union_) {
      bool all_literals = !key.args.empty();
      for (const auto& a : key.args) all_literals = all_literals && a.kind == kind::literal;
      if (all_literals) {
        json::array values;
        for (const auto& a : key.args) values.push_back(a.literal);
        json::object o;
        o["enum"] = std::move(values);
        return o;
      }
    }
    return type_schema(key, path, "");
  }

  /// Schema of `t`; `description` (the field's, say) comes first in its description, followed by
  /// the constraints no keyword expresses.
  json::object type_schema(const schema::type& t, const std::string& path, const std::string& description) {
    json::object base;
    switch (t.kind) {
      case kind::any:
        if (strict_) fail("arbitrary JSON values", t, path);
        break;
      case kind::null:
      case kind::boolean:
      case kind::integer:
      case kind::number:
      case kind::string: base["type"] = primitive_name(t.kind); break;
      case kind::array:
        base["type"] = "array";
        base["items"] = t.args.empty() ? json::object{} : type_schema(t.args[0], path + "[]", "");
        break;
      case kind::map: {
        if (strict_) fail("maps", t, path);
        base["type"] = "object";
        if (t.args.size() == 2) {
          json::object keys = key_schema(t.args[0], path);
          if (!keys.empty()) base["propertyNames"] = std::move(keys);
          base["additionalProperties"] = type_schema(t.args[1], path + "{}", "");
        }
        break;
      }
      case kind::union_: {
        json::array alts;
        for (const auto& a : t.args) alts.push_back(type_schema(a, path, ""));
        base["anyOf"] = std::move(alts);
        break;
      }
      case kind::literal:
        if (strict_) {
          base["type"] = json_type_of(t.literal);
          base["enum"] = json::array{t.literal};
        } else {
          base["const"] = t.literal;
        }
        break;
      case kind::ref: break;  // below, once the description is known
    }

    std::vector<constraint> leftovers;
    std::vector<std::pair<std::string_view, fail_action>> actions;  // of the keywords written
    for (const auto& c : effective_constraints(t)) {
      if (!add_keyword(base, c, t.kind)) {
        leftovers.push_back(c);
        continue;
      }
      actions.emplace_back(schema::keyword_of(c, t.kind), c.on_fail);
      // x-unique-by is covenant's own keyword: other readers (and models) get the rule in words too.
      if (c.kind == constraint_kind::unique_by) leftovers.push_back(c);
    }
    // x-on-fail (covenant's own keyword, read back by import_json_schema): one action for every
    // keyword, or keyword: action for those that are not reask.
    if (!strict_ && std::any_of(actions.begin(), actions.end(), [](const auto& a) { return a.second != fail_action::reask; })) {
      const bool same = std::all_of(actions.begin(), actions.end(),
                                    [&](const auto& a) { return a.second == actions.front().second; });
      if (same) {
        base["x-on-fail"] = to_string(actions.front().second);
      } else {
        json::object by_keyword;
        for (const auto& [kw, a] : actions)
          if (a != fail_action::reask) by_keyword[kw] = to_string(a);
        base["x-on-fail"] = std::move(by_keyword);
      }
    }
    const std::string desc =
        detail::join_sentences(description, detail::sentence(constraint_clause(leftovers, t.kind)));

    if (t.kind == kind::ref) {
      const std::size_t idx = index_of(t);
      if (idx == npos) {
        base["$ref"] = "#/$defs/" + t.name;
      } else if (strict_ && !t.nullable && !desc.empty()) {
        // OpenAI rejects keywords beside "$ref": inline the definition instead.
        if (!in_progress_[idx]) {
          json::object body = def_body(idx, path);
          std::string own;
          if (const auto* d = body.if_contains("description")) own = std::string(d->as_string());
          body["description"] = detail::join_sentences(desc, own);
          return body;
        }
        base["anyOf"] = json::array{ref_schema(idx, path)};
      } else {
        base = ref_schema(idx, path);
      }
    }

    if (t.nullable && t.kind != kind::null && t.kind != kind::any) {
      if (is_primitive(t.kind)) {
        base["type"] = json::array{primitive_name(t.kind), "null"};
        if (auto* e = base.if_contains("enum")) e->as_array().push_back(nullptr);
      } else if (t.kind == kind::union_) {
        bool has_null = false;
        for (const auto& a : t.args) has_null = has_null || (a.kind == kind::null && a.constraints.empty());
        if (!has_null) base["anyOf"].as_array().push_back(json::object{{"type", "null"}});
      } else {
        json::object wrapped;
        wrapped["anyOf"] = json::array{std::move(base), json::object{{"type", "null"}}};
        base = std::move(wrapped);
      }
    }
    if (!desc.empty()) base["description"] = desc;
    return base;
  }

  json::object def_body(std::size_t idx, const std::string& path) {
    const schema::definition& d = s_.defs[idx];
    in_progress_[idx] = true;
    json::object o;
    o["title"] = d.name;
    if (const auto* obj = d.object()) {
      std::string desc = d.description;
      for (const auto& inv : obj->invariants)
        if (!inv.description.empty()) desc = detail::join_sentences(desc, "Rule: " + inv.description);
      if (!desc.empty()) o["description"] = desc;
      o["type"] = "object";
      json::object props;
      json::array required;
      for (const auto& f : obj->fields) {
        if (f.skip) continue;
        schema::type ft = f.type;
        std::string fdesc = f.description;
        if (strict_) {
          if (!f.required && !ft.nullable && !f.default_value) ft.nullable = true;
          if (f.default_value) fdesc = detail::join_sentences(fdesc, "Default: " + json::serialize(*f.default_value));
        }
        json::object prop = type_schema(ft, child_path(path, f.key), fdesc);
        if (!strict_ && f.default_value) prop["default"] = *f.default_value;
        props[f.key] = std::move(prop);
        if (strict_ || f.required) required.push_back(json::string(f.key));
      }
      o["properties"] = std::move(props);
      if (strict_ || !required.empty()) o["required"] = std::move(required);
      if (strict_) o["additionalProperties"] = false;
    } else if (const auto* e = d.enumeration()) {
      const std::string desc = detail::join_sentences(d.description, detail::enum_value_notes(*e));
      if (!desc.empty()) o["description"] = desc;
      o["type"] = "string";
      json::array names;
      for (const auto& v : e->values)
        if (!v.skip) names.push_back(json::string(v.name));
      o["enum"] = std::move(names);
    } else if (const auto* a = d.alias()) {
      for (auto& kv : type_schema(a->target, path, d.description)) o[kv.key()] = std::move(kv.value());
    }
    in_progress_[idx] = false;
    return o;
  }

  const schema::model& s_;
  bool strict_;
  bool schema_uri_;
  std::size_t root_ = npos;
  std::vector<bool> queued_;
  std::vector<bool> in_progress_;
  std::vector<std::pair<std::size_t, std::string>> queue_;
};

}  // namespace

boost::json::value to_json_schema(const schema::model& s, const json_schema_options& options) {
  return exporter(s, options).run();
}

boost::json::value to_openai_strict_schema(const schema::model& s) {
  json_schema_options o;
  o.openai_strict = true;
  return to_json_schema(s, o);
}

namespace detail {

boost::json::value response_format(const boost::json::value& strict_schema, std::string_view name) {
  std::string n(name);
  if (n.empty()) {
    if (const auto* t = strict_schema.as_object().if_contains("title"); t != nullptr && t->is_string())
      n = std::string(t->as_string());
  }
  json::object inner;
  inner["name"] = n;
  inner["strict"] = true;
  inner["schema"] = strict_schema;
  json::object out;
  out["type"] = "json_schema";
  out["json_schema"] = std::move(inner);
  return out;
}

}  // namespace detail

boost::json::value openai_response_format(const schema::model& s, std::string_view name) {
  return detail::response_format(to_openai_strict_schema(s), name);
}

}  // namespace covenant
