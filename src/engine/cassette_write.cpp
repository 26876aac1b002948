// Writing a cassette: the file opened, its header line, and each interaction as a line, redacted.
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "cassette_impl.hpp"

namespace covenant {

namespace json = boost::json;

using namespace cassette_impl;

namespace cassette_impl {

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

}  // namespace cassette_impl

namespace {

std::string utc_now_iso8601() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

}  // namespace

void cassette_engine::state::open_for_writing(const char* how) {
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

void cassette_engine::state::write_line(const std::string& text) {
  std::string line = text;
  line += '\n';
  if (std::fwrite(line.data(), 1, line.size(), out) != line.size() || std::fflush(out) != 0)
    throw std::runtime_error("cannot write to " + options.path + ": " + std::strerror(errno));
  ++lines;
}

void cassette_engine::state::write_header() {
  json::object h;
  h["covenant_cassette"] = format_version;
  h["created"] = utc_now_iso8601();
  write_line(json::serialize(h));
}

void cassette_engine::state::record(interaction it) {
  redact_outcome(it, secrets);
  const std::string text = json::serialize(to_json(it));
  std::lock_guard lock(mutex);
  write_line(text);
  it.line = lines;
  it.used = true;
  add(std::move(it));
}

}  // namespace covenant
