// Internal to the formulas (schema_formula*.cpp): the syntax tree, the tokens, what files share.
#pragma once

#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/types/schema.hpp"
#include "schema_formula.hpp"

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

}  // namespace covenant::detail

namespace covenant::detail::formula_impl {

using node = formula::node;
using op = node::op;

// ---- lexer (schema_formula_lexer.cpp) -----------------------------------------------------------

enum class tok : std::uint8_t { end, ident, number, string, punct, error };

struct token {
  tok kind = tok::end;
  std::string text;  // identifier, punctuation, decoded string
  json::value number;
  std::size_t offset = 0;
};

class lexer {
 public:
  explicit lexer(std::string_view s) : s_(s) {}

  token next();

 private:
  std::string_view s_;
  std::size_t i_ = 0;
};

// ---- parser (schema_formula_parse.cpp) ----------------------------------------------------------

struct parse_failure {
  std::string message;
  std::size_t offset;
};

/// The syntax tree of `source`. Throws parse_failure; nesting deeper than `max_depth` is one.
node parse_formula(std::string_view source, std::size_t max_depth);

// ---- values (schema_formula_values.cpp) ---------------------------------------------------------

bool truthy(const json::value& v);
bool is_number(const json::value& v);
double as_double(const json::value& v);
// -1, 0, 1; nullopt when the kinds cannot be ordered.
std::optional<int> order(const json::value& a, const json::value& b);
json::value number_result(double v);

// ---- evaluation (schema_formula_eval.cpp) -------------------------------------------------------

json::value eval(const node& n, const json::value& self);

// ---- filters (schema_formula_filters.cpp) -------------------------------------------------------

/// The value of the filter node `n` (its input kids[0], its arguments kids[1..]). Throws
/// evaluation_error.
json::value apply_filter(const node& n, const json::value& self);

// ---- translation to keyword constraints (schema_formula_constraints.cpp) ------------------------

/// Appends the keyword constraints of `n` when it is a conjunction of simple rules on `this` that
/// have some (for a value of kind `k`); false when one of its parts has none.
bool conjunction(const node& n, schema::kind k, std::vector<schema::constraint>& out);

}  // namespace covenant::detail::formula_impl
