// covenant/telemetry/metrics.hpp - Prometheus metrics of contract calls, built on the observer interface.
//
//     auto m = covenant::metrics::process();             // one set for the whole process
//     covenant::contract_options o;
//     o.observers.push_back(m);                          // ... on every contract to be counted
//     ...
//     std::string text = m->render();                    // text exposition format 0.0.4, to serve at /metrics
//
// Every metric has the label `contract` (the contract's name); a process-wide figure is the sum
// over it (`sum without (contract) (...)`). The metrics and their labels are listed in
// docs/telemetry.md. Field paths in labels are normalised (`sources[]`, not `sources[17]`) and
// each label has at most `max_label_values` distinct values (later ones are counted as "other"),
// so a model's odd keys cannot grow the series without bound.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "covenant/contract/observer.hpp"
#include "covenant/types/config.hpp"

namespace covenant {

struct metrics_options {
  /// Distinct values per label of one metric (field paths, codes...) before "other".
  std::size_t max_label_values = 200;
};

class COVENANT_API metrics final : public observer {
 public:
  explicit metrics(metrics_options options = {});
  ~metrics() override;
  metrics(const metrics&) = delete;
  metrics& operator=(const metrics&) = delete;

  /// The process-wide instance (created on first use, never destroyed).
  static std::shared_ptr<metrics> process();

  /// Every metric in the Prometheus text exposition format (version 0.0.4).
  [[nodiscard]] std::string render() const;
  /// The Content-Type to serve render() with.
  static constexpr const char* content_type = "text/plain; version=0.0.4; charset=utf-8";

  void on_attempt(const attempt_event& e) override;
  void on_action(const action_event& e) override;
  void on_retry(const retry_event& e) override;
  void on_tool_end(const tool_end_event& e) override;
  void on_finished(const finished_event& e) override;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A field path as a label value: list indices dropped (`sources[1].url` -> `sources[].url`).
COVENANT_API std::string metric_path(const path& p);

}  // namespace covenant
