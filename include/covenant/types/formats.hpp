// covenant/types/formats.hpp - the string formats validators can require, as plain functions for your
// own predicates and invariants (the url, uuid, iso8601, date and email validators use these).
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include "covenant/types/config.hpp"

namespace covenant::formats {

/// Absolute URL: scheme "://" host, no whitespace.
COVENANT_API bool is_url(std::string_view s) noexcept;
/// 8-4-4-4-12 hexadecimal digits.
COVENANT_API bool is_uuid(std::string_view s) noexcept;
/// Calendar date YYYY-MM-DD (valid day of month, leap years included).
COVENANT_API bool is_date(std::string_view s) noexcept;
/// HH:MM:SS with optional fraction and optional offset (Z, +hh:mm, -hh:mm).
COVENANT_API bool is_time(std::string_view s) noexcept;
/// RFC 3339 date-time: date, 'T' (or 't' or a space), time, and a required offset.
COVENANT_API bool is_date_time(std::string_view s) noexcept;
/// local@domain.tld
COVENANT_API bool is_email(std::string_view s) noexcept;

/// The instant an RFC 3339 date-time denotes (fractions of a second kept to the millisecond),
/// or nullopt when `s` is not one.
COVENANT_API std::optional<std::chrono::sys_time<std::chrono::milliseconds>> parse_date_time(
    std::string_view s) noexcept;

/// Dispatches on a JSON Schema format name (uri, uuid, date-time, date, time, email); unknown
/// formats are accepted.
COVENANT_API bool matches_format(std::string_view format, std::string_view s) noexcept;

}  // namespace covenant::formats
