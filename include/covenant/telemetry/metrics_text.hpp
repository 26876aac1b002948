// covenant/telemetry/metrics_text.hpp - thread-safe metric primitives (counter, gauge, histogram) and a
// writer for the Prometheus text exposition format, version 0.0.4. Everything lives in the
// namespace covenant::prometheus.
//
//     covenant::prometheus::registry metrics;
//     auto& calls = metrics.add_counter("covenant_calls_total", "Contract calls.", {"contract", "outcome"});
//     auto& latency = metrics.add_histogram("covenant_call_duration_seconds", "Call latency.", {"contract"});
//     calls.with({"contract_a", "ok"}).inc();
//     latency.with({"contract_a"}).observe(1.7);
//     std::string body = metrics.render();   // served with covenant::prometheus::content_type
//
// Families. A family has a name, help text and a fixed list of label names; with(values) selects
// (and on first use creates) the child for one combination of label values. The reference it
// returns stays valid for the life of the family, so hot paths look a child up once and keep it.
// Lookups are thread-safe (a shared mutex: concurrent lookups of existing children only take it
// shared). A family without labels creates its single child at once, so it renders as 0 before
// its first update; a family with labels but no children yet renders nothing.
//
// Updates are lock-free: counters and gauges hold a std::atomic<double> updated with a
// compare-and-swap loop; a histogram holds one std::atomic<std::uint64_t> per bucket plus an
// std::atomic<double> sum. Rendering while observations go on reads each atomic once: bucket
// counts and _count always agree with each other (the +Inf bucket equals _count, cumulative
// counts never decrease), while _sum may include or miss an observation in flight.
//
// Validation (std::invalid_argument): metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
// [a-zA-Z_][a-zA-Z0-9_]*, neither may start with "__"; label names of a family are distinct;
// counter names end in "_total"; a histogram may not have a label named "le"; help text and
// label values are valid UTF-8 (the format requires it). Bucket upper bounds are finite and
// strictly increasing. Naming conventions that `promtool check metrics` only warns about (empty
// help, "_total" on a gauge, units, camelCase) are left to the caller.
//
// Output. Families render in registration order as "# HELP", "# TYPE", then one line per
// sample, children sorted by label values. Help text escapes backslash and newline; label values
// escape backslash, double quote and newline. Numbers: integers below 2^53 in magnitude are
// written without exponent or fraction, other finite values in the shortest form that reads back
// exactly (std::to_chars), and the special values as +Inf, -Inf and NaN.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/types/config.hpp"

namespace covenant::prometheus {

/// The Content-Type header of a response carrying the text this header writes.
inline constexpr std::string_view content_type = "text/plain; version=0.0.4; charset=utf-8";

enum class metric_type { counter, gauge, histogram };

/// "counter", "gauge" or "histogram", as written on a # TYPE line.
[[nodiscard]] COVENANT_API std::string_view type_name(metric_type type) noexcept;

// ---------------------------------------------------------------------------
// Names, escaping and numbers
// ---------------------------------------------------------------------------

/// True for [a-zA-Z_:][a-zA-Z0-9_:]* not starting with "__".
[[nodiscard]] COVENANT_API bool is_valid_metric_name(std::string_view name) noexcept;
/// True for [a-zA-Z_][a-zA-Z0-9_]* not starting with "__".
[[nodiscard]] COVENANT_API bool is_valid_label_name(std::string_view name) noexcept;
/// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF).
[[nodiscard]] COVENANT_API bool is_valid_utf8(std::string_view text) noexcept;

/// Appends `value` as a sample value: "+Inf", "-Inf", "NaN", an integer without exponent when
/// |value| < 2^53 and value is whole, otherwise the shortest round-trip form of std::to_chars.
COVENANT_API void append_value(std::string& out, double value);
/// Appends a label value with backslash, double quote and newline escaped (no quotes around it).
COVENANT_API void append_escaped_label_value(std::string& out, std::string_view value);
/// Appends help text with backslash and newline escaped.
COVENANT_API void append_escaped_help(std::string& out, std::string_view help);

// ---------------------------------------------------------------------------
// Plain data: what a family holds at one moment, and the writer for it
// ---------------------------------------------------------------------------

/// A histogram's state in the form the exposition uses.
struct histogram_data {
  /// Finite, strictly increasing bucket upper bounds; the +Inf bucket is implicit.
  std::vector<double> upper_bounds;
  /// cumulative_counts[i]: observations <= upper_bounds[i] (same size as upper_bounds).
  std::vector<std::uint64_t> cumulative_counts;
  /// All observations: the +Inf bucket and _count.
  std::uint64_t count = 0;
  /// Sum of all observations: _sum.
  double sum = 0;
};

/// One child of a family: its label values and its state.
struct child_data {
  /// One value per label name of the family, in the same order.
  std::vector<std::string> label_values;
  /// Counter or gauge value (unused for histograms).
  double value = 0;
  /// Histogram state (unused for counters and gauges).
  histogram_data histogram;
};

/// A whole family: what append_family() renders.
struct family_data {
  std::string name;
  std::string help;
  metric_type type = metric_type::gauge;
  std::vector<std::string> label_names;
  std::vector<child_data> children;
};

/// Appends the exposition text of `family` to `out`: "# HELP" and "# TYPE" lines, then the
/// samples of its children sorted by label values (nothing at all when it has no children).
/// Validates everything first, as the families do (names, "_total" for counters, no "le" label on
/// histograms, UTF-8, one label value per label name, distinct label value lists, histogram
/// bounds, cumulative counts non-decreasing and at most `count`); on std::invalid_argument `out`
/// is left as it was.
COVENANT_API void append_family(std::string& out, const family_data& family);

// ---------------------------------------------------------------------------
// Children: the values that are updated
// ---------------------------------------------------------------------------

/// A monotonically increasing value. Lock-free.
class COVENANT_API counter {
 public:
  counter() noexcept = default;
  counter(const counter&) = delete;
  counter& operator=(const counter&) = delete;

  /// Adds `amount`; throws std::invalid_argument when it is negative or NaN.
  void inc(double amount = 1.0);
  [[nodiscard]] double value() const noexcept;

 private:
  std::atomic<double> value_{0.0};
};

/// A value that goes up and down. Lock-free.
class COVENANT_API gauge {
 public:
  gauge() noexcept = default;
  gauge(const gauge&) = delete;
  gauge& operator=(const gauge&) = delete;

  void set(double value) noexcept;
  void inc(double amount = 1.0) noexcept;
  void dec(double amount = 1.0) noexcept;
  [[nodiscard]] double value() const noexcept;

 private:
  std::atomic<double> value_{0.0};
};

/// Observations counted in buckets with fixed upper bounds. Lock-free.
class COVENANT_API histogram {
 public:
  /// Throws std::invalid_argument unless the bounds are finite and strictly increasing (an empty
  /// list is allowed: only the +Inf bucket, i.e. a count and a sum).
  explicit histogram(std::vector<double> upper_bounds);
  histogram(const histogram&) = delete;
  histogram& operator=(const histogram&) = delete;

  /// Counts `value` in the first bucket whose upper bound is >= value (+Inf past the last bound)
  /// and adds it to the sum. NaN is ignored: it belongs in no bucket and would make the sum NaN.
  void observe(double value) noexcept;
  [[nodiscard]] const std::vector<double>& upper_bounds() const noexcept { return bounds_; }
  /// The current state with cumulative bucket counts.
  [[nodiscard]] histogram_data collect() const;

 private:
  std::vector<double> bounds_;
  /// counts_[i]: observations in (bounds_[i-1], bounds_[i]]; the last one: above every bound.
  std::unique_ptr<std::atomic<std::uint64_t>[]> counts_;
  std::atomic<double> sum_{0.0};
};

/// Bucket upper bounds in seconds for LLM call latency: 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20,
/// 30, 60, 120.
[[nodiscard]] COVENANT_API std::vector<double> default_seconds_buckets();

/// Throws std::invalid_argument unless `upper_bounds` are finite and strictly increasing.
COVENANT_API void check_bucket_bounds(std::span<const double> upper_bounds);

// ---------------------------------------------------------------------------
// Families
// ---------------------------------------------------------------------------

namespace detail {

/// Orders lists of label values lexicographically; compares std::string and std::string_view
/// ranges alike, so lookups need no allocation.
struct label_values_less {
  using is_transparent = void;
  template <class A, class B>
  bool operator()(const A& a, const B& b) const {
    return std::lexicographical_compare(std::begin(a), std::end(a), std::begin(b), std::end(b),
                                        [](std::string_view x, std::string_view y) { return x < y; });
  }
};

/// The children of a family keyed by label values; references to children stay valid.
template <class Child>
class children {
 public:
  /// The child for `values`, made by `make()` when absent (`make` may throw to reject `values`).
  template <class Range, class Make>
  Child& get(const Range& values, Make&& make) {
    {
      std::shared_lock lock(mutex_);
      if (auto it = map_.find(values); it != map_.end()) return *it->second;
    }
    std::unique_lock lock(mutex_);
    if (auto it = map_.find(values); it != map_.end()) return *it->second;
    std::unique_ptr<Child> child = make();
    Child& ref = *child;
    map_.emplace(std::vector<std::string>(std::begin(values), std::end(values)), std::move(child));
    return ref;
  }

  /// Calls f(label_values, child) for every child in label value order, under a shared lock.
  template <class F>
  void for_each(F&& f) const {
    std::shared_lock lock(mutex_);
    for (const auto& [values, child] : map_) f(values, *child);
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<std::vector<std::string>, std::unique_ptr<Child>, label_values_less> map_;
};

}  // namespace detail

/// What families have in common; the registry holds them through this.
class COVENANT_API family {
 public:
  virtual ~family();
  family(const family&) = delete;
  family& operator=(const family&) = delete;

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const std::string& help() const noexcept { return help_; }
  [[nodiscard]] const std::vector<std::string>& label_names() const noexcept { return label_names_; }
  [[nodiscard]] metric_type type() const noexcept { return type_; }

  /// The current state of every child, sorted by label values.
  [[nodiscard]] virtual family_data collect() const = 0;
  /// Appends this family's exposition text to `out` (see append_family()).
  void append_to(std::string& out) const;

 protected:
  /// Validates the name, help and label names for `type` (std::invalid_argument).
  family(metric_type type, std::string name, std::string help, std::vector<std::string> label_names);
  /// Throws std::invalid_argument unless `values` has one valid UTF-8 value per label name.
  void check_label_values(std::span<const std::string_view> values) const;
  /// family_data with name, help, type and label names filled in and no children.
  [[nodiscard]] family_data empty_data() const;

 private:
  metric_type type_;
  std::string name_;
  std::string help_;
  std::vector<std::string> label_names_;
};

/// Counters selected by label values. The name must end in "_total".
class COVENANT_API counter_family final : public family {
 public:
  counter_family(std::string name, std::string help, std::vector<std::string> label_names = {});

  /// The child for these label values, one per label name in order (std::invalid_argument for a
  /// wrong count or invalid UTF-8). Thread-safe; the reference stays valid.
  counter& with(std::initializer_list<std::string_view> label_values);
  counter& with(std::span<const std::string> label_values);
  counter& with(std::span<const std::string_view> label_values);
  /// The only child of a family without labels.
  counter& with() { return with(std::span<const std::string_view>{}); }

  [[nodiscard]] family_data collect() const override;

 private:
  detail::children<counter> children_;
};

/// Gauges selected by label values.
class COVENANT_API gauge_family final : public family {
 public:
  gauge_family(std::string name, std::string help, std::vector<std::string> label_names = {});

  /// As counter_family::with().
  gauge& with(std::initializer_list<std::string_view> label_values);
  gauge& with(std::span<const std::string> label_values);
  gauge& with(std::span<const std::string_view> label_values);
  gauge& with() { return with(std::span<const std::string_view>{}); }

  [[nodiscard]] family_data collect() const override;

 private:
  detail::children<gauge> children_;
};

/// Histograms selected by label values, all with the same bucket upper bounds. No label may be
/// named "le".
class COVENANT_API histogram_family final : public family {
 public:
  /// Throws std::invalid_argument for invalid names or bounds (see check_bucket_bounds()).
  histogram_family(std::string name, std::string help, std::vector<std::string> label_names = {},
                   std::vector<double> upper_bounds = default_seconds_buckets());

  /// As counter_family::with().
  histogram& with(std::initializer_list<std::string_view> label_values);
  histogram& with(std::span<const std::string> label_values);
  histogram& with(std::span<const std::string_view> label_values);
  histogram& with() { return with(std::span<const std::string_view>{}); }

  [[nodiscard]] const std::vector<double>& upper_bounds() const noexcept { return bounds_; }
  [[nodiscard]] family_data collect() const override;

 private:
  std::vector<double> bounds_;
  detail::children<histogram> children_;
};

/// Appends the exposition text of `family` to `out` (same as family.append_to(out)).
COVENANT_API void append_family(std::string& out, const family& family);

// ---------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------

/// Owns families and renders them all, in registration order. Thread-safe. A name is rejected
/// (std::invalid_argument) when it is invalid or when any series name it produces (for a
/// histogram: name, name_bucket, name_sum, name_count) is already produced by another family.
/// Returned references stay valid for the life of the registry.
class COVENANT_API registry {
 public:
  registry();
  ~registry();
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;

  counter_family& add_counter(std::string name, std::string help, std::vector<std::string> label_names = {});
  gauge_family& add_gauge(std::string name, std::string help, std::vector<std::string> label_names = {});
  histogram_family& add_histogram(std::string name, std::string help, std::vector<std::string> label_names = {},
                                  std::vector<double> upper_bounds = default_seconds_buckets());

  /// The state of every family, in registration order.
  [[nodiscard]] std::vector<family_data> collect() const;
  /// Appends the exposition text of every family to `out`.
  void append_to(std::string& out) const;
  /// The exposition text of every family.
  [[nodiscard]] std::string render() const;

 private:
  family& add(std::unique_ptr<family> f);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<family>> families_;
};

}  // namespace covenant::prometheus
