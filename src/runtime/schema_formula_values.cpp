// The formulas' values: truthiness as in Jinja, numbers, the order of two values, whole results.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <cmath>
#include <cstdint>
#include <optional>

#include "schema_formula_impl.hpp"

namespace covenant::detail::formula_impl {

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

}  // namespace covenant::detail::formula_impl
