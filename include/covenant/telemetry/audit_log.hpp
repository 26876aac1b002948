// covenant/telemetry/audit_log.hpp - one JSON line per validation attempt, in daily files with retention,
// built on the observer interface.
//
//     auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = "/var/log/app"});
//     covenant::contract_options o;
//     o.observers.push_back(audit);
//
// Files are `<directory>/audit_YYYY-MM-DD.jsonl` (local date), written through an spdlog daily
// file sink. Each line is copied, as soon as the attempt is judged, into a memory-mapped journal
// in the directory (`.audit-<pid>-<n>.journal`): from then on it is in the kernel's page cache and
// survives the process being killed, without a system call on the caller's thread. The log's own
// thread writes a journal to the day's file in one write when it is full (256 KiB) and every
// `flush_interval`, while callers fill a second one; flush() and the destructor write what is
// left. A journal left by a process that died is written to the day's file by the next audit_log
// opened on the directory. So a crash loses at most the line being written. Files older than
// `retention_days` are deleted when the log opens and at each daily rotation. The
// line format is in docs/telemetry.md: timestamp (ISO 8601, UTC), query id, contract, attempt,
// result, retry count, schema version, issues, token usage, latency and queue time; the raw reply
// only with `include_reply`. An agent's attempt line also carries the steps that led to it
// ("steps": each step's usage and its tool calls, with their arguments, status, time and issues);
// such a line is written when the call ends, with the steps' usage, and a call that its tool loop
// ended has one more line for its last steps. Request headers and API keys are never written, and
// every configured redaction (and the value of each API key variable in the environment) is
// replaced by "[redacted]" wherever it appears in what is written.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "covenant/contract/observer.hpp"
#include "covenant/types/config.hpp"

namespace covenant {

struct audit_log_options {
  /// Where the daily files go (created when missing).
  std::filesystem::path directory;
  /// Days a file is kept (counted by the date in its name); 0 keeps them all.
  unsigned retention_days = 30;
  /// Write the model's raw reply in each line ("reply"), after redaction.
  bool include_reply = false;
  /// Texts never written (secrets, personal data): replaced by "[redacted]".
  std::vector<std::string> redact{};
  /// Also redact the values of COVENANT_API_KEY, OPENAI_API_KEY and ANTHROPIC_API_KEY.
  bool redact_env_keys = true;
  /// The longest a line waits in the journal before it is in the day's file (for readers that
  /// follow the file). 0: no journal, each line is one write to the file as it comes.
  std::chrono::milliseconds flush_interval{1000};
};

/// Writes the audit lines. Thread-safe: one instance may observe many contracts.
class COVENANT_API audit_log final : public observer {
 public:
  /// Opens today's file (std::runtime_error when the directory cannot be created or the file
  /// cannot be opened), applies the retention and writes the lines of journals left by processes
  /// that ended.
  explicit audit_log(audit_log_options options);
  /// Writes the lines still in the journal.
  ~audit_log() override;
  audit_log(const audit_log&) = delete;
  audit_log& operator=(const audit_log&) = delete;

  /// The file being written.
  [[nodiscard]] std::filesystem::path current_file() const;
  /// Deletes the files older than the retention now (also done at start and each rotation);
  /// returns how many were deleted.
  std::size_t apply_retention() const;

  /// Writes the attempt's line, with the agent steps that led to it (attempt_event::steps).
  void on_attempt(const attempt_event& e) override;
  /// Agents: writes a line for the steps no attempt followed (a call the loop ended).
  void on_finished(const finished_event& e) override;

  /// Writes the lines waiting in the journal to the file now.
  void flush();

  /// The JSON line written for `e` (without the newline), as on_attempt writes it.
  [[nodiscard]] std::string line(const attempt_event& e) const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace covenant
