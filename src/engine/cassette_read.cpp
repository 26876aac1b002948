// Reading a cassette: its lines, the header's version, and every field of an interaction checked.
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cassette_impl.hpp"

namespace covenant {

namespace json = boost::json;

using namespace cassette_impl;

namespace {

constexpr std::string_view header_example = R"({"covenant_cassette": 1, "created": "..."})";

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

bool cassette_engine::state::load(bool must_exist, bool& ends_with_newline) {
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

}  // namespace covenant
