// Internal: a memory-mapped journal of text lines in front of a log file.
//
// Lines are copied into a file mapping (MAP_SHARED): once copied they are in the kernel's page
// cache, which outlives the process, so a killed process loses at most the line it was copying,
// without a system call per line. The owner drains the journal into its log file in one write
// and clears it; a journal left behind by a process that died is found and drained by the next
// owner opening the same directory (recover()). Each journal file is locked (flock) by the
// process that owns it, so a live process's journal is never taken.
//
// File layout: a 16-byte header (the generation, a native 64-bit integer, then 8 bytes unused),
// then the lines, then NUL bytes. Generation 0 is an empty journal; begin() gives it a later
// one (a time in nanoseconds) before its first line, clear() sets it back to 0 before erasing
// the lines, so a journal is never read half-cleared. recover() drains journals oldest first.
//
// Written here because spdlog's sinks write (or buffer in the process) each message, and no
// Debian library offers a crash-safe line buffer.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string_view>

namespace covenant::detail {

class line_journal {
 public:
  /// Creates `<directory>/<prefix><pid>-<n>.journal` of `capacity` bytes, mapped and locked.
  /// std::runtime_error when it cannot.
  line_journal(const std::filesystem::path& directory, std::string_view prefix, std::size_t capacity);
  /// Unmaps and deletes the file (drain it first), unless keep_file() was called.
  ~line_journal();
  line_journal(const line_journal&) = delete;
  line_journal& operator=(const line_journal&) = delete;

  /// Makes an empty journal current: lines appended from now on are newer than those of every
  /// journal begun before (in any process).
  void begin() noexcept;
  /// Copies `line` and a newline; false (and nothing copied) when it does not fit. `line` must
  /// not contain a NUL byte (the end of the journal's content is its first NUL). After begin().
  bool append(std::string_view line) noexcept;
  /// The lines copied since the last clear(), each ending in a newline.
  [[nodiscard]] std::string_view pending() const noexcept { return {data_, used_}; }
  [[nodiscard]] bool empty() const noexcept { return used_ == 0; }
  /// Forgets the pending lines (after they were written to the log).
  void clear() noexcept;
  [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
  /// The file stays when the journal goes (its lines could not be drained): the next recover()
  /// in the directory takes them.
  void keep_file() noexcept { keep_ = true; }

  /// Hands the complete lines of every journal in `directory` named `<prefix>*.journal` whose
  /// owner has ended to `drain` (once per journal, the lines with their newlines; oldest journal
  /// first), then deletes the journal; a journal whose owner is alive is left alone. A line cut
  /// off by the owner's death is dropped. Returns how many journals were drained.
  static std::size_t recover(const std::filesystem::path& directory, std::string_view prefix,
                             const std::function<void(std::string_view)>& drain);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  char* map_ = nullptr;   // the whole file
  char* data_ = nullptr;  // where the lines start
  std::size_t capacity_ = 0;  // bytes for lines (the file has a header before them)
  std::size_t used_ = 0;
  bool keep_ = false;
};

}  // namespace covenant::detail
