// covenant health [--schema FILE]... [--endpoint [URL]] [--timeout MS] [--json]
#include <covenant/telemetry/health.hpp>
#include <covenant/engine/http_engine.hpp>

#include <charconv>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli.hpp"

namespace covenant::cli {

namespace {

// What the shared option reader cannot express: --schema given several times, and --endpoint
// with an optional value. The other arguments go to parse_arguments.
struct health_arguments {
  std::vector<std::string> schemas;
  bool endpoint = false;
  std::optional<std::string> endpoint_url;
  std::vector<std::string> rest;
};

health_arguments split_arguments(const std::vector<std::string>& args) {
  health_arguments out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      out.rest.insert(out.rest.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
      break;
    }
    if (a == "--schema") {
      if (i + 1 >= args.size() || args[i + 1].starts_with("--")) throw usage_error("option '--schema' needs a value");
      out.schemas.push_back(args[++i]);
    } else if (a.starts_with("--schema=")) {
      const std::string value = a.substr(9);
      if (value.empty()) throw usage_error("option '--schema' needs a value");
      out.schemas.push_back(value);
    } else if (a == "--endpoint") {
      out.endpoint = true;
      out.endpoint_url.reset();
      if (i + 1 < args.size() && !args[i + 1].starts_with("-")) out.endpoint_url = args[++i];
    } else if (a.starts_with("--endpoint=")) {
      if (a.size() == 11) throw usage_error("option '--endpoint=' needs a URL (or give --endpoint alone)");
      out.endpoint = true;
      out.endpoint_url = a.substr(11);
    } else {
      out.rest.push_back(a);
    }
  }
  return out;
}

std::chrono::milliseconds timeout_of(const std::string& text) {
  long long ms = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, ms);
  if (ec != std::errc() || p != end || ms <= 0 || ms > 86'400'000)
    throw usage_error("--timeout must be a positive whole number of milliseconds (got '" + text + "')");
  return std::chrono::milliseconds(ms);
}

}  // namespace

int run_health(const std::vector<std::string>& args) {
  const health_arguments h = split_arguments(args);
  const arguments a = parse_arguments(h.rest, {{"--timeout", true}, {"--json", false}});
  if (a.help) {
    std::cout << help_text("health");
    return exit_ok;
  }
  if (!a.positional.empty()) throw usage_error("unexpected argument '" + a.positional.front() + "'");
  if (h.schemas.empty() && !h.endpoint) throw usage_error("nothing to check: give --schema FILE or --endpoint [URL]");

  health_options options;
  options.schema_files.assign(h.schemas.begin(), h.schemas.end());
  if (const auto t = a.get("--timeout")) options.endpoint_timeout = timeout_of(*t);
  if (h.endpoint) {
    // The same settings as `covenant run` and http_engine::from_env (COVENANT_PROVIDER,
    // COVENANT_BASE_URL, COVENANT_API_KEY, COVENANT_MODEL, COVENANT_CA_FILE), the URL given here
    // first: the check goes through the engine's own probe, so it asks the provider's model list
    // the way the engine talks to that provider.
    http_engine_options eo;
    if (h.endpoint_url) eo.base_url = *h.endpoint_url;
    try {
      eo = http_engine::options_from_env(eo);
    } catch (const std::invalid_argument& e) {
      std::string what = e.what();
      constexpr std::string_view prefix = "covenant::http_engine::from_env: ";
      if (what.starts_with(prefix)) what.erase(0, prefix.size());
      if (what.starts_with("COVENANT_BASE_URL is not set")) throw usage_error(what + "; or pass --endpoint URL");
      throw fatal_error(what);
    }
    if (h.endpoint_url) eo.base_url = *h.endpoint_url;
    options.engine_options = std::move(eo);
  }

  const health_report report = check_health(options);
  if (a.has("--json")) std::cout << report.to_json() << "\n";
  else std::cout << report.to_text();
  return report.healthy ? exit_ok : exit_invalid;
}

}  // namespace covenant::cli
