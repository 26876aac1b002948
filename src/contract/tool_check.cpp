// Tool checks: the application's predicates over every value they apply to, concurrently, with
// a per-call and an optional time-limited cache.
#include "covenant/contract/tool_check.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "covenant/contract/detail/tool_runs.hpp"
#include "engine/log.hpp"

namespace covenant {

namespace detail {

struct tool_check_base::cache {
  std::mutex mutex;
  std::unordered_map<std::string, std::pair<bool, std::chrono::steady_clock::time_point>> verdicts;
};

tool_check_base::tool_check_base(std::string rule, const tool_check_options& options)
    : rule_(std::move(rule)), max_concurrency_(std::max<std::size_t>(1, options.max_concurrency)), ttl_(options.ttl),
      log_as_(options.log_failures_as), cache_(std::make_unique<cache>()) {}

tool_check_base::~tool_check_base() = default;

int tool_check_base::cached(const std::string& key) const {
  if (ttl_.count() <= 0) return -1;
  std::lock_guard lock(cache_->mutex);
  auto it = cache_->verdicts.find(key);
  if (it == cache_->verdicts.end()) return -1;
  if (std::chrono::steady_clock::now() >= it->second.second) {
    cache_->verdicts.erase(it);
    return -1;
  }
  return it->second.first ? 1 : 0;
}

void tool_check_base::remember(const std::string& key, bool ok) const {
  if (ttl_.count() <= 0) return;
  std::lock_guard lock(cache_->mutex);
  if (cache_->verdicts.size() >= 100000) cache_->verdicts.clear();  // bounded
  cache_->verdicts[key] = {ok, std::chrono::steady_clock::now() + ttl_};
}

namespace {

// One value a tool check applies to.
struct tool_job {
  const schema::custom_check* check;     // a tool check (is_tool())
  const schema::constraint* constraint;  // its constraint (action, reason, rule)
  const void* value;                     // the C++ value
  covenant::path where;
  bool ok = false;    // set by run_tool_checks
  std::string shown;  // the value as text (set by run_tool_checks)
};

// The values of `v` (read against `node` of `m`) that tool checks apply to, at `at` and below.
// An empty optional has none; a variant's are those of the alternative it holds.
void collect_tool_jobs(value_ref v, const schema::model& m, const schema::type& node, covenant::path& at,
                       std::vector<tool_job>& jobs) {
  if (v.p == nullptr) return;
  const value_ops& ops = *v.ops;
  if (ops.kind == value_kind::optional) {
    if (void* inner = ops.value(v.p)) collect_tool_jobs({inner, &ops.item()}, m, node, at, jobs);
    return;
  }
  for (const auto& c : node.constraints)
    if (c.custom && c.custom->is_tool()) jobs.push_back(tool_job{c.custom.get(), &c, v.p, at, false, {}});
  if (ops.kind == value_kind::array) {
    if (node.args.empty()) return;
    const std::size_t n = ops.size(v.p);
    for (std::size_t i = 0; i < n; ++i) {
      at.index(i);
      collect_tool_jobs({ops.item_at(v.p, i), &ops.item()}, m, node.args[0], at, jobs);
      at.pop();
    }
  } else if (ops.kind == value_kind::object) {
    if (node.def == schema::no_def) return;
    const schema::object_def* def = m.defs[node.def].object();
    if (def == nullptr) return;
    for (std::size_t j = 0; j < ops.field_count && j < def->fields.size(); ++j) {
      at.key(def->fields[j].key);
      collect_tool_jobs(ops.field(v.p, *def, j), m, def->fields[j].type, at, jobs);
      at.pop();
    }
  } else if (ops.each != nullptr) {
    if (node.args.size() < 2) return;
    struct walk {
      const value_ops& values;
      const schema::model& m;
      const schema::type& node;
      covenant::path& at;
      std::vector<tool_job>& jobs;
    } w{ops.item(), m, node.args[1], at, jobs};
    ops.each(v.p, &w, [](void* context, std::string_view key, void* value) {
      auto& c = *static_cast<walk*>(context);
      c.at.key(key);
      collect_tool_jobs({value, &c.values}, c.m, c.node, c.at, c.jobs);
      c.at.pop();
    });
  } else if (ops.alternative != nullptr) {
    std::size_t k = 0;
    const value_ref alt = ops.alternative(v.p, k);
    if (k < node.args.size()) collect_tool_jobs(alt, m, node.args[k], at, jobs);
  }
}

// Runs the predicate on one value: an exception is "invalid", logged at error level.
bool run_one(const tool_check_base& check, const void* value, const std::string& key) {
  try {
    return check.run(value);
  } catch (const std::exception& e) {
    log_error("tool check '{}' threw for {}: {}; the value counts as invalid", check.rule(), key, e.what());
  } catch (...) {
    log_error("tool check '{}' threw for {}; the value counts as invalid", check.rule(), key);
  }
  return false;
}

// Runs every job (concurrently per check, within its bound; each distinct value once).
void run_tool_checks(std::vector<tool_job>& jobs) {
  // Distinct (check, value) pairs, each run once.
  struct unique_run {
    const tool_check_base* check;
    const void* value;
    std::string key;
    bool ok = false;
  };
  std::vector<unique_run> runs;
  std::vector<std::size_t> run_of(jobs.size());
  std::unordered_map<std::string, std::size_t> index;  // check address + key -> run
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto* check = static_cast<const tool_check_base*>(jobs[i].check);
    std::string key = check->key(jobs[i].value);
    std::string id = std::to_string(reinterpret_cast<std::uintptr_t>(check)) + '\n' + key;
    auto [it, fresh] = index.emplace(std::move(id), runs.size());
    if (fresh) runs.push_back(unique_run{check, jobs[i].value, std::move(key)});
    run_of[i] = it->second;
  }
  // Verdicts kept from earlier calls; the rest run, each check with its own bound.
  std::vector<std::size_t> pending;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    const int c = runs[k].check->cached(runs[k].key);
    if (c >= 0) runs[k].ok = c == 1;
    else pending.push_back(k);
  }
  std::vector<const tool_check_base*> checks;
  for (std::size_t k : pending)
    if (std::find(checks.begin(), checks.end(), runs[k].check) == checks.end()) checks.push_back(runs[k].check);
  for (const tool_check_base* check : checks) {
    std::vector<std::size_t> mine;
    for (std::size_t k : pending)
      if (runs[k].check == check) mine.push_back(k);
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t i = next.fetch_add(1); i < mine.size(); i = next.fetch_add(1)) {
        unique_run& r = runs[mine[i]];
        r.ok = run_one(*r.check, r.value, r.key);
      }
    };
    const std::size_t threads = std::min(check->max_concurrency(), mine.size());
    std::vector<std::thread> helpers;
    try {
      for (std::size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
    } catch (const std::system_error&) {
      // fewer threads than asked for: the calling thread and those started do the work
    }
    work();
    for (auto& t : helpers) t.join();
    for (std::size_t k : mine) {
      check->remember(runs[k].key, runs[k].ok);
      if (!runs[k].ok && !check->log_failures_as().empty())
        log_warn("{} fails '{}': {}", runs[k].key, check->rule(), check->log_failures_as());
    }
  }
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].ok = runs[run_of[i]].ok;
    jobs[i].shown = runs[run_of[i]].key;
  }
}

}  // namespace

bool apply_tool_checks(value_ref root, const schema::model& m, issue_list& issues) {
  std::vector<tool_job> jobs;
  covenant::path at;
  collect_tool_jobs(root, m, m.root, at, jobs);
  if (jobs.empty()) return false;
  run_tool_checks(jobs);
  for (auto& j : jobs) {
    if (j.ok) continue;
    issue i;
    i.path = std::move(j.where);
    i.code = issue_code::constraint_violation;
    i.expected = j.constraint->text;
    i.actual = elide(j.shown);
    i.message = j.constraint->text.empty() ? std::string("must pass its check") : j.constraint->text;
    i.action = j.constraint->on_fail;
    i.reason = j.constraint->reason;
    issues.push_back(std::move(i));
  }
  return true;
}

bool model_has_tools(const schema::model& m) noexcept {
  bool found = false;
  auto scan = [&](const schema::type& t, auto&& self) -> void {
    for (const auto& c : t.constraints)
      if (c.custom && c.custom->is_tool()) found = true;
    for (const auto& a : t.args) self(a, self);
  };
  scan(m.root, scan);
  for (const auto& d : m.defs) {
    if (const auto* o = d.object())
      for (const auto& f : o->fields) scan(f.type, scan);
    if (const auto* a = d.alias()) scan(a->target, scan);
  }
  return found;
}

}  // namespace detail

}  // namespace covenant
