// Internal: reading a text file with a size limit, with errors as short phrases. Used by the
// schema loaders, the health check and the command-line tool.
#pragma once

#include <cstddef>
#include <filesystem>
#include <iosfwd>
#include <string>

#include "covenant/types/config.hpp"

namespace covenant::detail {

struct file_text {
  std::string text;
  std::string error;       ///< why it cannot be read ("" = read): "no such file", "is a directory", ...
  bool too_large = false;  ///< the error is the size: "is N bytes, larger than the limit of M bytes"
};

/// At most `max_bytes` of a stream (`too_large` when there is more).
COVENANT_API file_text read_text(std::istream& in, std::size_t max_bytes);
/// The bytes of `file`, at most `max_bytes`.
COVENANT_API file_text read_text_file(const std::filesystem::path& file, std::size_t max_bytes);

}  // namespace covenant::detail
