#pragma once

#include <string_view>

#include "covenant/types/config.hpp"

namespace covenant {

/// The library version, "MAJOR.MINOR.PATCH" (the CMake project version).
[[nodiscard]] COVENANT_API std::string_view version() noexcept;

}  // namespace covenant
