// The @check/@assert formulas: the formula class and formula_check (parts in schema_formula_*.cpp).
#include "schema_formula.hpp"

#include <boost/json/value.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema_formula_impl.hpp"

namespace covenant::detail {

using namespace formula_impl;

formula::formula() = default;
formula::~formula() = default;

namespace {

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
    node root = parse_formula(source, max_depth);
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
