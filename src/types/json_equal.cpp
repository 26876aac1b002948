// The one equality of JSON values (covenant/types/json_equal.hpp).
#include "covenant/types/json_equal.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <cmath>
#include <cstdint>

namespace covenant {

namespace {

namespace json = boost::json;

// An integer and a double: equal when the double is integral and exactly that integer.
bool same_number(std::int64_t i, double d) noexcept {
  if (!std::isfinite(d) || std::trunc(d) != d) return false;
  if (d < -9223372036854775808.0 || d >= 9223372036854775808.0) return false;
  return static_cast<std::int64_t>(d) == i;
}

bool same_number(std::uint64_t u, double d) noexcept {
  if (!std::isfinite(d) || std::trunc(d) != d) return false;
  if (d < 0 || d >= 18446744073709551616.0) return false;
  return static_cast<std::uint64_t>(d) == u;
}

bool numbers_equal(const json::value& a, const json::value& b) noexcept {
  switch (a.kind()) {
    case json::kind::int64:
      if (b.is_int64()) return a.get_int64() == b.get_int64();
      if (b.is_uint64()) return a.get_int64() >= 0 && static_cast<std::uint64_t>(a.get_int64()) == b.get_uint64();
      return same_number(a.get_int64(), b.get_double());
    case json::kind::uint64:
      if (b.is_uint64()) return a.get_uint64() == b.get_uint64();
      if (b.is_int64()) return b.get_int64() >= 0 && static_cast<std::uint64_t>(b.get_int64()) == a.get_uint64();
      return same_number(a.get_uint64(), b.get_double());
    default:
      if (b.is_double()) return a.get_double() == b.get_double();
      return numbers_equal(b, a);
  }
}

}  // namespace

bool json_equal(const boost::json::value& a, const boost::json::value& b) noexcept {
  if (a.is_number() && b.is_number()) return numbers_equal(a, b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case json::kind::array: {
      const json::array& x = a.get_array();
      const json::array& y = b.get_array();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!json_equal(x[i], y[i])) return false;
      return true;
    }
    case json::kind::object: {
      static const json::value null_value;
      const json::object& x = a.get_object();
      const json::object& y = b.get_object();
      for (const auto& kv : x) {
        const json::value* other = y.if_contains(kv.key());
        if (!json_equal(kv.value(), other == nullptr ? null_value : *other)) return false;
      }
      for (const auto& kv : y)
        if (!x.contains(kv.key()) && !kv.value().is_null()) return false;
      return true;
    }
    default: return a == b;
  }
}

}  // namespace covenant
