// covenant/telemetry/health.hpp: schema files, registered schemas and the model server's endpoint checked
// at once, each an item of a report.
#include "covenant/telemetry/health.hpp"

#include <curl/curl.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "covenant/types/config.hpp"
#include "covenant/engine/http_engine.hpp"
#include "covenant/runtime/json_schema_import.hpp"
#include "covenant/runtime/registry.hpp"
#include "covenant/runtime/schema_diagnostic.hpp"
#include "covenant/read/validate.hpp"
#include "covenant/runtime/schema_file.hpp"
#include "engine/curl_handles.hpp"
#include "engine/wire_text.hpp"

namespace covenant {

namespace {

using clock_type = std::chrono::steady_clock;

std::chrono::nanoseconds since(clock_type::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - start);
}

/// A measured time as the whole milliseconds reports show.
std::int64_t whole_ms(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

std::string count(std::size_t n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string_view trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::string valid_utf8(std::string_view text) { return detail::repair_utf8(text); }

std::string printable(std::string_view text) { return detail::printable_text(text); }

// `text` on one line: line breaks and tabs become spaces.
std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  return out;
}

// ---- schema files -------------------------------------------------------------------------------

// "3:10: unknown type 'Sourc' [unknown_type]" or "/properties/x: ... [invalid_json_schema]".
std::string describe(const schema_diagnostic& d) {
  std::string out;
  if (d.line > 0) {
    out += std::to_string(d.line);
    if (d.column > 0) out += ":" + std::to_string(d.column);
  }
  if (!d.pointer.empty()) {
    if (!out.empty()) out += ":";
    out += d.pointer;
  }
  if (!out.empty()) out += ": ";
  out += d.message;
  out += " [";
  out += to_string(d.code);
  out += "]";
  return one_line(out);
}

std::string describe_all(const schema_diagnostics& ds) {
  std::string out = ds.size() > 1 ? count(ds.size(), "problem", "problems") + ": " : std::string();
  for (std::size_t i = 0; i < ds.size(); ++i) {
    if (i > 0) out += "; ";
    out += describe(ds[i]);
  }
  return out;
}

void check_schema_file(const std::filesystem::path& file, health_check& c) {
  const schema_document d = try_load_schema_document(file);
  if (!d.ok()) {
    // A file that cannot be read says only why; problems in it are listed with where they are.
    const bool unread = d.issues.size() == 1 && (d.issues[0].code == schema_error_code::io_error ||
                                                 d.issues[0].code == schema_error_code::limit_exceeded);
    c.detail = unread ? one_line(d.issues[0].message) : describe_all(d.issues);
    return;
  }
  c.ok = true;
  if (d.json_schema) {
    c.detail = "JSON Schema, root " + d.document->title() + ", " + count(d.set.names().size(), "type", "types") +
               " loaded";
    return;
  }
  c.detail = count(d.set.names().size(), "type", "types") + " loaded";
  std::size_t skipped = 0;
  for (const auto& n : d.notes)
    if (n.code == schema_error_code::skipped) ++skipped;
  if (skipped > 0) c.detail += ", " + count(skipped, "declaration", "declarations") + " skipped";
}

// ---- registry -----------------------------------------------------------------------------------

void check_registry(const schema_registry& registry, health_check& c) {
  std::vector<std::string> resolved;
  std::vector<std::string> problems;
  for (const schema_listing& l : registry.list()) {
    for (const std::string& v : l.versions) {
      const std::string ref = l.name + "@" + v;
      try {
        const registered_schema s = registry.get(l.name, v);
        if (!s.model) {
          problems.push_back(ref + " has no model");
          continue;
        }
        const schema_diagnostics ds = check_model(*s.model);
        if (!ds.empty()) {
          problems.push_back(ref + ": " + describe_all(ds));
          continue;
        }
        resolved.push_back(ref);
      } catch (const registry_error& e) {
        problems.push_back(one_line(e.what()));
      }
    }
    if (l.versions.empty()) continue;
    try {
      const registered_schema latest = registry.latest(l.name);
      if (latest.version != l.versions.back())
        problems.push_back(l.name + " resolves to " + latest.ref() + ", not its latest version " + l.versions.back());
    } catch (const registry_error& e) {
      problems.push_back(one_line(e.what()));
    }
  }
  if (!problems.empty()) {
    c.detail = problems.size() > 1 ? count(problems.size(), "problem", "problems") + ": " : std::string();
    for (std::size_t i = 0; i < problems.size(); ++i) c.detail += (i > 0 ? "; " : "") + problems[i];
    return;
  }
  c.ok = true;
  if (resolved.empty()) {
    c.detail = "no schemas registered";
    return;
  }
  constexpr std::size_t shown = 10;
  c.detail = count(resolved.size(), "schema resolves", "schemas resolve") + " (";
  for (std::size_t i = 0; i < resolved.size() && i < shown; ++i) c.detail += (i > 0 ? ", " : "") + resolved[i];
  if (resolved.size() > shown) c.detail += ", and " + std::to_string(resolved.size() - shown) + " more";
  c.detail += ")";
}

// ---- endpoint -----------------------------------------------------------------------------------
//
// The check is http_engine::probe(): one GET of the provider's model list through the engine's
// own transport. What is checked here first is what the engine would only find out at the request
// (a URL libcurl cannot parse) or word for a program rather than a health report.

using detail::curl_url_ptr;

std::string url_part(CURLU* u, CURLUPart part) {
  char* p = nullptr;
  if (curl_url_get(u, part, &p, 0) != CURLUE_OK || p == nullptr) return {};
  std::string out(p);
  curl_free(p);
  return out;
}

std::string redacted(std::string text, const std::string& secret) {
  if (secret.empty()) return text;
  for (std::size_t at = text.find(secret); at != std::string::npos; at = text.find(secret, at))
    text.replace(at, secret.size(), "[redacted]");
  return text;
}

std::string_view api_root_example(provider p) {
  return p == provider::anthropic ? "https://api.anthropic.com" : "http://127.0.0.1:8080/v1";
}

// The key and the base URL of `o`, checked before an engine is built from them; false with the
// reason in c.detail.
bool usable(const http_engine_options& o, health_check& c) {
  if (o.api_key.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
    c.detail = "the API key contains a line break or NUL byte";
    return false;
  }
  std::string base(trim(o.base_url));
  if (base.empty()) {
    c.detail = "no URL given";
    return false;
  }
  if (std::any_of(base.begin(), base.end(), [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7F; })) {
    c.detail = "invalid URL: it contains a control character";
    return false;
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (detail::curl_global() != CURLE_OK) {
    c.detail = "libcurl could not be initialised";
    return false;
  }
  curl_url_ptr url(curl_url());
  if (!url) throw std::bad_alloc();
  if (const CURLUcode rc = curl_url_set(url.get(), CURLUPART_URL, base.c_str(), 0); rc != CURLUE_OK) {
    c.detail = std::string("invalid URL: ") + curl_url_strerror(rc) + " (expected an API root such as " +
               std::string(api_root_example(o.provider)) + ")";
    return false;
  }
  std::string scheme = url_part(url.get(), CURLUPART_SCHEME);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                 [](char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; });
  if (scheme != "http" && scheme != "https") {
    c.detail = "invalid URL: unsupported scheme '" + scheme + "' (http or https)";
    return false;
  }
  return true;
}

void probe_endpoint(const http_engine& engine, std::chrono::milliseconds timeout, health_check& c) {
  const http_engine_options& o = engine.options();
  // A key the application put in the headers itself is a key too, and as secret as api_key.
  const std::string_view key_header = o.provider == provider::anthropic ? "x-api-key" : "authorization";
  std::vector<std::string> secrets{o.api_key};
  for (const auto& [name, value] : o.headers) {
    if (!detail::wire::iequals(name, key_header)) continue;
    secrets.push_back(value);
    if (const std::string_view v = trim(value); detail::wire::istarts_with(v, "bearer "))
      secrets.emplace_back(trim(v.substr(7)));
  }
  const bool has_key = std::any_of(secrets.begin(), secrets.end(), [](const std::string& s) { return !s.empty(); });
  auto safe = [&](std::string text) {
    for (const std::string& s : secrets) text = redacted(std::move(text), s);
    return one_line(text);
  };

  const probe_result r = engine.probe(timeout);
  if (r.timed_out) {
    c.detail = "timed out after " + std::to_string(timeout.count()) + " ms waiting for GET " + r.url;
    return;
  }
  if (r.status == 0) {
    c.detail = "GET " + r.url + " failed: " + safe(r.message);
    return;
  }
  c.detail = "HTTP " + std::to_string(r.status) + " in " + std::to_string(whole_ms(r.latency)) + " ms";
  if (r.ok) {
    c.ok = true;
    return;
  }
  if (r.status == 401 || r.status == 403) {
    c.detail += has_key ? ": the server answers but refused the API key"
                        : ": the server answers but requires an API key (none was given)";
  } else if (r.status == 404) {
    c.detail += ": GET " + r.url + " not found (the endpoint must be the API root, e.g. " +
                std::string(api_root_example(o.provider)) + ")";
  } else {
    c.detail += ": GET " + r.url + " did not answer 2xx";
  }
  if (!r.message.empty()) c.detail += "; the server said: " + safe(r.message);
}

void check_endpoint(const health_options& options, health_check& c) {
  const std::chrono::milliseconds timeout = options.endpoint_timeout;
  if (timeout.count() <= 0) {
    c.detail = "the timeout must be positive (got " + std::to_string(timeout.count()) + " ms)";
    return;
  }
  if (options.engine != nullptr) return probe_endpoint(*options.engine, timeout, c);
  http_engine_options o;
  if (options.engine_options) {
    o = *options.engine_options;
  } else {
    o.base_url = options.endpoint.value_or(std::string());
    o.api_key = options.api_key;
  }
  if (!usable(o, c)) return;
  const std::string key = o.api_key;
  std::optional<http_engine> engine;
  try {
    engine.emplace(std::move(o));
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    constexpr std::string_view prefix = "covenant::http_engine: ";
    if (what.starts_with(prefix)) what.erase(0, prefix.size());
    c.detail = "the engine's options are invalid: " + one_line(redacted(what, key));
    return;
  }
  probe_endpoint(*engine, timeout, c);
}

// Runs one check; an exception other than bad_alloc fails it with its message.
template <class F>
health_check run_check(std::string name, F&& f) {
  health_check c;
  c.name = std::move(name);
  const auto start = clock_type::now();
  try {
    f(c);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    c.ok = false;
    c.detail = "unexpected error: " + one_line(e.what());
  }
  c.took = since(start);
  return c;
}

}  // namespace

health_report check_health(const health_options& options) {
  health_report report;
  for (const std::filesystem::path& file : options.schema_files)
    report.checks.push_back(run_check("schema:" + file.string(), [&](health_check& c) { check_schema_file(file, c); }));
  if (options.registry != nullptr)
    report.checks.push_back(run_check("registry", [&](health_check& c) { check_registry(*options.registry, c); }));
  if (options.engine != nullptr || options.engine_options || options.endpoint)
    report.checks.push_back(run_check("endpoint", [&](health_check& c) { check_endpoint(options, c); }));
  report.healthy = std::all_of(report.checks.begin(), report.checks.end(), [](const health_check& c) { return c.ok; });
  return report;
}

std::string health_report::to_json() const {
  boost::json::array items;
  items.reserve(checks.size());
  for (const health_check& c : checks) {
    items.push_back(boost::json::object{{"name", valid_utf8(c.name)},
                                        {"ok", c.ok},
                                        {"detail", valid_utf8(c.detail)},
                                        {"took_ms", whole_ms(c.took)}});
  }
  return boost::json::serialize(boost::json::object{{"healthy", healthy}, {"checks", std::move(items)}});
}

std::string health_report::to_text() const {
  std::vector<std::string> names;
  names.reserve(checks.size());
  std::size_t width = 0;
  for (const health_check& c : checks) {
    names.push_back(printable(c.name));
    width = std::max(width, names.back().size());
  }
  std::string out;
  for (std::size_t i = 0; i < checks.size(); ++i) {
    const health_check& c = checks[i];
    out += c.ok ? "ok    " : "FAIL  ";
    out += names[i];
    out.append(width - names[i].size() + 2, ' ');
    out += printable(c.detail);
    out += " (" + std::to_string(whole_ms(c.took)) + " ms)\n";
  }
  return out;
}

}  // namespace covenant
