// The value_ops table of a boost::json::value (read/detail/value_ops.hpp): the runtime schemas'
// target. Its operations look at the value's own kind, so a value that does not have the shape
// its schema says (a hook may have changed it) is walked as far as it goes.
#pragma once

#include "covenant/read/detail/value_ops.hpp"

namespace covenant::detail {

COVENANT_API const value_ops& json_ops() noexcept;  // exported: the tests call it

}  // namespace covenant::detail
