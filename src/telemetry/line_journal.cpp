// A memory-mapped journal of text lines (see line_journal.hpp).
#include "line_journal.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace covenant::detail {

namespace {

constexpr std::size_t header_bytes = 16;

std::string errno_text() { return std::system_category().message(errno); }

std::atomic<std::uint64_t>& generation(char* map) {
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
  return *reinterpret_cast<std::atomic<std::uint64_t>*>(map);
}

// The content of a mapped journal: up to its first NUL, then up to its last newline.
std::string_view complete_lines(const char* data, std::size_t size) {
  const void* nul = std::memchr(data, '\0', size);
  std::size_t n = nul != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nul) - data) : size;
  while (n > 0 && data[n - 1] != '\n') --n;
  return {data, n};
}

}  // namespace

line_journal::line_journal(const std::filesystem::path& directory, std::string_view prefix, std::size_t capacity)
    : capacity_(capacity) {
  static std::atomic<unsigned> counter{0};
  path_ = directory / (std::string(prefix) + std::to_string(::getpid()) + "-" +
                       std::to_string(counter.fetch_add(1, std::memory_order_relaxed)) + ".journal");
  // Made under another name and renamed once locked: recover() never sees it unlocked.
  std::filesystem::path making = path_;
  making += ".new";
  fd_ = ::open(making.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd_ < 0) throw std::runtime_error("cannot create " + making.string() + ": " + errno_text());
  auto fail = [&](const char* what) {
    const std::string text = what + (": " + errno_text());
    ::close(fd_);
    std::error_code ec;
    std::filesystem::remove(making, ec);
    throw std::runtime_error(path_.string() + ": " + text);
  };
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) fail("cannot lock");
  if (::ftruncate(fd_, static_cast<off_t>(header_bytes + capacity_)) != 0) fail("cannot size");
  void* p = ::mmap(nullptr, header_bytes + capacity_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) fail("cannot map");
  map_ = static_cast<char*>(p);
  data_ = map_ + header_bytes;
  if (::rename(making.c_str(), path_.c_str()) != 0) {
    ::munmap(map_, header_bytes + capacity_);
    map_ = nullptr;
    fail("cannot rename");
  }
}

line_journal::~line_journal() {
  if (map_ != nullptr) ::munmap(map_, header_bytes + capacity_);
  std::error_code ec;
  if (!keep_) std::filesystem::remove(path_, ec);
  if (fd_ >= 0) ::close(fd_);
}

void line_journal::begin() noexcept {
  // Later than every generation begun before, here or in another process (the clock, made
  // strictly increasing within the process).
  static std::atomic<std::uint64_t> last{0};
  const auto now = static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  std::uint64_t prev = last.load(std::memory_order_relaxed);
  std::uint64_t next = 0;
  do {
    next = std::max(now, prev + 1);
  } while (!last.compare_exchange_weak(prev, next, std::memory_order_relaxed));
  generation(map_).store(next, std::memory_order_release);
}

bool line_journal::append(std::string_view line) noexcept {
  if (line.size() + 1 > capacity_ - used_) return false;
  std::memcpy(data_ + used_, line.data(), line.size());
  data_[used_ + line.size()] = '\n';
  used_ += line.size() + 1;
  return true;
}

void line_journal::clear() noexcept {
  generation(map_).store(0, std::memory_order_release);  // empty from here on, whatever follows
  std::memset(data_, 0, used_);
  used_ = 0;
}

std::size_t line_journal::recover(const std::filesystem::path& directory, std::string_view prefix,
                                  const std::function<void(std::string_view)>& drain) {
  struct left {
    std::filesystem::path path;
    int fd;
    std::uint64_t generation;
  };
  std::vector<left> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() + 8 || name.compare(0, prefix.size(), prefix) != 0 ||
        !name.ends_with(".journal"))
      continue;
    const int fd = ::open(entry.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    // Locked: its owner is alive (in this process or another).
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd);
      continue;
    }
    // Another recovery may have drained and deleted it between the open and the lock.
    struct stat st {};
    struct stat now {};
    std::uint64_t gen = 0;
    if (::fstat(fd, &st) != 0 || ::stat(entry.path().c_str(), &now) != 0 || now.st_ino != st.st_ino ||
        now.st_dev != st.st_dev) {
      ::close(fd);
      continue;
    }
    if (st.st_size > static_cast<off_t>(header_bytes) && ::pread(fd, &gen, sizeof gen, 0) != sizeof gen) gen = 0;
    found.push_back({entry.path(), fd, gen});
  }
  std::sort(found.begin(), found.end(), [](const left& a, const left& b) { return a.generation < b.generation; });
  std::size_t drained = 0;
  std::exception_ptr failed;
  for (const left& j : found) {
    if (!failed && j.generation != 0) {
      struct stat st {};
      if (::fstat(j.fd, &st) == 0) {
        const auto size = static_cast<std::size_t>(st.st_size);
        void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, j.fd, 0);
        if (p != MAP_FAILED) {
          const std::string_view lines =
              complete_lines(static_cast<const char*>(p) + header_bytes, size - header_bytes);
          try {
            if (!lines.empty()) drain(lines);
          } catch (...) {
            failed = std::current_exception();
          }
          ::munmap(p, size);
        }
      }
    }
    if (!failed) {
      std::filesystem::remove(j.path, ec);
      ++drained;
    }
    ::close(j.fd);
  }
  if (failed) std::rethrow_exception(failed);
  return drained;
}

}  // namespace covenant::detail
