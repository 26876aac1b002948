// otel_options::from_env: the OpenTelemetry SDK's standard environment variables.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <optional>
#include <utility>
#include <vector>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

#include "covenant/telemetry/otel.hpp"
#include "engine/wire_text.hpp"

namespace covenant {

namespace {

using detail::wire::iequals;
using detail::wire::one_line;
using detail::wire::trim;

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
  if (v == nullptr) return std::nullopt;
  std::string_view t = trim(v);
  if (t.empty()) return std::nullopt;
  return std::string(t);
}

[[noreturn]] void bad(const char* name, const std::string& what, std::string_view value) {
  throw std::invalid_argument("covenant::otel_options::from_env: " + std::string(name) + " " + what + " (got \"" +
                              one_line(value, 80) + "\")");
}

/// %XX escapes decoded (W3C Baggage values, as OTEL_EXPORTER_OTLP_HEADERS and
/// OTEL_RESOURCE_ATTRIBUTES write them).
std::string percent_decoded(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

/// "key=value,key=value": each key and value trimmed, values percent-decoded; an empty member is
/// skipped, one without "=" or with an empty key refused.
std::vector<std::pair<std::string, std::string>> key_values(const char* name, std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view member = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (member.empty()) continue;
    const auto eq = member.find('=');
    if (eq == std::string_view::npos || trim(member.substr(0, eq)).empty())
      bad(name, "must be a comma-separated list of key=value", member);
    out.emplace_back(percent_decoded(trim(member.substr(0, eq))), percent_decoded(trim(member.substr(eq + 1))));
  }
  return out;
}

bool is_true(std::string_view v) { return iequals(v, "true"); }

std::chrono::milliseconds millis(const char* name, const std::string& v) {
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || n < 0) bad(name, "must be a whole number of milliseconds", v);
  return std::chrono::milliseconds(n);
}

std::size_t count(const char* name, const std::string& v) {
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0' || n <= 0) bad(name, "must be a positive whole number", v);
  return static_cast<std::size_t>(n);
}

std::string checked_url(const char* name, std::string url) {
  if (!detail::wire::istarts_with(url, "http://") && !detail::wire::istarts_with(url, "https://"))
    bad(name, "must be an http:// or https:// URL", url);
  return url;
}

}  // namespace

std::string_view to_string(otel_sampler s) noexcept {
  switch (s) {
    case otel_sampler::always_on: return "always_on";
    case otel_sampler::always_off: return "always_off";
    case otel_sampler::traceidratio: return "traceidratio";
    case otel_sampler::parentbased_always_on: return "parentbased_always_on";
    case otel_sampler::parentbased_always_off: return "parentbased_always_off";
    case otel_sampler::parentbased_traceidratio: return "parentbased_traceidratio";
  }
  return "parentbased_always_on";
}

otel_options otel_options::from_env() { return from_env(otel_options{}); }

otel_options otel_options::from_env(otel_options o) {
  if (auto v = env("OTEL_SDK_DISABLED")) o.enabled = !is_true(*v);
  if (auto v = env("OTEL_EXPORTER_OTLP_ENDPOINT")) {
    std::string base = checked_url("OTEL_EXPORTER_OTLP_ENDPOINT", *v);
    while (!base.empty() && base.back() == '/') base.pop_back();
    o.traces_endpoint = base + "/v1/traces";
    o.metrics_endpoint = base + "/v1/metrics";
  }
  if (auto v = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    o.traces_endpoint = checked_url("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", *v);
  if (auto v = env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"))
    o.metrics_endpoint = checked_url("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", *v);
  if (auto v = env("OTEL_METRICS_EXPORTER")) {
    if (iequals(*v, "none")) o.metrics_endpoint.clear();
    else if (!iequals(*v, "otlp")) bad("OTEL_METRICS_EXPORTER", "must be otlp or none", *v);
  }
  if (auto v = env("OTEL_TRACES_EXPORTER")) {
    if (iequals(*v, "none")) o.traces_endpoint.clear();
    else if (!iequals(*v, "otlp")) bad("OTEL_TRACES_EXPORTER", "must be otlp or none", *v);
  }
  if (auto v = env("OTEL_EXPORTER_OTLP_HEADERS")) {
    for (auto& kv : key_values("OTEL_EXPORTER_OTLP_HEADERS", *v)) o.headers.push_back(std::move(kv));
  }
  if (auto v = env("OTEL_EXPORTER_OTLP_PROTOCOL")) {
    if (*v == "http/json") o.protocol = otlp_protocol::http_json;
    else if (*v == "http/protobuf") o.protocol = otlp_protocol::http_protobuf;
    else bad("OTEL_EXPORTER_OTLP_PROTOCOL", "must be http/json or http/protobuf (grpc is not supported)", *v);
  }
  if (auto v = env("OTEL_EXPORTER_OTLP_TIMEOUT")) o.export_timeout = millis("OTEL_EXPORTER_OTLP_TIMEOUT", *v);
  if (auto v = env("OTEL_RESOURCE_ATTRIBUTES")) {
    for (auto& [key, value] : key_values("OTEL_RESOURCE_ATTRIBUTES", *v)) {
      if (key == "service.name") o.service_name = value;
      else o.resource.emplace_back(std::move(key), std::move(value));
    }
  }
  if (auto v = env("OTEL_SERVICE_NAME")) o.service_name = *v;
  if (auto v = env("OTEL_TRACES_SAMPLER")) {
    static constexpr otel_sampler all[] = {otel_sampler::always_on,
                                           otel_sampler::always_off,
                                           otel_sampler::traceidratio,
                                           otel_sampler::parentbased_always_on,
                                           otel_sampler::parentbased_always_off,
                                           otel_sampler::parentbased_traceidratio};
    const auto* it = std::find_if(std::begin(all), std::end(all), [&](otel_sampler s) { return to_string(s) == *v; });
    if (it == std::end(all))
      bad("OTEL_TRACES_SAMPLER",
          "must be always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or "
          "parentbased_traceidratio",
          *v);
    o.sampler = *it;
  }
  if (auto v = env("OTEL_TRACES_SAMPLER_ARG")) {
    if (o.sampler == otel_sampler::traceidratio || o.sampler == otel_sampler::parentbased_traceidratio) {
      char* end = nullptr;
      const double r = std::strtod(v->c_str(), &end);
      if (end == v->c_str() || *end != '\0' || !(r >= 0.0 && r <= 1.0))
        bad("OTEL_TRACES_SAMPLER_ARG", "must be a number between 0 and 1", *v);
      o.sampler_ratio = r;
    }
  }
  if (auto v = env("OTEL_BSP_SCHEDULE_DELAY")) o.schedule_delay = millis("OTEL_BSP_SCHEDULE_DELAY", *v);
  if (auto v = env("OTEL_BSP_MAX_QUEUE_SIZE")) o.max_queue_size = count("OTEL_BSP_MAX_QUEUE_SIZE", *v);
  if (auto v = env("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"))
    o.max_export_batch_size = count("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", *v);
  if (auto v = env("OTEL_METRIC_EXPORT_INTERVAL")) o.metric_interval = millis("OTEL_METRIC_EXPORT_INTERVAL", *v);
  if (auto v = env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")) o.capture_content = is_true(*v);
  if (auto v = env("OTEL_SEMCONV_STABILITY_OPT_IN")) {
    std::string_view list = *v;
    while (!list.empty()) {
      const auto comma = list.find(',');
      if (trim(list.substr(0, comma)) == "gen_ai_latest_experimental") o.latest_semconv_only = true;
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
  }
  return o;
}

}  // namespace covenant
