// covenant run: --metrics-file, --metrics-port and --audit-log attach covenant::metrics and
// covenant::audit_log to the contract.
#include <covenant/telemetry/audit_log.hpp>
#include <covenant/telemetry/metrics.hpp>

#ifdef COVENANT_CLI_HTTPLIB
#include <httplib.h>
#endif

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
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

run_telemetry::run_telemetry(const run_config& config, contract_options& options) {
#ifdef COVENANT_CLI_HTTPLIB
  port_ = config.metrics_port;
#endif
  if (config.metrics_file || config.metrics_port) {
    metrics_ = std::make_shared<covenant::metrics>();
    options.observers.push_back(metrics_);
  }
  if (config.audit_dir) options.observers.push_back(open_audit_log(config));
  // Written once now, so that a file that cannot be written stops the run before any model call.
  if (config.metrics_file) {
    writer_ = std::make_unique<metrics_file_writer>(metrics_, *config.metrics_file, config.metrics_interval);
    if (const std::string error = writer_->write_now(); !error.empty()) throw fatal_error("--metrics-file: " + error);
  }
}

run_telemetry::~run_telemetry() = default;

void run_telemetry::start() {
#ifdef COVENANT_CLI_HTTPLIB
  if (port_) {
    server_ = std::make_unique<metrics_server>(metrics_, *port_);
    error_line("metrics at http://127.0.0.1:" + std::to_string(server_->port()) + "/metrics");
  }
#endif
  if (writer_) writer_->start();
}

bool run_telemetry::finish() {
#ifdef COVENANT_CLI_HTTPLIB
  server_.reset();
#endif
  return !writer_ || writer_->finish();
}

}  // namespace covenant::cli
