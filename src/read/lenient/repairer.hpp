// Internal to the lenient reader (src/read/lenient/): the one-pass repairing reader, which reads one
// JSON-like value and writes it as strict JSON, noting every change.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "text.hpp"

namespace covenant::lenient_impl {

class repairer {
 public:
  repairer();
  ~repairer();
  repairer(const repairer&) = delete;
  repairer& operator=(const repairer&) = delete;

  // Reads the value at `at` (after whitespace and comments) up to `end`, appending strict JSON
  // to `out` and notes to `nw`. Sets `truncated` when `end` came inside the value. With `spans`,
  // appends where each object and array kept was read from (offsets in `out`, and from `base`).
  read_result read(const char* at, const char* end, std::string& out, note_writer& nw, bool& truncated,
                   std::vector<source_span>* spans = nullptr, const char* base = nullptr);

  // Partial mode (a reply still being written) and the nesting limit of the reads that follow.
  void configure(bool partial, std::size_t max_depth) noexcept;

 private:
  class impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace covenant::lenient_impl
