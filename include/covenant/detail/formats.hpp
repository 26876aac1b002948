// covenant/detail/formats.hpp - checks of the string formats validators can require.
#pragma once

#include <string_view>

namespace covenant::detail {

/// Absolute URL: scheme "://" host, no whitespace.
bool is_url(std::string_view s) noexcept;
/// 8-4-4-4-12 hexadecimal digits.
bool is_uuid(std::string_view s) noexcept;
/// Calendar date YYYY-MM-DD (valid day of month, leap years included).
bool is_date(std::string_view s) noexcept;
/// HH:MM:SS with optional fraction and optional offset (Z, +hh:mm, -hh:mm).
bool is_time(std::string_view s) noexcept;
/// RFC 3339 date-time: date 'T' time with a required offset.
bool is_date_time(std::string_view s) noexcept;
/// local@domain.tld
bool is_email(std::string_view s) noexcept;

/// Dispatches on a JSON Schema format name (uri, uuid, date-time, date, time, email); unknown
/// formats are accepted.
bool matches_format(std::string_view format, std::string_view s) noexcept;

}  // namespace covenant::detail
