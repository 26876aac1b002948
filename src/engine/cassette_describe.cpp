// The cassette's messages: a request, a recording, where a request differs from the closest one.
#include <boost/json/serialize.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cassette_impl.hpp"

namespace covenant {

namespace json = boost::json;

namespace cassette_impl {

namespace {

/// Moves `at` back to the start of a UTF-8 character.
std::size_t char_start(std::string_view s, std::size_t at) {
  while (at > 0 && at < s.size() && (static_cast<unsigned char>(s[at]) & 0xC0U) == 0x80U) --at;
  return at;
}

/// A JSON-quoted excerpt of `s` from byte `from` (at most `len` bytes), with "..." marking cuts.
std::string excerpt(std::string_view s, std::size_t from = 0, std::size_t len = 60) {
  from = char_start(s, std::min(from, s.size()));
  std::size_t to = from + len >= s.size() ? s.size() : char_start(s, from + len);
  std::string text;
  if (from > 0) text += "...";
  text += s.substr(from, to - from);
  if (to < s.size()) text += "...";
  return json::serialize(json::string(text));
}

/// Both texts around their first difference.
std::string show_difference(std::string_view recorded, std::string_view requested) {
  const std::size_t at = common_prefix(recorded, requested);
  const std::size_t from = at > 25 ? at - 25 : 0;
  return "differ at byte " + std::to_string(at) + ": recorded " + excerpt(recorded, from, 70) + ", requested " +
         excerpt(requested, from, 70);
}

std::string optional_text(const std::optional<double>& v) {
  if (!v) return "unset";
  char buf[32];
  const int n = std::snprintf(buf, sizeof buf, "%.17g", *v);
  // The shortest of %g's precisions that reads back as the same number.
  for (int precision = 1; precision <= 17; ++precision) {
    char shorter[32];
    const int m = std::snprintf(shorter, sizeof shorter, "%.*g", precision, *v);
    if (std::strtod(shorter, nullptr) == *v) return std::string(shorter, static_cast<std::size_t>(m));
  }
  return std::string(buf, static_cast<std::size_t>(n));
}
std::string optional_text(const std::optional<std::uint64_t>& v) {
  return v ? std::to_string(*v) : std::string("unset");
}

}  // namespace

std::string describe_request(const normal_request& r) {
  std::string d;
  if (!r.schema_name.empty()) d += r.schema_name + ", ";
  d += std::to_string(r.messages.size()) + (r.messages.size() == 1 ? " message" : " messages");
  if (!r.messages.empty()) {
    const auto& last = r.messages.back();
    d += ", last (" + std::string(to_string(last.role)) + ") " + excerpt(last.content);
  }
  return d;
}

std::string describe_interaction(const interaction& it) {
  std::string d = "line " + std::to_string(it.line) + ": " + describe_request(it.request);
  if (it.failed) {
    d += " -> error " + excerpt(it.error_message);
    if (it.status != 0) d += " (status " + std::to_string(it.status) + ")";
  } else {
    d += " -> reply " + excerpt(it.response.text);
  }
  return d;
}

std::size_t common_prefix(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

/// Where a recorded request differs from a requested one.
std::string describe_difference(const normal_request& rec, const normal_request& req) {
  std::vector<std::string> diffs;
  const std::size_t n = std::min(rec.messages.size(), req.messages.size());
  bool messages_differ = false;
  for (std::size_t i = 0; i < n && !messages_differ; ++i) {
    const auto& a = rec.messages[i];
    const auto& b = req.messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (a.role != b.role) {
      diffs.push_back(where + ".role: recorded " + std::string(to_string(a.role)) + ", requested " +
                      std::string(to_string(b.role)));
      messages_differ = true;
    } else if (a.content != b.content) {
      diffs.push_back(where + " (" + std::string(to_string(a.role)) + ") content " + show_difference(a.content, b.content));
      messages_differ = true;
    } else if (a.media != b.media) {
      diffs.push_back(where + " (" + std::string(to_string(a.role)) + ") media: recorded " +
                      (a.media.empty() ? std::string("none") : a.media) + ", requested " +
                      (b.media.empty() ? std::string("none") : b.media));
      messages_differ = true;
    } else if (a.tool_calls != b.tool_calls) {
      std::string rec_calls, req_calls;
      append_tool_calls(rec_calls, a.tool_calls);
      append_tool_calls(req_calls, b.tool_calls);
      diffs.push_back(where + " (" + std::string(to_string(a.role)) + ") tool_calls " +
                      show_difference(rec_calls, req_calls));
      messages_differ = true;
    } else if (a.tool_call_id != b.tool_call_id) {
      diffs.push_back(where + " (" + std::string(to_string(a.role)) + ") tool_call_id: recorded " +
                      excerpt(a.tool_call_id) + ", requested " + excerpt(b.tool_call_id));
      messages_differ = true;
    } else if (a.is_error != b.is_error) {
      diffs.push_back(where + " (" + std::string(to_string(a.role)) + ") is_error: recorded " +
                      (a.is_error ? "true" : "false") + ", requested " + (b.is_error ? "true" : "false"));
      messages_differ = true;
    }
  }
  if (!messages_differ && rec.messages.size() != req.messages.size()) {
    const bool more = req.messages.size() > rec.messages.size();
    const auto& extra = more ? req.messages[n] : rec.messages[n];
    diffs.push_back("recorded " + std::to_string(rec.messages.size()) + " messages, requested " +
                    std::to_string(req.messages.size()) + " (" + (more ? "requested" : "recorded") + " messages[" +
                    std::to_string(n) + "] (" + std::string(to_string(extra.role)) + ") " + excerpt(extra.content) + ")");
  }
  if (rec.schema_name != req.schema_name)
    diffs.push_back("schema_name: recorded " + excerpt(rec.schema_name) + ", requested " + excerpt(req.schema_name));
  if (rec.mode != req.mode) diffs.push_back("mode: recorded " + rec.mode + ", requested " + req.mode);
  const std::string rec_schema = rec.schema ? rec.schema->text : "null";
  const std::string req_schema = req.schema ? req.schema->text : "null";
  if (rec_schema != req_schema) diffs.push_back("schema " + show_difference(rec_schema, req_schema));
  if (rec.temperature != req.temperature)
    diffs.push_back("temperature: recorded " + optional_text(rec.temperature) + ", requested " + optional_text(req.temperature));
  if (rec.max_tokens != req.max_tokens)
    diffs.push_back("max_tokens: recorded " + optional_text(rec.max_tokens) + ", requested " + optional_text(req.max_tokens));
  const std::string rec_tools = rec.tools ? rec.tools->text : "null";
  const std::string req_tools = req.tools ? req.tools->text : "null";
  if (rec_tools != req_tools) diffs.push_back("tools " + show_difference(rec_tools, req_tools));
  std::string out;
  for (const auto& d : diffs) {
    if (!out.empty()) out += "; ";
    out += d;
  }
  return out.empty() ? std::string("no difference") : out;
}

}  // namespace cassette_impl

}  // namespace covenant
