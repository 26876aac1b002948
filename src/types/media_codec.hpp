// Internal: media inputs (images, PDF, audio) as model APIs take them: their bytes as padded
// base64 (RFC 4648, standard alphabet) for a data URL or a request's "data" field, and their
// SHA-256 as lower-case hex (a cache key, a log line).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "covenant/types/config.hpp"

namespace covenant::detail {

/// Length of the padded base64 text of n bytes.
constexpr std::size_t base64_length(std::size_t n) noexcept { return (n + 2) / 3 * 4; }

/// Appends the padded base64 (RFC 4648 standard alphabet) of `bytes` to `out`, growing it once.
/// `bytes` may be part of `out`.
COVENANT_API void append_base64(std::string& out, std::string_view bytes);

/// Writes the base64 of `bytes` to `dest` (which has base64_length(bytes.size()) bytes); returns the end.
COVENANT_API char* write_base64(char* dest, std::string_view bytes) noexcept;

/// Lower-case hex SHA-256 of `bytes` (OpenSSL EVP).
COVENANT_API std::string sha256_hex(std::string_view bytes);

}  // namespace covenant::detail
