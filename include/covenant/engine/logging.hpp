// covenant/engine/logging.hpp - the library's log level, without including spdlog.
//
// covenant logs through an spdlog logger named "covenant" (stderr by default). It starts at warn:
// quiet unless something needs attention (a transport retry, a call the server failed, a hook or
// observer that threw). At info, one line per contract call result and per new attempt; at debug
// with contract_options::verbose, the prompts and corrective messages. docs/contracts.md#logging
// has the table of which event logs at which level. One line widens or silences it:
//
//     covenant::set_log_level(covenant::log_level::info);   // each call's result and retries
//
// The environment variable COVENANT_LOG_LEVEL (trace, debug, info, warn, error, critical, off)
// sets the starting level when the logger is first used; set_log_level() overrides it. spdlog's
// global level (spdlog::set_level) does not apply to this logger.
// Applications that want the logger itself (to add sinks, change the pattern) include
// <spdlog/spdlog.h> and call spdlog::get("covenant"), or register their own logger named
// "covenant" before the library's first use of it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "covenant/types/config.hpp"

namespace covenant {

enum class log_level : std::uint8_t { trace, debug, info, warn, error, critical, off };

/// "trace", "debug", "info", "warn", "error", "critical", "off".
COVENANT_API std::string_view to_string(log_level level) noexcept;
/// The level named by `name` (as to_string writes it; "warning" is read as warn), else nullopt.
COVENANT_API std::optional<log_level> parse_log_level(std::string_view name) noexcept;

/// Sets the level of the "covenant" logger (thread-safe).
COVENANT_API void set_log_level(log_level level);
/// The current level of the "covenant" logger.
COVENANT_API log_level get_log_level();

}  // namespace covenant
