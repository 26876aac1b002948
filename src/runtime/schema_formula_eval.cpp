// The formulas' evaluation: a syntax tree on a value, with the operators' arithmetic.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "covenant/types/json_equal.hpp"
#include "schema_formula_impl.hpp"

namespace covenant::detail::formula_impl {

namespace {

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

}  // namespace

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

}  // namespace covenant::detail::formula_impl
