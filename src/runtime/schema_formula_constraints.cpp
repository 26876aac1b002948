// The formulas' translation to keyword constraints (`this >= 0` as a minimum, and so on).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "schema_formula_impl.hpp"

namespace covenant::detail::formula_impl {

namespace {

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

}  // namespace

bool conjunction(const node& n, schema::kind k, std::vector<schema::constraint>& out) {
  if (n.o == op::and_) return conjunction(n.kids[0], k, out) && conjunction(n.kids[1], k, out);
  return atom(n, k, out);
}

}  // namespace covenant::detail::formula_impl
