// cassette_engine: records another engine's replies as JSON Lines and replays them (the format and
// the matching rules are documented in include/covenant/engine/cassette.hpp).
#include "covenant/engine/cassette.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <system_error>
#include <unordered_map>
#include <utility>

#include "covenant/types/encode.hpp"
#include "log.hpp"

namespace covenant {

namespace json = boost::json;

std::string_view to_string(cassette_mode m) noexcept {
  switch (m) {
    case cassette_mode::record: return "record";
    case cassette_mode::replay: return "replay";
    case cassette_mode::new_episodes: return "new_episodes";
  }
  return "replay";
}

std::optional<cassette_mode> parse_cassette_mode(std::string_view name) noexcept {
  if (name == "record") return cassette_mode::record;
  if (name == "replay") return cassette_mode::replay;
  if (name == "new_episodes" || name == "new-episodes") return cassette_mode::new_episodes;
  return std::nullopt;
}

namespace {

constexpr std::int64_t format_version = 1;
constexpr std::string_view redacted_text = "[redacted]";
constexpr std::string_view header_example = R"({"covenant_cassette": 1, "created": "..."})";

using clock_type = std::chrono::steady_clock;

// ---------------------------------------------------------------------------------------------
// Redaction
// ---------------------------------------------------------------------------------------------

/// The strings to redact: no empty ones, no duplicates, longest first.
std::vector<std::string> prepare_secrets(const std::vector<std::string>& list) {
  std::vector<std::string> out;
  for (const auto& s : list)
    if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  std::stable_sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  return out;
}

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

// ---------------------------------------------------------------------------------------------
// The normalised request
// ---------------------------------------------------------------------------------------------

/// The value with every object's keys sorted.
json::value canonical(const json::value& v) {
  switch (v.kind()) {
    case json::kind::array: {
      json::array a;
      a.reserve(v.get_array().size());
      for (const auto& e : v.get_array()) a.push_back(canonical(e));
      return a;
    }
    case json::kind::object: {
      std::vector<const json::key_value_pair*> kvs;
      for (const auto& kv : v.get_object()) kvs.push_back(&kv);
      std::sort(kvs.begin(), kvs.end(), [](const auto* a, const auto* b) { return a->key() < b->key(); });
      json::object o;
      o.reserve(kvs.size());
      for (const auto* kv : kvs) o.emplace(kv->key(), canonical(kv->value()));
      return o;
    }
    default: return v;
  }
}

/// A schema with its object keys sorted, and that as JSON text ("null" for no schema).
struct canonical_schema {
  json::value value;
  std::string text = "null";
};

std::shared_ptr<const canonical_schema> make_canonical(const json::value& v) {
  auto c = std::make_shared<canonical_schema>();
  c->value = canonical(v);
  c->text = json::serialize(c->value);
  return c;
}

/// The canonical form of what `shared` points to, made by `make` once per object (a contract builds
/// its schema and its tools once and sends the same ones with every request): a cache of the
/// objects of type T seen lately. An object owned by its pointer is found by its owner (alive while
/// the cache holds a weak reference); one not owned (an aliasing pointer without an owner, as
/// contracts send their static schemas) by its address: chat_request::response_schema says such a
/// schema outlives the requests that carry it.
template <class T, class Make>
std::shared_ptr<const canonical_schema> cached_canonical(const std::shared_ptr<const T>& shared, Make make) {
  struct entry {
    const T* address;
    std::weak_ptr<const T> owner;  // expired at once for an object without owner
    bool owned;
    std::shared_ptr<const canonical_schema> canonical;
  };
  static std::mutex mutex;
  static std::deque<entry> seen;  // a few contracts' objects; the oldest goes past 32
  const bool owned = shared.use_count() > 0;
  {
    std::lock_guard lock(mutex);
    for (const entry& e : seen) {
      if (e.address != shared.get() || e.owned != owned) continue;
      if (!owned || (!e.owner.owner_before(shared) && !shared.owner_before(e.owner) && !e.owner.expired()))
        return e.canonical;
    }
  }
  std::shared_ptr<const canonical_schema> made = make(*shared);
  std::lock_guard lock(mutex);
  std::erase_if(seen, [](const entry& e) { return e.owned && e.owner.expired(); });
  if (seen.size() >= 32) seen.pop_front();
  seen.push_back({shared.get(), shared, owned, made});
  return made;
}

/// The canonical form of a request's schema (null for none), made once per schema.
std::shared_ptr<const canonical_schema> canonical_of(const std::shared_ptr<const json::value>& schema) {
  if (!schema) return nullptr;
  return cached_canonical(schema, [](const json::value& v) { return make_canonical(v); });
}

/// One tool as a cassette keeps it: {"name": ..., "description": ..., "parameters": <schema> | null}
/// (canonical_tools() then sorts its keys).
json::object tool_json(std::string_view name, std::string_view description, const json::value* parameters) {
  json::object o;
  o["name"] = name;
  o["description"] = description;
  o["parameters"] = parameters != nullptr ? *parameters : json::value(nullptr);
  return o;
}

/// The canonical form of a request's tools: the array of tool_json() with every object's keys
/// sorted; null for no tools (a null or an empty list). Made once per list owned by its pointer;
/// a list without owner (nothing says how long it lives) is read each time.
std::shared_ptr<const canonical_schema> canonical_tools(const std::shared_ptr<const std::vector<tool_spec>>& tools) {
  if (!tools || tools->empty()) return nullptr;
  auto make = [](const std::vector<tool_spec>& list) {
    json::array a;
    a.reserve(list.size());
    for (const tool_spec& t : list) a.push_back(tool_json(t.name, t.description, t.parameters.get()));
    return make_canonical(a);
  };
  if (tools.use_count() == 0) return make(*tools);
  return cached_canonical(tools, make);
}

/// A message as a cassette keeps it: its media as their digest (covenant::media_digest, written
/// compactly; "" when it has none), never their bytes, and its tool fields.
struct normal_message {
  covenant::role role = covenant::role::user;
  std::string content;
  std::string media;
  std::vector<covenant::tool_call> tool_calls{};
  std::string tool_call_id{};
  bool is_error = false;
};

/// Tool calls as compact JSON: [{"id":...,"name":...,"arguments":...}, ...].
void append_tool_calls(std::string& out, const std::vector<tool_call>& calls) {
  out += '[';
  for (std::size_t k = 0; k < calls.size(); ++k) {
    out += k == 0 ? "{\"id\":" : ",{\"id\":";
    detail::append_json_string(out, calls[k].id);
    out += ",\"name\":";
    detail::append_json_string(out, calls[k].name);
    out += ",\"arguments\":";
    detail::append_json_string(out, calls[k].arguments);
    out += '}';
  }
  out += ']';
}

json::array tool_calls_json(const std::vector<tool_call>& calls) {
  json::array a;
  a.reserve(calls.size());
  for (const auto& c : calls) {
    json::object o;
    o["id"] = c.id;
    o["name"] = c.name;
    o["arguments"] = c.arguments;
    a.push_back(std::move(o));
  }
  return a;
}

std::string canonical_media(const json::value& digest) { return json::serialize(digest); }

struct normal_request {
  std::vector<normal_message> messages;
  std::string schema_name;
  std::string mode = std::string(to_string(output_mode::json_schema));
  std::shared_ptr<const canonical_schema> schema;  // null when none
  std::optional<double> temperature;
  std::optional<std::uint64_t> max_tokens;
  std::shared_ptr<const canonical_schema> tools;  // canonical_tools(); null when none
};

json::object to_json(const normal_request& r) {
  json::object o;
  json::array messages;
  messages.reserve(r.messages.size());
  for (const auto& m : r.messages) {
    json::object jm;
    jm["role"] = to_string(m.role);
    jm["content"] = m.content;
    if (!m.media.empty()) jm["media"] = json::parse(m.media);
    if (!m.tool_calls.empty()) jm["tool_calls"] = tool_calls_json(m.tool_calls);
    if (!m.tool_call_id.empty()) jm["tool_call_id"] = m.tool_call_id;
    if (m.is_error) jm["is_error"] = true;
    messages.push_back(std::move(jm));
  }
  o["messages"] = std::move(messages);
  o["schema_name"] = r.schema_name;
  o["mode"] = r.mode;
  o["schema"] = r.schema ? r.schema->value : json::value(nullptr);
  if (r.temperature) o["temperature"] = *r.temperature;
  else o["temperature"] = nullptr;
  if (r.max_tokens) o["max_tokens"] = *r.max_tokens;
  else o["max_tokens"] = nullptr;
  if (r.tools) o["tools"] = r.tools->value;
  return o;
}

/// The request as compact JSON (to_json's fields in its order), written directly: the schema's
/// canonical text is made once per schema.
std::string key_of(const normal_request& r) {
  std::size_t size = 128 + (r.schema ? r.schema->text.size() : 4) + r.schema_name.size() +
                     (r.tools ? r.tools->text.size() + 10 : 0);
  for (const auto& m : r.messages) {
    size += m.content.size() + m.media.size() + m.tool_call_id.size() + 32;
    for (const auto& c : m.tool_calls) size += c.id.size() + c.name.size() + c.arguments.size() + 32;
  }
  std::string out;
  out.reserve(size);
  out += "{\"messages\":[";
  for (std::size_t i = 0; i < r.messages.size(); ++i) {
    out += i == 0 ? "{\"role\":\"" : ",{\"role\":\"";
    out += to_string(r.messages[i].role);
    out += "\",\"content\":";
    detail::append_json_string(out, r.messages[i].content);
    if (!r.messages[i].media.empty()) out.append(",\"media\":").append(r.messages[i].media);
    if (!r.messages[i].tool_calls.empty()) {
      out += ",\"tool_calls\":";
      append_tool_calls(out, r.messages[i].tool_calls);
    }
    if (!r.messages[i].tool_call_id.empty()) {
      out += ",\"tool_call_id\":";
      detail::append_json_string(out, r.messages[i].tool_call_id);
    }
    if (r.messages[i].is_error) out += ",\"is_error\":true";
    out += '}';
  }
  out += "],\"schema_name\":";
  detail::append_json_string(out, r.schema_name);
  out += ",\"mode\":";
  detail::append_json_string(out, r.mode);
  out += ",\"schema\":";
  out += r.schema ? r.schema->text : std::string("null");
  out += ",\"temperature\":";
  out += r.temperature ? json::serialize(json::value(*r.temperature)) : std::string("null");
  out += ",\"max_tokens\":";
  out += r.max_tokens ? std::to_string(*r.max_tokens) : std::string("null");
  if (r.tools) out.append(",\"tools\":").append(r.tools->text);
  out += '}';
  return out;
}

void redact_tool_calls(std::vector<tool_call>& calls, const std::vector<std::string>& secrets) {
  for (auto& c : calls) {
    c.id = redact(c.id, secrets);
    c.name = redact(c.name, secrets);
    c.arguments = redact(c.arguments, secrets);
  }
}

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

normal_request normalize(const chat_request& request, const std::vector<std::string>& secrets) {
  normal_request n;
  n.messages.reserve(request.messages.size());
  for (const message& m : request.messages)
    n.messages.push_back({m.role, m.content,
                          m.media.empty() ? std::string() : canonical_media(json::parse(media_digest(m.media))),
                          m.tool_calls, m.tool_call_id, m.is_error});
  n.schema_name = request.schema_name;
  n.mode = std::string(to_string(request.mode));
  n.schema = canonical_of(request.response_schema);
  n.temperature = request.temperature;
  if (request.max_tokens) n.max_tokens = *request.max_tokens;
  n.tools = canonical_tools(request.tools);
  redact_request(n, secrets);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Interactions
// ---------------------------------------------------------------------------------------------

/// A streamed piece: of the reply text, or (`tool` set) of the arguments of tool call `tool`, whose
/// name comes with its first piece.
struct chunk {
  std::string text;
  std::optional<std::int64_t> ms;
  std::optional<std::size_t> tool{};
  std::string name{};
};

struct interaction {
  std::size_t line = 0;
  normal_request request;
  std::string key;
  bool failed = false;
  chat_response response;
  std::string error_message;
  int status = 0;
  bool retryable = false;
  bool cancelled = false;
  std::optional<std::int64_t> ms;
  bool streamed = false;
  std::vector<chunk> chunks;
  bool used = false;  // guarded by the state's mutex
};

json::object to_json(const interaction& it) {
  json::object o;
  o["request"] = to_json(it.request);
  if (it.failed) {
    json::object e;
    e["message"] = it.error_message;
    e["status"] = it.status;
    e["retryable"] = it.retryable;
    e["cancelled"] = it.cancelled;
    if (it.ms) e["ms"] = *it.ms;
    o["error"] = std::move(e);
  } else {
    json::object r;
    r["text"] = it.response.text;
    if (!it.response.tool_calls.empty()) r["tool_calls"] = tool_calls_json(it.response.tool_calls);
    json::object u;
    u["input_tokens"] = it.response.usage.input_tokens;
    u["output_tokens"] = it.response.usage.output_tokens;
    // the parts providers price apart, when there are any (older cassettes have none)
    if (it.response.usage.cached_input_tokens != 0) u["cached_input_tokens"] = it.response.usage.cached_input_tokens;
    if (it.response.usage.cache_write_tokens != 0) u["cache_write_tokens"] = it.response.usage.cache_write_tokens;
    if (it.response.usage.reasoning_tokens != 0) u["reasoning_tokens"] = it.response.usage.reasoning_tokens;
    r["usage"] = std::move(u);
    r["model"] = it.response.model;
    r["finish_reason"] = it.response.finish_reason;
    if (!it.response.reasoning.empty()) r["reasoning"] = it.response.reasoning;
    r["cut_off"] = it.response.cut_off;
    r["mode"] = to_string(it.response.mode);
    if (it.ms) r["ms"] = *it.ms;
    o["response"] = std::move(r);
  }
  if (it.streamed) {
    json::array chunks;
    chunks.reserve(it.chunks.size());
    for (const auto& c : it.chunks) {
      json::object jc;
      if (c.tool) {
        jc["tool"] = *c.tool;
        if (!c.name.empty()) jc["name"] = c.name;
      }
      jc["text"] = c.text;
      if (c.ms) jc["ms"] = *c.ms;
      chunks.push_back(std::move(jc));
    }
    o["chunks"] = std::move(chunks);
  }
  return o;
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

// ---------------------------------------------------------------------------------------------
// Text for messages
// ---------------------------------------------------------------------------------------------

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

std::int64_t ms_since(clock_type::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start).count();
}

std::string utc_now_iso8601() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

// ---------------------------------------------------------------------------------------------
// Reading a cassette
// ---------------------------------------------------------------------------------------------

/// Reads the fields of one line and throws "<path>:<line>: <what>" for anything wrong.
class line_reader {
 public:
  line_reader(const std::string& path, std::size_t line) : path_(path), line_(line) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path_ + ":" + std::to_string(line_) + ": " + what);
  }

  const json::object& object(const json::value& v, const std::string& where) const {
    if (!v.is_object()) fail(where + " must be a JSON object");
    return v.get_object();
  }

  std::string string(const json::object& o, std::string_view key, const std::string& where, bool required) const {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || (v->is_null() && !required)) {
      if (required) fail(where + " has no \"" + std::string(key) + "\"");
      return {};
    }
    if (!v->is_string()) fail(where + "." + std::string(key) + " must be a string");
    return std::string(v->get_string());
  }

  bool boolean(const json::object& o, std::string_view key, const std::string& where) const {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return false;
    if (!v->is_bool()) fail(where + "." + std::string(key) + " must be true or false");
    return v->get_bool();
  }

  template <class Int>
  std::optional<Int> integer(const json::object& o, std::string_view key, const std::string& where) const {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    boost::system::error_code ec;
    Int n = v->to_number<Int>(ec);
    if (ec || v->is_double()) fail(where + "." + std::string(key) + " must be an integer in range");
    return n;
  }

  std::optional<double> number(const json::object& o, std::string_view key, const std::string& where) const {
    const json::value* v = o.if_contains(key);
    if (v == nullptr || v->is_null()) return std::nullopt;
    if (!v->is_number()) fail(where + "." + std::string(key) + " must be a number");
    return v->to_number<double>();
  }

  /// A list of tool calls [{"id": ..., "name": ..., "arguments": ...}] ("name" required).
  std::vector<tool_call> tool_calls(const json::value& v, const std::string& where) const {
    if (!v.is_array()) fail(where + " must be an array of tool calls {\"id\", \"name\", \"arguments\"}");
    std::vector<tool_call> calls;
    std::size_t k = 0;
    for (const auto& jc : v.get_array()) {
      const std::string at = where + "[" + std::to_string(k++) + "]";
      const json::object& c = object(jc, at);
      tool_call call;
      call.id = string(c, "id", at, false);
      call.name = string(c, "name", at, true);
      call.arguments = string(c, "arguments", at, false);
      calls.push_back(std::move(call));
    }
    return calls;
  }

  /// request.tools: [{"name": ..., "description": ..., "parameters": <schema> | null}] ("name"
  /// required); null for none (null or an empty list).
  std::shared_ptr<const canonical_schema> tools(const json::object& o) const {
    const json::value* v = o.if_contains("tools");
    if (v == nullptr || v->is_null()) return nullptr;
    if (!v->is_array()) fail("request.tools must be an array of tools {\"name\", \"description\", \"parameters\"}");
    if (v->get_array().empty()) return nullptr;
    json::array a;
    std::size_t k = 0;
    for (const auto& jt : v->get_array()) {
      const std::string where = "request.tools[" + std::to_string(k++) + "]";
      const json::object& t = object(jt, where);
      const json::value* parameters = t.if_contains("parameters");
      if (parameters != nullptr && !parameters->is_null() && !parameters->is_object() && !parameters->is_bool())
        fail(where + ".parameters must be a JSON Schema (an object) or null");
      a.push_back(tool_json(string(t, "name", where, true), string(t, "description", where, false),
                            parameters != nullptr && !parameters->is_null() ? parameters : nullptr));
    }
    return make_canonical(a);
  }

  output_mode mode(const json::object& o, const std::string& where) const {
    const std::string name = string(o, "mode", where, false);
    if (name.empty()) return output_mode::json_schema;
    auto m = parse_output_mode(name);
    if (!m) fail(where + ".mode: unknown output mode \"" + name + "\" (json_schema, json_object, tools, prompt, auto)");
    return *m;
  }

  normal_request request(const json::value& v) const {
    const json::object& o = object(v, "\"request\"");
    normal_request r;
    const json::value* messages = o.if_contains("messages");
    if (messages == nullptr) fail("\"request\" has no \"messages\"");
    if (!messages->is_array()) fail("request.messages must be an array");
    std::size_t i = 0;
    for (const auto& jm : messages->get_array()) {
      const std::string where = "request.messages[" + std::to_string(i++) + "]";
      const json::object& m = object(jm, where);
      const std::string role = string(m, "role", where, true);
      normal_message msg;
      if (role == "system") msg.role = covenant::role::system;
      else if (role == "user") msg.role = covenant::role::user;
      else if (role == "assistant") msg.role = covenant::role::assistant;
      else if (role == "tool") msg.role = covenant::role::tool;
      else fail(where + ".role: unknown role \"" + role + "\" (system, user, assistant, tool)");
      msg.content = string(m, "content", where, true);
      if (const json::value* media = m.if_contains("media"); media != nullptr) {
        if (!media->is_array()) fail(where + ".media must be an array of media digests");
        if (!media->get_array().empty()) msg.media = canonical_media(*media);
      }
      if (const json::value* calls = m.if_contains("tool_calls"); calls != nullptr && !calls->is_null())
        msg.tool_calls = tool_calls(*calls, where + ".tool_calls");
      msg.tool_call_id = string(m, "tool_call_id", where, false);
      msg.is_error = boolean(m, "is_error", where);
      r.messages.push_back(std::move(msg));
    }
    r.schema_name = string(o, "schema_name", "request", false);
    r.mode = std::string(to_string(mode(o, "request")));
    if (const json::value* s = o.if_contains("schema"); s != nullptr && !s->is_null()) r.schema = make_canonical(*s);
    r.temperature = number(o, "temperature", "request");
    r.max_tokens = integer<std::uint64_t>(o, "max_tokens", "request");
    r.tools = tools(o);
    return r;
  }

  interaction read(const json::object& line) const {
    interaction it;
    it.line = line_;
    const json::value* req = line.if_contains("request");
    if (req == nullptr) fail("no \"request\" (an interaction line is {\"request\": ..., \"response\": ...})");
    it.request = request(*req);
    it.key = key_of(it.request);
    const json::value* resp = line.if_contains("response");
    const json::value* err = line.if_contains("error");
    if ((resp == nullptr) == (err == nullptr)) fail("an interaction needs exactly one of \"response\" and \"error\"");
    if (resp != nullptr) {
      const json::object& r = object(*resp, "\"response\"");
      it.response.text = string(r, "text", "response", true);
      if (const json::value* calls = r.if_contains("tool_calls"); calls != nullptr && !calls->is_null())
        it.response.tool_calls = tool_calls(*calls, "response.tool_calls");
      if (const json::value* u = r.if_contains("usage"); u != nullptr && !u->is_null()) {
        const json::object& uo = object(*u, "response.usage");
        it.response.usage.input_tokens = integer<std::uint64_t>(uo, "input_tokens", "response.usage").value_or(0);
        it.response.usage.output_tokens = integer<std::uint64_t>(uo, "output_tokens", "response.usage").value_or(0);
        it.response.usage.cached_input_tokens =
            integer<std::uint64_t>(uo, "cached_input_tokens", "response.usage").value_or(0);
        it.response.usage.cache_write_tokens =
            integer<std::uint64_t>(uo, "cache_write_tokens", "response.usage").value_or(0);
        it.response.usage.reasoning_tokens = integer<std::uint64_t>(uo, "reasoning_tokens", "response.usage").value_or(0);
      }
      it.response.model = string(r, "model", "response", false);
      it.response.finish_reason = string(r, "finish_reason", "response", false);
      it.response.reasoning = string(r, "reasoning", "response", false);
      it.response.cut_off = boolean(r, "cut_off", "response");
      it.response.mode = mode(r, "response");
      it.ms = integer<std::int64_t>(r, "ms", "response");
    } else {
      const json::object& e = object(*err, "\"error\"");
      it.failed = true;
      it.error_message = string(e, "message", "error", true);
      it.status = integer<int>(e, "status", "error").value_or(0);
      it.retryable = boolean(e, "retryable", "error");
      it.cancelled = boolean(e, "cancelled", "error");
      it.ms = integer<std::int64_t>(e, "ms", "error");
    }
    if (const json::value* c = line.if_contains("chunks"); c != nullptr && !c->is_null()) {
      if (!c->is_array()) fail("\"chunks\" must be an array");
      it.streamed = true;
      std::size_t i = 0;
      for (const auto& jc : c->get_array()) {
        const std::string where = "chunks[" + std::to_string(i++) + "]";
        const json::object& co = object(jc, where);
        it.chunks.push_back(chunk{string(co, "text", where, true), integer<std::int64_t>(co, "ms", where),
                                  integer<std::size_t>(co, "tool", where), string(co, "name", where, false)});
      }
    }
    return it;
  }

 private:
  const std::string& path_;
  std::size_t line_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// The engine's shared state (alive as long as a call being recorded needs it)
// ---------------------------------------------------------------------------------------------

struct cassette_engine::state {
  cassette_options options;
  std::vector<std::string> secrets;

  mutable std::mutex mutex;
  std::deque<interaction> items;  // stable addresses: replayed calls read them outside the lock
  std::unordered_map<std::string, std::vector<std::size_t>> by_key;
  std::unordered_map<std::string, std::size_t> asks;
  std::FILE* out = nullptr;
  std::size_t lines = 0;  // lines in the file so far

  state() = default;
  state(const state&) = delete;
  state& operator=(const state&) = delete;
  ~state() {
    if (out != nullptr) std::fclose(out);
  }

  [[noreturn]] void fail_open(const std::string& what) const {
    throw std::runtime_error("cassette_engine: " + options.path + ": " + what);
  }

  void add(interaction it) {
    const std::size_t index = items.size();
    by_key[it.key].push_back(index);
    items.push_back(std::move(it));
  }

  /// Reads the whole file (the constructor; no lock needed). Returns false when it does not exist.
  bool load(bool must_exist, bool& ends_with_newline) {
    errno = 0;
    std::FILE* f = std::fopen(options.path.c_str(), "rb");
    if (f == nullptr) {
      const int err = errno;
      if (err == ENOENT && !must_exist) return false;
      fail_open("cannot open the cassette for replay: " + std::string(std::strerror(err)) +
                (err == ENOENT ? " (record it first: COVENANT_CASSETTE_MODE=record, or cassette_mode::record)" : ""));
    }
    std::string text;
    char buf[65536];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
    const bool read_error = std::ferror(f) != 0;
    std::fclose(f);
    if (read_error) fail_open("cannot read the cassette");
    if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
      if (must_exist) fail_open("the cassette is empty (line 1 must be the header " + std::string(header_example) + ")");
      return false;  // new_episodes: start it afresh
    }
    ends_with_newline = text.back() == '\n';
    std::size_t line_no = 0;
    for (std::size_t at = 0; at < text.size();) {
      std::size_t end = text.find('\n', at);
      const bool last = end == std::string::npos;
      if (last) end = text.size();
      std::string_view line(text.data() + at, end - at);
      at = end + 1;
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      const line_reader reader(options.path, line_no);
      if (line_no == 1 && line.size() >= 3 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
      if (line_no > 1 && line.find_first_not_of(" \t") == std::string_view::npos) continue;
      boost::system::error_code ec;
      json::value v = json::parse(line, ec);
      if (ec) {
        std::string what = "not valid JSON (" + ec.message() + ")";
        if (line_no == 1) what = "not a cassette header " + std::string(header_example) + ": " + what;
        if (last && !ends_with_newline) what += "; the last line is incomplete (was the recording interrupted? delete it)";
        reader.fail(what);
      }
      if (!v.is_object()) reader.fail(line_no == 1 ? "not a cassette header " + std::string(header_example)
                                                   : "not a JSON object");
      const json::object& o = v.get_object();
      if (line_no == 1) {
        const json::value* version = o.if_contains("covenant_cassette");
        if (version == nullptr) reader.fail("not a cassette header " + std::string(header_example) + ": no \"covenant_cassette\"");
        if (!version->is_int64() && !version->is_uint64()) reader.fail("\"covenant_cassette\" must be an integer version");
        const std::int64_t n = version->is_int64() ? version->get_int64() : -1;
        if (n != format_version)
          reader.fail("unknown cassette version " + json::serialize(*version) + " (this covenant reads version " +
                      std::to_string(format_version) + ")");
        continue;
      }
      add(reader.read(o));
    }
    lines = line_no;
    return true;
  }

  void open_for_writing(const char* how) {
    const std::filesystem::path p(options.path);
    if (p.has_parent_path()) {
      std::error_code ec;
      std::filesystem::create_directories(p.parent_path(), ec);
      if (ec) fail_open("cannot create its directory: " + ec.message());
    }
    errno = 0;
    out = std::fopen(options.path.c_str(), how);
    if (out == nullptr) fail_open("cannot open the cassette for writing: " + std::string(std::strerror(errno)));
  }

  void write_line(const std::string& text) {
    std::string line = text;
    line += '\n';
    if (std::fwrite(line.data(), 1, line.size(), out) != line.size() || std::fflush(out) != 0)
      throw std::runtime_error("cannot write to " + options.path + ": " + std::strerror(errno));
    ++lines;
  }

  void write_header() {
    json::object h;
    h["covenant_cassette"] = format_version;
    h["created"] = utc_now_iso8601();
    write_line(json::serialize(h));
  }

  /// Appends a finished interaction (redacting what it will write) and marks it used.
  void record(interaction it) {
    redact_outcome(it, secrets);
    const std::string text = json::serialize(to_json(it));
    std::lock_guard lock(mutex);
    write_line(text);
    it.line = lines;
    it.used = true;
    add(std::move(it));
  }

  struct lookup {
    const interaction* hit = nullptr;
    std::string error;  // replay mode: why nothing matched
  };

  /// The first unused recording matching `key`; marks it used.
  lookup find(const normal_request& req, const std::string& key) {
    std::lock_guard lock(mutex);
    const std::size_t asked = ++asks[key];
    const bool replaying = options.mode == cassette_mode::replay;
    if (auto it = by_key.find(key); it != by_key.end()) {
      for (std::size_t index : it->second) {
        interaction& candidate = items[index];
        if (candidate.used) continue;
        candidate.used = true;
        return {&candidate, {}};
      }
      if (!replaying) return {};
      std::string where;
      for (std::size_t index : it->second) where += (where.empty() ? "" : ", ") + std::to_string(items[index].line);
      const std::size_t n = it->second.size();
      return {nullptr, "cassette_engine: " + options.path + ": this request was recorded " + std::to_string(n) +
                           (n == 1 ? " time" : " times") + " (line" + (n == 1 ? " " : "s ") + where + ") and asked " +
                           std::to_string(asked) + " times; every recording answers one call (" +
                           describe_request(req) + ")"};
    }
    if (!replaying) return {};
    std::string message = "cassette_engine: " + options.path + ": no recorded interaction matches this request (" +
                          describe_request(req) + ")";
    if (items.empty()) return {nullptr, message + "; the cassette has no interactions"};
    const interaction* closest = nullptr;
    std::size_t best_prefix = 0;
    std::size_t best_gap = 0;
    for (const auto& candidate : items) {
      const std::size_t prefix = common_prefix(candidate.key, key);
      const std::size_t gap = candidate.key.size() > key.size() ? candidate.key.size() - key.size() : key.size() - candidate.key.size();
      if (closest == nullptr || prefix > best_prefix || (prefix == best_prefix && gap < best_gap)) {
        closest = &candidate;
        best_prefix = prefix;
        best_gap = gap;
      }
    }
    return {nullptr, message + "; closest recording: line " + std::to_string(closest->line) + " (" +
                         describe_request(closest->request) + "): " + describe_difference(closest->request, req)};
  }
};

namespace {

engine_error replayed_error(const interaction& it) {
  if (it.cancelled) return engine_error::cancellation(it.error_message);
  return engine_error(it.error_message, it.status, it.retryable);
}

/// Replays one recording to a receiver, from the calling thread.
void deliver(const interaction& it, bool stream, reply_receiver& receiver, const std::stop_token& stop) {
  if (stream) {
    auto piece = [&](const chunk& c) {
      if (stop.stop_requested()) return false;
      if (c.tool) receiver.on_tool_text(*c.tool, c.name, c.text);
      else receiver.on_text(c.text);
      return true;
    };
    if (it.streamed) {
      for (const auto& c : it.chunks)
        if (!piece(c)) return receiver.on_error(engine_error::cancellation());
    } else if (!it.failed) {
      // A whole recording: each tool call's arguments as one piece, then the text as one.
      for (std::size_t k = 0; k < it.response.tool_calls.size(); ++k) {
        const tool_call& call = it.response.tool_calls[k];
        if (!piece(chunk{call.arguments, std::nullopt, k, call.name}))
          return receiver.on_error(engine_error::cancellation());
      }
      if (!it.response.text.empty() && !piece(chunk{it.response.text, std::nullopt}))
        return receiver.on_error(engine_error::cancellation());
    }
  }
  if (stop.stop_requested()) return receiver.on_error(engine_error::cancellation());
  if (it.failed) return receiver.on_error(replayed_error(it));
  receiver.on_reply(it.response);
}

/// Forwards an inner engine's reply to the caller's receiver and records it. A stop request
/// records the call at once, as the caller left it (a cancellation with the text it kept), before
/// the caller goes on: the lines of a conversation come in its order, whenever the inner engine
/// acknowledges the stop.
class recording_receiver final : public reply_receiver, public std::enable_shared_from_this<recording_receiver> {
 public:
  recording_receiver(std::shared_ptr<cassette_engine::state> st, std::shared_ptr<reply_receiver> down,
                     normal_request request, std::string key, bool stream, std::stop_token stop)
      : state_(std::move(st)), down_(std::move(down)), stop_(std::move(stop)), start_(clock_type::now()) {
    it_.request = std::move(request);
    it_.key = std::move(key);
    it_.streamed = stream;
  }

  /// Watches the call's stop token (after construction: the callback holds a weak reference).
  void watch() {
    std::weak_ptr<recording_receiver> self = weak_from_this();
    on_stop_.emplace(stop_, [self] {
      if (auto r = self.lock()) r->stopped();
    });
  }

  void on_text(std::string_view delta) noexcept override {
    keep_chunk(chunk{std::string(), std::nullopt}, delta);
    down_->on_text(delta);
  }

  void on_tool_text(std::size_t index, std::string_view name, std::string_view delta) noexcept override {
    keep_chunk(chunk{std::string(), std::nullopt, index, std::string(name)}, delta);
    down_->on_tool_text(index, name, delta);
  }

  void on_reply(chat_response response) noexcept override {
    {
      std::lock_guard lock(mutex_);
      if (!recorded_) {
        try {
          it_.response = response;
          if (state_->options.record_timing) it_.ms = ms_since(start_);
          finish();
        } catch (const std::exception& e) {
          return down_->on_error(failure(e.what()));
        }
      }
    }
    down_->on_reply(std::move(response));
  }

  void on_error(const engine_error& error) noexcept override {
    // A cancellation nobody asked for (the inner engine was destroyed) is no part of the
    // conversation; one the caller asked for was recorded when it asked (stopped()).
    if (!error.cancelled()) {
      std::lock_guard lock(mutex_);
      if (!recorded_) {
        try {
          it_.failed = true;
          it_.error_message = error.what();
          it_.status = error.status();
          it_.retryable = error.retryable();
          if (state_->options.record_timing) it_.ms = ms_since(start_);
          finish();
        } catch (const std::exception& e) {
          log_failure(e.what());
        }
      }
    }
    down_->on_error(error);
  }

 private:
  void keep_chunk(chunk c, std::string_view delta) noexcept {
    if (!it_.streamed) return;
    std::lock_guard lock(mutex_);
    if (recorded_) return;
    try {
      c.text = std::string(delta);
      if (state_->options.record_timing) c.ms = ms_since(start_);
      it_.chunks.push_back(std::move(c));
    } catch (...) {
      broken_ = true;
    }
  }

  /// The caller stopped the call: recorded now as a cancellation, with the text the caller kept
  /// (an early stop keeps the reply up to the byte that decided it; reply_receiver::text_kept).
  void stopped() noexcept {
    std::lock_guard lock(mutex_);
    if (recorded_) return;
    try {
      keep_text(down_->text_kept());
      it_.failed = true;
      it_.error_message = "cancelled";
      it_.cancelled = true;
      if (state_->options.record_timing) it_.ms = ms_since(start_);
      finish();
    } catch (const std::exception& e) {
      log_failure(e.what());
    }
  }

  /// Only the first `n` bytes of the text are part of the conversation: the text chunks after
  /// them go, the one across the cut is shortened (tool-argument chunks stay).
  void keep_text(std::size_t n) {
    if (n == std::string_view::npos) return;
    std::vector<chunk> kept;
    kept.reserve(it_.chunks.size());
    std::size_t seen = 0;
    for (chunk& c : it_.chunks) {
      if (c.tool) {
        kept.push_back(std::move(c));
        continue;
      }
      if (seen >= n) continue;
      if (c.text.size() > n - seen) c.text.resize(n - seen);
      seen += c.text.size();
      kept.push_back(std::move(c));
    }
    it_.chunks = std::move(kept);
  }

  // (mutex_ held)
  void finish() {
    recorded_ = true;
    if (broken_) throw std::runtime_error("out of memory keeping the streamed text");
    state_->record(std::move(it_));
  }

  engine_error failure(const char* why) const {
    log_failure(why);
    return engine_error("cassette_engine: could not record the interaction in " + state_->options.path + ": " + why);
  }

  void log_failure(const char* why) const {
    detail::log_error("cassette_engine: could not record an interaction in {}: {}", state_->options.path, why);
  }

  std::shared_ptr<cassette_engine::state> state_;
  std::shared_ptr<reply_receiver> down_;
  std::stop_token stop_;
  clock_type::time_point start_;
  std::mutex mutex_;  // the engine's calls and the caller's stop request
  interaction it_;
  bool recorded_ = false;
  bool broken_ = false;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;  // last: it goes first
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// cassette_engine
// ---------------------------------------------------------------------------------------------

cassette_engine::cassette_engine(cassette_options options, engine& inner)
    : cassette_engine(std::move(options), std::shared_ptr<engine>(&inner, [](engine*) {})) {}

cassette_engine::cassette_engine(cassette_options options) : cassette_engine(std::move(options), nullptr) {}

cassette_engine::cassette_engine(cassette_options options, std::shared_ptr<engine> inner)
    : state_(std::make_shared<state>()), owned_(std::move(inner)), inner_(owned_.get()) {
  if (inner_ == this) throw std::invalid_argument("cassette_engine: the inner engine cannot be the cassette itself");
  if (options.path.empty()) throw std::invalid_argument("cassette_engine: cassette_options::path is empty");
  if (options.mode != cassette_mode::replay && inner_ == nullptr)
    throw std::invalid_argument("cassette_engine: " + options.path + ": mode " + std::string(to_string(options.mode)) +
                                " needs an inner engine to call (only replay works without one)");
  state_->secrets = prepare_secrets(options.redact);
  state_->options = std::move(options);
  state& st = *state_;
  switch (st.options.mode) {
    case cassette_mode::replay: {
      bool newline = true;
      st.load(true, newline);
      break;
    }
    case cassette_mode::record:
      st.open_for_writing("wb");
      st.write_header();
      break;
    case cassette_mode::new_episodes: {
      bool newline = true;
      if (st.load(false, newline)) {
        st.open_for_writing("ab");
        if (!newline && std::fputc('\n', st.out) == EOF)
          st.fail_open("cannot write to the cassette: " + std::string(std::strerror(errno)));
      } else {
        st.open_for_writing("wb");
        st.write_header();
      }
      break;
    }
  }
}

cassette_engine::~cassette_engine() { close(); }

chat_response cassette_engine::complete(const chat_request& request) {
  state& st = *state_;
  normal_request req = normalize(request, st.secrets);
  std::string key = key_of(req);
  if (st.options.mode != cassette_mode::record) {
    auto found = st.find(req, key);
    if (found.hit != nullptr) {
      if (found.hit->failed) throw replayed_error(*found.hit);
      return found.hit->response;
    }
    if (st.options.mode == cassette_mode::replay) throw engine_error(found.error);
  }
  interaction it;
  it.request = std::move(req);
  it.key = std::move(key);
  const auto start = clock_type::now();
  try {
    it.response = inner_->complete(request);
  } catch (const engine_error& e) {
    if (e.cancelled()) throw;  // the inner engine was stopped or destroyed: not part of the conversation
    it.failed = true;
    it.error_message = e.what();
    it.status = e.status();
    it.retryable = e.retryable();
    if (st.options.record_timing) it.ms = ms_since(start);
    try {
      st.record(std::move(it));
    } catch (const std::exception& w) {
      throw engine_error("cassette_engine: could not record the interaction in " + st.options.path + ": " + w.what());
    }
    throw;
  }
  if (st.options.record_timing) it.ms = ms_since(start);
  chat_response reply = it.response;
  try {
    st.record(std::move(it));
  } catch (const std::exception& w) {
    throw engine_error("cassette_engine: could not record the interaction in " + st.options.path + ": " + w.what());
  }
  return reply;
}

void cassette_engine::start(const chat_request& request, std::shared_ptr<reply_receiver> receiver, std::stop_token stop) {
  if (stop.stop_requested()) return receiver->on_error(engine_error::cancellation());
  state& st = *state_;
  std::shared_ptr<reply_receiver> recorder;
  try {
    normal_request req = normalize(request, st.secrets);
    std::string key = key_of(req);
    if (st.options.mode != cassette_mode::record) {
      auto found = st.find(req, key);
      if (found.hit != nullptr) return deliver(*found.hit, request.stream, *receiver, stop);
      if (st.options.mode == cassette_mode::replay) return receiver->on_error(engine_error(found.error));
    }
    auto r = std::make_shared<recording_receiver>(state_, receiver, std::move(req), std::move(key), request.stream, stop);
    r->watch();
    recorder = std::move(r);
  } catch (const std::exception& e) {
    return receiver->on_error(engine_error(std::string("cassette_engine: ") + e.what()));
  }
  inner_->start(request, std::move(recorder), std::move(stop));
}

engine_capabilities cassette_engine::capabilities() const noexcept {
  if (state_->options.mode == cassette_mode::replay || inner_ == nullptr) return {true, true};
  return inner_->capabilities();
}

std::size_t cassette_engine::interactions() const {
  std::lock_guard lock(state_->mutex);
  return state_->items.size();
}

std::size_t cassette_engine::used() const {
  std::lock_guard lock(state_->mutex);
  return static_cast<std::size_t>(
      std::count_if(state_->items.begin(), state_->items.end(), [](const interaction& it) { return it.used; }));
}

std::vector<std::string> cassette_engine::unused() const {
  std::lock_guard lock(state_->mutex);
  std::vector<std::string> out;
  for (const auto& it : state_->items)
    if (!it.used) out.push_back(describe_interaction(it));
  return out;
}

const std::string& cassette_engine::path() const noexcept { return state_->options.path; }

cassette_mode cassette_engine::mode() const noexcept { return state_->options.mode; }

std::string cassette_engine::normalized(const chat_request& request, const std::vector<std::string>& redact) {
  return key_of(normalize(request, prepare_secrets(redact)));
}

}  // namespace covenant
