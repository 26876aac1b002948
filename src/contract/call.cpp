// The core of a contract call: its messages, its log lines and record, and the remedy phase (the
// model-facing loop); the driver that runs a call is src/contract/call_driver.cpp.
#include "covenant/contract/detail/call.hpp"

#include <algorithm>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "covenant/engine/prices.hpp"
#include "engine/log.hpp"

namespace covenant::detail {

// ---------------------------------------------------------------------------------------------
// Messages, issues, logging

namespace {

void append_issue_lines(std::string& out, const issue_list& issues, std::string_view indent) {
  for (const auto& i : issues) {
    out += indent;
    out += "- ";
    i.append_to(out);
    out.push_back('\n');
  }
}

void log_retry(std::string_view expression, const attempt& a, std::chrono::nanoseconds wait, int next, int most,
               bool injected_sleep) {
  try {
    spdlog::logger& l = log();
    if (!l.should_log(spdlog::level::info)) return;
    std::string first;
    if (!a.issues.empty()) first = a.issues.front().to_string();
    l.info("{}: {} attempt {} rejected ({} issue{}: {}); asking again {} {:.3f} s for attempt {} of at most {}",
           expression, a.kind == attempt_kind::input_repair ? "input repair" : "output", a.number, a.issues.size(),
           a.issues.size() == 1 ? "" : "s", first, injected_sleep ? "after an injected wait of" : "in",
           std::chrono::duration<double>(wait).count(), next, most);
  } catch (...) {  // logging never breaks a call
  }
}

/// A failed call needs attention (warn) when neither the model's replies nor the input decided it:
/// the server failed or refused (after the transport's retries), the prompt could not be built,
/// act() failed, or a hook threw something other than covenant::violation (a bug in the hook).
bool needs_attention(const outcome_base& o) noexcept {
  if (o.failed_stage == stage::engine || o.failed_stage == stage::render || o.failed_stage == stage::act) return true;
  return std::any_of(o.issues.begin(), o.issues.end(), [](const issue& i) {
    return i.code == issue_code::engine_error || i.code == issue_code::hook_exception;
  });
}

/// What the caller of a failed call gets, after the summary.
std::string_view what_follows(const contract_core& core, call_via via, bool forward_threw) noexcept {
  if (forward_threw) return "; forward threw, and the caller gets its exception";
  const bool graceful = core.options.graceful;
  if (core.has_forward) {
    switch (via) {
      case call_via::run: return "; forward ran with the failure and run() returns the failed outcome";
      case call_via::run_async: return "; forward ran with the failure and the future gets the failed outcome";
      case call_via::call_operator:
        return graceful ? "; forward ran with the failure and operator() returns its value (graceful)"
                        : "; forward ran with the failure, then operator() throws covenant::contract_failure";
    }
  }
  switch (via) {
    case call_via::run: return "; run() returns the failed outcome";
    case call_via::run_async: return "; the future gets the failed outcome";
    case call_via::call_operator:
      return graceful ? "; operator() returns null (graceful)" : "; operator() throws covenant::contract_failure";
  }
  return "";
}

}  // namespace

std::string corrective_message(const attempt& rejected, const std::vector<const attempt*>& earlier,
                               std::string_view what) {
  std::string out = "Your previous reply was rejected:\n";
  append_issue_lines(out, rejected.issues, "");
  bool cut = false;
  bool stopped = false;
  for (const note& n : rejected.notes) {
    cut = cut || n.kind == note_kind::truncated;
    stopped = stopped || n.kind == note_kind::stopped_early;
  }
  if (stopped) out += "Your reply was stopped as soon as it broke this rule.\n";
  else if (cut) out += "Your reply was cut off before its end; what was cut mid-way was dropped.\n";
  if (!earlier.empty()) {
    out += "Earlier replies were rejected too:\n";
    for (const attempt* a : earlier) {
      out += "Reply " + std::to_string(a->number) + " (" + elide(a->text) + "):\n";
      append_issue_lines(out, a->issues, "  ");
    }
  }
  out += "Reply again with the complete ";
  out += what;
  out += " only, fixing every problem listed.";
  return out;
}

issue hook_exception_issue(std::string_view hook, std::string_view type, std::string_view what) {
  issue i;
  i.code = issue_code::hook_exception;
  i.message = std::string(hook) + " threw " + std::string(type);
  if (!what.empty()) {
    i.message += ": ";
    i.message += what;
  }
  return i;
}

issue stopped_issue(stage why, std::string_view reason) {
  issue i;
  i.code = why == stage::deadline ? issue_code::deadline : issue_code::cancelled;
  i.message = why == stage::deadline ? "deadline passed" : "cancelled";
  if (!reason.empty()) {
    i.message += ": ";
    i.message += reason;
  }
  return i;
}

void log_call_result(const contract_core& core, const outcome_base& o, call_via via, bool forward_threw) {
  try {
    spdlog::logger& l = log();
    const auto level = o.success || !needs_attention(o) ? spdlog::level::info : spdlog::level::warn;
    if (!l.should_log(level)) return;
    std::string expression = core.name;
    if (!core.schema_version.empty()) expression += " (schema version " + core.schema_version + ")";
    const double ms = std::chrono::duration<double, std::milli>(o.elapsed).count();
    l.log(level, "{}: {} in {:.1f} ms (tokens in {}, out {}){}", expression, o.summary(), ms, o.usage.input_tokens,
          o.usage.output_tokens, o.success ? std::string_view() : what_follows(core, via, forward_threw));
  } catch (...) {
  }
}

void log_prompt(std::string_view expression, std::string_view what, std::string_view text) {
  try {
    spdlog::logger& l = log();
    if (l.should_log(spdlog::level::debug)) l.debug("{}: {}:\n{}", expression, what, text);
  } catch (...) {
  }
}

void throw_moved_from(const char* what) {
  throw std::logic_error(std::string(what) + ": used after being moved from (a moved-from contract may only be "
                         "destroyed or assigned to)");
}

void stream_callback_threw(const char* what) noexcept {
  log_error("contract: the streaming callback (on_update) threw ({}); ignored", what != nullptr ? what : "unknown exception");
}

void stream_check_threw(const char* what) noexcept {
  log_error("contract: a check threw while the reply streamed ({}); the stream is no longer judged, the final "
            "reading runs the check again", what != nullptr ? what : "unknown exception");
}

void notify_failed(const std::exception* e) noexcept {
  try {
    spdlog::logger& l = log();
    l.warn("an observer threw ({}); the event is ignored", e != nullptr ? e->what() : "unknown exception");
  } catch (...) {
  }
}

void call_finished(const contract_core& core, const outcome_base& o, const call_timings& times, call_via via,
                   bool forward_threw) {
  core.stats.record(times);
  log_call_result(core, o, via, forward_threw);
  if (core.options.observers.empty()) return;
  const call_info info{core.name, o.query_id, core.schema_version, o.trace.valid() ? &o.trace : nullptr,
                       core.server ? &*core.server : nullptr};
  notify(core, [&](observer& ob) { ob.on_finished(finished_event{info, o, times}); });
}

// ---------------------------------------------------------------------------------------------
// remedy_phase

remedy_phase::remedy_phase(const contract_core& core, attempt_kind kind, bool remedy, std::vector<message> base,
                           outcome_base& oc, call_timings& times, reply_reader& reader, time_point mark)
    : core_(&core), kind_(kind), remedy_(remedy), oc_(&oc), times_(&times), reader_(&reader), mark_(mark) {
  request_.messages = std::move(base);
  base_size_ = request_.messages.size();
  for (const message& m : request_.messages) media_ = media_ || !m.media.empty();
  first_attempt_ = oc.attempts.size();
  if (kind == attempt_kind::output) {
    request_.response_schema = core.response_schema;
    request_.schema_name = core.schema_name;
    request_.mode = core.options.mode;
    request_.tools = core.tool_specs;
  }
}

const attempt* remedy_phase::rejected() const noexcept {
  if (oc_->attempts.size() <= first_attempt_) return nullptr;
  return &oc_->attempts.back();
}

void remedy_phase::lap(perf_stage s) {
  const time_point t = core_->now();
  times_->add(kind_ == attempt_kind::input_repair ? perf_stage::pre_remedy : s, t - mark_);
  mark_ = t;
}

void remedy_phase::begin_attempt() {
  ++k_;
  sent_ = mark_;
  first_chunk_ = std::chrono::nanoseconds(0);
  // The request's trace context: a span of its own in the call's trace when the call is recorded,
  // else the call's (the application's) as it is.
  if (own_trace_) request_.trace = oc_->trace.with_span(new_span_id());
  else if (oc_->trace.valid()) request_.trace = oc_->trace;
  if (!core_->options.observers.empty()) {
    const call_info info = this->info();
    notify(*core_, [&](observer& o) { o.on_request(request_event{info, kind_, k_ + 1, request_}); });
  }
}

call_info remedy_phase::info() const noexcept {
  return call_info{core_->name, oc_->query_id, core_->schema_version, oc_->trace.valid() ? &oc_->trace : nullptr,
                   core_->server ? &*core_->server : nullptr};
}

void remedy_phase::on_stream_piece(std::string_view delta) {
  if (first_chunk_.count() == 0 && !delta.empty())
    first_chunk_ = std::max(std::chrono::nanoseconds(1), std::chrono::nanoseconds(core_->now() - sent_));
  if (core_->options.observers.empty()) return;
  const call_info info = this->info();
  notify(*core_, [&](observer& o) { o.on_stream(stream_event{info, kind_, k_ + 1, delta}); });
}

void remedy_phase::attempt_judged(verdict v) {
  if (core_->options.observers.empty() || oc_->attempts.empty()) return;
  const call_info info = this->info();
  const attempt& a = oc_->attempts.back();
  // The agent steps that led to this attempt: the last ones of the call, numbered for it.
  std::size_t from = oc_->steps.size();
  if (a.kind == attempt_kind::output)
    while (from > 0 && oc_->steps[from - 1].attempt == a.number) --from;
  const std::span<const agent_step> steps(oc_->steps.data() + from, oc_->steps.size() - from);
  notify(*core_, [&](observer& o) { o.on_attempt(attempt_event{info, a, v, a.number - 1, steps}); });
}

void remedy_phase::actions_taken(const attempt& a, fail_action decided) {
  if (core_->options.observers.empty()) return;
  const call_info info = this->info();
  for (const note& n : a.notes) {
    fail_action act = fail_action::reask;
    if (n.kind == note_kind::fixed) act = fail_action::fix;
    else if (n.kind == note_kind::filtered) act = fail_action::filter;
    else if (n.kind == note_kind::check_failed) act = fail_action::noop;
    else continue;
    notify(*core_, [&](observer& o) { o.on_action(action_event{info, a.number, act, &n, nullptr}); });
  }
  if (decided != fail_action::refrain && decided != fail_action::exception) return;
  for (const issue& i : a.issues) {
    if (i.action != decided) continue;
    notify(*core_, [&](observer& o) { o.on_action(action_event{info, a.number, decided, nullptr, &i}); });
    break;
  }
}

attempt remedy_phase::new_attempt() {
  attempt a;
  a.kind = kind_;
  a.number = k_ + 1;
  a.waited = waited_;
  a.queued = turn_;
  a.first_chunk = first_chunk_;
  turn_ = std::chrono::nanoseconds(0);
  if (core_->options.prices) a.cost_usd = 0.0;  // no reply: nothing reported to price
  if (media_)
    for (const message& m : request_.messages) a.media.insert(a.media.end(), m.media.begin(), m.media.end());
  return a;
}

bool remedy_phase::within_budget(const attempt& a, std::string_view correction) const {
  const budget_options& cap = core_->options.budget;
  if (cap.max_tokens == 0 && cap.max_cost_usd == 0) return true;
  auto stop = [&](auto&& say) {  // says why at info level (a logger that throws is ignored)
    try {
      say(log());
    } catch (...) {
    }
    return false;
  };
  // The next attempt: this phase's first request, the reply and the correction it adds, and the
  // largest output so far (`a` is not in the outcome yet).
  // An attempt stopped early reports no usage: then the request's size stands for its input.
  const attempt& first = oc_->attempts.size() > first_attempt_ ? oc_->attempts[first_attempt_] : a;
  std::uint64_t request_bytes = 0;
  for (std::size_t i = 0; i < base_size_ && i < request_.messages.size(); ++i)
    request_bytes += request_.messages[i].content.size();
  std::uint64_t out = a.usage.output_tokens;
  std::string_view model = a.model;
  for (std::size_t i = first_attempt_; i < oc_->attempts.size(); ++i)
    out = std::max(out, oc_->attempts[i].usage.output_tokens);
  for (auto it = oc_->attempts.rbegin(); it != oc_->attempts.rend() && model.empty(); ++it) model = it->model;
  const usage next{std::max<std::uint64_t>(first.usage.input_tokens, (request_bytes + 3) / 4) +
                       (a.text.size() + correction.size() + 3) / 4,
                   out};
  if (cap.max_tokens != 0 && oc_->usage.total() + next.total() > cap.max_tokens) {
    return stop([&](spdlog::logger& l) {
      l.info("{}: not asking again: {} tokens spent and about {} more would pass the budget of {}", core_->name,
             oc_->usage.total(), next.total(), cap.max_tokens);
    });
  }
  if (cap.max_cost_usd == 0) return true;
  const std::optional<double> more = core_->options.prices->cost(model, next);
  if (!oc_->cost_usd || !a.cost_usd || !more) {
    return stop([&](spdlog::logger& l) {
      l.info("{}: not asking again: the cost so far is unknown (no price for '{}'), so the budget of ${} cannot be kept",
             core_->name, model, cap.max_cost_usd);
    });
  }
  const double spent = *oc_->cost_usd + *a.cost_usd;
  if (spent + *more > cap.max_cost_usd) {
    return stop([&](spdlog::logger& l) {
      l.info("{}: not asking again: ${} spent and about ${} more would pass the budget of ${}", core_->name, spent, *more,
             cap.max_cost_usd);
    });
  }
  return true;
}

void remedy_phase::keep(attempt&& a) {
  // The call's cost is known while every attempt's is (begin_outcome set it to 0 with prices).
  if (!a.cost_usd) oc_->cost_usd.reset();
  else if (oc_->cost_usd) *oc_->cost_usd += *a.cost_usd;
  oc_->attempts.push_back(std::move(a));
}

void remedy_phase::timed(attempt& a, time_point t) {
  const std::chrono::nanoseconds engine_time = t - sent_;
  // The engine's waits are timed on the steady clock, the contract's on its own (options.clock).
  a.latency = std::max(std::chrono::nanoseconds(0), engine_time - a.queued);
  if (kind_ == attempt_kind::input_repair) times_->add(perf_stage::pre_remedy, engine_time);
  else times_->add_attempt(perf_stage::engine, engine_time);
  mark_ = t;
}

void remedy_phase::fail(attempt&& a, stage at) {
  oc_->issues = a.issues;
  keep(std::move(a));
  oc_->failed_stage = at;
  attempt_judged(verdict::failed);
}

remedy_phase::next remedy_phase::on_reply(chat_response&& reply) {
  // Agents: a reply that calls tools is a step of the loop, not an answer.
  if (kind_ == attempt_kind::output && !reply.tool_calls.empty() && !core_->tools.empty())
    return begin_step(std::move(reply));
  attempt a = new_attempt();
  a.text = std::move(reply.text);
  a.usage = reply.usage;
  a.model = std::move(reply.model);
  a.from_cache = reply.from_cache;
  if (core_->options.prices) a.cost_usd = a.from_cache ? 0.0 : core_->options.prices->cost(a.model, a.usage);
  a.finish_reason = std::move(reply.finish_reason);
  a.reasoning = std::move(reply.reasoning);
  a.queued += reply.queued;
  a.response_id = std::move(reply.id);
  a.transport_retries = std::move(reply.retries);
  timed(a, core_->now());
  oc_->usage += a.usage;
  stage failed_at = reader_->read(a, *times_, mark_);
  if (a.finish_reason == "length" && !a.reasoning.empty() &&
      a.text.find_first_not_of(" \t\r\n") == std::string::npos) {
    // The token limit came while the model was still reasoning: say that, not "no JSON found".
    issue i;
    i.code = issue_code::parse_error;
    i.message = "the reply was cut off by the token limit while the model was still reasoning: no answer was written "
                "(raise max_tokens, or lower the reasoning effort or the thinking budget)";
    a.issues = {std::move(i)};
    note n;
    n.kind = note_kind::truncated;
    n.detail = "cut off by the token limit while reasoning (" + std::to_string(a.reasoning.size()) + " bytes of reasoning)";
    a.notes.push_back(std::move(n));
    failed_at = stage::parse;
  }
  if (reply.cut_off) {
    note n;
    n.kind = note_kind::truncated;
    n.detail = "the reply ended before the model finished it (the stream broke or ended without a finish reason)";
    a.notes.push_back(std::move(n));
  }
  return judge(a, failed_at);
}

namespace {

// Applies what the contract does with the actions of an attempt's issues; returns exception or
// refrain when one of those decides the call, else reask.
fail_action settle_actions(attempt& a) {
  bool any = false;
  for (const issue& i : a.issues) any = any || i.action != fail_action::reask;
  if (!any) return fail_action::reask;
  fail_action decided = fail_action::reask;
  issue_list kept;
  kept.reserve(a.issues.size());
  for (issue& i : a.issues) {
    switch (i.action) {
      case fail_action::noop: {
        note n;
        n.kind = note_kind::check_failed;
        n.path = i.path;
        n.detail = check_failed_detail(i.message, i.actual);
        a.notes.push_back(std::move(n));
        continue;
      }
      case fail_action::fix:
      case fail_action::filter:
        i.action = fail_action::reask;
        break;
      case fail_action::exception:
        decided = fail_action::exception;
        break;
      case fail_action::refrain:
        if (decided != fail_action::exception) decided = fail_action::refrain;
        break;
      case fail_action::reask:
        break;
    }
    kept.push_back(std::move(i));
  }
  a.issues = std::move(kept);
  return decided;
}

}  // namespace

remedy_phase::next remedy_phase::judge(attempt& a, stage failed_at) {
  const bool repairing = kind_ == attempt_kind::input_repair;
  if (a.finish_reason == "length") {
    note n;
    n.kind = note_kind::truncated;
    n.detail = "the reply was cut off by the engine's token limit";
    a.notes.push_back(std::move(n));
  }
  // On-fail actions left to the contract (fix, filter and noop of schema checks were applied
  // while reading): noop issues become notes; a fix or filter with nothing to apply it to is a
  // reask; refrain and exception end the call now.
  const fail_action decided = settle_actions(a);
  actions_taken(a, decided);
  if (decided == fail_action::refrain || decided == fail_action::exception) {
    for (const issue& i : a.issues) {
      if (i.action != decided) continue;
      oc_->reason = !i.reason.empty() ? i.reason : decided == fail_action::refrain ? "refrained" : "exception";
      break;
    }
    fail(std::move(a), repairing ? stage::pre_remedy : failed_at);
    return next::failed;
  }
  const bool cut =
      std::any_of(a.notes.begin(), a.notes.end(), [](const note& n) { return n.kind == note_kind::truncated; });
  if (cut && a.issues.empty() && !core_->options.accept_truncated) {
    issue i;
    i.code = issue_code::parse_error;
    i.message = "the reply was cut off before its end";
    a.issues.push_back(std::move(i));
    failed_at = stage::parse;
  }
  if (a.issues.empty()) {
    oc_->notes = a.notes;
    if (!repairing) oc_->truncated = cut;
    keep(std::move(a));
    reader_->accept();
    attempt_judged(verdict::accepted);
    return next::accepted;
  }
  const contract_options& options = core_->options;
  const int tries = options.retry.tries;
  if (!remedy_ || k_ >= tries) {
    fail(std::move(a), repairing ? stage::pre_remedy : failed_at);
    return next::failed;
  }
  // Remedy: corrective message, then wait.
  std::vector<const attempt*> earlier;
  if (options.accumulate_errors)
    for (std::size_t i = first_attempt_; i < oc_->attempts.size(); ++i) earlier.push_back(&oc_->attempts[i]);
  std::string correction = corrective_message(a, earlier, repairing ? "corrected input" : "corrected JSON object");
  if (!within_budget(a, correction)) {
    oc_->reason = "budget";
    fail(std::move(a), repairing ? stage::pre_remedy : failed_at);
    return next::failed;
  }
  if (options.verbose) log_prompt(core_->name, "corrective message", correction);
  request_.messages.resize(base_size_);
  request_.messages.push_back({role::assistant, a.text});
  request_.messages.push_back({role::user, std::move(correction)});
  wait_ = options.retry.delay_before(k_ + 1, options.random ? options.random() : default_random());
  log_retry(core_->name, a, wait_, k_ + 2, tries + 1, static_cast<bool>(options.sleep));
  keep(std::move(a));
  attempt_judged(verdict::rejected);
  if (!core_->options.observers.empty()) {
    const call_info info = this->info();
    const attempt& last = oc_->attempts.back();
    notify(*core_, [&](observer& o) { o.on_retry(retry_event{info, kind_, k_ + 2, wait_, last.issues}); });
  }
  lap(perf_stage::post_remedy);
  waited_ = wait_;
  return next::wait;
}

void remedy_phase::after_wait() { lap(perf_stage::post_remedy); }

remedy_phase::next remedy_phase::on_engine_error(const std::string& what, int status,
                                                  std::chrono::nanoseconds queued,
                                                  std::vector<transport_retry> retries) {
  const bool repairing = kind_ == attempt_kind::input_repair;
  attempt a = new_attempt();
  a.transport_retries = std::move(retries);
  a.engine_failed = true;
  issue i;
  i.code = issue_code::engine_error;
  i.message = status > 0 ? "engine failed (HTTP " + std::to_string(status) + "): " + what : "engine failed: " + what;
  a.issues.push_back(std::move(i));
  a.queued += queued;
  timed(a, core_->now());
  fail(std::move(a), repairing ? stage::pre_remedy : stage::engine);
  return next::failed;
}

remedy_phase::next remedy_phase::on_early_stop(std::string text, issue_list violations) {
  attempt a = new_attempt();
  a.text = std::move(text);
  timed(a, core_->now());
  a.issues = std::move(violations);
  note n;
  n.kind = note_kind::stopped_early;
  n.detail = "the transfer was stopped after " + std::to_string(a.text.size()) +
             " bytes: a finished value already broke a rule no later text could fix";
  if (!a.issues.empty()) n.path = a.issues.front().path;
  a.notes.push_back(std::move(n));
  core_->stats.count_early_stop();
  return judge(a, stage::validate);
}

void remedy_phase::on_stopped(stage why, std::string_view reason, std::string text, bool in_attempt) {
  if (!in_attempt) {
    lap(perf_stage::post_remedy);
    oc_->issues = {stopped_issue(why, reason)};
    oc_->failed_stage = why;
    return;
  }
  attempt a = new_attempt();
  a.text = std::move(text);
  a.engine_failed = true;
  a.issues.push_back(stopped_issue(why, reason));
  timed(a, core_->now());
  fail(std::move(a), why);
}

}  // namespace covenant::detail
