#include <covenant/types/version.hpp>

#ifndef COVENANT_VERSION_STRING
#error "COVENANT_VERSION_STRING must be defined by the build (see CMakeLists.txt)"
#endif

namespace covenant {

std::string_view version() noexcept {
    return COVENANT_VERSION_STRING;
}

}  // namespace covenant
