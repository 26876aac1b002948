// The core of a contract call: the remedy phase and the two drivers (blocking, asynchronous).
#include "covenant/contract/detail/call.hpp"

#include <boost/core/demangle.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "covenant/engine/prices.hpp"
#include "covenant/engine/rate_limiter.hpp"
#include "engine/asio_runtime.hpp"
#include "covenant/engine/runtime.hpp"
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
  const bool graceful = core.options.retry.graceful;
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

void default_sleep(std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); }

namespace {

// What a call's outcome holds before its first step: its id, and with prices a cost of 0.
void begin_outcome(outcome_base& oc, const contract_core& core, const call_options* options) {
  if (options != nullptr && !options->query_id.empty()) oc.query_id = options->query_id.view();
  else if (oc.query_id.empty()) oc.query_id = make_query_id();
  if (core.options.prices) oc.cost_usd = 0.0;
}

}  // namespace

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
  const call_info info{core.name, o.query_id, core.schema_version};
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
  if (!core_->options.observers.empty()) {
    const call_info info = this->info();
    notify(*core_, [&](observer& o) { o.on_request(request_event{info, kind_, k_ + 1, request_}); });
  }
}

call_info remedy_phase::info() const noexcept { return call_info{core_->name, oc_->query_id, core_->schema_version}; }

void remedy_phase::on_stream_piece(std::string_view delta) {
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
  turn_ = std::chrono::nanoseconds(0);
  if (core_->options.prices) a.cost_usd = 0.0;  // no reply: nothing reported to price
  if (media_)
    for (const message& m : request_.messages) a.media.insert(a.media.end(), m.media.begin(), m.media.end());
  return a;
}

bool remedy_phase::within_budget(const attempt& a, std::string_view correction) const {
  const call_budget& cap = core_->options.budget;
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
                                                  std::chrono::nanoseconds queued) {
  const bool repairing = kind_ == attempt_kind::input_repair;
  attempt a = new_attempt();
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

// ---------------------------------------------------------------------------------------------
// Blocking driver

namespace {

/// Records an exception that escaped a step as an issue of the stage that was running.
void record_step_exception(call_steps& steps) {
  steps.discard();
  std::string type = "unknown exception";
  std::string what;
  try {
    throw;
  } catch (const std::exception& e) {
    type = boost::core::demangle(typeid(e).name());
    what = e.what();
  } catch (...) {
  }
  steps.oc->issues.push_back(hook_exception_issue(to_string(steps.at), type, what));
}

/// Runs the calls of an agent step on the runtime's workers and waits for them (each is bounded by
/// agent_options::tool_timeout).
remedy_phase::next run_tools_blocking(remedy_phase& p, const contract_core& core) {
  struct waiter {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
  };
  auto w = std::make_shared<waiter>();
  auto batch = std::make_shared<tool_batch>(
      core.weak_from_this().lock(), std::move(p.pending_tools()),
      p.pending_runners(), [w] {
        {
          std::lock_guard lock(w->mutex);
          w->done = true;
        }
        w->cv.notify_all();
      });
  batch->start(core.options.runtime != nullptr ? *core.options.runtime : runtime::shared());
  {
    std::unique_lock lock(w->mutex);
    w->cv.wait(lock, [&] { return w->done; });
  }
  return p.tools_done(batch->take());
}

bool run_phase_blocking(remedy_phase& p, const contract_core& core) {
  for (;;) {
    remedy_phase::next n;
    {
      std::optional<chat_response> reply;
      std::string error;
      int status = 0;
      std::chrono::nanoseconds queued{0};
      engine_lease lease(core.anchor);
      if (!lease) {
        p.on_stopped(stage::cancelled, "the engine was destroyed", {}, false);
        return false;
      }
      p.begin_attempt();
      try {
        reply = core.model->complete(p.request());
      } catch (const engine_error& e) {
        error = e.what();
        status = e.status();
        queued = e.queued();
      } catch (const std::exception& e) {
        error = e.what();
      } catch (...) {
        error = "unknown exception";
      }
      n = reply ? p.on_reply(std::move(*reply)) : p.on_engine_error(error, status, queued);
    }
    if (n == remedy_phase::next::tools) n = run_tools_blocking(p, core);
    if (n == remedy_phase::next::again) continue;
    if (n == remedy_phase::next::accepted) return true;
    if (n == remedy_phase::next::failed) return false;
    const std::chrono::nanoseconds d = p.wait();
    if (d.count() > 0) {
      if (core.options.sleep) core.options.sleep(d);
      else default_sleep(d);
    }
    p.after_wait();
  }
}

/// Runs `steps` on this thread through the asynchronous driver (stop tokens and deadlines): its
/// work is queued here and run by this thread until the call has finished.
void run_blocking_stoppable(call_steps& steps, const contract_core& core, const call_options& options);

}  // namespace

void run_blocking(call_steps& steps, const contract_core& core, const call_options* options) {
  begin_outcome(*steps.oc, core, options);
  if (options != nullptr && (options->stoppable() || options->limiter)) {
    run_blocking_stoppable(steps, core, *options);
    return;
  }
  stage failed = stage::none;
  try {
    std::vector<message> messages;
    failed = steps.check_input(messages);
    if (failed == stage::pre_remedy) {
      steps.at = stage::pre_remedy;
      remedy_phase repair(core, attempt_kind::input_repair, true, std::move(messages), *steps.oc, steps.times,
                          steps.input_reader(), core.now());
      failed = run_phase_blocking(repair, core) ? stage::none : stage::pre_remedy;
      steps.mark = core.now();
      messages.clear();
    }
    if (failed == stage::none) failed = steps.prepare(messages);
    if (failed == stage::none) {
      steps.at = stage::engine;
      remedy_phase output(core, attempt_kind::output, core.options.post_remedy, std::move(messages), *steps.oc,
                          steps.times, steps.output_reader(), steps.mark);
      if (!run_phase_blocking(output, core)) failed = steps.oc->failed_stage;
    }
  } catch (...) {
    record_step_exception(steps);
    failed = steps.at;
  }
  steps.finish(failed);
}

// ---------------------------------------------------------------------------------------------
// Asynchronous driver

namespace {

using executor_fn = std::function<void(std::function<void()>)>;

class async_driver final : public std::enable_shared_from_this<async_driver> {
 public:
  async_driver(std::shared_ptr<call_steps> steps, std::shared_ptr<const contract_core> core, call_options options,
               std::stop_token cancel, bool stream, executor_fn exec)
      : steps_(std::move(steps)),
        core_(std::move(core)),
        options_(std::move(options)),
        cancel_(std::move(cancel)),
        stream_(stream),
        exec_(std::move(exec)),
        rt_(core_->options.runtime != nullptr ? core_->options.runtime : &runtime::shared()) {}

  /// Queues the first step, then watches the stop tokens and the deadline.
  void begin() {
    self_ = shared_from_this();  // the call owns itself until finish(): timers and stops only hold weak pointers
    deadline_ = options_.deadline_from(std::chrono::steady_clock::now());
    {
      // Events raised while setting up (a stop already requested) wait in the queue: nothing runs
      // the call before this function is done with its members.
      std::lock_guard lock(queue_mutex_);
      draining_ = true;
    }
    std::weak_ptr<async_driver> self = weak_from_this();
    if (options_.stop.stop_possible()) user_stop_.emplace(options_.stop, stop_forward{self});
    if (cancel_.stop_possible()) future_stop_.emplace(cancel_, stop_forward{self});
    if (deadline_) {
      const auto left = *deadline_ - std::chrono::steady_clock::now();
      deadline_timer_ = rt_->schedule(std::chrono::duration_cast<std::chrono::nanoseconds>(left), [self] {
        if (auto d = self.lock()) d->enqueue(event{event::kind::stop, 0, {}, {}, {}, stage::deadline});
      });
    }
    {
      std::lock_guard lock(queue_mutex_);
      queue_.push_front(event{event::kind::begin});
    }
    exec_([d = shared_from_this()] { d->drain(); });
  }

  /// Rethrows what finish() threw (blocking use).
  void rethrow_finish_error() const {
    if (finish_error_) std::rethrow_exception(finish_error_);
  }

  struct event {
    enum class kind : std::uint8_t { begin, text, reply, error, waited, stop, granted, tool_text, tools_done } k;
    std::uint64_t id = 0;
    std::string text{};
    std::optional<chat_response> reply{};
    /// kind::error: the engine's failure, as plain values (an exception object is not handed
    /// between threads: its message buffer is shared by reference count).
    struct failure {
      std::string what;
      int status = 0;
      bool cancelled = false;
      std::chrono::nanoseconds queued{0};
    };
    std::optional<failure> error{};
    stage why = stage::none;
    /// kind::tool_text: which call of the reply, and its name (with its first piece).
    std::size_t index = 0;
    std::string name{};
  };

  void enqueue(event e) noexcept {
    try {
      std::lock_guard lock(queue_mutex_);
      if (closed_) return;
      if (e.k == event::kind::text && !queue_.empty() && queue_.back().k == event::kind::text &&
          queue_.back().id == e.id) {
        queue_.back().text += e.text;  // coalesce deltas the worker has not reached yet
        return;
      }
      queue_.push_back(std::move(e));
      if (draining_) return;
      draining_ = true;
    } catch (...) {
      log_error("contract: out of memory queueing a call's event (dropped)");
      return;
    }
    try {
      exec_([self = shared_from_this()] { self->drain(); });
    } catch (...) {
      log_error("contract: the executor refused a call's work");
      std::lock_guard lock(queue_mutex_);
      draining_ = false;
    }
  }

 private:
  struct stop_forward {
    std::weak_ptr<async_driver> driver;
    void operator()() const noexcept {
      if (auto d = driver.lock()) d->enqueue(event{event::kind::stop, 0, {}, {}, {}, stage::cancelled});
    }
  };

  /// Receives one attempt's reply from the engine.
  class receiver final : public reply_receiver {
   public:
    receiver(std::shared_ptr<async_driver> d, std::uint64_t id) : driver_(std::move(d)), id_(id) {}
    void on_text(std::string_view delta) noexcept override {
      try {
        driver_->enqueue(event{event::kind::text, id_, std::string(delta)});
      } catch (...) {
        log_error("contract: out of memory queueing streamed text (dropped)");
      }
    }
    void on_tool_text(std::size_t index, std::string_view name, std::string_view delta) noexcept override {
      try {
        event e{event::kind::tool_text, id_, std::string(delta)};
        e.index = index;
        e.name = std::string(name);
        driver_->enqueue(std::move(e));
      } catch (...) {
        log_error("contract: out of memory queueing streamed tool arguments (dropped)");
      }
    }
    void on_reply(chat_response response) noexcept override {
      driver_->enqueue(event{event::kind::reply, id_, {}, std::move(response)});
    }
    void on_error(const engine_error& error) noexcept override {
      try {
        driver_->enqueue(event{event::kind::error, id_, {}, {},
                               event::failure{std::string(error.what()), error.status(), error.cancelled(),
                                              error.queued()}});
      } catch (...) {
        log_error("contract: out of memory queueing an engine error (dropped)");
      }
    }
    [[nodiscard]] std::size_t text_kept() const noexcept override { return kept_.load(std::memory_order_acquire); }
    /// The attempt stops early, keeping the first `n` bytes of its text (before the stop request).
    void keep(std::size_t n) noexcept { kept_.store(n, std::memory_order_release); }

   private:
    std::shared_ptr<async_driver> driver_;
    std::uint64_t id_;
    std::atomic<std::size_t> kept_{std::string_view::npos};
  };

  enum class state : std::uint8_t { idle, limited, attempt, waiting, tools, done };

  void drain() noexcept {
    for (;;) {
      event e{event::kind::begin};
      {
        std::lock_guard lock(queue_mutex_);
        if (queue_.empty() || closed_) {
          draining_ = false;
          return;
        }
        e = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        process(e);
      } catch (...) {
        // A step threw outside the guarded calls (out of memory): end the call as best we can.
        if (state_ != state::done) {
          try {
            record_step_exception(*steps_);
          } catch (...) {
          }
          finish(steps_->at);
        }
      }
    }
  }

  [[nodiscard]] std::optional<stage> stop_now() const {
    if (options_.stop.stop_requested() || cancel_.stop_requested()) return stage::cancelled;
    if (deadline_ && std::chrono::steady_clock::now() >= *deadline_) return stage::deadline;
    return std::nullopt;
  }

  void process(event& e) {
    if (state_ == state::done) return;
    switch (e.k) {
      case event::kind::begin: return run_steps();
      case event::kind::stop: return stop(e.why, {});
      case event::kind::waited:
        if (state_ != state::waiting || e.id != wait_id_) return;
        state_ = state::idle;
        phase_->after_wait();
        return send();
      case event::kind::granted:
        if (state_ != state::limited || e.id != limit_id_) return;
        state_ = state::idle;
        phase_->waited_for_turn(core_->now() - limited_since_);
        return transmit();
      case event::kind::text: {
        if (state_ != state::attempt || e.id != attempt_id_) return;
        text_so_far_ += e.text;
        phase_->on_stream_piece(e.text);
        issue_list violations;
        std::size_t kept = text_so_far_.size();
        if (!phase_->reader().stream_text(e.text, violations, kept)) return;
        if (!core_->options.early_stop || violations.empty()) return;
        // The rejected reply is the text up to the byte that decided the stop, whatever else had
        // arrived by now: the next request is a function of the reply, not of its timing.
        text_so_far_.resize(std::min(kept, text_so_far_.size()));
        if (auto r = receiver_.lock()) r->keep(text_so_far_.size());
        attempt_stop_.request_stop();
        ++attempt_id_;  // whatever the engine still sends for this attempt is ignored
        state_ = state::idle;
        return handle(phase_->on_early_stop(std::move(text_so_far_), std::move(violations)));
      }
      case event::kind::tool_text:
        if (state_ != state::attempt || e.id != attempt_id_) return;
        try {
          phase_->reader().stream_tool_text(e.index, e.name, e.text);
        } catch (...) {
          log_error("contract {}: a streaming callback threw on tool arguments (ignored)", core_->name);
        }
        return;
      case event::kind::tools_done: {
        if (state_ != state::tools || e.id != batch_id_) return;
        state_ = state::idle;
        std::vector<tool_run> runs = batch_->take();
        batch_.reset();
        return handle(phase_->tools_done(std::move(runs)));
      }
      case event::kind::reply:
        if (state_ != state::attempt || e.id != attempt_id_) return;
        state_ = state::idle;
        if (options_.limiter)
          options_.limiter->settle(estimate_, e.reply->usage.total(), e.reply->usage.output_tokens);
        return handle(phase_->on_reply(std::move(*e.reply)));
      case event::kind::error:
        if (state_ != state::attempt || e.id != attempt_id_) return;
        if (e.error->cancelled) {
          if (auto why = stop_now()) return stop(*why, {});
          return stop(stage::cancelled, e.error->what);  // the engine stopped on its own (destroyed)
        }
        state_ = state::idle;
        return handle(phase_->on_engine_error(e.error->what, e.error->status, e.error->queued));
    }
  }

  // Input checks, the input-repair phase or the output request.
  void run_steps() {
    if (auto why = stop_now()) return stop(*why, {});
    stage failed = stage::none;
    std::vector<message> messages;
    try {
      failed = steps_->check_input(messages);
    } catch (...) {
      record_step_exception(*steps_);
      return finish(steps_->at);
    }
    if (failed == stage::pre_remedy) {
      steps_->at = stage::pre_remedy;
      phase_.emplace(*core_, attempt_kind::input_repair, true, std::move(messages), *steps_->oc, steps_->times,
                     steps_->input_reader(), core_->now());
      return send();
    }
    if (failed != stage::none) return finish(failed);
    prepare_output();
  }

  void prepare_output() {
    if (auto why = stop_now()) return stop(*why, {});
    std::vector<message> messages;
    stage failed = stage::none;
    try {
      failed = steps_->prepare(messages);
    } catch (...) {
      record_step_exception(*steps_);
      return finish(steps_->at);
    }
    if (failed != stage::none) return finish(failed);
    steps_->at = stage::engine;
    phase_.emplace(*core_, attempt_kind::output, core_->options.post_remedy, std::move(messages), *steps_->oc,
                   steps_->times, steps_->output_reader(), steps_->mark);
    phase_->request().stream = stream_;
    send();
  }

  // The next attempt: first its turn under the rate limiter, if any.
  void send() {
    if (auto why = stop_now()) return stop(*why, {});
    if (!options_.limiter) return transmit();
    phase_->request().limiter = options_.limiter;
    estimate_ = options_.limiter->estimate(phase_->request());
    state_ = state::limited;
    limited_since_ = core_->now();
    const std::uint64_t id = ++limit_id_;
    std::weak_ptr<async_driver> self = weak_from_this();
    limit_ticket_ = options_.limiter->acquire(estimate_, [self, id] {
      if (auto d = self.lock()) d->enqueue(event{event::kind::granted, id});
    });
  }

  void transmit() {
    if (auto why = stop_now()) return stop(*why, {});
    engine_lease lease(core_->anchor);
    if (!lease) return stop(stage::cancelled, "the engine was destroyed");
    phase_->begin_attempt();
    text_so_far_.clear();
    if (stream_ && phase_->kind() == attempt_kind::output) {
      try {
        phase_->reader().stream_start(phase_->number(), phase_->rejected());
      } catch (...) {
        log_error("contract {}: a streaming callback threw at the start of attempt {} (ignored)", core_->name,
                  phase_->number());
      }
    }
    attempt_stop_ = std::stop_source();
    const std::uint64_t id = ++attempt_id_;
    state_ = state::attempt;
    auto to = std::make_shared<receiver>(shared_from_this(), id);
    receiver_ = to;
    try {
      core_->model->start(phase_->request(), std::move(to), attempt_stop_.get_token());
    } catch (const std::exception& e) {
      state_ = state::idle;
      return handle(phase_->on_engine_error(e.what()));
    } catch (...) {
      state_ = state::idle;
      return handle(phase_->on_engine_error("unknown exception"));
    }
  }

  void handle(remedy_phase::next n) {
    switch (n) {
      case remedy_phase::next::accepted:
        if (phase_->kind() == attempt_kind::input_repair) {
          steps_->mark = core_->now();
          phase_.reset();
          return prepare_output();
        }
        return finish(stage::none);
      case remedy_phase::next::failed: return finish(steps_->oc->failed_stage);
      case remedy_phase::next::again: return send();
      case remedy_phase::next::tools: {
        state_ = state::tools;
        const std::uint64_t id = ++batch_id_;
        std::weak_ptr<async_driver> self = weak_from_this();
        batch_ = std::make_shared<tool_batch>(core_, std::move(phase_->pending_tools()), phase_->pending_runners(),
                                              [self, id] {
                                                if (auto d = self.lock()) d->enqueue(event{event::kind::tools_done, id});
                                              });
        batch_->start(*rt_);
        return;
      }
      case remedy_phase::next::wait: {
        const std::chrono::nanoseconds d = phase_->wait();
        if (core_->options.sleep) {
          if (d.count() > 0) core_->options.sleep(d);
          phase_->after_wait();
          return send();
        }
        state_ = state::waiting;
        const std::uint64_t id = ++wait_id_;
        std::weak_ptr<async_driver> self = weak_from_this();
        wait_timer_ = rt_->schedule(d, [self, id] {
          if (auto dr = self.lock()) dr->enqueue(event{event::kind::waited, id});
        });
        return;
      }
    }
  }

  void stop(stage why, std::string_view reason) {
    std::string because(reason);
    if (because.empty() && why == stage::deadline && deadline_) because = "the call's deadline passed";
    if (because.empty() && why == stage::cancelled) because = "the call was cancelled";
    switch (state_) {
      case state::attempt:
        attempt_stop_.request_stop();
        ++attempt_id_;
        phase_->on_stopped(why, because, std::move(text_so_far_), true);
        break;
      case state::waiting:
        wait_timer_.cancel();
        phase_->on_stopped(why, because, {}, false);
        break;
      case state::tools:
        ++batch_id_;
        phase_->tools_stopped(why, because, batch_->stop(stopped_issue(why, because)));
        batch_.reset();
        break;
      case state::limited:
        options_.limiter->cancel(limit_ticket_);
        ++limit_id_;
        phase_->on_stopped(why, because, {}, false);
        break;
      case state::idle:
        if (phase_) {
          phase_->on_stopped(why, because, {}, false);
        } else {
          steps_->oc->issues = {stopped_issue(why, because)};
          steps_->oc->failed_stage = why;
        }
        break;
      case state::done: return;
    }
    finish(why);
  }

  void finish(stage failed) {
    if (state_ == state::done) return;
    state_ = state::done;
    deadline_timer_.cancel();
    wait_timer_.cancel();
    user_stop_.reset();
    future_stop_.reset();
    if (batch_) {  // (tools still running: their late results are dropped, pending acts cancelled)
      (void)batch_->stop(stopped_issue(stage::cancelled, "the call ended"));
      batch_.reset();
    }
    phase_.reset();
    {
      std::lock_guard lock(queue_mutex_);
      closed_ = true;
      queue_.clear();
    }
    try {
      steps_->finish(failed);
    } catch (...) {
      finish_error_ = std::current_exception();
    }
    if (on_done_) on_done_();
    // The drain running this still holds a reference; the engine may too, until its last call.
    self_.reset();
  }

 public:
  /// Called after finish() (blocking use: wakes the waiting thread).
  std::function<void()> on_done_;

 private:
  std::shared_ptr<call_steps> steps_;
  std::shared_ptr<const contract_core> core_;
  call_options options_;
  std::stop_token cancel_;
  bool stream_;
  executor_fn exec_;
  runtime* rt_;
  std::optional<time_point> deadline_;

  std::optional<std::stop_callback<stop_forward>> user_stop_;
  std::optional<std::stop_callback<stop_forward>> future_stop_;
  timer deadline_timer_;
  timer wait_timer_;

  std::mutex queue_mutex_;
  std::deque<event> queue_;
  bool draining_ = false;
  bool closed_ = false;

  // Touched only by the draining thread.
  state state_ = state::idle;
  std::optional<remedy_phase> phase_;
  std::stop_source attempt_stop_;
  std::weak_ptr<receiver> receiver_;  // the current attempt's (the engine owns it)
  std::uint64_t attempt_id_ = 0;
  std::uint64_t wait_id_ = 0;
  std::uint64_t limit_id_ = 0;
  std::uint64_t limit_ticket_ = 0;
  std::shared_ptr<tool_batch> batch_;  // the agent step whose tools run now
  std::uint64_t batch_id_ = 0;
  std::uint64_t estimate_ = 0;
  time_point limited_since_{};  // when the current attempt asked the limiter for its turn
  std::string text_so_far_;
  std::exception_ptr finish_error_;
  std::shared_ptr<async_driver> self_;
};

/// Work of one blocking call with stop tokens, run by the calling thread.
class calling_thread_queue {
 public:
  void post(std::function<void()> f) {
    {
      std::lock_guard lock(mutex_);
      work_.push_back(std::move(f));
    }
    ready_.notify_one();
  }
  void done() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    ready_.notify_one();
  }
  /// Runs the queued work until done() was called and nothing is left.
  void run() {
    std::unique_lock lock(mutex_);
    for (;;) {
      ready_.wait(lock, [this] { return done_ || !work_.empty(); });
      if (work_.empty()) return;
      std::function<void()> f = std::move(work_.front());
      work_.pop_front();
      lock.unlock();
      f();
      lock.lock();
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> work_;
  bool done_ = false;
};

void run_blocking_stoppable(call_steps& steps, const contract_core& core, const call_options& options) {
  // The call lives on this frame, which waits for its end: non-owning pointers are enough.
  std::shared_ptr<call_steps> steps_ref(std::shared_ptr<call_steps>{}, &steps);
  std::shared_ptr<const contract_core> core_ref(std::shared_ptr<const contract_core>{}, &core);
  auto queue = std::make_shared<calling_thread_queue>();
  auto driver = std::make_shared<async_driver>(
      steps_ref, core_ref, options, std::stop_token{}, false,
      [queue](std::function<void()> f) { queue->post(std::move(f)); });
  driver->on_done_ = [queue] { queue->done(); };
  driver->begin();
  queue->run();
  driver->rethrow_finish_error();
}

}  // namespace

void start_async(std::shared_ptr<call_steps> steps, std::shared_ptr<const contract_core> core, call_options options,
                 std::stop_token cancel, bool stream) {
  begin_outcome(*steps->oc, *core, &options);
  executor_fn exec = options.executor;
  if (!exec) {
    runtime* rt = core->options.runtime != nullptr ? core->options.runtime : &runtime::shared();
    exec = runtime_access::poster(*rt);
  }
  auto driver = std::make_shared<async_driver>(std::move(steps), std::move(core), std::move(options),
                                               std::move(cancel), stream, std::move(exec));
  driver->begin();
}

}  // namespace covenant::detail
