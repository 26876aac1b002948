#include "covenant/types/schema.hpp"

#include <boost/json/serialize.hpp>
#include <re2/re2.h>

#include <charconv>
#include <memory>
#include <variant>
#include <string>

#include "covenant/types/schema_of.hpp"
#include "number_text.hpp"

namespace covenant::schema {

std::optional<std::string> custom_check::check_native(const void*) const { return std::nullopt; }
std::optional<std::string> custom_check::check_json(const boost::json::value&) const { return std::nullopt; }
bool custom_check::fix_native(void*) const { return false; }

bool has_fix(const constraint& c, kind k) noexcept {
  switch (c.kind) {
    case constraint_kind::minimum:
    case constraint_kind::maximum:
    case constraint_kind::exclusive_minimum:
    case constraint_kind::exclusive_maximum:
    case constraint_kind::multiple_of:
    case constraint_kind::max_length:
    case constraint_kind::pattern:
    case constraint_kind::format:
    case constraint_kind::unique_items:
    case constraint_kind::unique_by:
      return true;
    case constraint_kind::max_items: return k == kind::array;
    case constraint_kind::one_of: return k == kind::string;
    default: return false;
  }
}

std::string_view keyword_of(const constraint& c, kind k) noexcept {
  switch (c.kind) {
    case constraint_kind::minimum: return "minimum";
    case constraint_kind::maximum: return "maximum";
    case constraint_kind::exclusive_minimum: return "exclusiveMinimum";
    case constraint_kind::exclusive_maximum: return "exclusiveMaximum";
    case constraint_kind::multiple_of: return "multipleOf";
    case constraint_kind::min_length: return "minLength";
    case constraint_kind::max_length: return "maxLength";
    case constraint_kind::min_items: return k == kind::map ? "minProperties" : "minItems";
    case constraint_kind::max_items: return k == kind::map ? "maxProperties" : "maxItems";
    case constraint_kind::pattern: return "pattern";
    case constraint_kind::format: return "format";
    case constraint_kind::one_of: return "enum";
    case constraint_kind::unique_items: return "uniqueItems";
    case constraint_kind::unique_by: return "x-unique-by";
    case constraint_kind::predicate: return "";
  }
  return "";
}

class compiled_pattern {
 public:
  explicit compiled_pattern(std::string_view p) : re_(re2::StringPiece(p.data(), p.size()), options()) {}
  [[nodiscard]] bool ok() const { return re_.ok(); }
  [[nodiscard]] const std::string& error() const { return re_.error(); }
  [[nodiscard]] bool search(std::string_view text) const {
    return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), re_);
  }

 private:
  static RE2::Options options() {
    RE2::Options o;
    o.set_log_errors(false);
    o.set_encoding(RE2::Options::EncodingUTF8);
    return o;
  }
  RE2 re_;
};

std::shared_ptr<const compiled_pattern> compile_pattern(std::string_view pattern, std::string* error) {
  auto p = std::make_shared<const compiled_pattern>(pattern);
  if (!p->ok()) {
    if (error) *error = p->error();
    return nullptr;
  }
  return p;
}

bool pattern_matches(const compiled_pattern& pattern, std::string_view text) noexcept { return pattern.search(text); }

const definition* model::find(std::string_view name) const noexcept {
  for (const auto& d : defs)
    if (d.name == name) return &d;
  return nullptr;
}

const definition* model::resolve(const type& t) const noexcept {
  if (t.kind != kind::ref) return nullptr;
  if (t.def != no_def && t.def < defs.size()) return &defs[t.def];
  return find(t.name);
}

const type* model::unalias(const type& t) const noexcept {
  const type* cur = &t;
  for (std::size_t steps = 0; steps <= defs.size(); ++steps) {
    if (cur->kind != kind::ref) return cur;
    const definition* d = resolve(*cur);
    if (d == nullptr) return nullptr;
    const auto* a = d->alias();
    if (a == nullptr) return cur;
    cur = &a->target;
  }
  return nullptr;
}

const object_def* model::object_of(const type& t) const noexcept {
  const type* u = unalias(t);
  const definition* d = u != nullptr && u->kind == kind::ref ? resolve(*u) : nullptr;
  return d != nullptr ? d->object() : nullptr;
}

std::string model::title() const {
  if (root.kind == kind::ref && !root.nullable) return root.name;
  return type_expression(root);
}

type make_primitive(kind k) {
  type t;
  t.kind = k;
  return t;
}

type make_array(type item) {
  type t;
  t.kind = kind::array;
  t.args.push_back(std::move(item));
  return t;
}

type make_map(type value) {
  type t;
  t.kind = kind::map;
  t.args.push_back(make_primitive(kind::string));
  t.args.push_back(std::move(value));
  return t;
}

type make_ref(std::string name) {
  type t;
  t.kind = kind::ref;
  t.name = std::move(name);
  return t;
}

namespace {

using detail::number_text;

/// JSON text of a value; doubles in shortest form (1 and 0.5, not 1E0 and 5E-1).
std::string json_text(const boost::json::value& v) {
  if (v.is_double()) return number_text(v.get_double());
  return boost::json::serialize(v);
}

void append_expression(std::string& out, const type& t, bool in_union) {
  switch (t.kind) {
    case kind::any: out += "any"; break;
    case kind::null: out += "null"; break;
    case kind::boolean: out += "bool"; break;
    case kind::integer: out += "int"; break;
    case kind::number: out += "float"; break;
    case kind::string:
      if (const std::optional<media_kind> m = media_kind_of(t)) out += to_string(*m);
      else out += "string";
      break;
    case kind::ref: out += t.name; break;
    case kind::literal: out += json_text(t.literal); break;
    case kind::array: {
      const type& item = t.args.at(0);
      const bool paren = item.kind == kind::union_ || item.nullable;
      if (paren) out.push_back('(');
      append_expression(out, item, false);
      if (paren) out.push_back(')');
      out += "[]";
      break;
    }
    case kind::map:
      out += "map<";
      append_expression(out, t.args.at(0), false);
      out += ", ";
      append_expression(out, t.args.at(1), false);
      out += ">";
      break;
    case kind::union_: {
      if (in_union) out.push_back('(');
      for (std::size_t i = 0; i < t.args.size(); ++i) {
        if (i) out += " | ";
        append_expression(out, t.args[i], true);
      }
      if (in_union) out.push_back(')');
      break;
    }
  }
  if (t.nullable && t.kind != kind::null) out += " | null";
}

}  // namespace

std::string type_expression(const type& t) {
  std::string out;
  append_expression(out, t, false);
  return out;
}

std::string describe(const constraint& c) {
  switch (c.kind) {
    case constraint_kind::minimum: return "at least " + number_text(c.number);
    case constraint_kind::maximum: return "at most " + number_text(c.number);
    case constraint_kind::exclusive_minimum: return "greater than " + number_text(c.number);
    case constraint_kind::exclusive_maximum: return "less than " + number_text(c.number);
    case constraint_kind::multiple_of: return "a multiple of " + number_text(c.number);
    case constraint_kind::min_length:
      return c.count == 1 ? std::string("non-empty") : "at least " + std::to_string(c.count) + " characters";
    case constraint_kind::max_length: return "at most " + std::to_string(c.count) + " characters";
    case constraint_kind::min_items:
      return "at least " + std::to_string(c.count) + (c.count == 1 ? " item" : " items");
    case constraint_kind::max_items:
      return "at most " + std::to_string(c.count) + (c.count == 1 ? " item" : " items");
    case constraint_kind::pattern: return "matching the regular expression " + c.text;
    case constraint_kind::format:
      if (c.text == "uri") return "an absolute URL";
      if (c.text == "uuid") return "a UUID";
      if (c.text == "date-time") return "an ISO 8601 date-time such as 2025-01-15T10:30:00Z";
      if (c.text == "date") return "a date such as 2025-01-15";
      if (c.text == "time") return "a time such as 10:30:00";
      if (c.text == "email") return "an e-mail address";
      if (const std::optional<media_kind> m = parse_media_kind(c.text))
        return "the reference of " + std::string(*m == media_kind::image ? "an " : "a ") + std::string(to_string(*m)) +
               " attached to this message, such as \"<" + c.text + " 1>\"";
      return "format " + c.text;
    case constraint_kind::one_of: {
      std::string out = "one of ";
      for (std::size_t i = 0; i < c.values.size(); ++i) {
        if (i) out += ", ";
        out += json_text(c.values[i]);
      }
      return out;
    }
    case constraint_kind::unique_items: return "no duplicate items";
    case constraint_kind::unique_by: return "no two items with the same " + c.text;
    case constraint_kind::predicate: return c.text;
  }
  return {};
}

}  // namespace covenant::schema

namespace covenant::detail {

schema_builder_base::schema_builder_base(schema::model& s) : s_(s) {}
schema_builder_base::~schema_builder_base() = default;

schema::type& schema_builder_base::make_array(schema::type& t) {
  t.kind = schema::kind::array;
  return t.args.emplace_back();
}

schema::type& schema_builder_base::make_map(schema::type& t) {
  t.kind = schema::kind::map;
  t.args.push_back(schema::make_primitive(schema::kind::string));
  return t.args.emplace_back();
}

schema::type& schema_builder_base::add_alternative(schema::type& t) {
  t.kind = schema::kind::union_;
  return t.args.emplace_back();
}

void schema_builder_base::make_media(schema::type& t, media_kind k) {
  t.kind = schema::kind::string;
  t.constraints.push_back(schema::media_format(k));
}

void schema_builder_base::make_ref(schema::type& t, std::uint32_t def) {
  t.kind = schema::kind::ref;
  t.name = s_.defs[def].name;
  t.def = def;
}

schema::object_def& schema_builder_base::new_object() {
  return *bodies_.emplace_back(std::make_unique<schema::object_def>());
}

schema::field& schema_builder_base::add_field(schema::object_def& body, std::string_view name, bool required) {
  schema::field& f = body.fields.emplace_back();
  f.name = std::string(name);
  f.key = f.name;
  f.required = required;
  return f;
}

schema::invariant& schema_builder_base::add_invariant(schema::object_def& body, std::string_view description) {
  schema::invariant& inv = body.invariants.emplace_back();
  inv.description = std::string(description);
  return inv;
}

void schema_builder_base::commit_object(std::uint32_t def, schema::object_def& body, std::string_view description) {
  schema::definition& d = s_.defs[def];
  if (!description.empty()) d.description = std::string(description);
  d.body = std::move(body);
}

void schema_builder_base::add_enum_value(std::uint32_t def, std::string_view name, std::int64_t number) {
  schema::enum_value& v = std::get<schema::enum_def>(s_.defs[def].body).values.emplace_back();
  v.name = std::string(name);
  v.declared_name = v.name;
  v.number = number;
}

std::vector<schema::enum_value>& schema_builder_base::enum_values(std::uint32_t def) {
  return std::get<schema::enum_def>(s_.defs[def].body).values;
}

void schema_builder_base::describe_def(std::uint32_t def, std::string_view description) {
  s_.defs[def].description = std::string(description);
}

void schema_builder_base::defer(void (*job)(schema::model&, std::uint32_t), std::uint32_t def) {
  deferred_.emplace_back(job, def);
}

void schema_builder_base::finish() {
  for (std::size_t i = 0; i < deferred_.size(); ++i) deferred_[i].first(s_, deferred_[i].second);
}

schema::model* new_model() { return new schema::model(); }
void delete_model(schema::model* m) noexcept { delete m; }

std::uint32_t schema_builder_base::find(const void* key) const noexcept {
  for (const auto& [k, idx] : known_)
    if (k == key) return idx;
  return schema::no_def;
}

namespace {
std::string sanitize(std::string_view name) {
  std::string out;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (ok) out.push_back(c);
    else if (!out.empty() && out.back() != '_') out.push_back('_');
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}
}  // namespace

std::uint32_t schema_builder_base::add(const void* key, std::string_view preferred, std::string_view qualified,
                                       bool is_enum) {
  std::string name = sanitize(preferred);
  if (s_.find(name) != nullptr) name = sanitize(qualified);
  const std::string base = name;
  for (int n = 2; s_.find(name) != nullptr; ++n) name = base + "_" + std::to_string(n);
  schema::definition d;
  d.name = std::move(name);
  if (is_enum) d.body = schema::enum_def{};
  s_.defs.push_back(std::move(d));
  const auto idx = static_cast<std::uint32_t>(s_.defs.size() - 1);
  known_.emplace_back(key, idx);
  return idx;
}

}  // namespace covenant::detail

namespace covenant::schema {

constraint media_format(media_kind k) {
  constraint c;
  c.kind = constraint_kind::format;
  c.text = std::string(to_string(k));
  return c;
}

std::optional<media_kind> media_kind_of(const type& t) noexcept {
  if (t.kind != kind::string) return std::nullopt;
  for (const constraint& c : t.constraints)
    if (c.kind == constraint_kind::format)
      if (const std::optional<media_kind> m = parse_media_kind(c.text)) return m;
  return std::nullopt;
}

}  // namespace covenant::schema
