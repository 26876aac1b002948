// covenant run: what its source files share (run_config.cpp reads the command line,
// run_telemetry.cpp attaches the metrics and the audit log, run_records.cpp reads the records and
// writes their result lines, run_command.cpp runs the steps).
#pragma once

#include <covenant/contract/batch.hpp>
#include <covenant/contract/contract_options.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/runtime/dynamic_contract.hpp>

#include <boost/json/value.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <istream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cli.hpp"

namespace covenant {
class metrics;
class otel_tracer;
class otel_span;
}

namespace covenant::cli {

// ---- the command line (run_config.cpp) ---------------------------------------------------------

/// The engine's flags: each one given replaces the environment's setting
/// (http_engine::options_from_env).
struct engine_flags {
  std::optional<covenant::provider> provider;                ///< --provider
  std::optional<std::string> base_url;                       ///< --base-url
  std::optional<std::string> model;                          ///< --model
  std::optional<std::chrono::milliseconds> request_timeout;  ///< --timeout
  std::optional<int> retries;                                ///< --retries (transport retry.tries)
  std::optional<std::chrono::milliseconds> retry_delay;      ///< --retry-delay (retry.delay)
  std::optional<std::chrono::milliseconds> retry_max_delay;  ///< --retry-max-delay (retry.max_delay)
  bool cache_system_prompt = true;                           ///< not --no-prompt-cache
  std::optional<std::string> reasoning_effort;               ///< --reasoning-effort
  std::uint32_t thinking_budget = 0;                         ///< --thinking-budget (0: none)
};

/// --cache DIR: the response cache.
struct response_cache_flags {
  std::string dir;
  std::chrono::milliseconds max_age{0};  ///< --cache-max-age, whole seconds (0: no limit)
  std::uint64_t max_bytes = 0;      ///< --cache-max-mb, in bytes (0: no limit)
};

/// What `covenant run` was asked to do, read and checked from its command line.
struct run_config {
  bool help = false;  ///< -h/--help: nothing else is set

  // The task.
  std::string schema_file;                ///< --schema
  std::optional<std::string> type;        ///< --type (else the schema's only class)
  std::string prompt;                     ///< --prompt: the text, or @FILE
  std::optional<std::string> input_type;  ///< --input-type
  std::string media_root;                 ///< --media-root, else the input file's folder

  // The records and their results.
  std::string input_file = "-";            ///< "-": standard input
  std::optional<std::string> output_file;  ///< --output (else standard output)
  bool resume = false;                     ///< --resume (needs --output)
  std::string id_field = "id";             ///< --id-field
  std::optional<std::string> input_field;  ///< --input-field
  std::optional<std::pair<std::uint64_t, std::uint64_t>> shard;  ///< --shard I/N: {I, N}
  bool stream = false;                     ///< --stream
  bool quiet = false;                      ///< --quiet

  // Telemetry.
  std::optional<std::string> metrics_file;      ///< --metrics-file
  std::chrono::nanoseconds metrics_interval{};  ///< --metrics-interval
  std::optional<int> metrics_port;              ///< --metrics-port (0: any free port)
  std::optional<std::string> audit_dir;         ///< --audit-log
  unsigned audit_retention_days = 30;           ///< --audit-retention-days
  bool audit_include_reply = false;             ///< --audit-include-reply
  /// --otlp-endpoint URL: traces and metrics over OTLP/HTTP to URL/v1/traces and URL/v1/metrics
  /// (also on with OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set).
  std::optional<std::string> otlp_endpoint;

  // The calls: the contract's options (retries, strictness, mode; the run adds prices and
  // observers), the batch's (concurrency, rate limits, budget; the run adds the rest) and the
  // engine's.
  std::optional<std::string> prices_file;  ///< --prices, else COVENANT_PRICES
  contract_options contract;
  covenant::batch_options batch;
  engine_flags engine;
  std::optional<response_cache_flags> cache;  ///< --cache
};

/// Reads and checks the command line after `run`; throws usage_error for a wrong one.
run_config parse_run_config(const std::vector<std::string>& args);

// ---- telemetry (run_telemetry.cpp) -------------------------------------------------------------

class metrics_file_writer;
class metrics_server;
struct pending_record;

/// The run's metrics (--metrics-file, --metrics-port), audit log (--audit-log) and traces
/// (--otlp-endpoint, OTEL_EXPORTER_OTLP_*: a run span, a span per record, the calls' spans under it).
class run_telemetry {
 public:
  /// Adds the metrics and the audit log to the contract's observers, and writes --metrics-file
  /// once, so that a file that cannot be written stops the run before any model call (throws
  /// fatal_error).
  run_telemetry(const run_config& config, contract_options& options);
  run_telemetry(const run_telemetry&) = delete;
  run_telemetry& operator=(const run_telemetry&) = delete;
  ~run_telemetry();

  /// Serves the metrics on --metrics-port (saying where) and starts rewriting --metrics-file.
  void start();
  /// Stops serving and writes --metrics-file a last time, ends the run span and sends the spans
  /// and metrics still queued (within a few seconds); false (after saying why) when the metrics
  /// file could not be written.
  bool finish();

  /// A record's span under the run's span (not recording when the run is not traced); its context
  /// goes to the record's call (call_options::trace).
  [[nodiscard]] otel_span record_span(const pending_record& record);
  /// The record's span after its result: the outcome on it, then ended.
  static void end_record_span(otel_span& span, const outcome<boost::json::value>& o);
  /// The trace context a record's call is given: its span's, else TRACEPARENT's (untraced run).
  [[nodiscard]] trace_context record_parent(const otel_span& span) const;

 private:
  /// The Prometheus page: the metrics, and the tracer's own counters when the run is traced.
  [[nodiscard]] std::string render() const;

  std::shared_ptr<covenant::metrics> metrics_;
  std::shared_ptr<covenant::otel_tracer> tracer_;
  std::unique_ptr<otel_span> run_span_;
  trace_context parent_;  ///< TRACEPARENT of a run that is not traced itself
  std::unique_ptr<metrics_file_writer> writer_;
#ifdef COVENANT_CLI_HTTPLIB
  std::optional<int> port_;
  std::unique_ptr<metrics_server> server_;
#endif
};

// ---- the records and their result lines (run_records.cpp) --------------------------------------

/// A record taken from the input and not finished yet: what its result line says about it.
struct pending_record {
  boost::json::value id;
  std::size_t line = 0;
  std::string query_id;  ///< the record's calls' (the same in every run for the same id)
  std::shared_ptr<otel_span> span{};  ///< traced runs: the record's span, ended with its result
};

/// The input's records, read one line at a time: blank lines are passed over; lines that are not
/// UTF-8, not a JSON object or lack --input-field are reported on standard error and counted;
/// records of other shards and those an earlier run finished (--resume) are left out.
class record_reader {
 public:
  /// Opens the input (throws fatal_error when it cannot be read). Reading stops once `stop` is set.
  record_reader(const run_config& config, std::unordered_set<std::string> done_ids, const std::atomic<bool>& stop);
  record_reader(const record_reader&) = delete;
  record_reader& operator=(const record_reader&) = delete;

  /// The next record's input (the record, or its --input-field), pending under index
  /// last_index(); nullopt at the end of the input.
  std::optional<boost::json::value> next();
  /// The batch index of the record next() returned last.
  [[nodiscard]] std::size_t last_index() const noexcept { return next_index_ - 1; }
  /// The pending record of a batch index, or nullptr.
  [[nodiscard]] const pending_record* pending(std::size_t index) const;
  [[nodiscard]] pending_record* pending(std::size_t index);
  /// The record of `index` is done (or will be done again by a run with --resume).
  void forget(std::size_t index) { in_flight_.erase(index); }

  [[nodiscard]] std::size_t bad_lines() const noexcept { return bad_lines_; }
  [[nodiscard]] std::size_t skipped() const noexcept { return skipped_; }

 private:
  const run_config& config_;
  std::unordered_set<std::string> done_ids_;
  const std::atomic<bool>& stop_;
  std::ifstream file_;
  std::istream* in_;
  std::string shown_name_;  // in messages
  std::size_t line_no_ = 0;
  std::size_t bad_lines_ = 0;
  std::size_t skipped_ = 0;
  std::map<std::size_t, pending_record> in_flight_;  // batch index -> the record
  std::size_t next_index_ = 0;
};

/// The lines of the input file (a last line without a newline counts).
std::size_t count_lines(const std::string& file);

/// The ids an earlier run wrote complete lines for in `file`; an unfinished last line is cut off
/// the file (throws fatal_error when it cannot be).
std::unordered_set<std::string> finished_ids(const std::string& file);

/// Where the result lines go (--output FILE, else standard output): one write() per line, so that
/// a crash loses at most the line being written, and a line is either whole in the file or not
/// there.
class result_writer {
 public:
  /// Opens --output FILE (appended to with --resume, else emptied; throws fatal_error when it
  /// cannot be written). With prices, each line has the record's cost.
  result_writer(const run_config& config, bool priced);
  result_writer(const result_writer&) = delete;
  result_writer& operator=(const result_writer&) = delete;

  /// The record's result line.
  void result(const pending_record& record, const outcome<boost::json::value>& o);
  /// --stream: a changed partial value, as a line of its own.
  void partial(const stream_update<boost::json::value>& u);
  /// Closes --output FILE.
  void close();

  /// Whether a line could not be written.
  [[nodiscard]] bool failed() const noexcept { return failed_; }
  /// The models that answered and have no price.
  [[nodiscard]] const std::set<std::string>& unpriced_models() const noexcept { return unpriced_models_; }

 private:
  void write(std::string line);

  int fd_;
  bool priced_;
  bool failed_ = false;
  std::set<std::string> unpriced_models_;
};

}  // namespace covenant::cli
