// covenant/logging.hpp - the library's log level, without including spdlog.
//
// covenant logs through an spdlog logger named "covenant" (stderr by default): one info line per
// contract call result and per retry, warnings for transport retries, errors for failed calls,
// prompts and corrective messages at debug level with contract_options::verbose. One line
// silences or widens it:
//
//     covenant::set_log_level(covenant::log_level::warn);   // e.g. in a test binary's main
//
// The environment variable COVENANT_LOG_LEVEL (trace, debug, info, warn, error, critical, off)
// sets the starting level when the logger is first used; set_log_level() overrides it.
// Applications that want the logger itself (to add sinks, change the pattern) include
// <spdlog/spdlog.h> and call spdlog::get("covenant"), or register their own logger named
// "covenant" before the library's first use of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace covenant {

enum class log_level : std::uint8_t { trace, debug, info, warn, error, critical, off };

/// "trace", "debug", "info", "warn", "error", "critical", "off".
std::string_view to_string(log_level level) noexcept;
/// The level named by `name` (as to_string writes it; "warning" is read as warn), else nullopt.
std::optional<log_level> parse_log_level(std::string_view name) noexcept;

/// Sets the level of the "covenant" logger (thread-safe).
void set_log_level(log_level level);
/// The current level of the "covenant" logger.
log_level get_log_level();

}  // namespace covenant
