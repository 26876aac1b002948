// Prometheus metrics of contract calls: an observer feeding covenant/telemetry/metrics_text.hpp families.
#include "covenant/telemetry/metrics.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "covenant/telemetry/metrics_text.hpp"

namespace covenant {

std::string metric_path(const path& p) {
  std::string out;
  for (const auto& s : p.segments()) {
    if (s.is_index) {
      out += "[]";
    } else {
      if (!out.empty()) out += '.';
      out += s.key;
    }
  }
  return out.empty() ? std::string("(root)") : out;
}

namespace {

namespace prom = covenant::prometheus;

struct text_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

// Distinct values of one label, at most `limit`; later ones read "other".
class bounded_values {
 public:
  explicit bounded_values(std::size_t limit) : limit_(limit) {}
  std::string_view admit(std::string_view v) {
    if (!prom::is_valid_utf8(v)) return "invalid";
    {
      std::shared_lock lock(mutex_);
      if (auto it = seen_.find(v); it != seen_.end()) return *it;
      if (seen_.size() >= limit_) return "other";
    }
    std::unique_lock lock(mutex_);
    if (seen_.size() >= limit_ && seen_.find(v) == seen_.end()) return "other";
    return *seen_.emplace(v).first;
  }

 private:
  std::size_t limit_;
  std::shared_mutex mutex_;
  std::unordered_set<std::string, text_hash, std::equal_to<>> seen_;  // node-based: references stay valid
};

std::vector<double> attempt_buckets() { return {1, 2, 3, 4, 5, 6, 8, 10, 15, 20}; }

// Tool calls run from a millisecond (a lookup) to agent_options::tool_timeout (60 s by default).
std::vector<double> tool_seconds_buckets() { return {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}; }

// Whether a tool call was run (or was to be): not an unknown tool, not refused by a limit.
bool ran(tool_status s) noexcept { return s != tool_status::unknown_tool && s != tool_status::refused; }

}  // namespace

struct metrics::impl {
  explicit impl(const metrics_options& o)
      : contracts(o.max_label_values), fields(o.max_label_values), versions(o.max_label_values),
        models(o.max_label_values), tools(o.max_label_values),
        calls(reg.add_counter("covenant_calls_total", "Contract calls ended (forward ran).", {"contract"})),
        successes(reg.add_counter("covenant_call_successes_total", "Contract calls that produced a validated output.",
                                  {"contract"})),
        failures(reg.add_counter("covenant_call_failures_total", "Contract calls that failed, by the stage that failed.",
                                 {"contract", "stage"})),
        failure_codes(reg.add_counter("covenant_call_failure_issues_total",
                                      "Issues that decided failed calls, by issue code.", {"contract", "code"})),
        failure_fields(reg.add_counter("covenant_call_failure_fields_total",
                                       "Issues that decided failed calls, by field path (list indices dropped).",
                                       {"contract", "field"})),
        attempts(reg.add_histogram("covenant_call_attempts", "Model calls per contract call.", {"contract"},
                                   attempt_buckets())),
        call_seconds(reg.add_histogram("covenant_call_duration_seconds",
                                       "Whole contract calls, from the call to forward, in seconds.", {"contract"})),
        model_seconds(reg.add_histogram(
            "covenant_model_call_duration_seconds",
            "One model call (one attempt: request to reply, less its queue time), in seconds.", {"contract"})),
        queue_seconds(reg.add_histogram("covenant_queue_seconds",
                                        "Time one model call (one attempt) waited to be served: its turn under the rate "
                                        "limiter, transport-retry backoff and Retry-After, in seconds.",
                                        {"contract"})),
        model_calls(reg.add_counter("covenant_model_calls_total", "Model calls (attempts) made.", {"contract"})),
        issue_codes(reg.add_counter("covenant_attempt_issues_total",
                                    "Issues of rejected attempts (fed back or ending the call), by issue code.",
                                    {"contract", "code"})),
        issue_fields(reg.add_counter("covenant_attempt_issue_fields_total",
                                     "Issues of rejected attempts, by field path (list indices dropped).",
                                     {"contract", "field"})),
        retries(reg.add_counter("covenant_retries_total", "Times the model was asked again.", {"contract"})),
        tokens_in(reg.add_counter("covenant_input_tokens_total", "Prompt tokens reported by the engine.", {"contract"})),
        tokens_out(reg.add_counter("covenant_output_tokens_total", "Completion tokens reported by the engine.",
                                   {"contract"})),
        cached_in(reg.add_counter("covenant_cached_input_tokens_total",
                                  "Prompt tokens served from the provider's prompt cache (part of the input tokens).",
                                  {"contract"})),
        reasoning(reg.add_counter("covenant_reasoning_tokens_total",
                                  "Completion tokens spent reasoning (part of the output tokens).", {"contract"})),
        cache_hits(reg.add_counter("covenant_response_cache_hits_total",
                                   "Model calls answered by a response cache instead of the server.", {"contract"})),
        cost(reg.add_counter("covenant_cost_usd_total",
                             "What model calls cost in US dollars, by the model that answered (calls with prices; a "
                             "model without a price is not counted).",
                             {"contract", "model"})),
        notes(reg.add_counter("covenant_notes_total",
                              "Notes on attempts: extractions, repairs, coercions, truncations, fixes, filters, failed "
                              "noop checks.",
                              {"contract", "kind"})),
        actions(reg.add_counter("covenant_actions_total",
                                "On-fail actions taken other than reask (fix, filter, noop, refrain, exception).",
                                {"contract", "action"})),
        schema_versions(reg.add_counter("covenant_schema_version_calls_total",
                                        "Calls of registry-backed contracts, by schema version.",
                                        {"contract", "schema_version"})),
        tool_calls(reg.add_counter("covenant_tool_calls_total",
                                   "Tool calls the model made (agents), by tool and by how they ended.",
                                   {"contract", "tool", "result"})),
        tool_seconds(reg.add_histogram("covenant_tool_duration_seconds",
                                       "One tool call that was run (agents): from its start to its end or its "
                                       "timeout, in seconds.",
                                       {"contract", "tool"}, tool_seconds_buckets())),
        call_retries(reg.add_histogram("covenant_call_retries", "Times the model was asked again, per contract call.",
                                       {"contract"}, {0, 1, 2, 3, 4, 5, 10})),
        success_ratio(reg.add_gauge("covenant_call_success_ratio",
                                    "Share of contract calls that succeeded so far (0 to 1).", {"contract"})),
        retries_average(reg.add_gauge("covenant_call_retries_average",
                                      "Times the model was asked again per contract call, on average so far.",
                                      {"contract"})) {}

  // The series of one contract that have no other label, looked up once per event.
  struct series {
    prom::counter* calls;
    prom::counter* successes;
    prom::histogram* attempts;
    prom::histogram* call_seconds;
    prom::histogram* model_seconds;
    prom::histogram* queue_seconds;
    prom::counter* model_calls;
    prom::counter* retries;
    prom::counter* tokens_in;
    prom::counter* tokens_out;
    prom::histogram* call_retries;
    prom::gauge* success_ratio;
    prom::gauge* retries_average;
  };

  series& of(std::string_view contract) {
    // The last contract this thread reported for, to this instance: no lock, no hash.
    struct last_used {
      std::uint64_t instance = 0;
      std::string name;
      series* s = nullptr;
    };
    thread_local last_used last;
    if (last.instance == id && last.s != nullptr && last.name == contract) return *last.s;
    series& s = lookup(contract);
    last.instance = id;
    last.name.assign(contract.data(), contract.size());
    last.s = &s;
    return s;
  }

  series& lookup(std::string_view contract) {
    {
      std::shared_lock lock(by_contract_mutex);
      if (auto it = by_contract.find(contract); it != by_contract.end()) return it->second;
    }
    const std::string_view c = contracts.admit(contract);
    std::unique_lock lock(by_contract_mutex);
    if (auto it = by_contract.find(contract); it != by_contract.end()) return it->second;
    series s{&calls.with({c}),         &successes.with({c}),     &attempts.with({c}),
             &call_seconds.with({c}),  &model_seconds.with({c}), &queue_seconds.with({c}),
             &model_calls.with({c}),   &retries.with({c}),       &tokens_in.with({c}),
             &tokens_out.with({c}),    &call_retries.with({c}),  &success_ratio.with({c}),
             &retries_average.with({c})};
    return by_contract.emplace(std::string(contract), s).first->second;
  }

  std::string_view contract_label(std::string_view contract) { return contracts.admit(contract); }

  static std::uint64_t next_id() {
    static std::atomic<std::uint64_t> n{0};
    return ++n;
  }

  const std::uint64_t id = next_id();  // told apart from a later instance at the same address
  prom::registry reg;
  bounded_values contracts;
  bounded_values fields;
  bounded_values versions;
  bounded_values models;
  bounded_values tools;
  prom::counter_family& calls;
  prom::counter_family& successes;
  prom::counter_family& failures;
  prom::counter_family& failure_codes;
  prom::counter_family& failure_fields;
  prom::histogram_family& attempts;
  prom::histogram_family& call_seconds;
  prom::histogram_family& model_seconds;
  prom::histogram_family& queue_seconds;
  prom::counter_family& model_calls;
  prom::counter_family& issue_codes;
  prom::counter_family& issue_fields;
  prom::counter_family& retries;
  prom::counter_family& tokens_in;
  prom::counter_family& tokens_out;
  prom::counter_family& cached_in;
  prom::counter_family& reasoning;
  prom::counter_family& cache_hits;
  prom::counter_family& cost;
  prom::counter_family& notes;
  prom::counter_family& actions;
  prom::counter_family& schema_versions;
  prom::counter_family& tool_calls;
  prom::histogram_family& tool_seconds;
  prom::histogram_family& call_retries;
  prom::gauge_family& success_ratio;
  prom::gauge_family& retries_average;
  std::shared_mutex by_contract_mutex;
  std::unordered_map<std::string, series, text_hash, std::equal_to<>> by_contract;
};

metrics::metrics(metrics_options options) : impl_(std::make_unique<impl>(options)) {}
metrics::~metrics() = default;

std::shared_ptr<metrics> metrics::process() {
  static const std::shared_ptr<metrics> instance = std::make_shared<metrics>();
  return instance;
}

std::string metrics::render() const { return impl_->reg.render(); }

void metrics::on_attempt(const attempt_event& e) {
  impl::series& s = impl_->of(e.call.contract);
  s.model_calls->inc();
  s.model_seconds->observe(std::chrono::duration<double>(e.a.latency).count());
  s.queue_seconds->observe(std::chrono::duration<double>(e.a.queued).count());
  if (e.a.usage.input_tokens > 0) s.tokens_in->inc(static_cast<double>(e.a.usage.input_tokens));
  if (e.a.usage.output_tokens > 0) s.tokens_out->inc(static_cast<double>(e.a.usage.output_tokens));
  const bool parts = e.a.usage.cached_input_tokens > 0 || e.a.usage.reasoning_tokens > 0 || e.a.from_cache ||
                     (e.a.cost_usd && *e.a.cost_usd > 0);
  if (e.a.notes.empty() && e.a.issues.empty() && !parts) return;
  const std::string_view c = impl_->contract_label(e.call.contract);
  if (parts) {  // (rarer series: looked up by label, not kept in `series`)
    if (e.a.usage.cached_input_tokens > 0)
      impl_->cached_in.with({c}).inc(static_cast<double>(e.a.usage.cached_input_tokens));
    if (e.a.usage.reasoning_tokens > 0) impl_->reasoning.with({c}).inc(static_cast<double>(e.a.usage.reasoning_tokens));
    if (e.a.from_cache) impl_->cache_hits.with({c}).inc();
    if (e.a.cost_usd && *e.a.cost_usd > 0) impl_->cost.with({c, impl_->models.admit(e.a.model)}).inc(*e.a.cost_usd);
  }
  for (const note& n : e.a.notes) impl_->notes.with({c, to_string(n.kind)}).inc();
  for (const issue& i : e.a.issues) {
    impl_->issue_codes.with({c, to_string(i.code)}).inc();
    if (!i.path.empty()) impl_->issue_fields.with({c, impl_->fields.admit(metric_path(i.path))}).inc();
  }
}

void metrics::on_action(const action_event& e) {
  impl_->actions.with({impl_->contract_label(e.call.contract), to_string(e.action)}).inc();
}

void metrics::on_retry(const retry_event& e) { impl_->of(e.call.contract).retries->inc(); }

void metrics::on_tool_end(const tool_end_event& e) {
  const std::string_view c = impl_->contract_label(e.call.contract);
  const std::string_view tool = impl_->tools.admit(e.run.call.name);
  impl_->tool_calls.with({c, tool, to_string(e.run.status)}).inc();
  if (ran(e.run.status))
    impl_->tool_seconds.with({c, tool}).observe(std::chrono::duration<double>(e.run.elapsed).count());
}

void metrics::on_finished(const finished_event& e) {
  impl::series& s = impl_->of(e.call.contract);
  const outcome_base& o = e.outcome;
  s.calls->inc();
  s.attempts->observe(static_cast<double>(o.attempts.size()));
  std::size_t asked_again = 0;
  for (const attempt& a : o.attempts) asked_again += a.number > 1 ? 1 : 0;
  s.call_retries->observe(static_cast<double>(asked_again));
  if (o.success) s.successes->inc();
  const double calls = s.calls->value();
  if (calls > 0) {
    s.success_ratio->set(s.successes->value() / calls);
    s.retries_average->set(s.retries->value() / calls);
  }
  s.call_seconds->observe(std::chrono::duration<double>(o.elapsed).count());
  // Agent steps are model calls apart from the attempts: their tokens and cost count here.
  const std::string_view steps_contract = o.steps.empty() ? std::string_view() : impl_->contract_label(e.call.contract);
  for (const agent_step& step : o.steps) {
    if (step.usage.input_tokens > 0) s.tokens_in->inc(static_cast<double>(step.usage.input_tokens));
    if (step.usage.output_tokens > 0) s.tokens_out->inc(static_cast<double>(step.usage.output_tokens));
    const std::string_view c = steps_contract;
    if (step.usage.cached_input_tokens > 0)
      impl_->cached_in.with({c}).inc(static_cast<double>(step.usage.cached_input_tokens));
    if (step.usage.reasoning_tokens > 0)
      impl_->reasoning.with({c}).inc(static_cast<double>(step.usage.reasoning_tokens));
    if (step.cost_usd && *step.cost_usd > 0) impl_->cost.with({c, impl_->models.admit(step.model)}).inc(*step.cost_usd);
  }
  if (o.success && e.call.schema_version.empty()) return;
  const std::string_view c = impl_->contract_label(e.call.contract);
  if (!e.call.schema_version.empty())
    impl_->schema_versions.with({c, impl_->versions.admit(e.call.schema_version)}).inc();
  if (o.success) return;
  impl_->failures.with({c, to_string(o.failed_stage)}).inc();
  for (const issue& i : o.issues) {
    impl_->failure_codes.with({c, to_string(i.code)}).inc();
    if (!i.path.empty()) impl_->failure_fields.with({c, impl_->fields.admit(metric_path(i.path))}).inc();
  }
}

}  // namespace covenant
