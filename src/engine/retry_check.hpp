// Internal to the library: what is wrong with a retry_options, for the checks of the options that
// hold one (retry_options::check, contract_options::check, http_engine's constructor), so that each
// names the field as its user wrote it ("retry.tries").
#pragma once

#include <string>
#include <string_view>

#include "covenant/engine/retry.hpp"

namespace covenant::detail {

/// The first value of `r` out of range, as `prefix` + "tries must be >= 0 (got -1)"; empty when
/// every value is fine.
[[nodiscard]] std::string retry_problem(const retry_options& r, std::string_view prefix);

}  // namespace covenant::detail
