// Small text and JSON helpers shared by the HTTP engine and its wire dialects.
#pragma once

#include <boost/json/fwd.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace covenant::detail::wire {

bool iequals(std::string_view a, std::string_view b) noexcept;
bool istarts_with(std::string_view s, std::string_view prefix) noexcept;
bool iends_with(std::string_view s, std::string_view suffix) noexcept;
std::string_view trim(std::string_view s) noexcept;
/// One line: control characters and whitespace runs become one space; trimmed; at most
/// `max_chars` bytes (cut on a UTF-8 boundary) followed by "...".
std::string one_line(std::string_view text, std::size_t max_chars);
/// Every occurrence of the secret replaced by "[redacted]".
std::string redact(std::string text, std::string_view secret);
/// A schema or tool name as the APIs accept it: [a-zA-Z0-9_-], at most 64 characters, never
/// empty ("response").
std::string api_name(std::string_view name);
/// A finite decimal number (leading and trailing blanks allowed).
std::optional<double> parse_number(std::string_view s);
/// A token count under `key` (or `alt` when `key` is missing or null); 0 when absent or negative.
std::uint64_t token_count(const boost::json::object& o, std::string_view key, std::string_view alt = {});
/// token_count when `key` (or `alt`) holds a number; nullopt when neither does (not reported).
std::optional<std::uint64_t> reported_count(const boost::json::object& o, std::string_view key,
                                            std::string_view alt = {});
/// The object under `key` (or `alt`), or null.
const boost::json::object* object_under(const boost::json::object& o, std::string_view key, std::string_view alt = {});
/// The string under `key`, or "" when it is missing or not a string.
std::string string_or_empty(const boost::json::object& o, std::string_view key);
/// `v` as JSON text, every floating-point number in the shortest form that reads back as the
/// same value (15.5, not Boost.JSON's 1.55E1; a whole one as 100.0); integers as they are.
std::string json_text(const boost::json::value& v);
/// Throws engine_error(what, 200, not retryable): a 2xx body that is not a reply.
[[noreturn]] void bad_body(const std::string& what);

}  // namespace covenant::detail::wire
