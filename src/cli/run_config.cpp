// covenant run: the command line read into a run_config, every flag checked (usage_error).
#include <covenant/engine/engine.hpp>
#include <covenant/types/encode.hpp>

#include <boost/json/value.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string_view>
#include <system_error>

#include "run_command.hpp"

namespace covenant::cli {

namespace {

namespace json = boost::json;

double seconds_named(const arguments& a, std::string_view name, double fallback) {
  const auto v = a.get(name);
  if (!v) return fallback;
  double d = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
  if (ec != std::errc() || end != v->data() + v->size() || !std::isfinite(d) || d < 0)
    throw usage_error(std::string(name) + " takes a number of seconds, such as 0.5 (got '" + *v + "')");
  return d;
}

/// Whole milliseconds of a number of seconds.
std::chrono::milliseconds milliseconds_named(const arguments& a, std::string_view name, double fallback) {
  // (past about 31 years, clamped there: far from overflow)
  return std::chrono::milliseconds(std::llround(std::min(seconds_named(a, name, fallback), 1e9) * 1000.0));
}

double number_named(const arguments& a, std::string_view name, double fallback, double min, double max) {
  const auto v = a.get(name);
  if (!v) return fallback;
  double d = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
  if (ec != std::errc() || end != v->data() + v->size() || !std::isfinite(d) || d < min || d > max)
    throw usage_error(std::string(name) + " takes a number from " + json_text(json::value(min)) + " to " +
                      json_text(json::value(max)) + " (got '" + *v + "')");
  return d;
}

/// A whole number from `min` to `max` (the whole text: no sign, no fraction, nothing after it).
std::uint64_t whole_number_named(const arguments& a, std::string_view name, std::uint64_t fallback, std::uint64_t min,
                                 std::uint64_t max, std::string_view what) {
  const auto v = a.get(name);
  if (!v) return fallback;
  std::uint64_t n = 0;
  const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (v->empty() || ec != std::errc() || end != v->data() + v->size() || n < min || n > max)
    throw usage_error(std::string(name) + " takes " + std::string(what) + " (got '" + *v + "')");
  return n;
}

/// --metrics-interval: seconds, more than 0 and at most a day.
std::chrono::nanoseconds interval_named(const arguments& a, std::string_view name, double fallback) {
  const auto v = a.get(name);
  double d = fallback;
  if (v) {
    const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), d);
    if (ec != std::errc() || end != v->data() + v->size() || !std::isfinite(d) || d <= 0 || d > 86400)
      throw usage_error(std::string(name) + " takes a number of seconds greater than 0 (at most 86400), such as 5 (got '" +
                        *v + "')");
  }
  return std::max(std::chrono::nanoseconds(1),
                  std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(d)));
}

strictness strictness_of(const std::string& name) {
  if (name == "strict") return strictness::strict;
  if (name == "repair") return strictness::repair;
  if (name == "coerce") return strictness::coerce;
  throw usage_error("unknown strictness '" + name + "' (strict, repair or coerce)");
}

std::optional<covenant::provider> provider_of(const std::optional<std::string>& name) {
  if (!name) return std::nullopt;
  if (*name == "openai") return covenant::provider::openai;
  if (*name == "anthropic") return covenant::provider::anthropic;
  throw usage_error("unknown provider '" + *name + "' (openai or anthropic)");
}

/// "I/N": this process takes the records whose id hashes to I modulo N.
std::pair<std::uint64_t, std::uint64_t> shard_of(const std::string& text) {
  const auto slash = text.find('/');
  std::uint64_t i = 0;
  std::uint64_t n = 0;
  auto number = [](std::string_view s, std::uint64_t& out) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && end == s.data() + s.size() && !s.empty();
  };
  if (slash == std::string::npos || !number(std::string_view(text).substr(0, slash), i) ||
      !number(std::string_view(text).substr(slash + 1), n) || n == 0 || i >= n)
    throw usage_error("--shard takes I/N with 0 <= I < N, such as 0/4 (got '" + text + "')");
  return {i, n};
}

// --schema, --prompt, the input and the output.
void read_task(const arguments& a, run_config& c) {
  const auto schema_file = a.get("--schema");
  if (!schema_file) throw usage_error("missing --schema FILE");
  c.schema_file = *schema_file;
  c.type = a.get("--type");
  const auto prompt = a.get("--prompt");
  if (!prompt || prompt->empty()) throw usage_error("missing --prompt TEXT (or --prompt @FILE)");
  c.prompt = *prompt;
  if (a.positional.size() > 1) throw usage_error("unexpected argument '" + a.positional[1] + "'");
  c.input_file = a.positional.empty() ? std::string("-") : a.positional.front();
  c.output_file = a.get("--output");
  c.resume = a.has("--resume");
  if (c.resume && !c.output_file) throw usage_error("--resume needs --output FILE (the file to resume)");
  c.id_field = a.get("--id-field").value_or("id");
  c.input_field = a.get("--input-field");
  c.stream = a.has("--stream");
  c.quiet = a.has("--quiet");
}

// The metrics (a file rewritten every interval, an HTTP endpoint) and the audit log.
void read_telemetry(const arguments& a, run_config& c) {
  c.metrics_file = a.get("--metrics-file");
  if (c.metrics_file && c.metrics_file->empty()) throw usage_error("--metrics-file takes a file name");
  if (a.has("--metrics-interval") && !c.metrics_file) throw usage_error("--metrics-interval needs --metrics-file FILE");
  c.metrics_interval = interval_named(a, "--metrics-interval", 5.0);
  if (a.has("--metrics-port"))
    c.metrics_port = static_cast<int>(
        whole_number_named(a, "--metrics-port", 0, 0, 65535, "a port number from 0 to 65535 (0: any free port)"));
#ifndef COVENANT_CLI_HTTPLIB
  if (c.metrics_port) throw usage_error("--metrics-port is not available in this build (it needs cpp-httplib)");
#endif
  c.audit_dir = a.get("--audit-log");
  if (c.audit_dir && c.audit_dir->empty()) throw usage_error("--audit-log takes a directory");
  if (!c.audit_dir && (a.has("--audit-retention-days") || a.has("--audit-include-reply")))
    throw usage_error(std::string(a.has("--audit-retention-days") ? "--audit-retention-days" : "--audit-include-reply") +
                      " needs --audit-log DIR");
  c.audit_retention_days = static_cast<unsigned>(whole_number_named(
      a, "--audit-retention-days", 30, 0, 36500, "a whole number of days from 0 (keep every file) to 36500"));
  c.audit_include_reply = a.has("--audit-include-reply");
  c.otlp_endpoint = a.get("--otlp-endpoint");
  if (c.otlp_endpoint) {
    const std::string& url = *c.otlp_endpoint;
    if (!url.starts_with("http://") && !url.starts_with("https://"))
      throw usage_error("--otlp-endpoint takes the collector's OTLP/HTTP URL, e.g. http://localhost:4318 (got \"" +
                        printable(url) + "\")");
  }
}

// The contract's options: token prices, asking again, reading replies, the output mode.
void read_contract(const arguments& a, run_config& c) {
  // Token prices: --prices FILE, else COVENANT_PRICES; without them costs are unknown.
  c.prices_file = a.get("--prices");
  if (!c.prices_file)
    if (const char* env = std::getenv("COVENANT_PRICES"); env != nullptr && *env != '\0') c.prices_file = env;  // NOLINT(concurrency-mt-unsafe)
  if (c.prices_file && c.prices_file->empty()) throw usage_error("--prices takes a file name");
  contract_options& options = c.contract;
  options.retry.tries = static_cast<int>(number_named(a, "--tries", 2, 0, 100));
  options.retry.delay = milliseconds_named(a, "--delay", 0.5);
  options.retry.backoff = number_named(a, "--backoff", 2.0, 1.0, 100.0);
  options.retry.max_delay = milliseconds_named(a, "--max-delay", 15.0);
  options.retry.jitter = number_named(a, "--jitter", 0.1, 0.0, 1.0);
  options.graceful = true;
  options.strictness = strictness_of(a.get("--strictness").value_or("coerce"));
  if (const auto m = a.get("--mode")) {
    const std::optional<output_mode> mode = parse_output_mode(*m);
    if (!mode) throw usage_error("unknown mode '" + *m + "' (json_schema, json_object, tools, prompt or auto)");
    options.mode = *mode;
  }
}

// The batch's options: records in flight, rate limits, the budget; and this process's shard.
void read_batch(const arguments& a, run_config& c) {
  covenant::batch_options& batch = c.batch;
  batch.concurrency = static_cast<std::size_t>(number_named(a, "--concurrency", 8, 1, 100000));
  batch.requests_per_minute = number_named(a, "--rpm", 0, 0, 1e9);
  batch.tokens_per_minute = number_named(a, "--tpm", 0, 0, 1e12);
  batch.order = covenant::batch_order::completion;
  // The run's budget: no record starts once it is spent (plus what the records in flight spend).
  batch.max_cost_usd = number_named(a, "--max-cost", 0, 0, 1e12);
  batch.max_tokens = whole_number_named(a, "--max-tokens", 0, 0, std::numeric_limits<std::uint64_t>::max() / 2,
                                        "a whole number of tokens (0: no cap)");
  if (batch.max_cost_usd > 0 && !c.prices_file)
    throw usage_error("--max-cost needs prices: --prices FILE (or COVENANT_PRICES)");
  if (const auto s = a.get("--shard")) c.shard = shard_of(*s);
  if (c.stream) batch.concurrency = 1;
}

// The input's schema, when given: each record (or its --input-field) is validated against it, and
// its image, pdf and audio fields name files (relative to --media-root, else to the input file's
// folder) or URLs whose media go to the model with the record.
void read_input_media(const arguments& a, run_config& c) {
  if (const auto t = a.get("--input-type")) {
    if (t->empty()) throw usage_error("--input-type takes a type name of the schema file");
    c.input_type = t;
  }
  if (const auto r = a.get("--media-root")) {
    if (r->empty()) throw usage_error("--media-root takes a directory");
    if (!c.input_type) throw usage_error("--media-root needs --input-type TYPE (the input's media fields)");
    c.media_root = *r;
  } else if (c.input_file != "-") {
    const std::size_t slash = c.input_file.find_last_of('/');
    c.media_root = slash == std::string::npos ? std::string() : c.input_file.substr(0, slash + 1);
  }
}

// The engine's flags (--provider is read with the contract's options).
void read_engine(const arguments& a, engine_flags& e) {
  e.base_url = a.get("--base-url");
  e.model = a.get("--model");
  if (a.has("--timeout")) e.request_timeout = milliseconds_named(a, "--timeout", 120);
  if (a.has("--retries"))
    e.retries = static_cast<int>(whole_number_named(a, "--retries", 0, 0, 100, "a whole number from 0 to 100"));
  if (a.has("--retry-delay")) e.retry_delay = milliseconds_named(a, "--retry-delay", 0.5);
  // Anthropic: the system prompt (task, schema, rules: the same for every record) is marked for
  // the prompt cache unless --no-prompt-cache.
  e.cache_system_prompt = !a.has("--no-prompt-cache");
  if (const auto v = a.get("--reasoning-effort")) {
    if (*v != "minimal" && *v != "low" && *v != "medium" && *v != "high")
      throw usage_error("--reasoning-effort takes minimal, low, medium or high (got '" + *v + "')");
    e.reasoning_effort = *v;
  }
  e.thinking_budget = static_cast<std::uint32_t>(whole_number_named(
      a, "--thinking-budget", 0, 0, 1'000'000, "a whole number of tokens (0: no extended thinking; at least 1024)"));
  if (e.thinking_budget != 0 && e.thinking_budget < 1024)
    throw usage_error("--thinking-budget must be at least 1024 tokens, the API's minimum (got " +
                      std::to_string(e.thinking_budget) + ")");
  if (a.has("--retry-max-delay")) e.retry_max_delay = milliseconds_named(a, "--retry-max-delay", 30);
}

// The response cache: a request seen before (in this scope) is answered from DIR.
void read_cache(const arguments& a, run_config& c) {
  if (const auto dir = a.get("--cache")) {
    if (dir->empty()) throw usage_error("--cache takes a directory");
    response_cache_flags& cache = c.cache.emplace();
    cache.dir = *dir;
    cache.max_age = std::chrono::seconds(std::llround(number_named(a, "--cache-max-age", 0, 0, 3.2e9)));  // (whole seconds)
    cache.max_bytes = static_cast<std::uint64_t>(number_named(a, "--cache-max-mb", 0, 0, 1e9) * 1024 * 1024);
  } else if (a.has("--cache-max-age") || a.has("--cache-max-mb")) {
    throw usage_error(std::string(a.has("--cache-max-age") ? "--cache-max-age" : "--cache-max-mb") + " needs --cache DIR");
  }
}

}  // namespace

run_config parse_run_config(const std::vector<std::string>& args) {
  const arguments a = parse_arguments(args, {{"--schema", true},     {"--type", true},      {"--prompt", true},
                                             {"--input-field", true}, {"--id-field", true},  {"--output", true},
                                             {"--resume", false},     {"--base-url", true},  {"--model", true},
                                             {"--timeout", true},     {"--tries", true},     {"--delay", true},
                                             {"--retries", true},     {"--retry-delay", true},
                                             {"--retry-max-delay", true},
                                             {"--backoff", true},     {"--max-delay", true}, {"--jitter", true},
                                             {"--strictness", true},  {"--concurrency", true}, {"--rpm", true},
                                             {"--tpm", true},         {"--shard", true},     {"--stream", false},
                                             {"--quiet", false},      {"--metrics-file", true},
                                             {"--metrics-interval", true},
                                             {"--metrics-port", true},
                                             {"--audit-log", true},
                                             {"--audit-retention-days", true},
                                             {"--audit-include-reply", false},
                                             {"--otlp-endpoint", true},
                                             {"--provider", true},
                                             {"--mode", true},
                                             {"--prices", true},
                                             {"--max-cost", true},
                                             {"--max-tokens", true},
                                             {"--reasoning-effort", true},
                                             {"--thinking-budget", true},
                                             {"--no-prompt-cache", false},
                                             {"--cache", true},
                                             {"--cache-max-age", true},
                                             {"--cache-max-mb", true},
                                             {"--input-type", true},
                                             {"--media-root", true}});
  run_config c;
  if (a.help) {
    c.help = true;
    return c;
  }
  // In this order: the first wrong flag is the one reported.
  read_task(a, c);
  read_telemetry(a, c);
  read_contract(a, c);
  c.engine.provider = provider_of(a.get("--provider"));
  read_batch(a, c);
  read_input_media(a, c);
  read_engine(a, c.engine);
  read_cache(a, c);
  return c;
}

}  // namespace covenant::cli
