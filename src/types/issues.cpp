#include "covenant/types/issues.hpp"

#include <charconv>
#include <ostream>

#include "covenant/types/config.hpp"

namespace covenant {

std::string_view to_string(issue_code code) noexcept {
  switch (code) {
    case issue_code::missing_field: return "missing_field";
    case issue_code::type_mismatch: return "type_mismatch";
    case issue_code::constraint_violation: return "constraint_violation";
    case issue_code::invariant_violation: return "invariant_violation";
    case issue_code::parse_error: return "parse_error";
    case issue_code::unknown_field: return "unknown_field";
    case issue_code::precondition_violation: return "precondition_violation";
    case issue_code::postcondition_violation: return "postcondition_violation";
    case issue_code::hook_exception: return "hook_exception";
    case issue_code::engine_error: return "engine_error";
    case issue_code::cancelled: return "cancelled";
    case issue_code::deadline: return "deadline";
    case issue_code::unknown_tool: return "unknown_tool";
    case issue_code::limit_reached: return "limit_reached";
  }
  return "unknown";
}

std::string_view to_string(fail_action a) noexcept {
  switch (a) {
    case fail_action::reask: return "reask";
    case fail_action::fix: return "fix";
    case fail_action::filter: return "filter";
    case fail_action::refrain: return "refrain";
    case fail_action::noop: return "noop";
    case fail_action::exception: return "exception";
  }
  return "reask";
}

std::optional<fail_action> parse_fail_action(std::string_view name) noexcept {
  for (auto a : {fail_action::reask, fail_action::fix, fail_action::filter, fail_action::refrain, fail_action::noop,
                 fail_action::exception}) {
    if (to_string(a) == name) return a;
  }
  return std::nullopt;
}

std::string_view to_string(note_kind kind) noexcept {
  switch (kind) {
    case note_kind::extracted: return "extracted";
    case note_kind::repaired: return "repaired";
    case note_kind::coerced: return "coerced";
    case note_kind::truncated: return "truncated";
    case note_kind::incomplete: return "incomplete";
    case note_kind::check_failed: return "check_failed";
    case note_kind::stopped_early: return "stopped_early";
    case note_kind::fixed: return "fixed";
    case note_kind::filtered: return "filtered";
  }
  return "unknown";
}

namespace {

bool is_identifier(std::string_view k) noexcept {
  if (k.empty()) return false;
  for (std::size_t i = 0; i < k.size(); ++i) {
    const char c = k[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$';
    const bool digit = c >= '0' && c <= '9';
    if (!(alpha || (i > 0 && (digit || c == '-')))) return false;
  }
  return true;
}

void append_quoted(std::string& out, std::string_view k) {
  out.push_back('"');
  for (char c : k) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
}

}  // namespace

void path::append_to(std::string& out) const {
  bool first = true;
  for (const auto& s : segments_) {
    if (s.is_index) {
      char buf[24];
      buf[0] = '[';
      char* e = std::to_chars(buf + 1, buf + sizeof buf - 1, s.index).ptr;
      *e++ = ']';
      out.append(buf, static_cast<std::size_t>(e - buf));
    } else if (is_identifier(s.key)) {
      if (!first) out.push_back('.');
      out += s.key;
    } else {
      out.push_back('[');
      append_quoted(out, s.key);
      out.push_back(']');
    }
    first = false;
  }
}

std::string path::to_string() const {
  std::string out;
  append_to(out);
  return out;
}

path path::parse(std::string_view text) {
  path p;
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '.') {
      ++i;
      continue;
    }
    if (c == '[') {
      ++i;
      if (i < text.size() && text[i] == '"') {
        ++i;
        std::string key;
        while (i < text.size() && text[i] != '"') {
          if (text[i] == '\\' && i + 1 < text.size()) ++i;
          key.push_back(text[i++]);
        }
        ++i;  // closing quote
        p.key(key);
      } else {
        std::size_t n = 0;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') n = n * 10 + static_cast<std::size_t>(text[i++] - '0');
        p.index(n);
      }
      while (i < text.size() && text[i] != ']') ++i;
      ++i;  // ]
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && text[j] != '.' && text[j] != '[') ++j;
    p.key(text.substr(i, j - i));
    i = j;
  }
  return p;
}

void issue::append_to(std::string& out) const {
  if (!path.empty()) {
    path.append_to(out);
    out += ": ";
  }
  out += message;
  if (!actual.empty()) {
    out += " (got ";
    out += actual;
    out.push_back(')');
  }
}

std::string note::to_string() const {
  std::string out(covenant::to_string(kind));
  if (!path.empty()) {
    out += " at ";
    path.append_to(out);
  }
  if (!detail.empty()) {
    out += ": ";
    out += detail;
  }
  return out;
}

std::string issue::to_string() const {
  std::string out;
  append_to(out);
  return out;
}

void render_feedback(const issue_list& issues, std::string& out) {
  std::size_t size = out.size();
  for (const auto& i : issues) size += i.message.size() + i.actual.size() + 32;
  out.reserve(size);
  for (const auto& i : issues) {
    i.append_to(out);
    out.push_back('\n');
  }
}

std::string render_feedback(const issue_list& issues) {
  std::string out;
  render_feedback(issues, out);
  return out;
}

std::ostream& operator<<(std::ostream& os, const issue& i) { return os << i.to_string(); }
std::ostream& operator<<(std::ostream& os, const path& p) { return os << p.to_string(); }

namespace {
std::string describe_issues(const issue_list& issues) {
  std::string out = std::to_string(issues.size()) + (issues.size() == 1 ? " issue" : " issues");
  if (!issues.empty()) {
    out += ": ";
    issues.front().append_to(out);
    if (issues.size() > 1) out += " ...";
  }
  return out;
}
}  // namespace

decode_error::decode_error(issue_list issues) : std::runtime_error(describe_issues(issues)), issues_(std::move(issues)) {}

std::string elide(std::string_view text) {
  constexpr std::size_t limit = COVENANT_ACTUAL_MAX_CHARS;
  if (text.size() <= limit) {  // short: kept as is unless it has a line break or a tab
    bool plain = true;
    for (const char c : text) plain &= c != '\n' && c != '\r' && c != '\t';
    if (plain) return std::string(text);
  }
  std::string out;
  out.reserve(text.size() < limit ? text.size() : limit + 3);
  std::size_t chars = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto u = static_cast<unsigned char>(text[i]);
    std::size_t n = u < 0x80 ? 1 : u < 0xE0 ? 2 : u < 0xF0 ? 3 : 4;
    if (i + n > text.size()) n = text.size() - i;
    if (chars == limit) {
      out += "...";
      return out;
    }
    for (std::size_t k = 0; k < n; ++k) {
      const char c = text[i + k];
      out.push_back(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
    }
    i += n;
    ++chars;
  }
  return out;
}

}  // namespace covenant
