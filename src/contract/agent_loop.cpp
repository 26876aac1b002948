// The agent loop's part of a contract call (covenant/contract/agent.hpp): a reply that calls tools is
// a step, its calls run side by side (tool_batch), and their results go back to the model.
#include <boost/core/demangle.hpp>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <utility>

#include "covenant/contract/agent.hpp"
#include "covenant/contract/detail/call.hpp"
#include "covenant/engine/prices.hpp"
#include "covenant/engine/runtime.hpp"
#include "engine/log.hpp"

namespace covenant::detail {

void contract_core::set_tools(std::vector<std::shared_ptr<const tool_runner>> runners) {
  tools = std::move(runners);
  tool_specs.reset();
  if (tools.empty()) return;
  auto specs = std::make_shared<std::vector<tool_spec>>();
  for (const auto& t : tools) {
    const std::string& name = t->spec().name;
    for (const tool_spec& other : *specs)
      if (other.name == name)
        throw std::invalid_argument("covenant: " + this->name + " has two tools named \"" + name + "\"");
    if (name == schema_name)
      throw std::invalid_argument("covenant: " + this->name + " has a tool named \"" + name +
                                  "\" like its output type (the answer's name in output_mode::tools)");
    specs->push_back(t->spec());
  }
  tool_specs = std::move(specs);
}

issue tool_threw_issue(std::exception_ptr e) {
  try {
    std::rethrow_exception(std::move(e));
  } catch (const std::exception& x) {
    return hook_exception_issue("act", boost::core::demangle(typeid(x).name()), x.what());
  } catch (...) {
    return hook_exception_issue("act", "unknown exception", "");
  }
}

namespace {

/// The process-wide runtime that runs tools (agent_options::tool_runtime), made on first use and
/// never destroyed (its threads end with the process), like runtime::shared().
runtime& shared_tool_runtime() {
  static runtime* const tools = new runtime(runtime_options{.workers = 8});
  return *tools;
}

/// What the model is told of a call that did not give a result: what went wrong, then each issue.
std::string tool_error_text(const tool_run& r) {
  std::string out;
  switch (r.status) {
    case tool_status::ok: return r.result;
    case tool_status::unknown_tool: out = "Error: no such tool."; break;
    case tool_status::arguments:
      out = "Error: the arguments were rejected. Call the tool again with corrected arguments, fixing every problem "
            "listed.";
      break;
    case tool_status::pre: out = "Error: the tool refused these arguments."; break;
    case tool_status::failed: out = "Error: the tool failed."; break;
    case tool_status::timeout: out = "Error: the tool did not finish in time."; break;
    case tool_status::post: out = "Error: the tool's result was rejected."; break;
    case tool_status::refused: out = "Error: the call was not run."; break;
  }
  for (const issue& i : r.issues) {
    out += "\n- ";
    i.append_to(out);
  }
  return out;
}

/// Whether a call counts against the loop's limits: it was run (or was to be).
bool counted(const tool_run& r) noexcept {
  return r.status != tool_status::unknown_tool && r.status != tool_status::refused;
}

issue limit_issue(std::string message) {
  issue i;
  i.code = issue_code::limit_reached;
  i.message = std::move(message);
  return i;
}

void log_loop_end(const contract_core& core, std::string_view why) {
  try {
    log().info("{}: the agent loop ends: {}", core.name, why);
  } catch (...) {
  }
}

}  // namespace

std::size_t remedy_phase::runs_of(std::string_view tool) const {
  std::size_t n = 0;
  for (const agent_step& s : oc_->steps)
    for (const tool_run& r : s.tools) n += r.call.name == tool && counted(r) ? 1 : 0;
  return n;
}

remedy_phase::next remedy_phase::begin_step(chat_response&& reply) {
  agent_step s;
  s.number = static_cast<int>(oc_->steps.size()) + 1;
  s.attempt = k_ + 1;
  --k_;  // a step is no answer attempt: the next request is the same attempt again
  s.text = std::move(reply.text);
  s.usage = reply.usage;
  s.model = std::move(reply.model);
  s.response_id = std::move(reply.id);
  s.finish_reason = std::move(reply.finish_reason);
  s.transport_retries = std::move(reply.retries);
  if (core_->options.prices) s.cost_usd = reply.from_cache ? 0.0 : core_->options.prices->cost(s.model, s.usage);
  s.queued = turn_ + reply.queued;
  turn_ = std::chrono::nanoseconds(0);
  const time_point t = core_->now();
  const std::chrono::nanoseconds engine_time = t - sent_;
  s.latency = std::max(std::chrono::nanoseconds(0), engine_time - s.queued);
  times_->add(perf_stage::engine, engine_time);
  mark_ = t;
  oc_->usage += s.usage;
  if (!s.cost_usd) oc_->cost_usd.reset();
  else if (oc_->cost_usd) *oc_->cost_usd += *s.cost_usd;

  std::vector<tool_run> runs;
  runs.reserve(reply.tool_calls.size());
  for (tool_call& c : reply.tool_calls) {
    tool_run r;
    r.call = std::move(c);
    // Every call has an id its result names (servers that give none get one).
    if (r.call.id.empty()) r.call.id = "call_" + std::to_string(s.number) + "_" + std::to_string(runs.size() + 1);
    runs.push_back(std::move(r));
  }
  const agent_options& limits = core_->options.agent;
  runners_.clear();
  if (s.number > limits.max_steps) {
    const issue i = limit_issue("the model called tools in step " + std::to_string(s.number) +
                                " of a loop of at most " + std::to_string(limits.max_steps) +
                                " (agent_options::max_steps)");
    for (tool_run& r : runs) {
      r.status = tool_status::refused;
      r.issues = {i};
      r.result = tool_error_text(r);
    }
    s.tools = std::move(runs);
    oc_->steps.push_back(std::move(s));
    oc_->issues = {i};
    oc_->failed_stage = stage::tool;
    oc_->reason = "max_steps";
    log_loop_end(*core_, i.message);
    return next::failed;
  }
  std::size_t total = 0;
  for (const agent_step& done : oc_->steps)
    for (const tool_run& r : done.tools) total += counted(r) ? 1 : 0;
  for (tool_run& r : runs) {
    const tool_runner* runner = nullptr;
    for (const auto& t : core_->tools)
      if (t->spec().name == r.call.name) runner = t.get();
    if (runner == nullptr) {
      std::string names;
      for (const auto& t : core_->tools) names += (names.empty() ? "" : ", ") + t->spec().name;
      issue i;
      i.code = issue_code::unknown_tool;
      i.message = "there is no tool named \"" + r.call.name + "\"; the tools are: " + names;
      r.status = tool_status::unknown_tool;
      r.issues = {std::move(i)};
      runners_.push_back(nullptr);
      continue;
    }
    std::optional<std::size_t> own;
    for (const auto& [name, most] : limits.max_calls_per_tool)
      if (name == r.call.name) own = most;
    std::size_t same = runs_of(r.call.name);
    for (std::size_t k = 0; k < runners_.size(); ++k) same += runners_[k] == runner ? 1 : 0;
    if (limits.max_tool_calls != 0 && total >= limits.max_tool_calls) {
      r.status = tool_status::refused;
      r.issues = {limit_issue("not run: the call has run its " + std::to_string(limits.max_tool_calls) +
                              " tool calls (agent_options::max_tool_calls); answer with what you have")};
    } else if (own && same >= *own) {
      r.status = tool_status::refused;
      r.issues = {limit_issue("not run: " + r.call.name + " has run its " + std::to_string(*own) +
                              " calls (agent_options::max_calls_per_tool)")};
    } else {
      ++total;
      runners_.push_back(runner);
      continue;
    }
    runners_.push_back(nullptr);
  }
  pending_ = std::move(runs);
  step_ = std::move(s);
  if (!core_->options.observers.empty()) {
    const call_info info = this->info();
    for (std::size_t k = 0; k < pending_.size(); ++k)
      if (runners_[k] != nullptr)
        notify(*core_, [&](observer& o) { o.on_tool_start(tool_start_event{info, step_->number, pending_[k].call}); });
  }
  return next::tools;
}

remedy_phase::next remedy_phase::tools_done(std::vector<tool_run> runs) {
  const time_point before = mark_;
  lap(perf_stage::tool);
  step_->tools_elapsed = mark_ - before;
  for (tool_run& r : runs)
    if (!r.ok()) r.result = tool_error_text(r);
  // The step stays in the conversation: the model's calls, then one result per call.
  message calls{role::assistant, step_->text};
  calls.tool_calls.reserve(runs.size());
  for (const tool_run& r : runs) calls.tool_calls.push_back(r.call);
  request_.messages.push_back(std::move(calls));
  for (const tool_run& r : runs) {
    message m{role::tool, r.result};
    m.tool_call_id = r.call.id;
    m.is_error = !r.ok();
    request_.messages.push_back(std::move(m));
  }
  base_size_ = request_.messages.size();
  step_->tools = std::move(runs);
  oc_->steps.push_back(std::move(*step_));
  step_.reset();
  pending_.clear();
  runners_.clear();
  const agent_step& s = oc_->steps.back();
  if (!core_->options.observers.empty()) {
    const call_info info = this->info();
    for (const tool_run& r : s.tools) notify(*core_, [&](observer& o) { o.on_tool_end(tool_end_event{info, s.number, r}); });
  }

  if (core_->options.agent.on_tool_error == tool_errors::end_call) {
    for (const tool_run& r : s.tools) {
      if (r.status != tool_status::failed && r.status != tool_status::timeout && r.status != tool_status::post) continue;
      oc_->issues = r.issues;
      oc_->failed_stage = stage::tool;
      oc_->reason = "tool_error";
      log_loop_end(*core_, "tool " + r.call.name + " " + std::string(to_string(r.status)));
      return next::failed;
    }
  }
  // The call's budget bounds the whole loop: no more model calls once it is spent.
  const budget_options& cap = core_->options.budget;
  std::optional<issue> spent;
  if (cap.max_tokens != 0 && oc_->usage.total() >= cap.max_tokens)
    spent = limit_issue("the call has spent " + std::to_string(oc_->usage.total()) + " tokens of its budget of " +
                        std::to_string(cap.max_tokens));
  else if (cap.max_cost_usd != 0 && (!oc_->cost_usd || *oc_->cost_usd >= cap.max_cost_usd))
    spent = limit_issue(oc_->cost_usd ? "the call has spent its budget of $" + std::to_string(cap.max_cost_usd)
                                      : std::string("the call's cost is unknown, so its budget cannot be kept"));
  if (spent) {
    oc_->issues = {*spent};
    oc_->failed_stage = stage::tool;
    oc_->reason = "budget";
    log_loop_end(*core_, spent->message);
    return next::failed;
  }
  return next::again;
}

void remedy_phase::tools_stopped(stage why, std::string_view reason, std::vector<tool_run> runs) {
  lap(perf_stage::tool);
  for (tool_run& r : runs)
    if (!r.ok()) r.result = tool_error_text(r);
  if (step_) {
    step_->tools = std::move(runs);
    oc_->steps.push_back(std::move(*step_));
    step_.reset();
  }
  pending_.clear();
  runners_.clear();
  oc_->issues = {stopped_issue(why, reason)};
  oc_->failed_stage = why;
}

// ---------------------------------------------------------------------------------------------
// tool_batch

struct tool_batch::state {
  std::shared_ptr<const contract_core> owner;  // keeps the tools alive while acts still run (may be null)
  const contract_core* core = nullptr;
  std::mutex mutex;
  std::vector<tool_run> runs;
  std::vector<const tool_runner*> runners;
  std::vector<char> settled;
  std::vector<std::function<void()>> cancels;
  std::size_t left = 0;
  bool stopped = false;
  std::function<void()> on_done;
  timer deadline;
  std::chrono::steady_clock::time_point started{};
};

tool_batch::tool_batch(std::shared_ptr<const contract_core> core, std::vector<tool_run> runs,
                       std::vector<const tool_runner*> runners, std::function<void()> on_done)
    : s_(std::make_unique<state>()) {
  s_->core = core.get();
  s_->owner = std::move(core);
  s_->runs = std::move(runs);
  s_->runners = std::move(runners);
  s_->settled.assign(s_->runs.size(), 0);
  s_->cancels.resize(s_->runs.size());
  for (std::size_t i = 0; i < s_->runs.size(); ++i) s_->settled[i] = s_->runners[i] == nullptr ? 1 : 0;
  s_->on_done = std::move(on_done);
}

tool_batch::~tool_batch() { s_->deadline.cancel(); }

void tool_batch::start(runtime& rt) {
  s_->started = std::chrono::steady_clock::now();
  std::function<void()> done;
  std::vector<std::size_t> to_run;
  {
    std::lock_guard lock(s_->mutex);
    for (std::size_t i = 0; i < s_->runs.size(); ++i)
      if (s_->settled[i] == 0) to_run.push_back(i);
    s_->left = to_run.size();
    if (s_->left == 0) done = std::move(s_->on_done);
  }
  if (done) {
    done();
    return;
  }
  const std::chrono::milliseconds timeout = s_->core->options.agent.tool_timeout;
  std::weak_ptr<tool_batch> weak = weak_from_this();
  const bool posted = std::any_of(to_run.begin(), to_run.end(), [&](std::size_t i) { return !s_->runners[i]->quick(); });
  if (timeout.count() > 0 && posted)
    s_->deadline = rt.schedule(timeout, [weak] {
      if (auto b = weak.lock()) b->time_out();
    });
  // The acts run on the tools' runtime; the timeout is the call's runtime's timer.
  runtime& workers =
      s_->core->options.agent.tool_runtime != nullptr ? *s_->core->options.agent.tool_runtime : shared_tool_runtime();
  // Quick tools run here, after the others have been handed to the workers.
  std::vector<std::size_t> here;
  for (const std::size_t i : to_run) {
    if (s_->runners[i]->quick()) {
      here.push_back(i);
      continue;
    }
    tool_run run;
    run.call = s_->runs[i].call;  // (a call's record is only rewritten once it has settled)
    workers.post([self = shared_from_this(), i, run = std::move(run)]() mutable {
      const tool_runner* runner = self->s_->runners[i];
      std::function<void()> cancel =
          runner->start(std::move(run), self->s_->core->options,
                        [self, i](tool_run&& finished) { self->settle(i, std::move(finished)); });
      if (!cancel) return;
      {
        std::lock_guard lock(self->s_->mutex);
        if (self->s_->settled[i] == 0) {
          self->s_->cancels[i] = std::move(cancel);
          return;
        }
      }
      cancel();  // timed out or stopped while act() was starting
    });
  }
  for (const std::size_t i : here) {
    tool_run run;
    run.call = s_->runs[i].call;
    (void)s_->runners[i]->start(std::move(run), s_->core->options,
                                [this, i](tool_run&& finished) { settle(i, std::move(finished)); });
  }
}

void tool_batch::settle(std::size_t i, tool_run&& run) {
  std::function<void()> done;
  {
    std::lock_guard lock(s_->mutex);
    if (s_->settled[i] != 0 || s_->stopped) return;
    run.elapsed = std::chrono::steady_clock::now() - s_->started;
    s_->runs[i] = std::move(run);
    s_->settled[i] = 1;
    s_->cancels[i] = nullptr;
    if (--s_->left == 0) done = std::move(s_->on_done);
  }
  if (done) {
    s_->deadline.cancel();
    done();
  }
}

void tool_batch::time_out() {
  std::vector<std::function<void()>> cancels;
  std::function<void()> done;
  {
    std::lock_guard lock(s_->mutex);
    if (s_->stopped || s_->left == 0) return;
    const auto ms = s_->core->options.agent.tool_timeout.count();
    for (std::size_t i = 0; i < s_->runs.size(); ++i) {
      if (s_->settled[i] != 0 || s_->runners[i]->quick()) continue;
      tool_run& r = s_->runs[i];
      issue why;
      why.code = issue_code::deadline;
      why.message = "the tool did not finish within " + std::to_string(ms) + " ms (agent_options::tool_timeout)";
      r.status = tool_status::timeout;
      r.issues = {std::move(why)};
      r.elapsed = std::chrono::steady_clock::now() - s_->started;
      s_->settled[i] = 1;
      if (s_->cancels[i]) cancels.push_back(std::move(s_->cancels[i]));
      --s_->left;
    }
    if (s_->left == 0) done = std::move(s_->on_done);
  }
  for (auto& c : cancels) c();
  if (done) done();
}

std::vector<tool_run> tool_batch::take() {
  std::lock_guard lock(s_->mutex);
  return std::move(s_->runs);
}

std::vector<tool_run> tool_batch::stop(const issue& why) {
  std::vector<std::function<void()>> cancels;
  std::vector<tool_run> out;
  {
    std::lock_guard lock(s_->mutex);
    s_->stopped = true;
    s_->on_done = nullptr;
    for (std::size_t i = 0; i < s_->runs.size(); ++i) {
      if (s_->settled[i] != 0) continue;
      s_->runs[i].status = tool_status::failed;
      s_->runs[i].issues = {why};
      s_->settled[i] = 1;
      if (s_->cancels[i]) cancels.push_back(std::move(s_->cancels[i]));
    }
    out = s_->runs;
  }
  s_->deadline.cancel();
  for (auto& c : cancels) c();
  return out;
}

}  // namespace covenant::detail
