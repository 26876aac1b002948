// The formulas' parser: recursive descent into the syntax tree, filter arguments checked at load.
#include <boost/json/string.hpp>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema_formula_impl.hpp"

namespace covenant::detail::formula_impl {

namespace {

class parser {
 public:
  parser(std::string_view s, std::size_t max_depth) : lex_(s), max_depth_(max_depth) { advance(); }

  node parse_all() {
    node n = parse_or();
    if (cur_.kind != tok::end) fail("unexpected '" + describe(cur_) + "'");
    return n;
  }

 private:
  [[noreturn]] void fail(std::string message) const { throw parse_failure{std::move(message), cur_.offset}; }

  static std::string describe(const token& t) {
    switch (t.kind) {
      case tok::end: return "end of expression";
      case tok::number: return "number";
      case tok::string: return "string";
      default: return t.text;
    }
  }

  void advance() {
    cur_ = lex_.next();
    if (cur_.kind == tok::error) fail(cur_.text);
  }

  bool is_punct(std::string_view p) const { return cur_.kind == tok::punct && cur_.text == p; }
  bool is_word(std::string_view w) const { return cur_.kind == tok::ident && cur_.text == w; }

  void expect_punct(std::string_view p) {
    if (!is_punct(p)) fail("expected '" + std::string(p) + "' but found '" + describe(cur_) + "'");
    advance();
  }

  struct depth_guard {
    parser& p;
    explicit depth_guard(parser& q) : p(q) {
      if (++p.depth_ > p.max_depth_) p.fail("expression is nested too deeply");
    }
    ~depth_guard() { --p.depth_; }
  };

  // Left-leaning chains (a and b and c ...) are built in loops; their length bounds the depth of
  // the tree as well.
  void chain_step(std::size_t& n) const {
    if (++n > 256) fail("too many operators in one expression");
  }

  static node binary(op o, node a, node b) {
    node n;
    n.o = o;
    n.kids.push_back(std::move(a));
    n.kids.push_back(std::move(b));
    return n;
  }

  node parse_or() {
    depth_guard g(*this);
    node n = parse_and();
    std::size_t steps = 0;
    while (is_word("or")) {
      chain_step(steps);
      advance();
      n = binary(op::or_, std::move(n), parse_and());
    }
    return n;
  }

  node parse_and() {
    node n = parse_not();
    std::size_t steps = 0;
    while (is_word("and")) {
      chain_step(steps);
      advance();
      n = binary(op::and_, std::move(n), parse_not());
    }
    return n;
  }

  node parse_not() {
    depth_guard g(*this);
    if (is_word("not")) {
      advance();
      node n;
      n.o = op::not_;
      n.kids.push_back(parse_not());
      return n;
    }
    return parse_compare();
  }

  node parse_compare() {
    node n = parse_add();
    std::size_t steps = 0;
    for (;;) {
      chain_step(steps);
      op o;
      if (is_punct("==")) o = op::eq;
      else if (is_punct("!=")) o = op::ne;
      else if (is_punct("<")) o = op::lt;
      else if (is_punct("<=")) o = op::le;
      else if (is_punct(">")) o = op::gt;
      else if (is_punct(">=")) o = op::ge;
      else if (is_word("in")) o = op::in;
      else if (is_word("not")) {
        advance();
        if (!is_word("in")) fail("expected 'in' after 'not'");
        o = op::not_in;
      } else if (is_word("is")) {
        fail("'is' tests are not supported (compare with == instead)");
      } else if (is_punct("=")) {
        fail("'=' is not a comparison (write ==)");
      } else {
        return n;
      }
      advance();
      n = binary(o, std::move(n), parse_add());
    }
  }

  node parse_add() {
    node n = parse_mul();
    std::size_t steps = 0;
    for (;;) {
      chain_step(steps);
      op o;
      if (is_punct("+")) o = op::add;
      else if (is_punct("-")) o = op::sub;
      else if (is_punct("~")) o = op::concat;
      else return n;
      advance();
      n = binary(o, std::move(n), parse_mul());
    }
  }

  node parse_mul() {
    node n = parse_unary();
    std::size_t steps = 0;
    for (;;) {
      chain_step(steps);
      op o;
      if (is_punct("*")) o = op::mul;
      else if (is_punct("/")) o = op::div;
      else if (is_punct("%")) o = op::mod;
      else if (is_punct("//")) fail("'//' (floor division) is not supported");
      else return n;
      advance();
      n = binary(o, std::move(n), parse_unary());
    }
  }

  node parse_unary() {
    depth_guard g(*this);
    if (is_punct("-")) {
      advance();
      node inner = parse_unary();
      if (inner.o == op::literal && inner.value.is_int64()) {
        inner.value = -inner.value.get_int64();
        return inner;
      }
      if (inner.o == op::literal && inner.value.is_double()) {
        inner.value = -inner.value.get_double();
        return inner;
      }
      node n;
      n.o = op::neg;
      n.kids.push_back(std::move(inner));
      return n;
    }
    return parse_postfix();
  }

  node parse_postfix() {
    node n = parse_primary();
    std::size_t steps = 0;
    for (;;) {
      chain_step(steps);
      if (is_punct(".")) {
        advance();
        if (cur_.kind != tok::ident && cur_.kind != tok::number) fail("expected a member name after '.'");
        node m;
        m.o = op::member;
        if (cur_.kind == tok::ident) {
          m.name = cur_.text;
        } else {
          m.o = op::index;  // this.0 == this[0]
        }
        if (m.o == op::index) {
          node idx;
          idx.value = cur_.number;
          m.kids.push_back(std::move(n));
          m.kids.push_back(std::move(idx));
        } else {
          m.kids.push_back(std::move(n));
        }
        advance();
        n = std::move(m);
      } else if (is_punct("[")) {
        depth_guard g(*this);
        advance();
        node idx = parse_or();
        expect_punct("]");
        n = binary(op::index, std::move(n), std::move(idx));
      } else if (is_punct("|")) {
        advance();
        if (cur_.kind != tok::ident) fail("expected a filter name after '|'");
        const std::string name = cur_.text;
        const std::size_t at = cur_.offset;
        advance();
        std::vector<filter_arg> args;
        if (is_punct("(")) {
          depth_guard g(*this);
          advance();
          while (!is_punct(")")) {
            filter_arg a;
            a.at = cur_.offset;
            if (cur_.kind == tok::ident && next_is_punct("=")) {  // name=value, as in Jinja
              a.key = cur_.text;
              advance();
              advance();
            } else if (!args.empty() && !args.back().key.empty()) {
              fail("a positional argument cannot follow a keyword argument (in '" + name + "(...)')");
            }
            a.value = parse_or();
            args.push_back(std::move(a));
            if (!is_punct(",")) break;
            advance();  // a trailing comma is allowed, as in Jinja
          }
          expect_punct(")");
        }
        n = make_filter(name, at, std::move(n), std::move(args));
      } else {
        return n;
      }
    }
  }

  // One argument of a filter call: positional (empty key) or key=value.
  struct filter_arg {
    std::string key;
    std::size_t at = 0;  // where the argument (its key, if any) starts
    node value;
  };

  bool next_is_punct(std::string_view p) const {
    lexer ahead = lex_;
    const token t = ahead.next();
    return t.kind == tok::punct && t.text == p;
  }

  static std::string joined(std::initializer_list<std::string_view> names) {
    std::string out;
    for (auto n : names) {
      if (!out.empty()) out += ", ";
      out += n;
    }
    return out;
  }

  // Binds the arguments of `filter` to its parameters as Python does: positional ones in order,
  // then keywords by name. Each problem is reported where its argument starts.
  static std::vector<filter_arg*> bind(const std::string& filter, std::vector<filter_arg>& args,
                                       std::initializer_list<std::string_view> params) {
    std::vector<filter_arg*> slots(params.size(), nullptr);
    std::size_t next = 0;
    for (filter_arg& a : args) {
      std::size_t slot = 0;
      if (a.key.empty()) {
        if (next >= params.size())
          throw parse_failure{"filter '" + filter + "' takes at most " + std::to_string(params.size()) +
                                  (params.size() == 1 ? " argument (" : " arguments (") + joined(params) + ")",
                              a.at};
        slot = next++;
      } else {
        slot = params.size();
        std::size_t i = 0;
        for (auto p : params) {
          if (p == a.key) slot = i;
          ++i;
        }
        if (slot == params.size())
          throw parse_failure{"filter '" + filter + "' has no argument '" + a.key + "' (its arguments: " +
                                  joined(params) + ")",
                              a.at};
        if (slots[slot] != nullptr)
          throw parse_failure{"filter '" + filter + "' is given argument '" + a.key + "' twice", a.at};
      }
      slots[slot] = &a;
    }
    return slots;
  }

  static bool is_text(const node& n) { return n.o == op::literal && n.value.is_string(); }

  static node literal(json::value v) {
    node n;
    n.value = std::move(v);
    return n;
  }

  // attribute="amount" or a dotted path "price.amount" (a number part indexes a list), as in Jinja.
  static void check_attribute(const std::string& filter, const filter_arg& a) {
    if (!is_text(a.value))
      throw parse_failure{filter + ": attribute must be a string literal naming a member of each item (" + filter +
                              "(attribute=\"amount\"))",
                          a.at};
    const std::string_view path(a.value.value.get_string().data(), a.value.value.get_string().size());
    if (path.empty() || path.front() == '.' || path.back() == '.' || path.find("..") != std::string_view::npos)
      throw parse_failure{filter + ": attribute must be a member name or a dotted path (\"price.amount\")", a.at};
  }

  // The filter `name` applied to `input`, its arguments bound to its parameters and checked: every
  // argument problem is found here, when the schema is loaded.
  node make_filter(const std::string& name, std::size_t at, node input, std::vector<filter_arg> args) const {
    node f;
    f.o = op::filter;
    f.name = name;
    f.kids.push_back(std::move(input));
    static constexpr std::string_view no_args[] = {"length", "lower", "upper", "trim", "abs",
                                                   "int",    "float", "first", "last", "count"};
    for (auto x : no_args) {
      if (name == x) {
        if (!args.empty()) throw parse_failure{"filter '" + name + "' takes no arguments", at};
        if (name == "count") f.name = "length";
        return f;
      }
    }
    if (name == "regex_match") {
      const auto slot = bind(name, args, {"pattern"});
      if (slot[0] == nullptr || !is_text(slot[0]->value))
        throw parse_failure{"regex_match takes one string literal (the regular expression)", at};
      std::string error;
      const auto& pat = slot[0]->value.value.get_string();
      f.regex = schema::compile_pattern(std::string_view(pat.data(), pat.size()), &error);
      if (!f.regex) throw parse_failure{"invalid regular expression: " + error, at};
      f.kids.push_back(std::move(slot[0]->value));
      return f;
    }
    if (name == "unique") {
      // unique, or unique("key") / unique(attribute="key"): the list without later duplicates
      const auto slot = bind(name, args, {"attribute"});
      if (slot[0] == nullptr) return f;
      if (!is_text(slot[0]->value))
        throw parse_failure{"unique takes no argument or one string literal (the member to compare, "
                            "unique(attribute=\"id\"))",
                            slot[0]->at};
      f.kids.push_back(std::move(slot[0]->value));
      return f;
    }
    if (name == "format") {
      static constexpr std::string_view known[] = {"uri", "uuid", "date-time", "date", "time", "email"};
      const auto slot = bind(name, args, {"name"});
      if (slot[0] != nullptr && is_text(slot[0]->value)) {
        const auto& text = slot[0]->value.value.get_string();
        for (auto k : known) {
          if (k == std::string_view(text.data(), text.size())) {
            f.kids.push_back(std::move(slot[0]->value));
            return f;
          }
        }
      }
      throw parse_failure{"format takes one of the names \"uri\", \"uuid\", \"date-time\", \"date\", \"time\", "
                          "\"email\"",
                          at};
    }
    if (name == "sum") {
      // sum(attribute=none, start=0) -> kids: input, attribute (a string or none), start
      const auto slot = bind(name, args, {"attribute", "start"});
      const bool no_attribute = slot[0] == nullptr || (slot[0]->value.o == op::literal && slot[0]->value.value.is_null());
      if (!no_attribute) check_attribute(name, *slot[0]);
      if (slot[1] != nullptr && slot[1]->value.o == op::literal && !is_number(slot[1]->value.value))
        throw parse_failure{"sum: start must be a number (sum(start=0))", slot[1]->at};
      f.kids.push_back(no_attribute ? literal(nullptr) : std::move(slot[0]->value));
      f.kids.push_back(slot[1] != nullptr ? std::move(slot[1]->value) : literal(std::int64_t{0}));
      return f;
    }
    if (name == "map") {
      // As in Jinja: keywords only is the attribute form; a first positional argument names a filter
      // and the rest are that filter's.
      if (args.empty() || !args.front().key.empty()) {
        // map(attribute="name", default=none) -> kids: input, attribute, default
        const auto slot = bind(name, args, {"attribute", "default"});
        if (slot[0] == nullptr)
          throw parse_failure{"map takes attribute=\"name\" (that member of each item; default= for items without "
                              "it) or the name of a filter to apply to each item (map(\"lower\"))",
                              at};
        check_attribute(name, *slot[0]);
        f.kids.push_back(std::move(slot[0]->value));
        f.kids.push_back(slot[1] != nullptr ? std::move(slot[1]->value) : literal(nullptr));
        return f;
      }
      // map("filter", args...) -> kids: input, the filter applied to `this` (each item)
      if (!is_text(args.front().value))
        throw parse_failure{"map: the filter to apply to each item must be named by a string (map(\"lower\"))",
                            args.front().at};
      const std::size_t filter_at = args.front().at;
      const std::string filter(args.front().value.value.get_string());
      std::vector<filter_arg> rest;
      for (std::size_t i = 1; i < args.size(); ++i) {
        if (args[i].value.o != op::literal)
          throw parse_failure{"map: the arguments passed on to '" + filter + "' must be literals", args[i].at};
        rest.push_back(std::move(args[i]));
      }
      node item;
      item.o = op::this_;
      f.kids.push_back(make_filter(filter, filter_at, std::move(item), std::move(rest)));
      return f;
    }
    if (name == "round") {
      // round(precision=0, method="common") -> kids: input, precision, method
      const auto slot = bind(name, args, {"precision", "method"});
      if (slot[0] != nullptr) {
        const json::value& p = slot[0]->value.value;
        if (slot[0]->value.o != op::literal || !p.is_int64() || p.get_int64() < 0 || p.get_int64() > 15)
          throw parse_failure{"round: precision must be a whole number from 0 to 15", slot[0]->at};
      }
      if (slot[1] != nullptr) {
        const node& m = slot[1]->value;
        if (!is_text(m) || (m.value.get_string() != "common" && m.value.get_string() != "ceil" &&
                            m.value.get_string() != "floor"))
          throw parse_failure{"round: method must be \"common\", \"ceil\" or \"floor\"", slot[1]->at};
      }
      f.kids.push_back(slot[0] != nullptr ? std::move(slot[0]->value) : literal(std::int64_t{0}));
      f.kids.push_back(slot[1] != nullptr ? std::move(slot[1]->value) : literal(json::string("common")));
      return f;
    }
    throw parse_failure{"unknown filter '" + name +
                            "' (known: length, lower, upper, trim, abs, round, int, float, first, last, sum, map, "
                            "regex_match, unique, format)",
                        at};
  }

  node parse_primary() {
    depth_guard g(*this);
    node n;
    switch (cur_.kind) {
      case tok::number:
        n.value = cur_.number;
        advance();
        return n;
      case tok::string:
        n.value = json::string(cur_.text);
        advance();
        return n;
      case tok::ident: {
        const std::string& w = cur_.text;
        if (w == "this") n.o = op::this_;
        else if (w == "true" || w == "True") n.value = true;
        else if (w == "false" || w == "False") n.value = false;
        else if (w == "none" || w == "None" || w == "null") n.value = nullptr;
        else fail("unknown name '" + w + "' (expressions read the value as `this`)");
        advance();
        return n;
      }
      case tok::punct:
        if (is_punct("(")) {
          advance();
          n = parse_or();
          expect_punct(")");
          return n;
        }
        if (is_punct("[")) {
          advance();
          n.o = op::list;
          if (!is_punct("]")) {
            for (;;) {
              n.kids.push_back(parse_or());
              if (is_punct(",")) {
                advance();
                continue;
              }
              break;
            }
          }
          expect_punct("]");
          return n;
        }
        break;
      default: break;
    }
    fail("expected a value but found '" + describe(cur_) + "'");
  }

  lexer lex_;
  token cur_;
  std::size_t depth_ = 0;
  std::size_t max_depth_;
};

}  // namespace

node parse_formula(std::string_view source, std::size_t max_depth) {
  parser p(source, max_depth);
  return p.parse_all();
}

}  // namespace covenant::detail::formula_impl
