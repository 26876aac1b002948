// Small text and JSON helpers shared by the HTTP engine and its wire dialects, and what the
// dialects share by default.
#include "wire_text.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "covenant/types/encode.hpp"
#include "covenant/engine/engine.hpp"
#include "wire_dialect.hpp"

namespace covenant::detail::wire {

namespace {
char lower(char c) noexcept { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }
}  // namespace

namespace {
void append_json(std::string& out, const boost::json::value& v) {
  switch (v.kind()) {
    case boost::json::kind::null: out += "null"; return;
    case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; return;
    case boost::json::kind::int64:
    case boost::json::kind::uint64: out += boost::json::serialize(v); return;
    case boost::json::kind::double_: {
      const std::size_t at = out.size();
      detail::append_json_number(out, v.get_double());
      // A whole number stays a floating-point one (100.0, not 100), as it was written.
      if (out.find_first_of(".eEn", at) == std::string::npos) out += ".0";
      return;
    }
    case boost::json::kind::string: detail::append_json_string(out, v.get_string()); return;
    case boost::json::kind::array: {
      out.push_back('[');
      bool first = true;
      for (const boost::json::value& e : v.get_array()) {
        if (!first) out.push_back(',');
        first = false;
        append_json(out, e);
      }
      out.push_back(']');
      return;
    }
    case boost::json::kind::object: {
      out.push_back('{');
      bool first = true;
      for (const auto& kv : v.get_object()) {
        if (!first) out.push_back(',');
        first = false;
        detail::append_json_string(out, kv.key());
        out.push_back(':');
        append_json(out, kv.value());
      }
      out.push_back('}');
      return;
    }
  }
}
}  // namespace

std::string json_text(const boost::json::value& v) {
  std::string out;
  append_json(out, v);
  return out;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

bool istarts_with(std::string_view s, std::string_view prefix) noexcept {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

bool iends_with(std::string_view s, std::string_view suffix) noexcept {
  return s.size() >= suffix.size() && iequals(s.substr(s.size() - suffix.size()), suffix);
}

std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && static_cast<unsigned char>(s.front()) <= ' ') s.remove_prefix(1);
  while (!s.empty() && static_cast<unsigned char>(s.back()) <= ' ') s.remove_suffix(1);
  return s;
}

std::string one_line(std::string_view text, std::size_t max_chars) {
  std::string out;
  out.reserve(std::min(text.size(), max_chars + 3));
  bool space = false;
  for (char c : trim(text)) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '\x7f') {
      space = true;
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  if (out.size() > max_chars) {
    std::size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0u) == 0x80u) --cut;
    out.resize(cut);
    out += "...";
  }
  return out;
}

std::string redact(std::string text, std::string_view secret) {
  if (secret.empty()) return text;
  for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at)) {
    text.replace(at, secret.size(), "[redacted]");
    at += 10;
  }
  return text;
}

std::string api_name(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (out.size() == 64) break;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    out.push_back(ok ? c : '_');
  }
  if (out.empty()) out = "response";
  return out;
}

std::optional<double> parse_number(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

namespace {

// A token count: 0 when negative or not a number; the largest count past it.
std::uint64_t count_of(const boost::json::value& v) {
  if (v.is_uint64()) return v.as_uint64();
  if (v.is_int64()) return v.as_int64() > 0 ? static_cast<std::uint64_t>(v.as_int64()) : 0;
  if (v.is_double()) {
    const double d = v.as_double();
    if (!(d > 0)) return 0;
    // Past the largest count (1e300 in a hostile body): the largest count, not undefined behaviour.
    if (d >= 18446744073709551616.0) return std::numeric_limits<std::uint64_t>::max();
    return static_cast<std::uint64_t>(d);
  }
  return 0;
}

}  // namespace

std::uint64_t token_count(const boost::json::object& o, std::string_view key, std::string_view alt) {
  const boost::json::value* v = o.if_contains(key);
  if ((v == nullptr || v->is_null()) && !alt.empty()) v = o.if_contains(alt);
  return v == nullptr ? 0 : count_of(*v);
}

std::optional<std::uint64_t> reported_count(const boost::json::object& o, std::string_view key, std::string_view alt) {
  const boost::json::value* v = o.if_contains(key);
  if ((v == nullptr || !v->is_number()) && !alt.empty()) v = o.if_contains(alt);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return count_of(*v);
}

const boost::json::object* object_under(const boost::json::object& o, std::string_view key, std::string_view alt) {
  const boost::json::value* v = o.if_contains(key);
  if ((v == nullptr || !v->is_object()) && !alt.empty()) v = o.if_contains(alt);
  return v != nullptr ? v->if_object() : nullptr;
}

std::string string_or_empty(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return (v != nullptr && v->is_string()) ? std::string(v->as_string()) : std::string();
}

void bad_body(const std::string& what) { throw engine_error(what, 200, false); }

}  // namespace covenant::detail::wire

namespace covenant::detail {

std::string wire_dialect::body_text(const chat_request& request, output_mode mode, const http_engine_options& o) const {
  return boost::json::serialize(body(request, mode, o));
}

}  // namespace covenant::detail
