// The schema-file reader's parser: recursive descent over the tokens, building definitions straight
// into the model and recording where every field, value and type name was written.
#include <boost/json/string.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "schema_formula.hpp"
#include "schema_file_syntax.hpp"

namespace covenant::schema_file_impl {

namespace {

namespace json = boost::json;
using schema::kind;

struct abort_declaration {};  // a diagnostic was recorded; recover at the next declaration
struct stop_parsing {};       // a limit was hit; no further diagnostics are useful

bool is_primitive_name(std::string_view n) {
  return n == "string" || n == "int" || n == "float" || n == "bool" || n == "null";
}

bool is_reserved(std::string_view n) {
  return is_primitive_name(n) || n == "map" || n == "list" || n == "true" || n == "false" || n == "image" ||
         n == "audio" || n == "pdf" || n == "video";
}

bool is_skipped_block(std::string_view w) {
  return w == "function" || w == "client" || w == "generator" || w == "test" || w == "template_string" ||
         w == "retry_policy";
}

bool is_declaration_keyword(std::string_view w) {
  return w == "class" || w == "enum" || w == "type" || w == "model" || is_skipped_block(w);
}

struct attr_arg {
  enum class kind_t : std::uint8_t { string, expr, bare } kind = kind_t::bare;
  std::string text;
  std::size_t content = 0;  // expr: offset of the expression text
  location loc;
};

struct attribute {
  std::string name;
  bool block = false;  // @@
  bool parens = false;
  std::vector<attr_arg> args;
  location loc;
};

class parser {
 public:
  parser(token_stream& toks, const source_map& map, parse_state& st) : t_(toks), map_(map), st_(st) {}

  void parse_file() {
    try {
      while (cur().kind != tk::end) {
        std::string doc = take_docs();
        if (cur().kind == tk::end) break;
        const std::size_t start = p_;
        try {
          declaration(std::move(doc));
        } catch (const abort_declaration&) {
          if (p_ == start) advance();
          recover_top_level();
        }
      }
    } catch (const stop_parsing&) {
    }
  }

  // A type expression (model_for): the whole input is one type, with optional type attributes.
  std::optional<schema::type> parse_type_only() {
    try {
      type_ctx ctx;
      schema::type t = parse_union(ctx, 0);
      type_attributes(t, 0);
      if (cur().kind != tk::end) error_here(schema_error_code::syntax_error, "unexpected " + describe(cur()) + " after the type");
      return t;
    } catch (const abort_declaration&) {
    } catch (const stop_parsing&) {
    }
    return std::nullopt;
  }

 private:
  struct type_ctx {
    std::string parent;          // definition name, for inline objects
    std::string field;           // field name, for inline objects
    bool inline_objects = false; // model syntax
  };

  // ---- token access ----
  const token& cur() const { return t_.at(0); }
  const token& peek() const { return t_.at(1); }
  void advance() {
    if (cur().kind == tk::end) return;
    t_.pop();
    ++p_;
  }
  bool is_punct(std::string_view p) const { return cur().kind == tk::punct && cur().text == p; }
  bool is_ident(std::string_view w) const { return cur().kind == tk::ident && cur().text == w; }

  static std::string describe(const token& t) {
    switch (t.kind) {
      case tk::end: return "end of input";
      case tk::ident: return "'" + t.text + "'";
      case tk::string: return "string \"" + t.text + "\"";
      case tk::raw_string: return "raw string";
      case tk::number: return "number " + t.text;
      case tk::expr: return "{{ expression }}";
      case tk::punct: return "'" + t.text + "'";
      case tk::doc: return "doc comment";
      case tk::other: return "character '" + t.text + "'";
    }
    return "token";
  }

  // ---- diagnostics ----
  void diag(schema_error_code code, location loc, std::string message) {
    schema_diagnostic d = diagnostic_at(code, st_.file, loc, std::move(message));
    if (code == schema_error_code::skipped) {
      st_.notes->push_back(std::move(d));
      return;
    }
    st_.errors->push_back(std::move(d));
    if (st_.errors->size() >= st_.limits.max_errors) {
      st_.errors->push_back(diagnostic_at(schema_error_code::limit_exceeded, st_.file, loc,
                                          "too many problems; stopped after " + std::to_string(st_.limits.max_errors)));
      throw stop_parsing{};
    }
  }

  [[noreturn]] void error_at(schema_error_code code, location loc, std::string message) {
    diag(code, loc, std::move(message));
    throw abort_declaration{};
  }
  [[noreturn]] void error_here(schema_error_code code, std::string message) {
    error_at(code, cur().loc, std::move(message));
  }
  [[noreturn]] void limit(location loc, std::string message) {
    schema_diagnostic d;
    d.code = schema_error_code::limit_exceeded;
    d.file = st_.file;
    d.line = loc.line;
    d.column = loc.column;
    d.message = std::move(message);
    st_.errors->push_back(std::move(d));
    throw stop_parsing{};
  }

  void expect_punct(std::string_view p, std::string_view what) {
    if (!is_punct(p))
      error_here(schema_error_code::syntax_error,
                 "expected '" + std::string(p) + "' " + std::string(what) + ", found " + describe(cur()));
    advance();
  }

  std::string expect_ident(std::string_view what) {
    if (cur().kind != tk::ident) error_here(schema_error_code::syntax_error, "expected " + std::string(what) + ", found " + describe(cur()));
    std::string s = cur().text;
    advance();
    return s;
  }

  std::string take_docs() {
    std::string doc;
    while (cur().kind == tk::doc) {
      if (!doc.empty()) doc.push_back('\n');
      doc += cur().text;
      advance();
    }
    return doc;
  }

  // Skips to the next token that starts a line with a declaration keyword at brace depth 0.
  void recover_top_level() {
    int depth = 0;
    while (cur().kind != tk::end) {
      if (depth <= 0 && cur().newline_before && cur().kind == tk::ident && is_declaration_keyword(cur().text))
        return;
      if (is_punct("{")) ++depth;
      else if (is_punct("}")) --depth;
      advance();
    }
  }

  // Skips the rest of a member (field or enum value): to the next token that starts a line at
  // the body's brace depth.
  void recover_member(std::size_t start) {
    if (p_ == start) advance();
    int depth = 0;
    while (cur().kind != tk::end) {
      if (depth == 0 && cur().newline_before && !is_punct("@")) return;
      if (depth == 0 && is_punct("}")) return;
      if (is_punct("{") || is_punct("(") || is_punct("[")) ++depth;
      else if ((is_punct("}") || is_punct(")") || is_punct("]")) && depth > 0) --depth;
      advance();
    }
  }

  // ---- declarations ----
  void declaration(std::string doc) {
    if (cur().kind != tk::ident) {
      error_here(schema_error_code::syntax_error,
                 "expected a declaration (class, enum, type or model), found " + describe(cur()));
    }
    const std::string w = cur().text;
    const location at = cur().loc;
    if (w == "class" || w == "model") {
      advance();
      class_declaration(std::move(doc), at, w == "model");
    } else if (w == "enum") {
      advance();
      enum_declaration(std::move(doc), at);
    } else if (w == "type") {
      advance();
      alias_declaration(std::move(doc), at);
    } else if (is_skipped_block(w)) {
      skip_block(w, at);
    } else if (w == "dynamic" && peek().kind == tk::ident && (peek().text == "class" || peek().text == "enum")) {
      error_here(schema_error_code::unsupported,
                 "'dynamic " + peek().text + "' is not supported; declare the type and mark it with @@dynamic");
    } else {
      error_here(schema_error_code::unsupported,
                 "unsupported declaration '" + w +
                     "': the reader understands class, enum, type and model (function, client, generator, test, "
                     "template_string and retry_policy blocks are skipped)");
    }
  }

  void skip_block(const std::string& w, location at) {
    advance();
    std::string name;
    // client<llm> Name
    if (is_punct("<")) {
      while (cur().kind != tk::end && !is_punct(">")) advance();
      if (is_punct(">")) advance();
    }
    if (cur().kind == tk::ident) name = cur().text;
    diag(schema_error_code::skipped, at, "skipped " + w + (name.empty() ? std::string() : " '" + name + "'"));
    if (w == "template_string") {
      while (cur().kind != tk::end && cur().kind != tk::raw_string && cur().kind != tk::string) {
        if (cur().newline_before && cur().kind == tk::ident && is_declaration_keyword(cur().text) && p_ > 0) return;
        advance();
      }
      if (cur().kind != tk::end) advance();
      return;
    }
    int parens = 0;
    while (cur().kind != tk::end && !(parens == 0 && is_punct("{"))) {
      if (is_punct("(")) ++parens;
      else if (is_punct(")")) --parens;
      advance();
    }
    if (cur().kind == tk::end) error_at(schema_error_code::syntax_error, at, "'" + w + "' block has no body");
    int depth = 0;
    do {
      if (is_punct("{")) ++depth;
      else if (is_punct("}")) --depth;
      advance();
    } while (depth > 0 && cur().kind != tk::end);
    if (depth > 0) error_at(schema_error_code::syntax_error, at, "unterminated '" + w + "' block");
  }

  std::string declared_name(std::string_view what) {
    if (cur().kind != tk::ident)
      error_here(schema_error_code::syntax_error, "expected the name of the " + std::string(what) + ", found " + describe(cur()));
    if (is_reserved(cur().text))
      error_here(schema_error_code::syntax_error, "'" + cur().text + "' is a built-in type name");
    std::string n = cur().text;
    advance();
    return n;
  }

  std::uint32_t new_def(const std::string& name, location at, std::string description) {
    if (st_.all->defs.size() >= st_.limits.max_types)
      limit(at, "more than " + std::to_string(st_.limits.max_types) + " types");
    schema::definition d;
    d.name = name;
    d.description = std::move(description);
    d.where = schema::source_location{st_.file, at.line, at.column};
    st_.all->defs.push_back(std::move(d));
    def_info info;
    info.declared = name;
    info.loc = at;
    st_.info->push_back(std::move(info));
    st_.enum_rules->emplace_back();
    return static_cast<std::uint32_t>(st_.all->defs.size() - 1);
  }

  void count_member(location at) {
    if (++st_.member_count > st_.limits.max_fields)
      limit(at, "more than " + std::to_string(st_.limits.max_fields) + " fields and enum values");
  }

  void class_declaration(std::string doc, location at, bool model_syntax) {
    const location name_at = cur().loc;
    const std::string name = declared_name(model_syntax ? "model" : "class");
    const std::uint32_t idx = new_def(name, name_at, std::move(doc));
    (void)at;
    expect_punct("{", "to open the " + std::string(model_syntax ? "model" : "class") + " body");
    schema::object_def body = object_body(idx, name, model_syntax, 1);
    st_.all->defs[idx].body = std::move(body);
  }

  // Parses fields until the closing brace (consumed).
  schema::object_def object_body(std::uint32_t idx, const std::string& name, bool model_syntax, std::size_t depth) {
    schema::object_def body;
    for (;;) {
      std::string doc = take_docs();
      if (is_punct("}")) {
        advance();
        return body;
      }
      if (cur().kind == tk::end)
        error_here(schema_error_code::syntax_error, "unexpected end of input: '" + name + "' is missing its closing '}'");
      const std::size_t start = p_;
      try {
        if (is_punct("@@")) {
          block_attribute(idx, body, nullptr);
          continue;
        }
        field_declaration(idx, name, body, model_syntax, std::move(doc), depth);
      } catch (const abort_declaration&) {
        recover_member(start);
      }
    }
  }

  void field_declaration(std::uint32_t idx, const std::string& parent, schema::object_def& body, bool model_syntax,
                         std::string doc, std::size_t depth) {
    const location at = cur().loc;
    if (cur().kind != tk::ident)
      error_here(schema_error_code::syntax_error, "expected a field name, found " + describe(cur()));
    count_member(at);
    schema::field f;
    f.name = cur().text;
    f.key = f.name;
    f.description = std::move(doc);
    advance();
    bool optional_mark = false;
    if (model_syntax) {
      if (is_punct("?")) {
        optional_mark = true;
        advance();
      }
      expect_punct(":", "after the field name (model fields read `name: type` or `name?: type`)");
    } else if (is_punct(":")) {
      error_here(schema_error_code::syntax_error,
                 "class fields read `name type` (no colon); use `model` for the `name: type` form");
    }
    type_ctx ctx;
    ctx.parent = parent;
    ctx.field = f.name;
    ctx.inline_objects = model_syntax;
    f.type = parse_union(ctx, depth);
    if (optional_mark) f.type.nullable = true;
    // attributes (may continue on the following lines)
    while (is_punct("@")) {
      attribute a = parse_attribute();
      field_attribute(idx, f, a);
    }
    f.required = !f.type.nullable && !f.skip;
    if (model_syntax && is_punct(",")) advance();
    if (!is_punct("}") && !cur().newline_before && cur().kind != tk::end)
      error_here(schema_error_code::syntax_error, "unexpected " + describe(cur()) + " after field '" + f.name + "'");
    body.fields.push_back(std::move(f));
    (*st_.info)[idx].member_locs.push_back(at);
  }

  void field_attribute(std::uint32_t idx, schema::field& f, const attribute& a) {
    if (a.name == "alias") {
      f.key = single_text(a);
    } else if (a.name == "description") {
      f.description = single_text(a);
    } else if (a.name == "skip") {
      no_args(a);
      f.skip = true;
    } else if (a.name == "check" || a.name == "assert") {
      f.type.constraints.push_back(rule(a, a.name == "check"));
    } else if (a.name == "stream.done" || a.name == "stream.not_null" || a.name == "stream.with_state") {
      no_args(a);
      f.type.stream |= stream_bit(a.name);
      st_.hints->push_back(stream_hint{(*st_.info)[idx].declared, f.name, a.name.substr(7)});
    } else {
      error_at(schema_error_code::unknown_attribute, a.loc,
               "unknown field attribute @" + a.name +
                   " (known: @alias, @description, @skip, @check, @assert, @stream.done, @stream.not_null, "
                   "@stream.with_state)");
    }
  }

  // @@attributes of classes (body != nullptr) and enums (values != nullptr).
  void block_attribute(std::uint32_t idx, schema::object_def& body, schema::enum_def* values) {
    (void)values;
    const attribute a = parse_attribute();
    auto& def = st_.all->defs[idx];
    const bool is_enum = std::holds_alternative<schema::enum_def>(def.body) || values != nullptr;
    if (a.name == "description") {
      def.description = single_text(a);
    } else if (a.name == "alias") {
      (*st_.info)[idx].rename = single_text(a);
      (*st_.info)[idx].rename_loc = a.loc;
    } else if (a.name == "assert" || a.name == "check") {
      schema::constraint c = rule(a, a.name == "check");
      if (is_enum) {
        (*st_.enum_rules)[idx].push_back(std::move(c));
      } else {
        schema::invariant inv;
        const auto* check = static_cast<const detail::formula_check*>(c.custom.get());
        inv.description = check->expr().source();
        if (!c.label.empty()) inv.description += " (" + c.label + ")";
        inv.check = c.custom;
        inv.on_fail = c.on_fail;
        body.invariants.push_back(std::move(inv));
        (*st_.info)[idx].invariant_locs.push_back(a.loc);
      }
    } else if (a.name == "dynamic") {
      no_args(a);
      diag(schema_error_code::skipped, a.loc,
           "@@dynamic on '" + def.name + "': the type is used as declared (add fields by editing the schema)");
    } else if (!is_enum && (a.name == "stream.done" || a.name == "stream.not_null")) {
      no_args(a);
      body.stream |= stream_bit(a.name);
      st_.hints->push_back(stream_hint{(*st_.info)[idx].declared, "", a.name.substr(7)});
    } else {
      error_at(schema_error_code::unknown_attribute, a.loc,
               "unknown " + std::string(is_enum ? "enum" : "class") + " attribute @@" + a.name +
                   (is_enum ? " (known: @@alias, @@description, @@assert, @@check, @@dynamic)"
                            : " (known: @@alias, @@description, @@assert, @@check, @@dynamic, @@stream.done, "
                              "@@stream.not_null)"));
    }
  }

  void enum_declaration(std::string doc, location at) {
    (void)at;
    const location name_at = cur().loc;
    const std::string name = declared_name("enum");
    const std::uint32_t idx = new_def(name, name_at, std::move(doc));
    st_.all->defs[idx].body = schema::enum_def{};
    expect_punct("{", "to open the enum body");
    schema::enum_def values;
    schema::object_def unused;
    for (;;) {
      std::string vdoc = take_docs();
      if (is_punct("}")) {
        advance();
        break;
      }
      if (cur().kind == tk::end)
        error_here(schema_error_code::syntax_error, "unexpected end of input: enum '" + name + "' is missing its closing '}'");
      const std::size_t start = p_;
      try {
        if (is_punct("@@")) {
          block_attribute(idx, unused, &values);
          continue;
        }
        const location vat = cur().loc;
        if (cur().kind != tk::ident)
          error_here(schema_error_code::syntax_error, "expected an enum value name, found " + describe(cur()));
        count_member(vat);
        schema::enum_value v;
        v.declared_name = cur().text;
        v.name = v.declared_name;
        v.description = std::move(vdoc);
        v.number = static_cast<std::int64_t>(values.values.size());
        advance();
        while (is_punct("@")) {
          const attribute a = parse_attribute();
          if (a.name == "alias") {
            v.name = single_text(a);  // the alias replaces the declared name in JSON, as in BAML
          } else if (a.name == "description") {
            v.description = single_text(a);
          } else if (a.name == "skip") {
            no_args(a);
            v.skip = true;
          } else {
            error_at(schema_error_code::unknown_attribute, a.loc,
                     "unknown enum value attribute @" + a.name + " (known: @alias, @description, @skip)");
          }
        }
        values.values.push_back(std::move(v));
        (*st_.info)[idx].member_locs.push_back(vat);
        if (!is_punct("}") && !is_punct("@@") && cur().kind != tk::ident && cur().kind != tk::doc && cur().kind != tk::end)
          error_here(schema_error_code::syntax_error, "unexpected " + describe(cur()) + " after enum value '" +
                                                          values.values.back().declared_name + "'");
      } catch (const abort_declaration&) {
        recover_member(start);
      }
    }
    if (values.values.empty()) {
      st_.all->defs[idx].body = std::move(values);
      error_at(schema_error_code::syntax_error, name_at, "enum '" + name + "' declares no values");
    }
    st_.all->defs[idx].body = std::move(values);
  }

  void alias_declaration(std::string doc, location at) {
    (void)at;
    const location name_at = cur().loc;
    const std::string name = declared_name("type alias");
    const std::uint32_t idx = new_def(name, name_at, std::move(doc));
    st_.all->defs[idx].body = schema::alias_def{};
    expect_punct("=", "after the alias name (type Name = ...)");
    type_ctx ctx;
    ctx.parent = name;
    schema::alias_def a;
    a.target = parse_union(ctx, 1);
    while (is_punct("@")) {
      const attribute attr = parse_attribute();
      if (attr.name == "check" || attr.name == "assert") {
        a.target.constraints.push_back(rule(attr, attr.name == "check"));
      } else if (attr.name == "description") {
        st_.all->defs[idx].description = single_text(attr);
      } else {
        error_at(schema_error_code::unknown_attribute, attr.loc,
                 "unknown type alias attribute @" + attr.name + " (known: @check, @assert, @description)");
      }
    }
    st_.all->defs[idx].body = std::move(a);
  }

  // ---- attributes ----
  attribute parse_attribute() {
    attribute a;
    a.loc = cur().loc;
    a.block = is_punct("@@");
    advance();
    if (cur().kind != tk::ident || cur().newline_before)
      error_here(schema_error_code::syntax_error, "expected an attribute name after '@'");
    a.name = cur().text;
    advance();
    while (is_punct(".") && peek().kind == tk::ident && !cur().newline_before) {
      advance();
      a.name += "." + cur().text;
      advance();
    }
    if (is_punct("(") && !cur().newline_before) {
      a.parens = true;
      advance();
      if (!is_punct(")")) {
        for (;;) {
          a.args.push_back(parse_arg());
          if (is_punct(",")) {
            advance();
            continue;
          }
          break;
        }
      }
      expect_punct(")", "to close the arguments of @" + a.name);
    }
    return a;
  }

  attr_arg parse_arg() {
    attr_arg arg;
    arg.loc = cur().loc;
    if ((cur().kind == tk::string || cur().kind == tk::raw_string) && (peek().kind == tk::punct && (peek().text == "," || peek().text == ")"))) {
      arg.kind = attr_arg::kind_t::string;
      arg.text = cur().text;
      advance();
      return arg;
    }
    if (cur().kind == tk::expr) {
      arg.kind = attr_arg::kind_t::expr;
      arg.text = cur().text;
      arg.content = cur().content;
      advance();
      return arg;
    }
    // bare text up to ',' or ')' at depth 0
    const std::size_t from = cur().offset;
    std::size_t to = from;
    int depth = 0;
    while (cur().kind != tk::end) {
      if (depth == 0 && (is_punct(",") || is_punct(")"))) break;
      if (is_punct("{") || is_punct("}") || cur().kind == tk::doc)
        error_here(schema_error_code::syntax_error, "unexpected " + describe(cur()) + " in attribute arguments");
      if (is_punct("(")) ++depth;
      else if (is_punct(")")) --depth;
      to = cur().end;
      advance();
    }
    if (to == from) error_at(schema_error_code::syntax_error, arg.loc, "empty attribute argument");
    std::string_view text = map_.text().substr(from, to - from);
    arg.text = std::string(text);
    return arg;
  }

  std::string single_text(const attribute& a) {
    if (a.args.size() != 1 || a.args[0].kind == attr_arg::kind_t::expr)
      error_at(schema_error_code::invalid_attribute, a.loc, "@" + a.name + " takes one argument: a string");
    return a.args[0].text;
  }

  static std::uint8_t stream_bit(std::string_view name) {
    if (name == "stream.done") return schema::stream_flag::done;
    if (name == "stream.not_null") return schema::stream_flag::not_null;
    return schema::stream_flag::with_state;
  }

  void no_args(const attribute& a) {
    if (a.parens) error_at(schema_error_code::invalid_attribute, a.loc, "@" + a.name + " takes no arguments");
  }

  // @check / @assert: ([name,] {{ expression }} [, action]). The action defaults to noop for
  // @check and reask for @assert.
  schema::constraint rule(const attribute& a, bool soft) {
    const std::string at = (a.block ? "@@" : "@") + a.name;
    const auto is_expr = [](const attr_arg& x) { return x.kind == attr_arg::kind_t::expr; };
    std::size_t body_at = 0;
    while (body_at < a.args.size() && !is_expr(a.args[body_at])) ++body_at;
    if (!a.args.empty() && body_at == a.args.size() && a.args.size() <= 2)
      error_at(schema_error_code::invalid_attribute, a.args.back().loc,
               at + ": the rule must be written as {{ expression }}");
    if (a.args.empty() || body_at == a.args.size() || body_at > 1 || a.args.size() - body_at > 2)
      error_at(schema_error_code::invalid_attribute, a.loc,
               at + " takes ({{ expression }}), (name, {{ expression }}) or either followed by an on-fail action");
    std::string label;
    const attr_arg* body = &a.args[body_at];
    if (body_at == 1) {
      const attr_arg& n = a.args[0];
      label = n.text;
      const bool ok_name = !label.empty() && ident_start(label[0]) &&
                           std::all_of(label.begin(), label.end(), [](char c) { return ident_char(c); });
      if (!ok_name)
        error_at(schema_error_code::invalid_attribute, n.loc, at + ": '" + label + "' is not a valid check name");
    }
    fail_action action = soft ? fail_action::noop : fail_action::reask;
    if (body_at + 1 < a.args.size()) {
      const attr_arg& x = a.args[body_at + 1];
      const std::optional<fail_action> named =
          x.kind == attr_arg::kind_t::bare ? parse_fail_action(x.text) : std::nullopt;
      if (named) action = *named;
      else
        error_at(schema_error_code::invalid_attribute, x.loc,
                 at + ": '" + x.text + "' is not an on-fail action (reask, filter, refrain, noop, exception)");
      if (action == fail_action::fix)
        error_at(schema_error_code::invalid_attribute, x.loc,
                 at + ": a rule written as an expression has no fix (on-fail actions here: reask, filter, refrain, "
                      "noop, exception)");
    }
    std::string err;
    std::size_t off = 0;
    auto e = detail::formula::parse(body->text, err, off, st_.limits.max_depth);
    if (!e) error_at(schema_error_code::invalid_constraint, map_.at(body->content + off), at + ": " + err);
    schema::constraint c;
    c.kind = schema::constraint_kind::predicate;
    c.label = label;
    c.on_fail = action;
    c.text = detail::formula_rule_text(*e, label);
    c.custom = std::make_shared<detail::formula_check>(std::move(e), action == fail_action::noop, label);
    return c;
  }

  // Attributes written after a type inside parentheses, or after a whole type expression.
  void type_attributes(schema::type& t, std::size_t depth) {
    (void)depth;
    while (is_punct("@")) {
      const attribute a = parse_attribute();
      if (a.name == "check" || a.name == "assert") {
        t.constraints.push_back(rule(a, a.name == "check"));
      } else if (a.name == "stream.done" || a.name == "stream.not_null" || a.name == "stream.with_state") {
        no_args(a);  // streaming attributes: applied by partial reads, nothing to validate
        t.stream |= stream_bit(a.name);
      } else {
        error_at(schema_error_code::unknown_attribute, a.loc,
                 "unknown type attribute @" + a.name +
                     " (known here: @check, @assert, @stream.done, @stream.not_null, @stream.with_state)");
      }
    }
  }

  // ---- types ----
  void check_depth(std::size_t depth) {
    if (depth > st_.limits.max_depth)
      limit(cur().loc, "type nested more than " + std::to_string(st_.limits.max_depth) + " levels deep");
  }

  static bool plain_null(const schema::type& t) { return t.kind == kind::null && t.constraints.empty(); }

  schema::type parse_union(type_ctx& ctx, std::size_t depth) {
    check_depth(depth);
    std::vector<schema::type> alts;
    alts.push_back(parse_postfix(ctx, depth));
    std::size_t count = 1;
    while (is_punct("|")) {
      advance();
      if (++count > 4096) limit(cur().loc, "union with more than 4096 alternatives");
      alts.push_back(parse_postfix(ctx, depth));
    }
    if (alts.size() == 1) return std::move(alts.front());
    // Flatten plain nested unions; `null` alternatives make the union nullable.
    std::vector<schema::type> flat;
    bool nullable = false;
    for (auto& a : alts) {
      if (plain_null(a)) {
        nullable = true;
      } else if (a.kind == kind::union_ && a.constraints.empty() && a.stream == 0) {
        nullable = nullable || a.nullable;
        for (auto& x : a.args) flat.push_back(std::move(x));
      } else {
        flat.push_back(std::move(a));
      }
    }
    if (flat.empty()) return schema::make_primitive(kind::null);
    if (flat.size() == 1) {
      schema::type t = std::move(flat.front());
      t.nullable = t.nullable || nullable;
      return t;
    }
    schema::type u;
    u.kind = kind::union_;
    u.args = std::move(flat);
    u.nullable = nullable;
    return u;
  }

  schema::type parse_postfix(type_ctx& ctx, std::size_t depth) {
    schema::type t = parse_primary(ctx, depth);
    std::size_t layers = 0;
    for (;;) {
      if (is_punct("[") && peek().kind == tk::punct && peek().text == "]") {
        if (++layers + depth > st_.limits.max_depth)
          limit(cur().loc, "type nested more than " + std::to_string(st_.limits.max_depth) + " levels deep");
        advance();
        advance();
        t = schema::make_array(std::move(t));
      } else if (is_punct("?")) {
        advance();
        if (t.kind != kind::null) t.nullable = true;
      } else {
        return t;
      }
    }
  }

  schema::type parse_primary(type_ctx& ctx, std::size_t depth) {
    check_depth(depth);
    const token& tok = cur();
    switch (tok.kind) {
      case tk::string: {
        schema::type t;
        t.kind = kind::literal;
        t.literal = json::string(tok.text);
        advance();
        return t;
      }
      case tk::number: {
        schema::type t;
        t.kind = kind::literal;
        std::int64_t i = 0;
        const auto r = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), i);
        if (r.ec == std::errc() && r.ptr == tok.text.data() + tok.text.size()) {
          t.literal = i;
        } else {
          double d = 0;
          const auto rd = std::from_chars(tok.text.data(), tok.text.data() + tok.text.size(), d);
          if (rd.ec != std::errc() || !std::isfinite(d))
            error_here(schema_error_code::syntax_error, "number literal " + tok.text + " is out of range");
          t.literal = d;
        }
        advance();
        return t;
      }
      case tk::punct:
        if (tok.text == "(") {
          advance();
          schema::type t = parse_union(ctx, depth + 1);
          type_attributes(t, depth);
          expect_punct(")", "to close the parenthesis");
          return t;
        }
        if (tok.text == "{") {
          if (!ctx.inline_objects)
            error_here(schema_error_code::unsupported,
                       "inline object types are only allowed in `model` declarations; declare a class instead");
          return inline_object(ctx, depth);
        }
        break;
      case tk::ident: {
        const std::string w = tok.text;
        const location at = tok.loc;
        if (w == "string") return primitive(kind::string);
        if (w == "int") return primitive(kind::integer);
        if (w == "float") return primitive(kind::number);
        if (w == "bool") return primitive(kind::boolean);
        if (w == "null") return primitive(kind::null);
        if (w == "true" || w == "false") {
          schema::type t;
          t.kind = kind::literal;
          t.literal = (w == "true");
          advance();
          return t;
        }
        if (w == "map") {
          advance();
          expect_punct("<", "after map (map<K, V>)");
          schema::type key = parse_union(ctx, depth + 1);
          expect_punct(",", "between the key and value types of map<K, V>");
          schema::type value = parse_union(ctx, depth + 1);
          expect_punct(">", "to close map<K, V>");
          schema::type t;
          t.kind = kind::map;
          t.args.push_back(std::move(key));
          t.args.push_back(std::move(value));
          return t;
        }
        if (w == "list" && peek().kind == tk::punct && peek().text == "[") {
          advance();
          advance();
          schema::type item = parse_union(ctx, depth + 1);
          expect_punct("]", "to close list[T]");
          return schema::make_array(std::move(item));
        }
        if (const std::optional<media_kind> media = parse_media_kind(w)) {
          // A media field of an input: a string naming the media (docs/media.md).
          schema::type t = primitive(kind::string);
          t.constraints.push_back(schema::media_format(*media));
          return t;
        }
        if (w == "video")
          error_here(schema_error_code::unsupported, "media type 'video' is not supported (image, pdf and audio are)");
        advance();
        st_.refs.push_back(ref_site{w, at});
        return schema::make_ref(w);
      }
      default: break;
    }
    error_here(schema_error_code::syntax_error, "expected a type, found " + describe(tok));
  }

  schema::type primitive(kind k) {
    advance();
    schema::type t = schema::make_primitive(k);
    return t;
  }

  schema::type inline_object(type_ctx& ctx, std::size_t depth) {
    const location at = cur().loc;
    advance();  // {
    std::string name = ctx.parent + "_" + ctx.field;
    const std::string base = name;
    for (int n = 2; std::any_of(st_.info->begin(), st_.info->end(), [&](const def_info& i) { return i.declared == name; }); ++n)
      name = base + "_" + std::to_string(n);
    const std::uint32_t idx = new_def(name, at, {});
    schema::object_def body = object_body(idx, name, true, depth + 1);
    st_.all->defs[idx].body = std::move(body);
    st_.refs.push_back(ref_site{name, at});
    return schema::make_ref(name);
  }

  token_stream& t_;
  const source_map& map_;
  parse_state& st_;
  std::size_t p_ = 0;
};

}  // namespace

void parse_declarations(token_stream& toks, const source_map& map, parse_state& st) {
  parser(toks, map, st).parse_file();
}

std::optional<schema::type> parse_type_expression(token_stream& toks, const source_map& map, parse_state& st) {
  return parser(toks, map, st).parse_type_only();
}

}  // namespace covenant::schema_file_impl
