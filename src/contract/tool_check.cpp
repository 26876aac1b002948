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

}  // namespace

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
