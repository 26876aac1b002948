// covenant/types/json_equal.hpp - the one equality of JSON values covenant uses everywhere it compares
// decoded values: uniqueness (unique_items, unique_by), literal types, numeric one_of, the
// expressions of schema files (==, !=, in, the unique filter) and the readers' own checks.
#pragma once

#include <boost/json/value.hpp>

#include "covenant/types/config.hpp"

namespace covenant {

/// Whether `a` and `b` are the same JSON value (docs/runtime-schemas.md, "Equality"):
///   - numbers are equal when they have the same mathematical value: int64 and uint64 compare
///     exactly, and an integer equals a double only when the double is finite, integral and
///     converts exactly to that integer (the integer is never rounded to a double);
///   - strings compare byte for byte; booleans and null by kind and value;
///   - arrays have the same length and equal items, in order;
///   - objects have equal members whatever their order, and a member absent on one side equals a
///     member that is null on the other (a decoded value cannot tell them apart: both are an empty
///     std::optional, and the expression `this.k` is `none` either way);
///   - values of any other pair of kinds are not equal.
COVENANT_API bool json_equal(const boost::json::value& a, const boost::json::value& b) noexcept;

}  // namespace covenant
