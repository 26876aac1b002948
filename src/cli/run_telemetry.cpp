// covenant run: --metrics-file, --metrics-port, --audit-log and --otlp-endpoint attach
// covenant::metrics, covenant::audit_log and covenant::otel_tracer to the contract.
#include <covenant/telemetry/audit_log.hpp>
#include <covenant/telemetry/metrics.hpp>
#include <covenant/telemetry/otel.hpp>

#ifdef COVENANT_CLI_HTTPLIB
#include <httplib.h>
#endif

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <stop_token>
#include <string_view>
#include <system_error>
#include <thread>

#include "run_command.hpp"

namespace covenant::cli {

namespace {

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

std::shared_ptr<covenant::audit_log> open_audit_log(const run_config& config) {
  try {
    return std::make_shared<covenant::audit_log>(audit_log_options{.directory = *config.audit_dir,
                                                                   .retention_days = config.audit_retention_days,
                                                                   .include_reply = config.audit_include_reply});
  } catch (const std::exception& e) {
    std::string what = e.what();
    constexpr std::string_view prefix = "covenant::audit_log: ";
    if (what.starts_with(prefix)) what.erase(0, prefix.size());
    throw fatal_error("--audit-log: " + what);
  }
}

}  // namespace

/// --metrics-file: the metrics written to FILE.tmp.<pid> beside FILE and renamed over it (a
/// reader such as node_exporter's textfile collector never sees a half-written file), every
/// `interval` while the run goes and once more at the end.
class metrics_file_writer {
 public:
  metrics_file_writer(std::function<std::string()> render, std::string file, std::chrono::nanoseconds interval)
      : render_(std::move(render)),
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
    const std::string text = render_();
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
  std::function<std::string()> render_;
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
  metrics_server(std::function<std::string()> render, int port) {
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
    server_.Get("/metrics", [render = std::move(render)](const httplib::Request&, httplib::Response& res) {
      res.set_content(render(), metrics::content_type);
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

namespace {

bool env_set(const char* name) {
  const char* v = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
  return v != nullptr && *v != '\0';
}

/// The tracer of a traced run (--otlp-endpoint, or the OTLP endpoint variables), else null.
std::shared_ptr<otel_tracer> open_tracer(const run_config& config) {
  if (!config.otlp_endpoint && !env_set("OTEL_EXPORTER_OTLP_ENDPOINT") && !env_set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
    return nullptr;
  otel_options o;
  o.service_name = "covenant-run";
  try {
    o = otel_options::from_env(std::move(o));
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    constexpr std::string_view prefix = "covenant::otel_options::from_env: ";
    if (what.starts_with(prefix)) what.erase(0, prefix.size());
    throw fatal_error(what);
  }
  if (config.otlp_endpoint) {
    std::string base = *config.otlp_endpoint;
    while (!base.empty() && base.back() == '/') base.pop_back();
    o.traces_endpoint = base + "/v1/traces";
    o.metrics_endpoint = base + "/v1/metrics";
  }
  if (!o.enabled) return nullptr;  // OTEL_SDK_DISABLED=true
  try {
    return std::make_shared<otel_tracer>(std::move(o));
  } catch (const std::exception& e) {
    throw fatal_error(std::string("--otlp-endpoint: ") + e.what());
  }
}

/// TRACEPARENT (and TRACESTATE): the span the run belongs to, as a process started by a traced
/// one receives it.
std::optional<trace_context> parent_from_env() {
  const char* parent = std::getenv("TRACEPARENT");  // NOLINT(concurrency-mt-unsafe)
  if (parent == nullptr || *parent == '\0') return std::nullopt;
  const char* state = std::getenv("TRACESTATE");  // NOLINT(concurrency-mt-unsafe)
  std::optional<trace_context> t = trace_context::parse(parent, state != nullptr ? state : "");
  if (!t) error_line("TRACEPARENT is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>): ignored");
  return t;
}

}  // namespace

run_telemetry::run_telemetry(const run_config& config, contract_options& options) {
#ifdef COVENANT_CLI_HTTPLIB
  port_ = config.metrics_port;
#endif
  tracer_ = open_tracer(config);
  if (config.metrics_file || config.metrics_port) {
    metrics_ = std::make_shared<covenant::metrics>();
    options.observers.push_back(metrics_);
  }
  if (config.audit_dir) options.observers.push_back(open_audit_log(config));
  if (tracer_) options.observers.push_back(tracer_);
  const std::optional<trace_context> parent = parent_from_env();
  if (tracer_) {
    run_span_ = std::make_unique<otel_span>(tracer_->start_span("covenant run", parent ? &*parent : nullptr));
    run_span_->set("covenant.run.schema", config.schema_file);
    run_span_->set("covenant.run.input", config.input_file);
    if (config.type) run_span_->set("covenant.run.type", *config.type);
  } else if (parent) {
    // Not traced here, but the records' model requests still carry the caller's trace on.
    run_span_ = std::make_unique<otel_span>();
    parent_ = *parent;
  }
  // Written once now, so that a file that cannot be written stops the run before any model call.
  if (config.metrics_file) {
    writer_ = std::make_unique<metrics_file_writer>([this] { return render(); }, *config.metrics_file,
                                                    config.metrics_interval);
    if (const std::string error = writer_->write_now(); !error.empty()) throw fatal_error("--metrics-file: " + error);
  }
}

run_telemetry::~run_telemetry() = default;

std::string run_telemetry::render() const {
  std::string text = metrics_ ? metrics_->render() : std::string();
  if (tracer_) text += tracer_->render_prometheus();
  return text;
}

otel_span run_telemetry::record_span(const pending_record& record) {
  if (!tracer_) return otel_span();
  const trace_context& run = run_span_ ? run_span_->context() : trace_context{};
  otel_span span = tracer_->start_span("covenant run record", run.valid() ? &run : nullptr);
  span.set("covenant.record.id", record.id.is_string() ? std::string(record.id.as_string()) : json_text(record.id));
  span.set("covenant.record.line", static_cast<std::int64_t>(record.line));
  span.set("covenant.query_id", record.query_id);
  return span;
}

trace_context run_telemetry::record_parent(const otel_span& span) const {
  if (span.context().valid()) return span.context();
  return parent_;
}

void run_telemetry::end_record_span(otel_span& span, const outcome<boost::json::value>& o) {
  span.set("covenant.outcome.success", o.success);
  span.set("covenant.outcome.attempts", static_cast<std::int64_t>(o.attempts.size()));
  if (!o.success) span.fail(o.summary(), to_string(o.failed_stage));
  span.end();
}

void run_telemetry::start() {
#ifdef COVENANT_CLI_HTTPLIB
  if (port_) {
    server_ = std::make_unique<metrics_server>([this] { return render(); }, *port_);
    error_line("metrics at http://127.0.0.1:" + std::to_string(server_->port()) + "/metrics");
  }
#endif
  if (writer_) writer_->start();
}

bool run_telemetry::finish() {
#ifdef COVENANT_CLI_HTTPLIB
  server_.reset();
#endif
  if (run_span_) run_span_->end();
  if (tracer_) {
    tracer_->shutdown(std::chrono::seconds(5));
    const otel_stats s = tracer_->stats();
    if (s.spans_dropped > 0)
      error_line("otlp: " + std::to_string(s.spans_dropped) + " of " + std::to_string(s.spans_recorded) +
                 " spans were not exported (the collector at " + tracer_->options().traces_endpoint +
                 " was down, refused them or was too slow)");
  }
  return !writer_ || writer_->finish();
}

}  // namespace covenant::cli
