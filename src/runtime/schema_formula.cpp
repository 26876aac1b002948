// The @check/@assert expression language: parser, evaluator, translation to keyword constraints.
#include "schema_formula.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include "covenant/types/formats.hpp"
#include "covenant/types/detail/utf8.hpp"
#include "covenant/types/json_equal.hpp"
#include "types/number_text.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace covenant::detail {

namespace json = boost::json;

struct formula::node {
  enum class op : std::uint8_t {
    literal,
    this_,
    list,
    member,   // kids[0].name
    index,    // kids[0][kids[1]]
    filter,   // kids[0]|name(kids[1..])
    not_,
    neg,
    and_,
    or_,
    eq,
    ne,
    lt,
    le,
    gt,
    ge,
    in,
    not_in,
    add,
    sub,
    mul,
    div,
    mod,
    concat,
  };
  op o = op::literal;
  json::value value;
  std::string name;
  std::vector<node> kids;
  std::shared_ptr<const schema::compiled_pattern> regex;
};

formula::formula() = default;
formula::~formula() = default;

namespace {

using node = formula::node;
using op = node::op;

// ---- tokenizer ----------------------------------------------------------------------------------

enum class tok : std::uint8_t { end, ident, number, string, punct, error };

struct token {
  tok kind = tok::end;
  std::string text;  // identifier, punctuation, decoded string
  json::value number;
  std::size_t offset = 0;
};

bool ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }

class lexer {
 public:
  explicit lexer(std::string_view s) : s_(s) {}

  token next() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    token t;
    t.offset = i_;
    if (i_ >= s_.size()) return t;
    const char c = s_[i_];
    if (ident_start(c)) {
      const std::size_t b = i_;
      while (i_ < s_.size() && ident_char(s_[i_])) ++i_;
      t.kind = tok::ident;
      t.text = std::string(s_.substr(b, i_ - b));
      return t;
    }
    if (digit(c)) {
      const std::size_t b = i_;
      bool integral = true;
      i_ = number_end(s_, i_, integral);
      const std::string_view text = s_.substr(b, i_ - b);
      t.kind = tok::number;
      if (integral) {
        std::int64_t v = 0;
        const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
        if (r.ec == std::errc()) {
          t.number = v;
          return t;
        }
      }
      double d = 0;
      const auto r = std::from_chars(text.data(), text.data() + text.size(), d);
      if (r.ec != std::errc() || !std::isfinite(d)) {
        t.kind = tok::error;
        t.text = "number out of range";
        return t;
      }
      t.number = d;
      return t;
    }
    if (c == '"' || c == '\'') {
      const char q = c;
      ++i_;
      std::string out;
      while (i_ < s_.size() && s_[i_] != q) {
        if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
          const char e = s_[i_ + 1];
          switch (e) {
            case '\\': out.push_back('\\'); break;
            case '"': out.push_back('"'); break;
            case '\'': out.push_back('\''); break;
            case 'n': out.push_back('\n'); break;
            case 't': out.push_back('\t'); break;
            case 'r': out.push_back('\r'); break;
            default:  // unknown escapes stay as written (regular expressions: \d, \s, \.)
              out.push_back('\\');
              out.push_back(e);
          }
          i_ += 2;
          continue;
        }
        out.push_back(s_[i_++]);
      }
      if (i_ >= s_.size()) {
        t.kind = tok::error;
        t.text = "unterminated string";
        return t;
      }
      ++i_;
      t.kind = tok::string;
      t.text = std::move(out);
      return t;
    }
    static constexpr std::string_view two[] = {"==", "!=", "<=", ">=", "//"};
    for (auto p : two) {
      if (s_.substr(i_, 2) == p) {
        i_ += 2;
        t.kind = tok::punct;
        t.text = std::string(p);
        return t;
      }
    }
    static constexpr std::string_view one = "<>()[].,|+-*/%~=";
    if (one.find(c) != std::string_view::npos) {
      ++i_;
      t.kind = tok::punct;
      t.text = std::string(1, c);
      return t;
    }
    t.kind = tok::error;
    t.text = std::string("unexpected character '") + c + "'";
    return t;
  }

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

// ---- parser -------------------------------------------------------------------------------------

bool is_number(const json::value& v);

struct parse_failure {
  std::string message;
  std::size_t offset;
};

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

// ---- evaluation ---------------------------------------------------------------------------------

bool truthy(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return false;
    case json::kind::bool_: return v.get_bool();
    case json::kind::int64: return v.get_int64() != 0;
    case json::kind::uint64: return v.get_uint64() != 0;
    case json::kind::double_: return v.get_double() != 0;
    case json::kind::string: return !v.get_string().empty();
    case json::kind::array: return !v.get_array().empty();
    case json::kind::object: return !v.get_object().empty();
  }
  return false;
}

bool is_number(const json::value& v) { return v.is_int64() || v.is_uint64() || v.is_double(); }

double as_double(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  if (v.is_double()) return v.get_double();
  return 0;
}

// -1, 0, 1; nullopt when the kinds cannot be ordered.
std::optional<int> order(const json::value& a, const json::value& b) {
  if (is_number(a) && is_number(b)) {
    const double x = as_double(a);
    const double y = as_double(b);
    if (x < y) return -1;
    if (x > y) return 1;
    if (x == y) return 0;
    return std::nullopt;  // NaN
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.get_string().compare(b.get_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  return std::nullopt;
}

json::value number_result(double v) {
  if (std::isfinite(v) && std::trunc(v) == v && std::fabs(v) < 9007199254740992.0)
    return json::value(static_cast<std::int64_t>(v));
  return json::value(v);
}

json::value arithmetic(op o, const json::value& a, const json::value& b) {
  if (o == op::concat) {
    auto text = [](const json::value& v) -> std::string {
      if (v.is_string()) return std::string(v.get_string());
      if (v.is_null()) return "";
      if (v.is_bool()) return v.get_bool() ? "true" : "false";
      if (v.is_int64()) return std::to_string(v.get_int64());
      if (v.is_uint64()) return std::to_string(v.get_uint64());
      if (v.is_double()) {
        char buf[32];
        auto r = std::to_chars(buf, buf + sizeof buf, v.get_double());
        return std::string(buf, static_cast<std::size_t>(r.ptr - buf));
      }
      return "";
    };
    return json::string(text(a) + text(b));
  }
  if (o == op::add && a.is_string() && b.is_string())
    return json::string(std::string(a.get_string()) + std::string(b.get_string()));
  if (!is_number(a) || !is_number(b)) return nullptr;
  const bool ints = !a.is_double() && !b.is_double();
  const double x = as_double(a);
  const double y = as_double(b);
  switch (o) {
    case op::add: return ints ? number_result(x + y) : json::value(x + y);
    case op::sub: return ints ? number_result(x - y) : json::value(x - y);
    case op::mul: return ints ? number_result(x * y) : json::value(x * y);
    case op::div:
      if (y == 0) return nullptr;
      return json::value(x / y);
    case op::mod:
      if (y == 0) return nullptr;
      return ints ? number_result(std::fmod(x, y)) : json::value(std::fmod(x, y));
    default: return nullptr;
  }
}

std::string trimmed(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

json::value eval(const node& n, const json::value& self);

// How an evaluation error names a value: its kind, and the value itself when it is short.
std::string describe_value(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return v.get_bool() ? "a boolean (true)" : "a boolean (false)";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "a number";
    case json::kind::string: {
      std::string_view text(v.get_string().data(), v.get_string().size());
      std::string out = "a string (\"";
      if (text.size() <= 40) {
        out += text;
      } else {
        std::size_t cut = 40;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // a whole character
        out += text.substr(0, cut);
        out += "...";
      }
      return out + "\")";
    }
    case json::kind::array: return "a list";
    case json::kind::object: return "an object";
  }
  return "a value";
}

// The member at `path` ("amount", "price.amount", "lines.0") of `item`, as Jinja's attribute
// lookup reads it; nullptr when there is none.
const json::value* attribute_of(const json::value& item, std::string_view path) {
  const json::value* cur = &item;
  for (;;) {
    const std::size_t dot = path.find('.');
    const std::string_view part = path.substr(0, dot);
    if (const json::object* o = cur->if_object()) {
      cur = o->if_contains(part);
    } else if (const json::array* a = cur->if_array()) {
      std::size_t i = 0;
      const auto r = std::from_chars(part.data(), part.data() + part.size(), i);
      cur = r.ec == std::errc() && r.ptr == part.data() + part.size() && i < a->size() ? &(*a)[i] : nullptr;
    } else {
      cur = nullptr;
    }
    if (cur == nullptr || dot == std::string_view::npos) return cur;
    path.remove_prefix(dot + 1);
  }
}

std::string item_name(std::size_t i) { return "item [" + std::to_string(i) + "]"; }

[[noreturn]] void no_attribute(std::string_view filter, std::size_t i, const json::value& item, std::string_view path) {
  std::string message = std::string(filter) + ": " + item_name(i);
  if (!item.is_object() && !item.is_array()) message += " (" + describe_value(item) + ")";
  throw evaluation_error(message + " has no attribute \"" + std::string(path) + "\"");
}

bool to_int64(const json::value& v, std::int64_t& out) {
  if (v.is_int64()) {
    out = v.get_int64();
    return true;
  }
  if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    out = static_cast<std::int64_t>(v.get_uint64());
    return true;
  }
  return false;
}

// start + the terms: an integer when every one is an integer and the total fits in 64 bits,
// otherwise a float added up in order with Neumaier's compensation (as Python's sum since 3.12).
json::value sum_of(const json::value& start, const std::vector<const json::value*>& terms) {
  bool floats = start.is_double();
  for (const json::value* t : terms) floats = floats || t->is_double();
  if (!floats) {
    std::int64_t total = 0;
    bool exact = to_int64(start, total);
    for (const json::value* t : terms) {
      std::int64_t x = 0;
      if (!exact || !to_int64(*t, x) || __builtin_add_overflow(total, x, &total)) {
        exact = false;
        break;
      }
    }
    if (exact) return total;
  }
  double s = as_double(start);
  double c = 0;
  for (const json::value* t : terms) {
    const double x = as_double(*t);
    const double u = s + x;
    c += std::fabs(s) >= std::fabs(x) ? (s - u) + x : (x - u) + s;
    s = u;
  }
  if (!std::isfinite(s)) return json::value(s);
  return json::value(s + c);
}

// Python's round(x, digits): the nearest value with that many decimals, halves (of the exact
// binary value) to even.
double round_common(double x, std::int64_t digits) {
  if (!std::isfinite(x) || std::fabs(x) >= 4503599627370496.0) return x;  // 2^52 and up: whole numbers
  char buf[64];
  const auto w = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, static_cast<int>(digits));
  double out = x;
  if (w.ec == std::errc()) std::from_chars(buf, w.ptr, out);
  return out;
}

json::value apply_filter(const node& n, const json::value& self) {
  json::value v = eval(n.kids[0], self);
  const std::string& f = n.name;
  if (f == "length") {
    if (v.is_string()) return static_cast<std::int64_t>(code_points(v.get_string()));
    if (v.is_array()) return static_cast<std::int64_t>(v.get_array().size());
    if (v.is_object()) return static_cast<std::int64_t>(v.get_object().size());
    return nullptr;
  }
  if (f == "lower" || f == "upper") {
    if (!v.is_string()) return nullptr;
    std::string s(v.get_string());
    for (char& c : s) {
      if (f == "lower" && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (f == "upper" && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    }
    return json::string(s);
  }
  if (f == "trim") return v.is_string() ? json::value(json::string(trimmed(v.get_string()))) : json::value(nullptr);
  if (f == "abs") {
    if (v.is_int64()) return v.get_int64() < 0 ? number_result(-as_double(v)) : v;
    if (is_number(v)) return json::value(std::fabs(as_double(v)));
    return nullptr;
  }
  if (f == "int") {
    if (is_number(v)) return number_result(std::trunc(as_double(v)));
    if (v.is_string()) {
      std::int64_t i = 0;
      const std::string s = trimmed(v.get_string());
      const auto r = std::from_chars(s.data(), s.data() + s.size(), i);
      if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return i;
    }
    return nullptr;
  }
  if (f == "float") {
    if (is_number(v)) return json::value(as_double(v));
    if (v.is_string()) {
      double d = 0;
      const std::string s = trimmed(v.get_string());
      const auto r = std::from_chars(s.data(), s.data() + s.size(), d);
      if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return d;
    }
    return nullptr;
  }
  if (f == "first" || f == "last") {
    if (v.is_array() && !v.get_array().empty()) return f == "first" ? v.get_array().front() : v.get_array().back();
    return nullptr;
  }
  if (f == "regex_match") {
    if (!v.is_string() || !n.regex) return false;
    return schema::pattern_matches(*n.regex, v.get_string());
  }
  if (f == "format") {
    if (!v.is_string()) return false;
    const json::string& name = n.kids[1].value.get_string();
    const json::string& text = v.get_string();
    return formats::matches_format(std::string_view(name.data(), name.size()), std::string_view(text.data(), text.size()));
  }
  if (f == "sum") {
    if (!v.is_array()) throw evaluation_error("sum: expected a list, got " + describe_value(v));
    const json::string* attribute = n.kids[1].value.if_string();
    const std::string_view path = attribute != nullptr ? std::string_view(attribute->data(), attribute->size()) : "";
    const json::value start = eval(n.kids[2], self);
    if (!is_number(start)) throw evaluation_error("sum: start must be a number, got " + describe_value(start));
    std::vector<const json::value*> terms;
    terms.reserve(v.get_array().size());
    std::size_t i = 0;
    for (const json::value& item : v.get_array()) {
      const json::value* x = &item;
      if (attribute != nullptr) {
        x = attribute_of(item, path);
        if (x == nullptr) no_attribute("sum", i, item, path);
      }
      if (!is_number(*x)) {
        throw evaluation_error("sum: " + item_name(i) + (attribute != nullptr ? "." + std::string(path) : "") + " is " +
                               describe_value(*x) + ", not a number");
      }
      terms.push_back(x);
      ++i;
    }
    return sum_of(start, terms);
  }
  if (f == "map") {
    if (!v.is_array()) throw evaluation_error("map: expected a list, got " + describe_value(v));
    json::array out;
    out.reserve(v.get_array().size());
    if (n.kids[1].o == op::filter) {  // map("filter", ...): the filter with `this` bound to each item
      for (const json::value& item : v.get_array()) out.push_back(eval(n.kids[1], item));
      return out;
    }
    const json::string& attribute = n.kids[1].value.get_string();
    const std::string_view path(attribute.data(), attribute.size());
    const json::value fallback = eval(n.kids[2], self);
    std::size_t i = 0;
    for (const json::value& item : v.get_array()) {
      if (const json::value* x = attribute_of(item, path)) out.push_back(*x);
      else if (!fallback.is_null()) out.push_back(fallback);
      else no_attribute("map", i, item, path);
      ++i;
    }
    return out;
  }
  if (f == "round") {
    if (!is_number(v)) return nullptr;
    const std::int64_t digits = n.kids[1].value.get_int64();
    const json::string& method = n.kids[2].value.get_string();
    if (method == "common") return v.is_double() ? json::value(round_common(v.get_double(), digits)) : v;
    const double scale = std::pow(10.0, static_cast<double>(digits));
    const double x = as_double(v) * scale;
    return json::value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
  }
  if (f == "unique") {
    if (!v.is_array()) return nullptr;
    const bool by_member = n.kids.size() == 2;
    json::array out;
    static const json::value null_value;
    // The member of an item (an item without it, or not an object, has null there).
    auto member_of = [&](const json::value& item) -> const json::value& {
      if (!by_member) return item;
      const json::string& member = n.kids[1].value.get_string();
      const json::object* o = item.if_object();
      const json::value* m = o != nullptr ? o->if_contains(std::string_view(member.data(), member.size())) : nullptr;
      return m != nullptr ? *m : null_value;
    };
    for (const json::value& item : v.get_array()) {
      bool seen = false;
      for (const json::value& kept : out) {
        if (json_equal(member_of(kept), member_of(item))) {
          seen = true;
          break;
        }
      }
      if (!seen) out.push_back(item);
    }
    return out;
  }
  return nullptr;
}

json::value eval(const node& n, const json::value& self) {
  switch (n.o) {
    case op::literal: return n.value;
    case op::this_: return self;
    case op::list: {
      json::array a;
      for (const auto& k : n.kids) a.push_back(eval(k, self));
      return a;
    }
    case op::member: {
      json::value v = eval(n.kids[0], self);
      if (v.is_object()) {
        if (const auto* m = v.get_object().if_contains(n.name)) return *m;
      }
      return nullptr;
    }
    case op::index: {
      json::value v = eval(n.kids[0], self);
      json::value k = eval(n.kids[1], self);
      if (v.is_object() && k.is_string()) {
        if (const auto* m = v.get_object().if_contains(k.get_string())) return *m;
        return nullptr;
      }
      if (v.is_array() && (k.is_int64() || k.is_uint64())) {
        const auto& a = v.get_array();
        std::int64_t i = k.is_int64() ? k.get_int64() : static_cast<std::int64_t>(k.get_uint64());
        if (i < 0) i += static_cast<std::int64_t>(a.size());
        if (i >= 0 && static_cast<std::size_t>(i) < a.size()) return a[static_cast<std::size_t>(i)];
      }
      return nullptr;
    }
    case op::filter: return apply_filter(n, self);
    case op::not_: return !truthy(eval(n.kids[0], self));
    case op::neg: {
      json::value v = eval(n.kids[0], self);
      if (v.is_int64()) return number_result(-as_double(v));
      if (is_number(v)) return json::value(-as_double(v));
      return nullptr;
    }
    case op::and_: {
      json::value a = eval(n.kids[0], self);
      if (!truthy(a)) return a;
      return eval(n.kids[1], self);
    }
    case op::or_: {
      json::value a = eval(n.kids[0], self);
      if (truthy(a)) return a;
      return eval(n.kids[1], self);
    }
    case op::eq: return json_equal(eval(n.kids[0], self), eval(n.kids[1], self));
    case op::ne: return !json_equal(eval(n.kids[0], self), eval(n.kids[1], self));
    case op::lt:
    case op::le:
    case op::gt:
    case op::ge: {
      const auto c = order(eval(n.kids[0], self), eval(n.kids[1], self));
      if (!c) return false;
      switch (n.o) {
        case op::lt: return *c < 0;
        case op::le: return *c <= 0;
        case op::gt: return *c > 0;
        default: return *c >= 0;
      }
    }
    case op::in:
    case op::not_in: {
      json::value needle = eval(n.kids[0], self);
      json::value hay = eval(n.kids[1], self);
      bool found = false;
      if (hay.is_string() && needle.is_string()) {
        found = std::string_view(hay.get_string()).find(std::string_view(needle.get_string())) != std::string_view::npos;
      } else if (hay.is_array()) {
        for (const auto& x : hay.get_array())
          if (json_equal(x, needle)) found = true;
      } else if (hay.is_object() && needle.is_string()) {
        found = hay.get_object().contains(needle.get_string());
      }
      return n.o == op::in ? found : !found;
    }
    case op::add:
    case op::sub:
    case op::mul:
    case op::div:
    case op::mod:
    case op::concat: return arithmetic(n.o, eval(n.kids[0], self), eval(n.kids[1], self));
  }
  return nullptr;
}

// ---- translation to keyword constraints ---------------------------------------------------------

enum class subject : std::uint8_t { none, value, length };

subject subject_of(const node& n) {
  if (n.o == op::this_) return subject::value;
  if (n.o == op::filter && n.name == "length" && n.kids.size() == 1 && n.kids[0].o == op::this_) return subject::length;
  return subject::none;
}

op flip(op o) {
  switch (o) {
    case op::lt: return op::gt;
    case op::le: return op::ge;
    case op::gt: return op::lt;
    case op::ge: return op::le;
    default: return o;
  }
}

schema::constraint number_constraint(schema::constraint_kind k, double v) {
  schema::constraint c;
  c.kind = k;
  c.number = v;
  return c;
}

schema::constraint count_constraint(schema::constraint_kind k, std::size_t n) {
  schema::constraint c;
  c.kind = k;
  c.count = n;
  return c;
}

/// `this|unique|length == this|length` (or `this|unique("key")|...`): the unique filter's member
/// argument (empty for whole items) when `n` is `this|unique[(...)]|length`.
std::optional<std::string> unique_length(const node& n) {
  if (n.o != op::filter || n.name != "length" || n.kids.size() != 1) return std::nullopt;
  const node& u = n.kids[0];
  if (u.o != op::filter || u.name != "unique" || u.kids.empty() || u.kids[0].o != op::this_) return std::nullopt;
  if (u.kids.size() == 2) return std::string(u.kids[1].value.get_string());
  return std::string();
}

bool atom(const node& n, schema::kind k, std::vector<schema::constraint>& out) {
  using ck = schema::constraint_kind;
  if (n.o == op::filter && n.name == "format" && n.kids.size() == 2 && n.kids[0].o == op::this_ &&
      k == schema::kind::string) {
    schema::constraint c;
    c.kind = ck::format;
    c.text = std::string(n.kids[1].value.get_string());
    out.push_back(std::move(c));
    return true;
  }
  // this|unique|length == this|length
  if (n.o == op::eq && k == schema::kind::array) {
    for (int side = 0; side < 2; ++side) {
      const node& a = n.kids[static_cast<std::size_t>(side)];
      const node& b = n.kids[static_cast<std::size_t>(1 - side)];
      const auto member = unique_length(a);
      if (!member || subject_of(b) != subject::length) continue;
      schema::constraint c;
      c.kind = member->empty() ? ck::unique_items : ck::unique_by;
      c.text = *member;
      out.push_back(std::move(c));
      return true;
    }
  }
  // this in ["a", "b"]: one of the listed values
  if (n.o == op::in && n.kids[0].o == op::this_ && n.kids[1].o == op::list && !n.kids[1].kids.empty()) {
    schema::constraint c;
    c.kind = ck::one_of;
    for (const node& item : n.kids[1].kids) {
      if (item.o != op::literal) return false;
      const json::value& v = item.value;
      const bool fits = (k == schema::kind::string && v.is_string()) ||
                        ((k == schema::kind::integer || k == schema::kind::number) && is_number(v));
      if (!fits) return false;
      c.values.push_back(v);
    }
    out.push_back(std::move(c));
    return true;
  }
  // this % n == 0: a multiple of n
  if (n.o == op::eq && (k == schema::kind::integer || k == schema::kind::number)) {
    for (int side = 0; side < 2; ++side) {
      const node& a = n.kids[static_cast<std::size_t>(side)];
      const node& b = n.kids[static_cast<std::size_t>(1 - side)];
      if (a.o != op::mod || a.kids[0].o != op::this_ || a.kids[1].o != op::literal || !is_number(a.kids[1].value))
        continue;
      if (b.o != op::literal || !is_number(b.value) || as_double(b.value) != 0) continue;
      const double m = as_double(a.kids[1].value);
      if (!(m > 0) || !std::isfinite(m)) return false;
      out.push_back(number_constraint(ck::multiple_of, m));
      return true;
    }
  }
  if (n.o == op::filter && n.name == "regex_match" && n.kids.size() == 2 && n.kids[0].o == op::this_ &&
      k == schema::kind::string && n.regex) {
    schema::constraint c;
    c.kind = ck::pattern;
    c.text = std::string(n.kids[1].value.get_string());
    c.regex = n.regex;
    out.push_back(std::move(c));
    return true;
  }
  if (n.o != op::eq && n.o != op::lt && n.o != op::le && n.o != op::gt && n.o != op::ge) return false;
  op o = n.o;
  const node* subj = &n.kids[0];
  const node* lit = &n.kids[1];
  if (subject_of(*subj) == subject::none) {
    std::swap(subj, lit);
    o = flip(o);
  }
  const subject s = subject_of(*subj);
  if (s == subject::none || lit->o != op::literal) return false;
  const json::value& v = lit->value;
  if (s == subject::value) {
    if (k == schema::kind::string && o == op::eq && v.is_string()) {
      schema::constraint c;
      c.kind = ck::one_of;
      c.values.push_back(v);
      out.push_back(std::move(c));
      return true;
    }
    if ((k != schema::kind::integer && k != schema::kind::number) || !is_number(v)) return false;
    const double x = as_double(v);
    switch (o) {
      case op::ge: out.push_back(number_constraint(ck::minimum, x)); return true;
      case op::gt: out.push_back(number_constraint(ck::exclusive_minimum, x)); return true;
      case op::le: out.push_back(number_constraint(ck::maximum, x)); return true;
      case op::lt: out.push_back(number_constraint(ck::exclusive_maximum, x)); return true;
      case op::eq: {
        schema::constraint c;
        c.kind = ck::one_of;
        c.values.push_back(v);
        out.push_back(std::move(c));
        return true;
      }
      default: return false;
    }
  }
  // this|length OP n
  const bool text = k == schema::kind::string;
  const bool items = k == schema::kind::array || k == schema::kind::map;
  if ((!text && !items) || !is_number(v)) return false;
  const double x = as_double(v);
  if (!(x >= 0) || std::trunc(x) != x || x > 1e15) return false;
  const auto count = static_cast<std::size_t>(x);
  const ck lo = text ? ck::min_length : ck::min_items;
  const ck hi = text ? ck::max_length : ck::max_items;
  switch (o) {
    case op::ge: out.push_back(count_constraint(lo, count)); return true;
    case op::gt: out.push_back(count_constraint(lo, count + 1)); return true;
    case op::le: out.push_back(count_constraint(hi, count)); return true;
    case op::lt:
      if (count == 0) return false;
      out.push_back(count_constraint(hi, count - 1));
      return true;
    case op::eq:
      out.push_back(count_constraint(lo, count));
      out.push_back(count_constraint(hi, count));
      return true;
    default: return false;
  }
}

bool conjunction(const node& n, schema::kind k, std::vector<schema::constraint>& out) {
  if (n.o == op::and_) return conjunction(n.kids[0], k, out) && conjunction(n.kids[1], k, out);
  return atom(n, k, out);
}

std::string fold_spaces(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace

std::shared_ptr<const formula> formula::parse(std::string_view source, std::string& error,
                                                     std::size_t& error_offset, std::size_t max_depth) {
  try {
    parser p(source, max_depth);
    node root = p.parse_all();
    std::shared_ptr<formula> e(new formula());
    e->root_ = std::make_unique<node>(std::move(root));
    e->source_ = fold_spaces(source);
    return e;
  } catch (const parse_failure& f) {
    error = f.message;
    error_offset = f.offset;
    return nullptr;
  }
}

json::value formula::evaluate(const json::value& self) const { return eval(*root_, self); }

bool formula::holds(const json::value& self) const { return truthy(eval(*root_, self)); }

bool formula::to_constraints(schema::kind k, std::vector<schema::constraint>& out) const {
  std::vector<schema::constraint> tmp;
  if (!conjunction(*root_, k, tmp)) return false;
  for (auto& c : tmp) out.push_back(std::move(c));
  return true;
}

std::optional<std::string> formula_check::check_json(const json::value& value) const {
  try {
    if (expr_->holds(value)) return std::nullopt;
    return std::string();
  } catch (const evaluation_error& e) {
    std::string out = "cannot check " + expr_->source();
    if (!label_.empty()) out += " (" + label_ + ")";
    out += ": ";
    out += e.what();
    return out;
  }
}

std::string formula_rule_text(const formula& e, std::string_view label) {
  std::string out = "must satisfy " + e.source();
  if (!label.empty()) {
    out += " (";
    out += label;
    out += ")";
  }
  return out;
}

}  // namespace covenant::detail
