// W3C Trace Context: traceparent written and read, random ids.
#include "covenant/engine/trace_context.hpp"

#include <algorithm>
#include <cstddef>
#include <random>

namespace covenant {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

template <std::size_t N>
void append_hex(std::string& out, const std::array<std::uint8_t, N>& bytes) {
  for (std::uint8_t b : bytes) {
    out.push_back(hex_digits[b >> 4]);
    out.push_back(hex_digits[b & 15]);
  }
}

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is not valid in traceparent
}

/// Reads 2*N lower-case hex digits into `out`; false when one is not.
template <std::size_t N>
bool read_hex(std::string_view text, std::array<std::uint8_t, N>& out) noexcept {
  if (text.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_value(text[2 * i]);
    const int lo = hex_value(text[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
  }
  return true;
}

template <std::size_t N>
bool all_zero(const std::array<std::uint8_t, N>& a) noexcept {
  return std::all_of(a.begin(), a.end(), [](std::uint8_t b) { return b == 0; });
}

std::mt19937_64& generator() {
  thread_local std::mt19937_64 gen{[] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }()};
  return gen;
}

template <std::size_t N>
std::array<std::uint8_t, N> random_id() {
  std::array<std::uint8_t, N> id{};
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      std::uint64_t x = generator()();
      for (std::size_t j = 0; j < 8 && i + j < N; ++j, x >>= 8) id[i + j] = static_cast<std::uint8_t>(x & 0xff);
    }
  } while (all_zero(id));
  return id;
}

}  // namespace

bool trace_context::valid() const noexcept { return !all_zero(trace_id) && !all_zero(span_id); }

std::string trace_context::traceparent() const {
  if (!valid()) return {};
  std::string out;
  out.reserve(55);
  out += "00-";
  append_hex(out, trace_id);
  out.push_back('-');
  append_hex(out, span_id);
  out.push_back('-');
  out.push_back(hex_digits[flags >> 4]);
  out.push_back(hex_digits[flags & 15]);
  return out;
}

std::string trace_context::trace_id_hex() const {
  std::string out;
  out.reserve(32);
  append_hex(out, trace_id);
  return out;
}

std::string trace_context::span_id_hex() const {
  std::string out;
  out.reserve(16);
  append_hex(out, span_id);
  return out;
}

trace_context trace_context::with_span(const std::array<std::uint8_t, 8>& span) const {
  trace_context out = *this;
  out.span_id = span;
  return out;
}

std::optional<trace_context> trace_context::parse(std::string_view traceparent, std::string_view tracestate) {
  // Leading and trailing blanks of a header value are not part of it.
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  traceparent = trim(traceparent);
  if (traceparent.size() < 55) return std::nullopt;
  std::array<std::uint8_t, 1> version{};
  if (!read_hex(traceparent.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  // Version 00 is exactly 55 characters; a later version may add fields after a dash.
  if (version[0] == 0 ? traceparent.size() != 55 : (traceparent.size() > 55 && traceparent[55] != '-'))
    return std::nullopt;
  if (traceparent[2] != '-' || traceparent[35] != '-' || traceparent[52] != '-') return std::nullopt;
  trace_context out;
  std::array<std::uint8_t, 1> flags{};
  if (!read_hex(traceparent.substr(3, 32), out.trace_id) || !read_hex(traceparent.substr(36, 16), out.span_id) ||
      !read_hex(traceparent.substr(53, 2), flags))
    return std::nullopt;
  if (!out.valid()) return std::nullopt;
  out.flags = flags[0];
  out.tracestate = std::string(trim(tracestate));
  return out;
}

std::array<std::uint8_t, 16> new_trace_id() { return random_id<16>(); }
std::array<std::uint8_t, 8> new_span_id() { return random_id<8>(); }

}  // namespace covenant
