// Internal: the library's logger ("covenant", spdlog). Public headers never include spdlog; the
// library's compiled code logs through here.
#pragma once

#include <spdlog/logger.h>

#include <exception>
#include <utility>

namespace covenant::detail {

/// The library's logger, named "covenant" (created on first use unless the application
/// registered its own logger of that name with spdlog first; see covenant/engine/logging.hpp).
spdlog::logger& log();

/// Logs at error level; a failure of the logging itself is swallowed (never breaks a call).
template <class... Args>
void log_error(spdlog::format_string_t<Args...> fmt, Args&&... args) noexcept {
  try {
    spdlog::logger& l = log();
    if (l.should_log(spdlog::level::err)) l.error(fmt, std::forward<Args>(args)...);
  } catch (...) {
  }
}

/// Logs at warning level; a failure of the logging itself is swallowed.
template <class... Args>
void log_warn(spdlog::format_string_t<Args...> fmt, Args&&... args) noexcept {
  try {
    spdlog::logger& l = log();
    if (l.should_log(spdlog::level::warn)) l.warn(fmt, std::forward<Args>(args)...);
  } catch (...) {
  }
}

}  // namespace covenant::detail
