// The request key: a request normalised (schema and tools canonical, media as digests) as JSON.
#include "request_key.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "covenant/types/encode.hpp"
#include "redaction.hpp"

namespace covenant {

namespace json = boost::json;

namespace cassette_impl {

namespace {

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

}  // namespace

std::shared_ptr<const canonical_schema> make_canonical(const json::value& v) {
  auto c = std::make_shared<canonical_schema>();
  c->value = canonical(v);
  c->text = json::serialize(c->value);
  return c;
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

std::string request_key(const chat_request& request, const std::vector<std::string>& secrets) {
  return key_of(normalize(request, secrets));
}

}  // namespace cassette_impl

}  // namespace covenant
