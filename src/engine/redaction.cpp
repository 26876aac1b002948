// Redaction: the strings of a redact list out of a cassette's requests, replies, errors and chunks.
#include "redaction.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cassette_impl.hpp"
#include "request_key.hpp"

namespace covenant {

namespace json = boost::json;

namespace cassette_impl {

namespace {

constexpr std::string_view redacted_text = "[redacted]";

/// Redacts pieces of one text together, so that a secret split over two pieces is caught too: each
/// run of secret bytes becomes "[redacted]" in the piece where it starts and vanishes from the rest.
std::vector<std::string> redact_pieces(const std::vector<std::string>& pieces, const std::vector<std::string>& secrets) {
  if (secrets.empty()) return pieces;
  std::string all;
  for (const auto& p : pieces) all += p;
  std::vector<bool> covered(all.size(), false);
  bool any = false;
  for (const auto& s : secrets) {
    for (std::size_t pos = all.find(s); pos != std::string::npos; pos = all.find(s, pos + 1)) {
      std::fill(covered.begin() + static_cast<std::ptrdiff_t>(pos),
                covered.begin() + static_cast<std::ptrdiff_t>(pos + s.size()), true);
      any = true;
    }
  }
  if (!any) return pieces;
  std::vector<std::string> out;
  out.reserve(pieces.size());
  std::size_t g = 0;
  for (const auto& p : pieces) {
    std::string o;
    for (char c : p) {
      if (!covered[g]) o += c;
      else if (g == 0 || !covered[g - 1]) o += redacted_text;
      ++g;
    }
    out.push_back(std::move(o));
  }
  return out;
}

std::string redact(const std::string& s, const std::vector<std::string>& secrets) {
  if (secrets.empty()) return s;
  return std::move(redact_pieces({s}, secrets).front());
}

json::value redact_json(const json::value& v, const std::vector<std::string>& secrets) {
  if (secrets.empty()) return v;
  switch (v.kind()) {
    case json::kind::string: return json::string(redact(std::string(v.get_string()), secrets));
    case json::kind::array: {
      json::array a;
      a.reserve(v.get_array().size());
      for (const auto& e : v.get_array()) a.push_back(redact_json(e, secrets));
      return a;
    }
    case json::kind::object: {
      json::object o;
      for (const auto& kv : v.get_object()) o[redact(std::string(kv.key()), secrets)] = redact_json(kv.value(), secrets);
      return o;
    }
    default: return v;
  }
}

void redact_tool_calls(std::vector<tool_call>& calls, const std::vector<std::string>& secrets) {
  for (auto& c : calls) {
    c.id = redact(c.id, secrets);
    c.name = redact(c.name, secrets);
    c.arguments = redact(c.arguments, secrets);
  }
}

}  // namespace

/// The strings to redact: no empty ones, no duplicates, longest first.
std::vector<std::string> prepare_secrets(const std::vector<std::string>& list) {
  std::vector<std::string> out;
  for (const auto& s : list)
    if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  std::stable_sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return out;
}

std::string redact_text(const std::string& text, const std::vector<std::string>& secrets) { return redact(text, secrets); }

void redact_request(normal_request& r, const std::vector<std::string>& secrets) {
  if (secrets.empty()) return;
  for (auto& m : r.messages) {
    m.content = redact(m.content, secrets);
    redact_tool_calls(m.tool_calls, secrets);
    m.tool_call_id = redact(m.tool_call_id, secrets);
  }
  r.schema_name = redact(r.schema_name, secrets);
  if (r.schema) r.schema = make_canonical(redact_json(r.schema->value, secrets));
  if (r.tools) r.tools = make_canonical(redact_json(r.tools->value, secrets));
}

/// Redacts everything an interaction will write (the request is redacted when normalised).
void redact_outcome(interaction& it, const std::vector<std::string>& secrets) {
  if (secrets.empty()) return;
  it.response.text = redact(it.response.text, secrets);
  redact_tool_calls(it.response.tool_calls, secrets);
  it.response.model = redact(it.response.model, secrets);
  it.response.finish_reason = redact(it.response.finish_reason, secrets);
  it.response.reasoning = redact(it.response.reasoning, secrets);
  it.error_message = redact(it.error_message, secrets);
  // The pieces of each stream (the text, each tool call's arguments) are redacted together.
  std::vector<std::optional<std::size_t>> streams;
  for (const auto& c : it.chunks)
    if (std::find(streams.begin(), streams.end(), c.tool) == streams.end()) streams.push_back(c.tool);
  for (const auto& stream : streams) {
    std::vector<std::string> pieces;
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < it.chunks.size(); ++i) {
      if (it.chunks[i].tool != stream) continue;
      pieces.push_back(it.chunks[i].text);
      at.push_back(i);
    }
    pieces = redact_pieces(pieces, secrets);
    for (std::size_t i = 0; i < pieces.size(); ++i) it.chunks[at[i]].text = std::move(pieces[i]);
  }
  for (auto& c : it.chunks) c.name = redact(c.name, secrets);
}

}  // namespace cassette_impl

}  // namespace covenant
