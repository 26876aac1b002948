// Decoding JSON text against a runtime schema into a boost::json::value, with the typed decoder's
// issues. The rules both decoders have are theirs in common (decode.hpp's scalar readers,
// read_members.hpp's loops, coerce.cpp, reshape.cpp, read_union.cpp, and checks.cpp with the
// checks of JSON values); what is here is the JSON target's own: building the value, literals and
// map keys.
#include "covenant/read/dynamic.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "covenant/read/decode.hpp"
#include "covenant/read/detail/coerce.hpp"
#include "covenant/read/detail/read_members.hpp"
#include "covenant/read/detail/read_union.hpp"
#include "covenant/types/encode.hpp"
#include "covenant/types/json_equal.hpp"
#include "dynamic_value.hpp"

namespace covenant {

namespace {

namespace json = boost::json;
using detail::decode_context;
using detail::json_reader;
using detail::path_frame;
using schema::constraint_kind;
using schema::kind;


class dynamic_decoder {
 public:
  dynamic_decoder(json_reader& r, bool declared_keys, std::size_t depth = 0)
      : r_(r), declared_(declared_keys), depth_(depth) {}

  json::value read(const schema::type& t, decode_context& ctx, const path_frame* at) {
    if (++depth_ > limit(ctx)) {
      --depth_;
      std::string_view raw;
      if (r_.skip_value(raw))
        ctx.add(at, issue_code::type_mismatch, detail::expected_of(ctx.s, t), detail::actual_of(raw),
                "the schema nests deeper than the decoder allows here");
      return nullptr;
    }
    json::value v = read_inner(t, ctx, at);
    --depth_;
    return v;
  }

 private:
  static std::size_t limit(const decode_context& ctx) { return ctx.opts.max_depth * 4 + 64; }

  json::value mismatch(const schema::type& t, decode_context& ctx, const path_frame* at) {
    detail::mismatch_and_skip(r_, t, ctx, at);
    return nullptr;
  }

  json::value read_inner(const schema::type& t, decode_context& ctx, const path_frame* at) {
    if (t.nullable && t.kind != kind::any && r_.peek() == 'n') {
      r_.read_null();
      return nullptr;
    }
    if (ctx.opts.coerce) {
      const char c = r_.peek();
      if (c == '[' || c == '{') {
        json::value v;
        json_target jt{this, &v};
        if (detail::read_unwrapped(r_, target(jt), t, ctx, at)) return v;
        if (r_.failed()) return nullptr;
      } else if (c == '"' && wants_container(t, ctx)) {
        json::value v;
        json_target jt{this, &v};
        if (detail::read_json_in_string(r_, target(jt), t, ctx, at)) return v;
      }
    }
    switch (t.kind) {
      case kind::any: return read_any(ctx, at);
      case kind::null:
        if (r_.peek() != 'n') return mismatch(t, ctx, at);
        r_.read_null();
        return nullptr;
      case kind::boolean: return scalar<bool>(t, ctx, at);
      case kind::integer: return integer(t, ctx, at);
      case kind::number: return t.float_bits == 32 ? scalar<float>(t, ctx, at) : scalar<double>(t, ctx, at);
      case kind::string: return scalar<std::string>(t, ctx, at);

      case kind::array: return read_array(t, ctx, at);
      case kind::map: return read_map(t, ctx, at);
      case kind::union_: return read_union(t, ctx, at);
      case kind::literal: return read_literal(t, ctx, at);
      case kind::ref: {
        const schema::definition* d = ctx.s.resolve(t);
        if (d == nullptr) return mismatch(t, ctx, at);
        if (d->object() != nullptr) return read_object(t, *d, ctx, at);
        if (d->enumeration() != nullptr) return read_enum(t, *d, ctx, at);
        r_.peek();
        const char* start = r_.position();
        json::value v = read(d->alias()->target, ctx, at);
        if (!t.constraints.empty() && !r_.failed()) {
          detail::check_json_value(t.constraints, v, detail::span_from(r_, start), ctx, at);
        }
        return v;
      }
    }
    return nullptr;
  }

  // A list, a map or an object (not through a union: each alternative decides for itself).
  static bool wants_container(const schema::type& t, const decode_context& ctx) {
    const schema::type* u = ctx.s.unalias(t);
    return u != nullptr && (u->kind == kind::array || u->kind == kind::map || ctx.s.object_of(*u) != nullptr);
  }

  // This decoder's target as the reshaping rules (detail::read_unwrapped, read_as_only_field,
  // read_json_in_string: a reader of its own) see it: the JSON value `out`.
  struct json_target {
    dynamic_decoder* d;
    json::value* out;
  };

  static detail::reshape_target target(json_target& jt) {
    detail::reshape_target t;
    t.self = &jt;
    t.read = [](void* self, json_reader& r, const schema::type& node, decode_context& ctx, const path_frame* at) {
      auto& x = *static_cast<json_target*>(self);
      if (&r == &x.d->r_) *x.out = x.d->read(node, ctx, at);
      else *x.out = dynamic_decoder(r, x.d->declared_, x.d->depth_).read_inner(node, ctx, at);
    };
    t.read_field = [](void* self, json_reader&, const schema::object_def& def, std::size_t j, decode_context& ctx,
                      const path_frame* at) {
      auto& x = *static_cast<json_target*>(self);
      const schema::field& f = def.fields[j];
      json::value v = x.d->read(f.type, ctx, at);
      json::object o;
      o.emplace(x.d->key_of(f), std::move(v));
      *x.out = std::move(o);
    };
    t.checks = [](void* self, const schema::type& node, const schema::object_def& def, std::string_view raw,
                  decode_context& ctx, const path_frame* at) {
      auto& x = *static_cast<json_target*>(self);
      x.d->object_rules(node, def, *x.out, raw, ctx, at);
    };
    return t;
  }

  json::value read_any(decode_context& ctx, const path_frame* at) {
    json::value v;
    detail::read_json_value(r_, v, ctx, at);
    return v;
  }

  // A scalar read by the typed decoder's reader of the C++ type N (one implementation of the
  // scalar rules: kinds, coercions, widths, constraints and fixes; native = false: the schema's
  // C++ predicates never run here), kept as JSON and checked by the schema's JSON rules. Null when
  // it could not be read as N.
  template <class N>
  json::value scalar(const schema::type& t, decode_context& ctx, const path_frame* at) {
    const char c = r_.peek();
    const char* start = r_.position();
    const std::size_t before = ctx.issues.size();
    N out{};
    if constexpr (std::is_same_v<N, bool>) detail::read_boolean(r_, out, t, ctx, at, false);
    else if constexpr (std::is_same_v<N, std::string>) detail::read_text(r_, out, t, ctx, at, false);
    else if constexpr (std::is_floating_point_v<N>) detail::read_floating(r_, out, t, ctx, at, false);
    else detail::read_integer(r_, out, t, ctx, at, false);
    if (r_.failed()) return nullptr;
    for (std::size_t i = before; i < ctx.issues.size(); ++i)
      if (ctx.issues[i].code == issue_code::type_mismatch) return nullptr;
    json::value v;
    if constexpr (std::is_same_v<N, std::string>) v = json::string(out);
    else if constexpr (std::is_same_v<N, bool>) v = out;
    else if constexpr (std::is_floating_point_v<N>) v = static_cast<double>(out);
    else if constexpr (std::is_signed_v<N>) v = static_cast<std::int64_t>(out);
    else v = static_cast<std::uint64_t>(out);
    if (!t.constraints.empty()) {
      // an object or a list read as its text is shown as that text
      const bool written = std::is_same_v<N, std::string> && (c == '{' || c == '[');
      const std::string_view raw = written ? std::string_view(v.get_string()) : detail::span_from(r_, start);
      detail::check_json_rules(t.constraints, v, raw, false, ctx, at);
    }
    return v;
  }

  json::value integer(const schema::type& t, decode_context& ctx, const path_frame* at) {
    if (t.is_unsigned) {
      if (t.int_bits <= 8) return scalar<std::uint8_t>(t, ctx, at);
      if (t.int_bits <= 16) return scalar<std::uint16_t>(t, ctx, at);
      if (t.int_bits <= 32) return scalar<std::uint32_t>(t, ctx, at);
      return scalar<std::uint64_t>(t, ctx, at);
    }
    if (t.int_bits <= 8) return scalar<std::int8_t>(t, ctx, at);
    if (t.int_bits <= 16) return scalar<std::int16_t>(t, ctx, at);
    if (t.int_bits <= 32) return scalar<std::int32_t>(t, ctx, at);
    return scalar<std::int64_t>(t, ctx, at);
  }

  // A JSON array as the target of read_items and read_one_item.
  struct items {
    dynamic_decoder& d;
    const schema::type& item;
    json::array out;
    void read(std::size_t, json_reader&, decode_context& ctx, const path_frame* f) { out.push_back(d.read(item, ctx, f)); }
    void drop(std::size_t) { out.pop_back(); }
  };

  json::value read_array(const schema::type& t, decode_context& ctx, const path_frame* at) {
    const char c = r_.peek();
    if (c != '[' && c != 'n' && ctx.opts.coerce) {
      // A single value where a list is expected: a one-item list.
      items one{*this, t.args[0], {}};
      if (!detail::read_one_item(r_, one, ctx, at)) return nullptr;
      json::value v = std::move(one.out);
      if (!t.constraints.empty()) detail::check_json_list(t, v, "[...]", declared_, ctx, at);
      return v;
    }
    if (c != '[') return mismatch(t, ctx, at);
    const char* start = r_.position();
    items list{*this, t.args[0], {}};
    std::size_t n = 0;
    if (!detail::read_items(r_, list, n, ctx, at)) return nullptr;
    json::value v = std::move(list.out);
    if (!t.constraints.empty()) detail::check_json_list(t, v, detail::span_from(r_, start), declared_, ctx, at);
    return v;
  }

  // Whether `key` is one the key type accepts (any string, unless it is a closed choice of
  // strings: enum values, literals); appends an issue at `f` otherwise.
  void check_key(const schema::type& key, std::string_view k, decode_context& ctx, const path_frame* f) {
    auto choices = detail::choice_set(ctx.s, key);
    if (!choices) return;
    std::erase_if(*choices, [](const json::value& c) { return !c.is_string(); });
    for (const auto& c : *choices)
      if (std::string_view(c.get_string()) == k) return;
    std::string raw;
    detail::append_json_string(raw, k);
    detail::choice_mismatch(ctx, f, *choices, raw, "key ");
  }

  json::value read_map(const schema::type& t, decode_context& ctx, const path_frame* at) {
    if (r_.peek() != '{') return mismatch(t, ctx, at);
    const char* start = r_.position();
    if (!r_.begin_object()) return nullptr;
    json::object out;
    std::string scratch;
    std::string_view key;
    bool first = true;
    const bool plain_keys = t.args[0].kind == kind::string && t.args[0].constraints.empty();
    while (r_.next_key(first, key, scratch)) {
      first = false;
      std::string k(key);
      path_frame f{at, k, 0, false};
      if (!plain_keys) check_key(t.args[0], k, ctx, &f);
      json::value v = read(t.args[1], ctx, &f);
      if (r_.failed()) return nullptr;
      out.insert_or_assign(k, std::move(v));
    }
    if (r_.failed()) return nullptr;
    json::value v = std::move(out);
    if (!t.constraints.empty()) detail::check_json_value(t.constraints, v, detail::span_from(r_, start), ctx, at);
    return v;
  }


  // Coerce mode: a union of string literals ("low" | "medium" | "high") reads a string the way an
  // enum does, over all its values at once (so "low or high" is ambiguous, not "low").
  // nullopt when the union is not one of string literals or the value is not a string.
  std::optional<json::value> read_literal_choice(const schema::type& t, decode_context& ctx, const path_frame* at) {
    if (r_.peek() != '"') return std::nullopt;
    std::vector<detail::named_value> names;
    std::vector<const json::value*> values;
    for (const auto& alt : t.args) {
      const schema::type* u = ctx.s.unalias(alt);
      if (u == nullptr) return std::nullopt;
      if (u->kind == kind::null) continue;
      if (u->kind != kind::literal || !u->literal.is_string() || !u->constraints.empty()) return std::nullopt;
      names.push_back({std::string_view(u->literal.get_string()), values.size()});
      values.push_back(&u->literal);
    }
    if (names.empty()) return std::nullopt;
    return read_string_choice(t, names, values, ctx, at);
  }

  // A string (at the reader) that names one of `values` (string literals): as written, or in
  // coerce mode as an enum value is named (detail::match_name, noted); null after the issue when
  // it names none; nullopt when the text could not be read.
  std::optional<json::value> read_string_choice(const schema::type& t, const std::vector<detail::named_value>& names,
                                                const std::vector<const json::value*>& values, decode_context& ctx,
                                                const path_frame* at) {
    const char* start = r_.position();
    std::string scratch;
    std::string_view s;
    if (!r_.read_string_view(s, scratch)) return std::nullopt;
    const std::string_view raw = detail::span_from(r_, start);
    std::string how;
    std::size_t k = detail::no_match;
    for (const auto& n : names)
      if (n.name == s) k = n.index;
    if (k == detail::no_match && ctx.opts.coerce) {
      k = detail::match_name(names, s, how);
      if (k != detail::no_match)
        ctx.note(at, note_kind::coerced, std::string(raw) + " read as " + json_text(*values[k]) + " (" + how + ")");
    }
    if (k == detail::no_match) {
      std::vector<json::value> choices;
      for (const json::value* x : values) choices.push_back(*x);
      detail::choice_mismatch(ctx, at, choices, raw);
      return json::value(nullptr);
    }
    json::value v = *values[k];
    if (!t.constraints.empty()) detail::check_json_value(t.constraints, v, raw, ctx, at);
    return v;
  }

  // A union: the alternative it reads as is chosen by detail::read_union (the typed decoder's
  // rule too); between its passes, a union of string literals is read as one choice.
  struct union_value {
    dynamic_decoder* d;
    json::value scratch;
    json::value fit;
    json::value miss;  // best effort: the value of the best-ranked alternative
    std::optional<json::value> whole;
  };

  json::value read_union(const schema::type& t, decode_context& ctx, const path_frame* at) {
    r_.peek();
    const char* start = r_.position();
    union_value u{this, {}, {}, {}, {}};
    detail::union_target target;
    target.self = &u;
    target.read = [](void* self, std::size_t, json_reader&, const schema::type& alt, decode_context& c,
                     const path_frame* a) {
      auto& x = *static_cast<union_value*>(self);
      x.scratch = x.d->read(alt, c, a);
    };
    target.keep = [](void* self, std::size_t k, bool miss) {
      auto& x = *static_cast<union_value*>(self);
      if (k == detail::no_alternative) x.miss = nullptr;
      else (miss ? x.miss : x.fit) = std::move(x.scratch);
    };
    target.whole = [](void* self, json_reader&, const schema::type& node, decode_context& c, const path_frame* a) {
      auto& x = *static_cast<union_value*>(self);
      x.whole = x.d->read_literal_choice(node, c, a);
      return x.whole.has_value();
    };
    if (!detail::read_union(r_, target, t, ctx, at)) return r_.failed() ? json::value(nullptr) : std::move(u.miss);
    if (u.whole) return std::move(*u.whole);
    if (!t.constraints.empty()) detail::check_json_value(t.constraints, u.fit, detail::span_from(r_, start), ctx, at);
    return std::move(u.fit);
  }

  json::value read_literal(const schema::type& t, decode_context& ctx, const path_frame* at) {
    const json::value& lit = t.literal;
    const char c = r_.peek();
    const char* start = r_.position();
    bool match = false;
    if (c == '"' && ctx.opts.coerce && !lit.is_string() && (lit.is_bool() || lit.is_number())) {
      // A number or boolean written as a string.
      std::string scratch;
      std::string_view s;
      if (!r_.read_string_view(s, scratch)) return nullptr;
      double d = 0;
      bool b = false;
      if (lit.is_bool()) match = detail::bool_from_text(s, b) && b == lit.get_bool();
      else match = detail::number_from_text(s, false, d) && d == lit.to_number<double>();
      const std::string_view raw = detail::span_from(r_, start);
      if (!match) {
        detail::type_mismatch(ctx, at, t, raw);
        return nullptr;
      }
      ctx.note(at, note_kind::coerced, std::string(raw) + " read as " + json_text(lit));
      json::value v = lit;
      if (!t.constraints.empty()) detail::check_json_rules(t.constraints, v, raw, false, ctx, at);
      return v;
    }
    if (lit.is_string()) {
      if (c != '"') return mismatch(t, ctx, at);
      std::optional<json::value> v = read_string_choice(t, {{std::string_view(lit.get_string()), 0}}, {&lit}, ctx, at);
      return v ? std::move(*v) : json::value(nullptr);
    }
    if (lit.is_bool()) {
      if (c != 't' && c != 'f') return mismatch(t, ctx, at);
      bool b = false;
      if (!r_.read_bool(b)) return nullptr;
      match = b == lit.get_bool();
    } else if (lit.is_number()) {
      if (c != '-' && (c < '0' || c > '9')) return mismatch(t, ctx, at);
      detail::number_token tok;
      if (!r_.read_number(tok)) return nullptr;
      json::value v;
      match = detail::number_value(tok.text(), v) && json_equal(v, lit);
    } else if (lit.is_null()) {
      if (c != 'n') return mismatch(t, ctx, at);
      r_.read_null();
      match = true;
    } else {
      // Structured literal: compare the parsed value.
      json::value v = read_any(ctx, at);
      match = json_equal(v, lit);
    }
    if (r_.failed()) return nullptr;
    const std::string_view raw = detail::span_from(r_, start);
    if (!match) {
      // A literal is a one-value choice: a value of its kind that is another value breaks the choice.
      if (lit.is_bool() || lit.is_number()) detail::choice_mismatch(ctx, at, {lit}, raw);
      else detail::type_mismatch(ctx, at, t, raw);
      return nullptr;
    }
    json::value v = lit;
    if (!t.constraints.empty()) detail::check_json_rules(t.constraints, v, raw, false, ctx, at);
    return v;
  }

  json::value read_enum(const schema::type& t, const schema::definition& def, decode_context& ctx,
                        const path_frame* at) {
    r_.peek();
    const char* start = r_.position();
    const std::size_t k = detail::read_enum_value(r_, t, def, ctx, at);
    if (k == detail::no_match) return nullptr;
    const schema::enum_value& ev = def.enumeration()->values[k];
    const std::string_view raw = detail::span_from(r_, start);
    json::value out = json::string(declared_ && !ev.declared_name.empty() ? ev.declared_name : ev.name);
    if (!t.constraints.empty()) {
      const json::value seen = json::string(ev.declared_name.empty() ? ev.name : ev.declared_name);
      detail::check_json_rules(t.constraints, seen, raw, false, ctx, at);
    }
    return out;
  }

  json::value read_object(const schema::type& t, const schema::definition& d, decode_context& ctx,
                          const path_frame* at) {
    if (ctx.opts.coerce) {
      json::value v;
      json_target jt{this, &v};
      if (detail::read_as_only_field(r_, target(jt), t, *d.object(), ctx, at)) return v;
      if (r_.failed()) return nullptr;
    }
    if (r_.peek() != '{') return mismatch(t, ctx, at);
    const char* start = r_.position();
    const schema::object_def& def = *d.object();
    const std::size_t n = def.fields.size();
    const std::size_t issues_before = ctx.issues.size();
    if (!r_.begin_object()) return nullptr;
    // The fields read (or given their defaults) in `seen`, their values in `slots`.
    struct members {
      dynamic_decoder& d;
      const schema::object_def& def;
      std::vector<std::uint64_t> seen;
      std::vector<json::value> slots;
      static void read(void* self, std::size_t j, json_reader&, decode_context& ctx, const path_frame* f) {
        auto& m = *static_cast<members*>(self);
        const std::size_t before = ctx.issues.size();
        m.slots[j] = m.d.read(m.def.fields[j].type, ctx, f);
        // on-fail action filter: an optional field is dropped (a required one is the object's concern)
        if (ctx.issues.size() != before && !m.d.r_.failed() && !m.def.fields[j].required &&
            detail::take_filtered(ctx, before, f)) {
          detail::unmark(m.seen.data(), j);
          m.slots[j] = nullptr;
        }
      }
      static void absent(void* self, std::size_t j) {
        auto& m = *static_cast<members*>(self);
        const schema::field& fd = m.def.fields[j];
        if (fd.required) m.slots[j] = json::array{};  // a missing list read as empty
        else if (fd.default_value) m.slots[j] = *fd.default_value;
        else return;
        detail::mark(m.seen.data(), j);
      }
    };
    members m{*this, def, std::vector<std::uint64_t>(detail::field_words(n)), std::vector<json::value>(n)};
    path_frame f{at, {}, 0, false};
    if (!detail::read_members(r_, detail::members_target{&m, nullptr, &members::read, &members::absent}, def,
                              m.seen.data(), 0, ctx, f, at))
      return nullptr;
    json::object out;
    for (std::size_t j = 0; j < n; ++j)
      if (detail::marked(m.seen.data(), j)) out.emplace(key_of(def.fields[j]), std::move(m.slots[j]));
    json::value v = std::move(out);
    if (ctx.issues.size() == issues_before) object_rules(t, def, v, detail::span_from(r_, start), ctx, at);
    return v;
  }

  // The rules of an object (its invariants, then the constraints of its type) on its value `v`,
  // read from the text starting at `start`.
  void object_rules(const schema::type& t, const schema::object_def& def, const json::value& v, std::string_view raw,
                    decode_context& ctx, const path_frame* at) {
    if (def.invariants.empty() && t.constraints.empty()) return;
    const json::value view = rule_view(def, v);
    detail::check_invariants_json(def, view, ctx, at);
    if (!t.constraints.empty()) detail::check_json_rules(t.constraints, view, raw, false, ctx, at);
  }


  // The object as its own rules read it: fields under their declared names.
  json::value rule_view(const schema::object_def& def, const json::value& v) const {
    if (declared_) return v;
    bool renamed = false;
    for (const auto& f : def.fields) renamed = renamed || (f.key != f.name && !f.skip);
    if (!renamed) return v;
    json::object o;
    const auto& src = v.get_object();
    for (const auto& f : def.fields) {
      if (const auto* x = src.if_contains(f.key)) o.emplace(f.name, *x);
    }
    return o;
  }

  // A field's key in the value made: its declared name or its key in the output.
  const std::string& key_of(const schema::field& f) const { return declared_ ? f.name : f.key; }

  json_reader& r_;
  bool declared_;
  std::size_t depth_ = 0;
};

}  // namespace

boost::json::value detail::read_dynamic_value(json_reader& r, const schema::type& t, decode_context& ctx,
                                              const path_frame* at, output_keys keys) {
  dynamic_decoder d(r, keys == output_keys::declared);
  return d.read(t, ctx, at);
}

dynamic_result try_decode_dynamic(std::string_view text, const schema::model& m, const decode_options& options,
                                  output_keys keys) {
  dynamic_result result;
  detail::decode_context ctx{m, options, result.issues};
  if (text.size() > options.max_input_bytes) {
    detail::parse_failure(ctx, {}, 0, "input is larger than the configured maximum size");
    return result;
  }
  ctx.notes = &result.notes;
  detail::json_reader r(text, options.max_depth);
  result.value = detail::read_dynamic_value(r, m.root, ctx, nullptr, keys);
  r.finish();
  if (r.failed()) {
    result.issues.clear();
    result.notes.clear();
    result.value = nullptr;
    detail::parse_failure(ctx, text, r.error_offset(), r.error_message());
  }
  return result;
}

boost::json::value decode_dynamic(std::string_view text, const schema::model& m, const decode_options& options,
                                  output_keys keys) {
  dynamic_result r = try_decode_dynamic(text, m, options, keys);
  if (!r.ok()) throw decode_error(std::move(r.issues));
  return std::move(r.value);
}

dynamic_result try_validate_value(const boost::json::value& value, const schema::model& m,
                                  const decode_options& options, output_keys keys) {
  return try_decode_dynamic(json_text(value), m, options, keys);
}

boost::json::value validate_value(const boost::json::value& value, const schema::model& m,
                                  const decode_options& options, output_keys keys) {
  return decode_dynamic(json_text(value), m, options, keys);
}

}  // namespace covenant
