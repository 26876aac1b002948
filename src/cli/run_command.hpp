// covenant run: what its source files share (run_config.cpp reads the command line,
// run_telemetry.cpp attaches the metrics and the audit log, run_command.cpp runs the steps).
#pragma once

#include <covenant/contract/batch.hpp>
#include <covenant/contract/contract_options.hpp>
#include <covenant/engine/http_engine.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"

namespace covenant {
class metrics;
}

namespace covenant::cli {

// ---- the command line (run_config.cpp) ---------------------------------------------------------

/// The engine's flags: each one given replaces the environment's setting
/// (http_engine::options_from_env).
struct engine_flags {
  std::optional<covenant::provider> provider;                  ///< --provider
  std::optional<std::string> base_url;                         ///< --base-url
  std::optional<std::string> model;                            ///< --model
  std::optional<std::chrono::milliseconds> request_timeout;    ///< --timeout
  std::optional<int> max_retries;                              ///< --retries
  std::optional<std::chrono::milliseconds> initial_backoff;    ///< --retry-delay
  std::optional<std::chrono::milliseconds> max_backoff;        ///< --retry-max-delay
  bool cache_system_prompt = true;                             ///< not --no-prompt-cache
  std::optional<std::string> reasoning_effort;                 ///< --reasoning-effort
  std::uint32_t thinking_budget = 0;                           ///< --thinking-budget (0: none)
};

/// --cache DIR: the response cache.
struct response_cache_flags {
  std::string dir;
  std::chrono::seconds max_age{0};  ///< --cache-max-age (0: no limit)
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
  std::optional<std::string> metrics_file;                   ///< --metrics-file
  std::chrono::nanoseconds metrics_interval{};               ///< --metrics-interval
  std::optional<int> metrics_port;                           ///< --metrics-port (0: any free port)
  std::optional<std::string> audit_dir;                      ///< --audit-log
  unsigned audit_retention_days = 30;                        ///< --audit-retention-days
  bool audit_include_reply = false;                          ///< --audit-include-reply

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

/// The run's metrics (--metrics-file, --metrics-port) and audit log (--audit-log).
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
  /// Stops serving and writes --metrics-file a last time; false (after saying why) when that
  /// write failed.
  bool finish();

 private:
  std::optional<int> port_;
  std::shared_ptr<covenant::metrics> metrics_;
  std::unique_ptr<metrics_file_writer> writer_;
#ifdef COVENANT_CLI_HTTPLIB
  std::unique_ptr<metrics_server> server_;
#endif
};

}  // namespace covenant::cli
