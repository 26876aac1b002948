#include "covenant/contract/perf_stats.hpp"

#include <boost/json/object.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <iostream>

namespace covenant {

std::string_view to_string(perf_stage s) noexcept {
  static constexpr std::string_view names[] = {"input_validation", "pre",    "pre_remedy", "act",  "render",
                                               "engine",           "tool",   "parse",      "validate", "post", "post_remedy",
                                               "forward",          "total",  "overhead"};
  return names[static_cast<std::size_t>(s)];
}

namespace {

// Bucket of a duration: exact below 16 ns, then 16 buckets per power of two.
std::size_t bucket_of(std::uint64_t ns) noexcept {
  if (ns < 16) return static_cast<std::size_t>(ns);
  const int msb = 63 - std::countl_zero(ns);
  const std::size_t sub = static_cast<std::size_t>((ns >> (msb - 4)) & 15u);
  return static_cast<std::size_t>(msb - 3) * 16 + sub;
}

// Lower bound and width of a bucket, in ns.
void bucket_range(std::size_t b, double& lo, double& width) noexcept {
  if (b < 16) {
    lo = static_cast<double>(b);
    width = 1;
    return;
  }
  const std::size_t octave = b / 16 + 3;  // msb
  const std::size_t sub = b % 16;
  const double base = std::ldexp(1.0, static_cast<int>(octave));
  width = base / 16;
  lo = base + static_cast<double>(sub) * width;
}

/// Seconds (as the accumulators sum them) as the nanoseconds stage_stats reports.
std::chrono::nanoseconds to_ns(double seconds) noexcept {
  constexpr double most = 9.2e9;  // seconds: just under std::chrono::nanoseconds::max()
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(std::clamp(seconds, -most, most) * 1e9)));
}

}  // namespace

void perf_stats::accumulator::add(std::int64_t ns) {
  const double s = static_cast<double>(ns) * 1e-9;
  ++count;
  sum += s;
  const double delta = s - mean;
  mean += delta / static_cast<double>(count);
  m2 += delta * (s - mean);
  if (count == 1 || s < min) min = s;
  if (count == 1 || s > max) max = s;
  const std::size_t b = std::min(bucket_of(static_cast<std::uint64_t>(ns < 0 ? 0 : ns)), buckets - 1);
  if (histogram[b] != UINT32_MAX) ++histogram[b];
}

double perf_stats::accumulator::percentile(double p) const {
  if (count == 0) return 0;
  std::uint64_t total = 0;
  for (auto c : histogram) total += c;
  const double rank = p * static_cast<double>(total);
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < buckets; ++b) {
    if (histogram[b] == 0) continue;
    if (static_cast<double>(seen + histogram[b]) >= rank) {
      double lo = 0;
      double width = 0;
      bucket_range(b, lo, width);
      const double within = (rank - static_cast<double>(seen)) / static_cast<double>(histogram[b]);
      const double v = (lo + width * std::clamp(within, 0.0, 1.0)) * 1e-9;
      return std::clamp(v, min, max);
    }
    seen += histogram[b];
  }
  return max;
}

perf_stats::perf_stats() = default;

namespace {
int attempt_index(perf_stage s) noexcept {
  switch (s) {
    case perf_stage::engine: return 0;
    case perf_stage::parse: return 1;
    case perf_stage::validate: return 2;
    default: return -1;
  }
}
}  // namespace

void perf_stats::record(const call_timings& t) {
  std::int64_t named = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(perf_stage::total); ++i)
    if (t.ns[i] > 0) named += t.ns[i];
  const std::int64_t total = t.ns[static_cast<std::size_t>(perf_stage::total)];
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < static_cast<std::size_t>(perf_stage::total); ++i)
    if (t.ns[i] >= 0) stages_[i].add(t.ns[i]);
  if (total >= 0) {
    stages_[static_cast<std::size_t>(perf_stage::total)].add(total);
    stages_[static_cast<std::size_t>(perf_stage::overhead)].add(std::max<std::int64_t>(0, total - named));
  }
  auto one = [&](const call_timings::attempt_time& a) {
    if (const int k = attempt_index(a.stage); k >= 0) attempt_stages_[static_cast<std::size_t>(k)].add(a.ns);
  };
  for (std::uint32_t i = 0; i < t.attempt_count; ++i) one(t.per_attempt[i]);
  for (const auto& a : t.more_attempts) one(a);
}

void perf_stats::reset() {
  std::lock_guard lock(mutex_);
  for (auto& s : stages_) s = accumulator{};
  for (auto& s : attempt_stages_) s = accumulator{};
  early_stops_.store(0, std::memory_order_relaxed);
}

stage_stats perf_stats::accumulator::stats(std::string_view name, double grand) const {
  stage_stats s;
  s.name = name;
  s.count = count;
  s.total = to_ns(sum);
  s.mean = to_ns(mean);
  s.stddev = to_ns(count > 1 ? std::sqrt(m2 / static_cast<double>(count - 1)) : 0.0);
  s.min = to_ns(min);
  s.max = to_ns(max);
  s.p50 = to_ns(percentile(0.50));
  s.p95 = to_ns(percentile(0.95));
  s.p99 = to_ns(percentile(0.99));
  s.share = grand > 0 ? sum / grand : 0.0;
  return s;
}

std::vector<stage_stats> perf_stats::snapshot() const {
  std::lock_guard lock(mutex_);
  std::vector<stage_stats> out;
  const double grand = stages_[static_cast<std::size_t>(perf_stage::total)].sum;
  for (std::size_t i = 0; i < perf_stage_count; ++i)
    out.push_back(stages_[i].stats(to_string(static_cast<perf_stage>(i)), grand));
  return out;
}

stage_stats perf_stats::of(perf_stage s) const { return snapshot()[static_cast<std::size_t>(s)]; }

stage_stats perf_stats::per_attempt(perf_stage s) const {
  const int k = attempt_index(s);
  if (k < 0) {
    stage_stats out;
    out.name = to_string(s);
    return out;
  }
  std::lock_guard lock(mutex_);
  return attempt_stages_[static_cast<std::size_t>(k)].stats(to_string(s),
                                                            stages_[static_cast<std::size_t>(perf_stage::total)].sum);
}

namespace {
std::string human(std::chrono::nanoseconds d) {
  const double seconds = std::chrono::duration<double>(d).count();
  if (seconds == 0) return "0";
  const double a = std::fabs(seconds);
  if (a < 1e-6) return fmt::format("{:.0f} ns", seconds * 1e9);
  if (a < 1e-3) return fmt::format("{:.2f} us", seconds * 1e6);
  if (a < 1) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.3f} s", seconds);
}
}  // namespace

namespace {

constexpr perf_stage attempt_stages[] = {perf_stage::engine, perf_stage::parse, perf_stage::validate};

void append_row(std::string& out, const stage_stats& r) {
  out += fmt::format("{:<17}{:>8}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}{:>7.1f}%\n", r.name, r.count,
                     human(r.total), human(r.mean), human(r.stddev), human(r.min), human(r.max), human(r.p50),
                     human(r.p95), human(r.p99), r.share * 100);
}

boost::json::object json_of(const stage_stats& r) {
  boost::json::object o;
  o["count"] = r.count;
  auto seconds = [](std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); };
  o["total_s"] = seconds(r.total);
  o["mean_s"] = seconds(r.mean);
  o["std_s"] = seconds(r.stddev);
  o["min_s"] = seconds(r.min);
  o["max_s"] = seconds(r.max);
  o["p50_s"] = seconds(r.p50);
  o["p95_s"] = seconds(r.p95);
  o["p99_s"] = seconds(r.p99);
  o["share"] = r.share;
  return o;
}

}  // namespace

std::string perf_stats::table() const {
  std::string out = fmt::format("{:<17}{:>8}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}{:>11}{:>8}\n", "stage", "count",
                                "total", "mean", "std", "min", "max", "p50", "p95", "p99", "share");
  for (const auto& r : snapshot())
    if (r.count > 0) append_row(out, r);
  bool header = false;
  for (perf_stage st : attempt_stages) {
    const stage_stats r = per_attempt(st);
    if (r.count == 0) continue;
    if (!header) out += "per attempt (one model call each):\n";
    header = true;
    append_row(out, r);
  }
  if (const std::uint64_t n = early_stops(); n > 0) out += fmt::format("streams stopped early: {}\n", n);
  return out;
}

void perf_stats::print(std::ostream& os) const { os << table(); }
void perf_stats::print() const { print(std::cout); }

boost::json::value perf_stats::to_json() const {
  boost::json::object stages;
  for (const auto& r : snapshot()) stages[r.name] = json_of(r);
  boost::json::object attempts;
  for (perf_stage st : attempt_stages) {
    const stage_stats r = per_attempt(st);
    attempts[r.name] = json_of(r);
  }
  boost::json::object root;
  root["stages"] = std::move(stages);
  root["per_attempt"] = std::move(attempts);
  root["early_stops"] = early_stops();
  return root;
}

}  // namespace covenant
