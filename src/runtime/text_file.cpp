#include "text_file.hpp"

#include <fstream>
#include <istream>
#include <system_error>

namespace covenant::detail {

file_text read_text(std::istream& in, std::size_t max_bytes) {
  file_text out;
  char buffer[65536];
  while (in) {
    in.read(buffer, sizeof buffer);
    const auto n = static_cast<std::size_t>(in.gcount());
    if (n == 0) break;
    if (out.text.size() + n > max_bytes) {
      out.text.clear();
      out.too_large = true;
      out.error = "larger than the limit of " + std::to_string(max_bytes) + " bytes";
      return out;
    }
    out.text.append(buffer, n);
  }
  if (in.bad()) out.error = "cannot be read";
  return out;
}

file_text read_text_file(const std::filesystem::path& file, std::size_t max_bytes) {
  file_text out;
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (ec || !std::filesystem::exists(status)) {
    out.error = "no such file";
    return out;
  }
  if (std::filesystem::is_directory(status)) {
    out.error = "is a directory";
    return out;
  }
  if (std::filesystem::is_regular_file(status)) {
    const auto size = std::filesystem::file_size(file, ec);
    if (!ec && size > max_bytes) {
      out.too_large = true;
      out.error = "is " + std::to_string(size) + " bytes, larger than the limit of " + std::to_string(max_bytes) + " bytes";
      return out;
    }
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    out.error = "cannot be opened";
    return out;
  }
  return read_text(in, max_bytes);
}

}  // namespace covenant::detail
