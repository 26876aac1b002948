// src/runtime/schema_formula.hpp - the formulas of schema-file @check/@assert attributes (the
// `{{ ... }}` of a rule: a small, Jinja-like expression language), parsed once into a syntax tree
// and evaluated on a boost::json::value. (A contract's Expression, the class with the hooks, is
// another thing: covenant/contract/detail/expression.hpp.)
//
//     this >= 0 and this <= 1          this|length > 0         this.start <= this.end
//     this|regex_match("^[A-Z]")       not (this == "n/a")     this["hello"] == 10
//     this.items|map(attribute="amount")|sum == this.total
//
// Values: `this` (the checked value), numbers, strings ('...' or "..."), true/false, none/null,
// [lists]. Operators, loosest first: `or`; `and`; `not`; comparisons == != < <= > >= `in`
// `not in`; + - ~ (concatenation); * / %; unary -; then member access `.name`, subscripts
// `[expr]` and filters `|name` / `|name(args)`, whose arguments are positional or by keyword as
// in Jinja (`sum(attribute="amount", start=0)`). Filters: length, lower, upper, trim, abs, int,
// float, first, last, regex_match(pattern) (RE2, unanchored search), unique(attribute),
// format(name), sum(attribute, start), map(attribute=, default=) or map("filter", args...),
// round(precision, method). A missing member or index is `none`; comparisons between values of
// different kinds are false; truthiness follows Jinja (none, false, 0, "", [] and {} are false).
// sum and map report what they cannot do (an item that is not a number, an item without the
// attribute) as an evaluation_error; the check then fails with that message.
#pragma once

#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/types/schema.hpp"

namespace covenant::detail {

/// A formula that cannot be evaluated on a value: `sum` over an item that is not a number,
/// `map(attribute=...)` over an item without that attribute. The message names the filter and
/// the item (`sum: item [1] has no attribute "amount"`).
class COVENANT_API evaluation_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class COVENANT_API formula {
 public:
  struct node;

  /// Parses `source`. On failure returns nullptr and sets `error` and `error_offset` (byte offset
  /// into `source`). Nesting deeper than `max_depth` is an error, never a stack overflow.
  static std::shared_ptr<const formula> parse(std::string_view source, std::string& error,
                                                 std::size_t& error_offset, std::size_t max_depth = 64);

  ~formula();
  formula(const formula&) = delete;
  formula& operator=(const formula&) = delete;

  /// The value of the formula with `this` bound to `self`. Throws evaluation_error.
  [[nodiscard]] boost::json::value evaluate(const boost::json::value& self) const;
  /// Whether the value of the formula is truthy. Throws evaluation_error.
  [[nodiscard]] bool holds(const boost::json::value& self) const;
  /// The source text with runs of white space folded to one space.
  [[nodiscard]] const std::string& source() const noexcept { return source_; }

  /// When the formula is a conjunction of simple rules on `this` that have keyword
  /// constraints (`this >= 0`, `this|length <= 200`, `this|regex_match("...")`, for a value of
  /// kind `k`), appends those constraints to `out` and returns true; otherwise leaves `out`
  /// unchanged and returns false.
  bool to_constraints(schema::kind k, std::vector<schema::constraint>& out) const;

 private:
  formula();
  std::unique_ptr<node> root_;
  std::string source_;
};

/// A @check/@assert rule as a custom check on JSON values (has_json() == true). A rule that
/// cannot be evaluated fails with the message "cannot check <formula> (<label>): <why>".
class formula_check final : public schema::custom_check {
 public:
  formula_check(std::shared_ptr<const formula> e, bool soft, std::string label = {})
      : expr_(std::move(e)), soft_(soft), label_(std::move(label)) {}
  [[nodiscard]] bool has_json() const noexcept override { return true; }
  [[nodiscard]] std::optional<std::string> check_json(const boost::json::value& value) const override;
  [[nodiscard]] const formula& expr() const noexcept { return *expr_; }
  [[nodiscard]] bool soft() const noexcept { return soft_; }

 private:
  std::shared_ptr<const formula> expr_;
  bool soft_;
  std::string label_;
};

/// The rule text of a @check/@assert: "must satisfy <formula>" plus " (<name>)" when named.
std::string formula_rule_text(const formula& e, std::string_view label);

}  // namespace covenant::detail
