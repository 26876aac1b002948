// covenant/telemetry/health.hpp - a health check of what a program needs at startup: its schema files
// load, its registered schemas resolve, and its model server answers.
//
//     covenant::health_options o;
//     o.schema_files = {"schemas/answer.baml", "schemas/review.json"};
//     o.registry = &registry;                         // optional
//     o.engine_options = covenant::http_engine::options_from_env();  // optional: the engine's server
//     covenant::health_report r = covenant::check_health(o);
//     if (!r.healthy) std::cerr << r.to_text();       // "FAIL  endpoint  timed out after 2000 ms (2001 ms)"
//     serve_readiness_probe(r.to_json());              // {"healthy": false, "checks": [...]}
//
// Checks, in this order, each one item of the report:
//   schema:<file>  one per file: a schema file (BAML syntax) or a JSON Schema document (a name
//                  ending in .json, or text starting with '{'), loaded as the `covenant` tool
//                  loads it; every problem is in the detail.
//   registry       when a registry is given: every name@version it lists resolves and its model
//                  passes check_model(), and each name's latest version resolves.
//   endpoint       when an engine, engine options or an endpoint is given: http_engine::probe(),
//                  one GET of the provider's model list through the engine's own transport
//                  (OpenAI-compatible: GET {base_url}/models with "Authorization: Bearer <key>";
//                  Anthropic: GET {base_url}/v1/models with "x-api-key: <key>" and
//                  "anthropic-version"; the options' extra headers, proxy, CA file and user agent
//                  as the engine's requests have them; no retries, no redirects), which must
//                  answer 2xx within endpoint_timeout. 401 and 403 mean the server answers but
//                  refuses the key: not ok, and the detail says so.
//
// check_health never throws for bad input: a missing or unreadable file, an invalid URL, a key
// with a line break, a timeout that is not positive, engine options the engine refuses are failed
// checks with the reason in the detail (only std::bad_alloc escapes). The API key is only sent in
// the provider's key header; it never appears in a detail (a server echoing it back is redacted),
// and URLs in details lose their user-info and query string. The endpoint check uses the
// environment's proxy settings as the engine reads them (http_proxy, https_proxy, all_proxy,
// no_proxy).
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "covenant/engine/http_engine.hpp"
#include "covenant/types/config.hpp"

namespace covenant {

class schema_registry;

/// One item of a health report.
struct health_check {
  std::string name{};  ///< "schema:answer.baml", "registry", "endpoint"
  bool ok = false;
  std::string detail{};  ///< "3 types loaded", "HTTP 200 in 12 ms", "timed out after 2000 ms", ...
  std::chrono::nanoseconds took{0};  ///< the check's time (in the text and JSON: whole milliseconds)
};

struct COVENANT_API health_report {
  /// Every check is ok (true when there are no checks).
  bool healthy = false;
  std::vector<health_check> checks{};

  /// {"healthy": true, "checks": [{"name", "ok", "detail", "took_ms"}]} on one line; always
  /// valid JSON and UTF-8 (bytes that are not UTF-8 become U+FFFD).
  [[nodiscard]] std::string to_json() const;
  /// One line per check: "ok    schema:answer.baml  3 types loaded (1 ms)" or
  /// "FAIL  endpoint  HTTP 401 in 3 ms: ..." (names padded to one width; control characters and
  /// bytes that are not UTF-8 written as \xNN).
  [[nodiscard]] std::string to_text() const;
};

struct health_options {
  /// Each is loaded (schema file or JSON Schema document); every problem goes in its detail.
  std::vector<std::filesystem::path> schema_files{};
  /// When set: every registered schema resolves and its model passes the structural checks.
  const schema_registry* registry = nullptr;
  /// The endpoint check, through the HTTP engine's probe (the first of these three that is set):
  /// an existing engine, checked on its own I/O loop and connections (it must outlive the call);
  const http_engine* engine = nullptr;
  /// or the engine's options (http_engine::options_from_env() for the settings `covenant run`
  /// uses): an engine is built from them for the check, so the provider, base URL, key, headers,
  /// proxy and CA file are the ones the program's engine has; options it refuses fail the check;
  std::optional<http_engine_options> engine_options{};
  /// or an OpenAI-compatible API root, e.g. "http://127.0.0.1:8080/v1" (a trailing slash is
  /// ignored), with `api_key`: the same as engine_options {.base_url = *endpoint, .api_key =
  /// api_key}: GET {endpoint}/models must answer HTTP 2xx.
  std::optional<std::string> endpoint{};
  /// With `endpoint`: sent as "Authorization: Bearer <api_key>"; empty sends no Authorization header.
  std::string api_key{};
  /// The whole endpoint exchange (connect, request, answer); must be positive.
  std::chrono::milliseconds endpoint_timeout{2000};
};

/// Runs every check `options` asks for (see the top of this file).
COVENANT_API health_report check_health(const health_options& options);

}  // namespace covenant
