// covenant run --schema FILE [--type TYPE] --prompt TEXT|@FILE [options] [INPUT.jsonl]
//
// A dynamic contract per record of a JSON Lines file, run as a batch (covenant/contract/batch.hpp) against
// an OpenAI-compatible server, one JSON line out per record, written and flushed as records
// finish; --resume skips what an earlier run already wrote. --metrics-file, --metrics-port and
// --audit-log attach covenant::metrics and covenant::audit_log to the contract.
#include <covenant/telemetry/audit_log.hpp>
#include <covenant/contract/batch.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/engine/logging.hpp>
#include <covenant/engine/prices.hpp>
#include <covenant/engine/response_cache.hpp>
#include <covenant/telemetry/metrics.hpp>
#include <covenant/types/detail/utf8.hpp>

#include <boost/json/parse.hpp>

#ifdef COVENANT_CLI_HTTPLIB
#include <httplib.h>
#endif

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_set>

#include "cli.hpp"

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

/// seconds_named() as a setting's milliseconds, rounded (past about 31 years, clamped there: far
/// from overflow).
std::chrono::milliseconds milliseconds_named(const arguments& a, std::string_view name, double fallback) {
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

strictness strictness_of(const std::string& name) {
  if (name == "strict") return strictness::strict;
  if (name == "repair") return strictness::repair;
  if (name == "coerce") return strictness::coerce;
  throw usage_error("unknown strictness '" + name + "' (strict, repair or coerce)");
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

/// FNV-1a: the same shard for the same id on every machine.
std::uint64_t stable_hash(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// The id of a record: its id field when it has one (a string or a number), else its line number.
json::value id_of(const json::value& record, const std::string& field, std::size_t line) {
  if (const json::object* o = record.if_object()) {
    if (const json::value* v = o->if_contains(field)) {
      if (v->is_string() || v->is_int64() || v->is_uint64()) return *v;
    }
  }
  return static_cast<std::uint64_t>(line);
}

/// "0xE9" for the byte e9.
std::string hex_byte(char c) {
  static constexpr std::string_view digits = "0123456789ABCDEF";
  const auto u = static_cast<unsigned char>(c);
  return {'0', 'x', digits[u >> 4U], digits[u & 0xFU]};
}

std::string id_key(const json::value& id) { return id.is_string() ? std::string(id.get_string()) : json_text(id); }

/// The query id of a record's calls (in its result line, the audit log and observers' events),
/// from the record's id (`key`, as id_key gives it): the id itself when it is a plain name (1 to
/// 64 ASCII letters, digits, '.', '_', ':' and '-'), else '#' and the 16 hexadecimal digits of
/// its FNV-1a hash, a form no plain name takes. The same id gives the same query id in every
/// run, so the calls of a record run again with --resume share it.
std::string query_id_of(std::string_view key) {
  const bool plain = !key.empty() && key.size() <= 64 && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == ':' || c == '-';
  });
  if (plain) return std::string(key);
  static constexpr std::string_view digits = "0123456789abcdef";
  std::string out(17, '#');
  std::uint64_t h = stable_hash(key);
  for (std::size_t i = 16; i > 0; --i, h >>= 4U) out[i] = digits[h & 0xFU];
  return out;
}

json::array issues_json(const issue_list& issues) {
  json::array out;
  for (const issue& i : issues) {
    json::object x;
    x["path"] = valid_utf8(i.path.to_string());
    x["code"] = to_string(i.code);
    x["message"] = valid_utf8(i.message);
    if (!i.expected.empty()) x["expected"] = valid_utf8(i.expected);
    if (!i.actual.empty()) x["actual"] = valid_utf8(i.actual);
    out.push_back(std::move(x));
  }
  return out;
}

// Prices go stale without a word: say so when the file's figures are more than 90 days old.
void warn_if_stale(const std::string& file, const std::string& taken) {
  int y = 0;
  unsigned m = 0;
  unsigned d = 0;
  if (std::sscanf(taken.c_str(), "%d-%u-%u", &y, &m, &d) != 3) return;  // (a date: the file was read)
  const std::chrono::sys_days then{std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d}};
  const auto today = std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now());
  const auto age = (today - then).count();
  if (age > 90)
    std::cerr << "covenant run: " << file << ": the prices were taken on " << taken << ", " << age
              << " days ago: check them against the providers' price pages\n";
}

// The record's tokens; the parts providers price apart only when the server reported them.
json::object usage_json(const usage& u) {
  json::object out{{"input_tokens", u.input_tokens}, {"output_tokens", u.output_tokens}};
  if (u.cached_input_tokens != 0) out["cached_input_tokens"] = u.cached_input_tokens;
  if (u.cache_write_tokens != 0) out["cache_write_tokens"] = u.cache_write_tokens;
  if (u.reasoning_tokens != 0) out["reasoning_tokens"] = u.reasoning_tokens;
  return out;
}

json::array notes_json(const note_list& notes) {
  json::array out;
  for (const note& n : notes) {
    json::object x;
    x["kind"] = to_string(n.kind);
    x["path"] = valid_utf8(n.path.to_string());
    x["detail"] = valid_utf8(n.detail);
    out.push_back(std::move(x));
  }
  return out;
}

/// Where the result lines go: one write() per line, so a crash loses at most the line being
/// written, and a line is either whole in the file or not there.
class line_sink {
 public:
  explicit line_sink(int fd) : fd_(fd) {}
  bool write(std::string line) {
    line.push_back('\n');
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      done += static_cast<std::size_t>(n);
    }
    return true;
  }

 private:
  int fd_;
};

/// The ids an earlier run wrote complete lines for; an unfinished last line is cut off the file.
std::unordered_set<std::string> finished_ids(const std::string& file) {
  std::unordered_set<std::string> ids;
  std::ifstream in(file, std::ios::binary);
  if (!in) return ids;
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  std::size_t complete = content.rfind('\n');
  complete = complete == std::string::npos ? 0 : complete + 1;
  if (complete < content.size()) {
    // The line a crash cut: not a finished record; drop it so that the file stays JSON Lines.
    if (::truncate(file.c_str(), static_cast<off_t>(complete)) != 0)
      throw fatal_error("cannot repair '" + file + "' (an unfinished last line): " + std::strerror(errno));
  }
  std::size_t at = 0;
  while (at < complete) {
    const std::size_t end = content.find('\n', at);
    const std::string_view line(content.data() + at, end - at);
    at = end + 1;
    json::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) continue;
    if (const json::value* id = v.as_object().if_contains("id")) ids.insert(id_key(*id));
  }
  return ids;
}

std::size_t count_lines(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::size_t n = 0;
  char buffer[1 << 16];
  bool last_newline = true;
  while (in) {
    in.read(buffer, sizeof buffer);
    const std::streamsize got = in.gcount();
    for (std::streamsize i = 0; i < got; ++i) n += buffer[i] == '\n' ? 1 : 0;
    if (got > 0) last_newline = buffer[got - 1] == '\n';
  }
  return n + (last_newline ? 0 : 1);
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

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

/// Writes a line to standard error with one write(): safe from any thread.
void error_line(const std::string& text) {
  const std::string line = "covenant run: " + printable(text) + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

/// --metrics-file: the metrics written to FILE.tmp.<pid> beside FILE and renamed over it (a
/// reader such as node_exporter's textfile collector never sees a half-written file), every
/// `interval` while the run goes and once more at the end.
class metrics_file_writer {
 public:
  metrics_file_writer(std::shared_ptr<const metrics> m, std::string file, std::chrono::nanoseconds interval)
      : metrics_(std::move(m)),
        file_(std::move(file)),
        temp_(file_ + ".tmp." + std::to_string(::getpid())),
        interval_(interval) {}
  metrics_file_writer(const metrics_file_writer&) = delete;
  metrics_file_writer& operator=(const metrics_file_writer&) = delete;
  ~metrics_file_writer() {
    if (started_ && !finished_) finish();  // the run ended by an exception
  }

  /// Writes the file now; the reason it failed, or "" when it was written.
  [[nodiscard]] std::string write_now() const {
    const std::string text = metrics_->render();
    const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return "cannot write '" + temp_ + "': " + errno_text(errno);
    std::size_t done = 0;
    while (done < text.size()) {
      const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int e = errno;
        ::close(fd);
        ::unlink(temp_.c_str());
        return "cannot write '" + temp_ + "': " + errno_text(e);
      }
      done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) {
      const int e = errno;
      ::unlink(temp_.c_str());
      return "cannot write '" + temp_ + "': " + errno_text(e);
    }
    std::error_code ec;
    std::filesystem::rename(temp_, file_, ec);
    if (ec) {
      ::unlink(temp_.c_str());
      return "cannot replace '" + file_ + "': " + ec.message();
    }
    return {};
  }

  /// Starts writing every interval.
  void start() {
    started_ = true;
    thread_ = std::jthread([this](std::stop_token stop) {
      std::mutex m;
      std::condition_variable_any wake;
      std::unique_lock lock(m);
      while (!wake.wait_for(lock, stop, interval_, [] { return false; }) && !stop.stop_requested()) {
        const std::string error = write_now();
        if (!error.empty() && !warned_) error_line("metrics: " + error);
        warned_ = !error.empty();
      }
    });
  }

  /// Stops the periodic writes and writes the final figures; false (after saying why) when that
  /// last write failed.
  bool finish() {
    finished_ = true;
    if (thread_.joinable()) {
      thread_.request_stop();
      thread_.join();
    }
    const std::string error = write_now();
    if (!error.empty()) error_line("metrics: " + error);
    return error.empty();
  }

 private:
  std::shared_ptr<const metrics> metrics_;
  std::string file_;
  std::string temp_;
  std::chrono::nanoseconds interval_;
  bool warned_ = false;  // the periodic thread's: a failure is reported once, not every interval
  bool started_ = false;
  bool finished_ = false;
  std::jthread thread_;
};

#ifdef COVENANT_CLI_HTTPLIB
/// --metrics-port: GET /metrics on 127.0.0.1:PORT (0: a free port) while the run goes.
class metrics_server {
 public:
  metrics_server(std::shared_ptr<const metrics> m, int port) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(2); };
    // One request per connection, and a short wait for it: stopping never waits long for a scraper.
    server_.set_keep_alive_max_count(1);
    server_.set_keep_alive_timeout(1);
    // SO_REUSEADDR without httplib's SO_REUSEPORT: a port another process listens on is an error,
    // not a share of its connections.
    server_.set_socket_options([](socket_t sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    server_.Get("/metrics", [m = std::move(m)](const httplib::Request&, httplib::Response& res) {
      res.set_content(m->render(), metrics::content_type);
    });
    port_ = port == 0 ? server_.bind_to_any_port("127.0.0.1") : (server_.bind_to_port("127.0.0.1", port) ? port : -1);
    if (port_ <= 0)
      throw fatal_error("--metrics-port: cannot listen on 127.0.0.1:" + std::to_string(port) +
                        " (is the port in use?)");
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      listen_returned_.store(true);
    });
    // stop() only takes effect once the server runs.
    while (!server_.is_running() && !listen_returned_.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  metrics_server(const metrics_server&) = delete;
  metrics_server& operator=(const metrics_server&) = delete;
  ~metrics_server() {
    server_.stop();
    thread_.join();
  }
  [[nodiscard]] int port() const noexcept { return port_; }

 private:
  httplib::Server server_;
  int port_ = -1;
  std::atomic<bool> listen_returned_{false};
  std::thread thread_;
};
#endif

std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) { interrupted.store(true); }

}  // namespace

int run_run(const std::vector<std::string>& args) {
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
  if (a.help) {
    std::cout << help_text("run");
    return exit_ok;
  }
  const auto schema_file = a.get("--schema");
  if (!schema_file) throw usage_error("missing --schema FILE");
  const auto prompt_arg = a.get("--prompt");
  if (!prompt_arg || prompt_arg->empty()) throw usage_error("missing --prompt TEXT (or --prompt @FILE)");
  if (a.positional.size() > 1) throw usage_error("unexpected argument '" + a.positional[1] + "'");
  const std::string input_file = a.positional.empty() ? std::string("-") : a.positional.front();
  const std::optional<std::string> output_file = a.get("--output");
  const bool resume = a.has("--resume");
  if (resume && !output_file) throw usage_error("--resume needs --output FILE (the file to resume)");
  const std::string id_field = a.get("--id-field").value_or("id");
  const std::optional<std::string> input_field = a.get("--input-field");
  const bool stream = a.has("--stream");
  const bool quiet = a.has("--quiet");

  // Telemetry: the metrics (a file rewritten every interval, an HTTP endpoint) and the audit log.
  const std::optional<std::string> metrics_file = a.get("--metrics-file");
  if (metrics_file && metrics_file->empty()) throw usage_error("--metrics-file takes a file name");
  if (a.has("--metrics-interval") && !metrics_file) throw usage_error("--metrics-interval needs --metrics-file FILE");
  const std::chrono::nanoseconds metrics_interval = interval_named(a, "--metrics-interval", 5.0);
  std::optional<int> metrics_port;
  if (a.has("--metrics-port"))
    metrics_port = static_cast<int>(
        whole_number_named(a, "--metrics-port", 0, 0, 65535, "a port number from 0 to 65535 (0: any free port)"));
#ifndef COVENANT_CLI_HTTPLIB
  if (metrics_port) throw usage_error("--metrics-port is not available in this build (it needs cpp-httplib)");
#endif
  const std::optional<std::string> audit_dir = a.get("--audit-log");
  if (audit_dir && audit_dir->empty()) throw usage_error("--audit-log takes a directory");
  if (!audit_dir && (a.has("--audit-retention-days") || a.has("--audit-include-reply")))
    throw usage_error(std::string(a.has("--audit-retention-days") ? "--audit-retention-days" : "--audit-include-reply") +
                      " needs --audit-log DIR");
  const auto audit_retention = static_cast<unsigned>(whole_number_named(
      a, "--audit-retention-days", 30, 0, 36500, "a whole number of days from 0 (keep every file) to 36500"));

  contract_options options;
  // Token prices: --prices FILE, else COVENANT_PRICES; without them costs are unknown.
  std::optional<std::string> prices_file = a.get("--prices");
  if (!prices_file)
    if (const char* env = std::getenv("COVENANT_PRICES"); env != nullptr && *env != '\0') prices_file = env;  // NOLINT(concurrency-mt-unsafe)
  if (prices_file) {
    if (prices_file->empty()) throw usage_error("--prices takes a file name");
    covenant::price_table_result prices = covenant::price_table::try_load(*prices_file);
    if (!prices.ok()) {
      std::cerr << "covenant run: " << *prices_file << ": the prices cannot be read:\n";
      for (const covenant::issue& i : prices.issues) std::cerr << "  " << i.to_string() << "\n";
      return exit_error;
    }
    options.prices = std::make_shared<const covenant::price_table>(std::move(prices.table));
    if (!quiet) warn_if_stale(*prices_file, options.prices->taken());
  }
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
  std::optional<covenant::provider> provider;
  if (const auto p = a.get("--provider")) {
    if (*p == "openai") provider = covenant::provider::openai;
    else if (*p == "anthropic") provider = covenant::provider::anthropic;
    else throw usage_error("unknown provider '" + *p + "' (openai or anthropic)");
  }
  covenant::batch_options batch;
  batch.concurrency = static_cast<std::size_t>(number_named(a, "--concurrency", 8, 1, 100000));
  batch.requests_per_minute = number_named(a, "--rpm", 0, 0, 1e9);
  batch.tokens_per_minute = number_named(a, "--tpm", 0, 0, 1e12);
  batch.order = covenant::batch_order::completion;
  // The run's budget: no record starts once it is spent (plus what the records in flight spend).
  batch.max_cost_usd = number_named(a, "--max-cost", 0, 0, 1e12);
  batch.max_tokens = whole_number_named(a, "--max-tokens", 0, 0, std::numeric_limits<std::uint64_t>::max() / 2,
                                        "a whole number of tokens (0: no cap)");
  if (batch.max_cost_usd > 0 && !options.prices)
    throw usage_error("--max-cost needs prices: --prices FILE (or COVENANT_PRICES)");
  std::optional<std::pair<std::uint64_t, std::uint64_t>> shard;
  if (const auto s = a.get("--shard")) shard = shard_of(*s);
  if (stream) batch.concurrency = 1;

  // The task: its prompt (inline or from a file) and the output schema.
  std::string prompt = *prompt_arg;
  if (prompt.front() == '@') prompt = read_input(prompt.substr(1), 1u << 20);
  const loaded_schema s = load_schema_arg(*schema_file);
  if (!s.ok()) {
    print_diagnostics(std::cerr, s.issues);
    return exit_error;
  }
  const schema::model m = select_model(s, a.get("--type"));
  // The input's schema, when given: each record (or its --input-field) is validated against it, and
  // its image, pdf and audio fields name files (relative to --media-root, else to the input file's
  // folder) or URLs whose media go to the model with the record.
  std::optional<schema::model> input_model;
  if (const auto t = a.get("--input-type")) {
    if (t->empty()) throw usage_error("--input-type takes a type name of the schema file");
    input_model = select_model(s, t);
  }
  std::string media_root;
  if (const auto r = a.get("--media-root")) {
    if (r->empty()) throw usage_error("--media-root takes a directory");
    if (!input_model) throw usage_error("--media-root needs --input-type TYPE (the input's media fields)");
    media_root = *r;
  } else if (input_file != "-") {
    const std::size_t slash = input_file.find_last_of('/');
    media_root = slash == std::string::npos ? std::string() : input_file.substr(0, slash + 1);
  }

  std::shared_ptr<covenant::metrics> run_metrics;
  if (metrics_file || metrics_port) {
    run_metrics = std::make_shared<covenant::metrics>();
    options.observers.push_back(run_metrics);
  }
  if (audit_dir) {
    try {
      options.observers.push_back(std::make_shared<covenant::audit_log>(audit_log_options{
          .directory = *audit_dir, .retention_days = audit_retention, .include_reply = a.has("--audit-include-reply")}));
    } catch (const std::exception& e) {
      std::string what = e.what();
      constexpr std::string_view prefix = "covenant::audit_log: ";
      if (what.starts_with(prefix)) what.erase(0, prefix.size());
      throw fatal_error("--audit-log: " + what);
    }
  }
  // Written once now, so that a file that cannot be written stops the run before any model call.
  std::unique_ptr<metrics_file_writer> metrics_writer;
  if (metrics_file) {
    metrics_writer = std::make_unique<metrics_file_writer>(run_metrics, *metrics_file, metrics_interval);
    if (const std::string error = metrics_writer->write_now(); !error.empty())
      throw fatal_error("--metrics-file: " + error);
  }

  // The engine: the environment, then the flags.
  http_engine_options eo;
  if (const auto v = a.get("--base-url")) eo.base_url = *v;
  std::unique_ptr<http_engine> engine;
  try {
    eo = http_engine::options_from_env(eo);
    if (provider) eo.provider = *provider;
    if (const auto v = a.get("--base-url")) eo.base_url = *v;
    if (const auto v = a.get("--model")) eo.model = *v;
    if (a.has("--timeout")) eo.request_timeout = milliseconds_named(a, "--timeout", 120);
    eo.retry.tries = static_cast<int>(whole_number_named(a, "--retries", static_cast<std::uint64_t>(eo.retry.tries), 0,
                                                         100, "a whole number from 0 to 100"));
    if (a.has("--retry-delay"))
      eo.retry.delay = milliseconds_named(a, "--retry-delay", 0.5);
    // Anthropic: the system prompt (task, schema, rules: the same for every record) is marked for
    // the prompt cache unless --no-prompt-cache.
    eo.cache_system_prompt = !a.has("--no-prompt-cache");
    if (const auto v = a.get("--reasoning-effort")) {
      if (*v != "minimal" && *v != "low" && *v != "medium" && *v != "high")
        throw usage_error("--reasoning-effort takes minimal, low, medium or high (got '" + *v + "')");
      eo.reasoning_effort = *v;
    }
    eo.thinking_budget = static_cast<std::uint32_t>(whole_number_named(
        a, "--thinking-budget", 0, 0, 1'000'000, "a whole number of tokens (0: no extended thinking; at least 1024)"));
    if (eo.thinking_budget != 0 && eo.thinking_budget < 1024)
      throw usage_error("--thinking-budget must be at least 1024 tokens, the API's minimum (got " +
                        std::to_string(eo.thinking_budget) + ")");
    if (a.has("--retry-max-delay"))
      eo.retry.max_delay = milliseconds_named(a, "--retry-max-delay", 30);
    engine = std::make_unique<http_engine>(eo);
  } catch (const std::invalid_argument& e) {
    // The library names itself in its messages; the tool's user wants the setting and the flag.
    std::string what = e.what();
    constexpr std::string_view prefix = "covenant::http_engine::from_env: ";
    if (what.starts_with(prefix)) what.erase(0, prefix.size());
    if (what.starts_with("COVENANT_BASE_URL is not set")) what += "; or pass --base-url URL";
    throw fatal_error(what);
  }
  // The response cache: a request seen before (in this scope) is answered from DIR.
  std::unique_ptr<covenant::cached_engine> cached;
  if (const auto dir = a.get("--cache")) {
    if (dir->empty()) throw usage_error("--cache takes a directory");
    covenant::response_cache_options co;
    co.path = std::filesystem::path(*dir) / "responses.sqlite";
    co.scope = std::string(eo.provider == covenant::provider::anthropic ? "anthropic " : "openai ") + engine->endpoint() +
               " " + eo.model + " effort=" + eo.reasoning_effort + " thinking=" + std::to_string(eo.thinking_budget);
    co.max_age = std::chrono::seconds(std::llround(number_named(a, "--cache-max-age", 0, 0, 3.2e9)));
    co.max_bytes = static_cast<std::uint64_t>(number_named(a, "--cache-max-mb", 0, 0, 1e9) * 1024 * 1024);
    cached = std::make_unique<covenant::cached_engine>(std::move(co), *engine);
  } else if (a.has("--cache-max-age") || a.has("--cache-max-mb")) {
    throw usage_error(std::string(a.has("--cache-max-age") ? "--cache-max-age" : "--cache-max-mb") + " needs --cache DIR");
  }
  covenant::engine& model = cached ? static_cast<covenant::engine&>(*cached) : *engine;
  // Each record's result (issues included) is its output line, and the progress line counts
  // retries: the library's own log would repeat them between progress updates. COVENANT_LOG_LEVEL
  // brings it back.
  if (std::getenv("COVENANT_LOG_LEVEL") == nullptr) set_log_level(log_level::off);  // NOLINT(concurrency-mt-unsafe)
  const dynamic_contract contract{
      model, {.name = m.title(), .prompt = prompt, .output = m, .input = input_model, .media_root = media_root}, options};

  // The output, and what an earlier run finished.
  std::unordered_set<std::string> done_ids;
  int out_fd = STDOUT_FILENO;
  if (output_file) {
    if (resume) done_ids = finished_ids(*output_file);
    out_fd = ::open(output_file->c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (resume ? 0 : O_TRUNC), 0644);
    if (out_fd < 0) throw fatal_error("cannot write '" + *output_file + "': " + std::strerror(errno));
  }
  line_sink out(out_fd);

  // The input, read one line at a time.
  std::ifstream file_in;
  std::istream* in = &std::cin;
  if (input_file != "-") {
    struct stat st {};
    if (::stat(input_file.c_str(), &st) != 0 || S_ISDIR(st.st_mode))
      throw fatal_error("cannot read '" + input_file + "': " + (S_ISDIR(st.st_mode) ? "a directory" : std::strerror(errno)));
    file_in.open(input_file, std::ios::binary);
    if (!file_in) throw fatal_error("cannot read '" + input_file + "': " + std::strerror(errno));
    in = &file_in;
    if (!quiet) batch.total = count_lines(input_file);
  }
  const std::string shown_input = input_file == "-" ? std::string("standard input") : input_file;
  std::size_t line_no = 0;
  std::size_t bad_lines = 0;
  std::size_t skipped = 0;
  struct pending {
    json::value id;
    std::size_t line = 0;
    std::string query_id;  // the record's calls' (query_id_of)
  };
  std::map<std::size_t, pending> in_flight;  // batch index -> the record's id and line
  std::size_t next_index = 0;
  auto next_record = [&]() -> std::optional<json::value> {
    std::string line;
    while (!interrupted.load() && std::getline(*in, line)) {
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      // The JSON parser would only say "syntax error": say what and where.
      if (const std::size_t bad = detail::first_invalid_utf8(line); bad != std::string_view::npos) {
        ++bad_lines;
        std::cerr << "covenant run: " << shown_input << ":" << line_no << ": skipped: not UTF-8 (byte "
                  << hex_byte(line[bad]) << " at offset " << bad << " of the line)\n";
        continue;
      }
      json::error_code ec;
      json::value record = json::parse(line, ec);
      if (ec || !record.is_object()) {
        ++bad_lines;
        std::cerr << "covenant run: " << shown_input << ":" << line_no << ": skipped: "
                  << (ec ? "not JSON (" + ec.message() + ")" : std::string("not a JSON object")) << "\n";
        continue;
      }
      json::value id = id_of(record, id_field, line_no);
      const std::string key = id_key(id);
      if (shard && stable_hash(key) % shard->second != shard->first) continue;
      if (done_ids.count(key) != 0) {
        ++skipped;
        continue;
      }
      json::value input = record;
      if (input_field) {
        const json::value* v = record.as_object().if_contains(*input_field);
        if (v == nullptr) {
          ++bad_lines;
          std::cerr << "covenant run: " << shown_input << ":" << line_no << ": skipped: no field '" << *input_field
                    << "'\n";
          continue;
        }
        input = *v;
      }
      in_flight[next_index++] = pending{std::move(id), line_no, query_id_of(key)};
      return input;
    }
    if (in->bad()) {
      ++bad_lines;
      std::cerr << "covenant run: cannot read " << shown_input << "\n";
    }
    return std::nullopt;
  };

  std::size_t failed = 0;
  bool write_failed = false;
  std::set<std::string> unpriced_models;  // models that answered and have no price
  auto result_line = [&](const pending& p, const outcome<json::value>& o) {
    json::object line;
    line["id"] = p.id;
    line["line"] = p.line;
    line["query_id"] = p.query_id;
    line["ok"] = o.success;
    line["value"] = o.success && o.result ? *o.result : json::value(nullptr);
    if (!o.success) line["failed_stage"] = to_string(o.failed_stage);
    line["issues"] = issues_json(o.issues);
    line["notes"] = notes_json(o.notes);
    line["attempts"] = o.attempts.size();
    line["usage"] = usage_json(o.usage);
    if (options.prices) {
      line["cost_usd"] = o.cost_usd ? json::value(*o.cost_usd) : json::value(nullptr);  // null: unknown, never 0
      for (const attempt& at : o.attempts)
        if (!at.cost_usd && !at.model.empty()) unpriced_models.insert(at.model);
    }
    // The record's time splits into its queue time (waiting for the rate limiter, a server's
    // Retry-After, transport-retry backoff) and the rest (latency_ms): the two add up to it.
    const std::chrono::nanoseconds queued = std::min(o.queued(), o.elapsed);
    line["latency_ms"] = std::chrono::duration<double, std::milli>(o.elapsed - queued).count();
    line["queue_ms"] = std::chrono::duration<double, std::milli>(queued).count();
    return json_text(line);
  };

  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  if (!quiet) {
    batch.progress_every = terminal ? std::chrono::milliseconds(200) : std::chrono::seconds(5);
    batch.on_progress = [&](const batch_progress& p) {
      if (terminal) std::cerr << "\r\x1b[2K" << p.line() << std::flush;
      else if (p.in_flight > 0 || p.done < p.started) std::cerr << "covenant run: " << p.line() << "\n";  // the summary says the rest
    };
  }
#ifdef COVENANT_CLI_HTTPLIB
  std::unique_ptr<metrics_server> metrics_http;
  if (metrics_port) {
    metrics_http = std::make_unique<metrics_server>(run_metrics, *metrics_port);
    error_line("metrics at http://127.0.0.1:" + std::to_string(metrics_http->port()) + "/metrics");
  }
#endif
  if (metrics_writer) metrics_writer->start();

  std::stop_source stop;
  batch.stop = stop.get_token();
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  std::thread watcher([&stop] {
    while (!stop.stop_requested()) {
      if (interrupted.load()) {
        stop.request_stop();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });

  covenant::batch_progress summary;
  if (stream) {
    // One record at a time, each changed partial value printed as it is written.
    auto started = std::chrono::steady_clock::now();
    while (auto input = next_record()) {
      const std::size_t index = next_index - 1;
      call_options this_call;
      this_call.query_id = in_flight[index].query_id;
      auto f = contract.stream(
          std::move(*input),
          [&](const stream_update<json::value>& u) {
            if (u.what != stream_update<json::value>::kind::partial) return;
            json::object line{{"partial", u.partial->value()}, {"attempt", u.attempt}};
            write_failed = !out.write(json_text(line)) || write_failed;
          },
          std::move(this_call));
      outcome<json::value> o = f.get().outcome;
      write_failed = !out.write(result_line(in_flight[index], o)) || write_failed;
      in_flight.erase(index);
      ++summary.started;
      summary.count(o);
      if (interrupted.load()) break;
      if (summary.over_budget(batch.max_tokens, batch.max_cost_usd)) {
        summary.stopped = summary.budget_reached = true;
        break;
      }
    }
    summary.elapsed = std::chrono::steady_clock::now() - started;
    failed = summary.failed;
  } else {
    // Each record's calls carry its query id: its result line and its audit lines join on it.
    batch.query_id = [&in_flight](std::size_t index) -> call_id {
      const auto it = in_flight.find(index);
      return it == in_flight.end() ? call_id() : call_id(it->second.query_id);
    };
    summary = run_batch(
        contract, next_record,
        [&](std::size_t index, dynamic_contract::call_result&& r) {
          const outcome<json::value>& o = r.outcome;
          auto it = in_flight.find(index);
          if (it == in_flight.end()) return;
          if (o.failed_stage == stage::cancelled && interrupted.load()) {
            in_flight.erase(it);  // not finished: a run with --resume does it again
            return;
          }
          if (!o.success) ++failed;
          write_failed = !out.write(result_line(it->second, o)) || write_failed;
          in_flight.erase(it);
        },
        batch);
  }
  stop.request_stop();
  watcher.join();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (out_fd != STDOUT_FILENO) ::close(out_fd);
#ifdef COVENANT_CLI_HTTPLIB
  metrics_http.reset();
#endif
  const bool metrics_written = !metrics_writer || metrics_writer->finish();

  if (!quiet) {
    if (terminal) std::cerr << "\r\x1b[2K";
    std::cerr << "covenant run: " << summary.done << " records (" << summary.succeeded << " ok, " << summary.failed
              << " failed)";
    if (skipped > 0) std::cerr << ", " << skipped << " already done";
    if (bad_lines > 0) std::cerr << ", " << bad_lines << " bad input lines";
    std::array<char, 32> secs{};
    std::snprintf(secs.data(), secs.size(), "%.2f", std::chrono::duration<double>(summary.elapsed).count());
    std::cerr << " in " << secs.data() << " s; tokens " << summary.tokens_in << " in";
    if (summary.cached_tokens_in > 0 && summary.tokens_in > 0)
      std::cerr << " (" << std::llround(100.0 * static_cast<double>(summary.cached_tokens_in) / static_cast<double>(summary.tokens_in))
                << "% from the prompt cache)";
    std::cerr << " / " << summary.tokens_out << " out";
    if (cached) std::cerr << "; " << summary.cache_hits << " model calls answered from the response cache";
    if (options.prices) {
      const std::string dollars = covenant::format_usd(summary.cost_usd);
      if (summary.unpriced == 0) std::cerr << "; cost " << dollars;
      else if (summary.priced > 0) std::cerr << "; cost " << dollars << " for " << summary.priced << " records, "
                                            << summary.unpriced << " unknown";
      else std::cerr << "; cost unknown";
      if (!unpriced_models.empty()) {
        std::cerr << " (no price for";
        const char* sep = " ";
        for (const std::string& model : unpriced_models) {
          std::cerr << sep << "'" << model << "'";
          sep = ", ";
        }
        std::cerr << " in " << *prices_file << ")";
      }
    }
    if (summary.budget_reached && !interrupted.load())
      std::cerr << "; stopped: the budget was reached"
                << (batch.max_cost_usd > 0 ? " (--max-cost " + covenant::format_usd(batch.max_cost_usd) + ")" : "")
                << (batch.max_tokens > 0 ? " (--max-tokens " + std::to_string(batch.max_tokens) + ")" : "")
                << " (run again with --resume and a new budget)";
    else if (summary.stopped || interrupted.load())
      std::cerr << "; stopped early (run again with --resume)";
    std::cerr << "\n";
  }
  if (cached && cached->stats().errors > 0)  // (the library's log is off: say it here, --quiet or not)
    std::cerr << "covenant run: warning: the response cache " << cached->options().path.string() << " could not be used "
              << cached->stats().errors << (cached->stats().errors == 1 ? " time" : " times")
              << "; those calls went to the server (COVENANT_LOG_LEVEL=warn says why)\n";
  if (write_failed) {
    std::cerr << "covenant run: cannot write the results\n";
    return exit_error;
  }
  if (!metrics_written) return exit_error;
  if (bad_lines > 0) return exit_error;
  if (interrupted.load()) return exit_invalid;
  if (summary.budget_reached) return exit_budget;
  return failed > 0 ? exit_invalid : exit_ok;
}

}  // namespace covenant::cli
