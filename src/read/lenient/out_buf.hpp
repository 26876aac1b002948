// Internal to the lenient reader (src/read/lenient/): the output buffer of the repairing reader.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "read/lenient_text.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace covenant::lenient_impl {

// Output of the reader: writes through a raw pointer into a std::string sized ahead (grown when
// needed), so that the many one-byte writes stay cheap. attach() before writing, detach() after.
class out_buf {
 public:
  void attach(std::string& s, std::size_t hint) {
    s_ = &s;
    const std::size_t n = s.size();
    if (s.capacity() < n + hint) s.reserve(n + hint);
    s.resize(s.capacity());
    b_ = s.data();
    p_ = b_ + n;
    e_ = b_ + s.size();
  }
  void detach() { s_->resize(size()); }

  [[nodiscard]] std::size_t size() const noexcept { return static_cast<std::size_t>(p_ - b_); }
  [[nodiscard]] const char* data() const noexcept { return b_; }
  char operator[](std::size_t i) const noexcept { return b_[i]; }
  void resize(std::size_t n) noexcept { p_ = b_ + n; }  // shrinks only
  [[gnu::always_inline]] void push_back(char c) {
    if (p_ == e_) grow(1);
    *p_++ = c;
  }
  [[gnu::always_inline]] void append(const char* s, std::size_t n) {
    if (static_cast<std::size_t>(e_ - p_) < n) grow(n);
    copy_bytes(p_, s, n);
    p_ += n;
  }
  [[gnu::always_inline]] void append(const char* s) { append(s, std::strlen(s)); }

  // Copies string content from q up to the first byte a string scanner must look at ('"', '\\',
  // `closer` when not 0, a control character or a non-ASCII byte; see
  // detail::find_string_special) and returns where it stopped: 16 bytes are checked and copied
  // at a time (the output keeps 16 bytes of room), the copy of the last block being cut back.
  [[gnu::always_inline]] const char* copy_string_run(const char* q, const char* e, char closer) {
#if defined(__SSE2__)
    const detail::string_special_mask special(closer);
    while (e - q >= 16) {
      if (e_ - p_ < 16) grow(16);
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(p_), v);
      const int bits = special(v);
      if (bits != 0) {
        const int k = __builtin_ctz(static_cast<unsigned>(bits));
        p_ += k;
        return q + k;
      }
      q += 16;
      p_ += 16;
    }
#endif
    const char* s = detail::find_string_special(q, e, closer);
    append(q, static_cast<std::size_t>(s - q));
    return s;
  }

 private:
  [[gnu::noinline]] void grow(std::size_t n) {
    const std::size_t used = size();
    s_->resize(std::max(s_->size() * 2, used + n + 256));
    b_ = s_->data();
    p_ = b_ + used;
    e_ = b_ + s_->size();
  }

  // memcpy of a few bytes without a call: overlapping loads of 8, 4 or 1 bytes.
  [[gnu::always_inline]] static void copy_bytes(char* d, const char* s, std::size_t n) noexcept {
    if (n >= 8) {
      if (n > 16) {
        std::memcpy(d, s, n);
        return;
      }
      std::uint64_t a = 0, b = 0;
      std::memcpy(&a, s, 8);
      std::memcpy(&b, s + n - 8, 8);
      std::memcpy(d, &a, 8);
      std::memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
      std::uint32_t a = 0, b = 0;
      std::memcpy(&a, s, 4);
      std::memcpy(&b, s + n - 4, 4);
      std::memcpy(d, &a, 4);
      std::memcpy(d + n - 4, &b, 4);
    } else if (n != 0) {
      const char a = s[0], b = s[n / 2], c = s[n - 1];
      d[0] = a;
      d[n / 2] = b;
      d[n - 1] = c;
    }
  }

  std::string* s_ = nullptr;
  char* b_ = nullptr;
  char* p_ = nullptr;
  char* e_ = nullptr;
};

}  // namespace covenant::lenient_impl
