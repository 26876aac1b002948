// The library's logger and its level.
#include "log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <string>
#include <memory>

#include "covenant/engine/logging.hpp"

namespace covenant {

namespace detail {

spdlog::logger& log() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    std::shared_ptr<spdlog::logger> l = spdlog::get("covenant");
    if (!l) {
      try {
        l = spdlog::stderr_color_mt("covenant");
      } catch (const spdlog::spdlog_ex&) {
        l = spdlog::get("covenant");  // registered concurrently by the application: its level stays
        return l;
      }
      // A library is quiet unless something needs attention: warnings and errors only, unless
      // COVENANT_LOG_LEVEL says otherwise (spdlog's global level does not apply to it).
      log_level level = log_level::warn;
      if (const char* env = std::getenv("COVENANT_LOG_LEVEL")) {  // NOLINT(concurrency-mt-unsafe)
        if (auto named = parse_log_level(env)) level = *named;
      }
      l->set_level(static_cast<spdlog::level::level_enum>(level));
    }
    return l;
  }();
  return *logger;
}

}  // namespace detail

static_assert(static_cast<int>(log_level::trace) == spdlog::level::trace);
static_assert(static_cast<int>(log_level::warn) == spdlog::level::warn);
static_assert(static_cast<int>(log_level::off) == spdlog::level::off);

std::string_view to_string(log_level level) noexcept {
  switch (level) {
    case log_level::trace: return "trace";
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warn: return "warn";
    case log_level::error: return "error";
    case log_level::critical: return "critical";
    case log_level::off: return "off";
  }
  return "off";
}

std::optional<log_level> parse_log_level(std::string_view name) noexcept {
  std::string lower;
  for (char c : name) {
    if (lower.size() > 16) return std::nullopt;
    lower.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  for (auto l : {log_level::trace, log_level::debug, log_level::info, log_level::warn, log_level::error,
                 log_level::critical, log_level::off})
    if (lower == to_string(l)) return l;
  if (lower == "warning") return log_level::warn;
  if (lower == "err") return log_level::error;
  return std::nullopt;
}

void set_log_level(log_level level) { detail::log().set_level(static_cast<spdlog::level::level_enum>(level)); }

log_level get_log_level() { return static_cast<log_level>(detail::log().level()); }

}  // namespace covenant
