#pragma once

#include <string_view>

namespace covenant {

/// The library version, "MAJOR.MINOR.PATCH" (the CMake project version).
[[nodiscard]] std::string_view version() noexcept;

}  // namespace covenant
