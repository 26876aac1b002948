// Prometheus text exposition format 0.0.4: metric primitives, families, registry and writer.
#include <covenant/telemetry/metrics_text.hpp>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <system_error>

#include "covenant/types/detail/utf8.hpp"

namespace covenant::prometheus {

namespace {

bool is_ascii_letter(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_ascii_digit(char c) noexcept { return c >= '0' && c <= '9'; }

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("prometheus: " + what); }

/// Adds `amount` to an atomic double with a compare-and-swap loop.
void atomic_add(std::atomic<double>& target, double amount) noexcept {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + amount, std::memory_order_relaxed,
                                       std::memory_order_relaxed)) {
  }
}

bool ends_with(std::string_view text, std::string_view suffix) noexcept {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

/// Checks what a family's name, help and label names must satisfy for `type`.
void check_family(metric_type type, std::string_view name, std::string_view help,
                  std::span<const std::string> label_names) {
  if (!is_valid_metric_name(name)) fail("invalid metric name \"" + std::string(name) + "\"");
  if (type == metric_type::counter && !ends_with(name, "_total"))
    fail("counter name \"" + std::string(name) + "\" must end in \"_total\"");
  if (!is_valid_utf8(help)) fail("help text of \"" + std::string(name) + "\" is not valid UTF-8");
  for (std::size_t i = 0; i < label_names.size(); ++i) {
    const std::string& label = label_names[i];
    if (!is_valid_label_name(label)) fail("invalid label name \"" + label + "\" in \"" + std::string(name) + "\"");
    if (type == metric_type::histogram && label == "le")
      fail("histogram \"" + std::string(name) + "\" may not have a label named \"le\"");
    for (std::size_t j = 0; j < i; ++j)
      if (label_names[j] == label) fail("label \"" + label + "\" repeated in \"" + std::string(name) + "\"");
  }
}

template <class Range>
void check_values(std::string_view name, std::size_t label_count, const Range& values) {
  const auto count = static_cast<std::size_t>(std::distance(std::begin(values), std::end(values)));
  if (count != label_count)
    fail("\"" + std::string(name) + "\" has " + std::to_string(label_count) + " label(s), got " +
         std::to_string(count) + " value(s)");
  for (std::string_view v : values)
    if (!is_valid_utf8(v)) fail("label value of \"" + std::string(name) + "\" is not valid UTF-8");
}

void check_histogram_data(std::string_view name, const histogram_data& h) {
  try {
    check_bucket_bounds(h.upper_bounds);
  } catch (const std::invalid_argument& e) {
    fail("histogram \"" + std::string(name) + "\": " + e.what());
  }
  if (h.cumulative_counts.size() != h.upper_bounds.size())
    fail("histogram \"" + std::string(name) + "\": one cumulative count per upper bound expected");
  std::uint64_t previous = 0;
  for (std::uint64_t c : h.cumulative_counts) {
    if (c < previous) fail("histogram \"" + std::string(name) + "\": cumulative counts decrease");
    previous = c;
  }
  if (previous > h.count) fail("histogram \"" + std::string(name) + "\": a bucket count exceeds the total count");
}

/// `{a="x",b="y"` without the closing brace (nothing when there are no labels).
void append_labels_open(std::string& out, std::span<const std::string> names, std::span<const std::string> values) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    out += i == 0 ? '{' : ',';
    out += names[i];
    out += "=\"";
    append_escaped_label_value(out, values[i]);
    out += '"';
  }
}

void append_sample(std::string& out, std::string_view name, std::string_view suffix,
                   std::span<const std::string> names, std::span<const std::string> values, double value) {
  out += name;
  out += suffix;
  append_labels_open(out, names, values);
  if (!names.empty()) out += '}';
  out += ' ';
  append_value(out, value);
  out += '\n';
}

void append_bucket(std::string& out, std::string_view name, std::span<const std::string> names,
                   std::span<const std::string> values, std::string_view le, std::uint64_t count) {
  out += name;
  out += "_bucket";
  append_labels_open(out, names, values);
  out += names.empty() ? "{le=\"" : ",le=\"";
  out += le;
  out += "\"} ";
  out += std::to_string(count);
  out += '\n';
}

void append_children(std::string& out, const family_data& f, const std::vector<const child_data*>& children) {
  out += "# HELP ";
  out += f.name;
  if (!f.help.empty()) {
    out += ' ';
    append_escaped_help(out, f.help);
  }
  out += "\n# TYPE ";
  out += f.name;
  out += ' ';
  out += type_name(f.type);
  out += '\n';
  const std::span<const std::string> names = f.label_names;
  for (const child_data* c : children) {
    const std::span<const std::string> values = c->label_values;
    if (f.type != metric_type::histogram) {
      append_sample(out, f.name, "", names, values, c->value);
      continue;
    }
    const histogram_data& h = c->histogram;
    std::string le;
    for (std::size_t i = 0; i < h.upper_bounds.size(); ++i) {
      le.clear();
      append_value(le, h.upper_bounds[i]);
      append_bucket(out, f.name, names, values, le, h.cumulative_counts[i]);
    }
    append_bucket(out, f.name, names, values, "+Inf", h.count);
    append_sample(out, f.name, "_sum", names, values, h.sum);
    append_sample(out, f.name, "_count", names, values, static_cast<double>(h.count));
  }
}

/// The series names a family writes (a histogram writes four).
std::vector<std::string> series_names(const family& f) {
  if (f.type() != metric_type::histogram) return {f.name()};
  return {f.name(), f.name() + "_bucket", f.name() + "_sum", f.name() + "_count"};
}

std::vector<std::string_view> as_views(std::span<const std::string> values) {
  return {values.begin(), values.end()};
}

}  // namespace

std::string_view type_name(metric_type type) noexcept {
  switch (type) {
    case metric_type::counter: return "counter";
    case metric_type::gauge: return "gauge";
    case metric_type::histogram: return "histogram";
  }
  return "untyped";
}

bool is_valid_metric_name(std::string_view name) noexcept {
  if (name.empty() || name.starts_with("__")) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!(is_ascii_letter(c) || c == '_' || c == ':' || (i > 0 && is_ascii_digit(c)))) return false;
  }
  return true;
}

bool is_valid_label_name(std::string_view name) noexcept {
  if (name.empty() || name.starts_with("__")) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!(is_ascii_letter(c) || c == '_' || (i > 0 && is_ascii_digit(c)))) return false;
  }
  return true;
}

bool is_valid_utf8(std::string_view text) noexcept {
  return covenant::detail::first_invalid_utf8(text) == std::string_view::npos;
}

void append_value(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "NaN";
    return;
  }
  if (std::isinf(value)) {
    out += value > 0 ? "+Inf" : "-Inf";
    return;
  }
  constexpr double exact_integer_limit = 9007199254740992.0;  // 2^53
  char buffer[64];
  std::to_chars_result result{};
  if (std::fabs(value) < exact_integer_limit && value == std::trunc(value)) {
    result = std::to_chars(buffer, buffer + sizeof buffer, static_cast<std::int64_t>(value));
  } else {
    result = std::to_chars(buffer, buffer + sizeof buffer, value);
  }
  out.append(buffer, result.ptr);
}

void append_escaped_label_value(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

void append_escaped_help(std::string& out, std::string_view help) {
  for (char c : help) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

void check_bucket_bounds(std::span<const double> upper_bounds) {
  for (std::size_t i = 0; i < upper_bounds.size(); ++i) {
    if (!std::isfinite(upper_bounds[i])) fail("bucket upper bounds must be finite");
    if (i > 0 && !(upper_bounds[i - 1] < upper_bounds[i])) fail("bucket upper bounds must be strictly increasing");
  }
}

std::vector<double> default_seconds_buckets() { return {0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120}; }

void append_family(std::string& out, const family_data& f) {
  check_family(f.type, f.name, f.help, f.label_names);
  std::vector<const child_data*> children;
  children.reserve(f.children.size());
  for (const child_data& c : f.children) {
    check_values(f.name, f.label_names.size(), c.label_values);
    if (f.type == metric_type::histogram) check_histogram_data(f.name, c.histogram);
    children.push_back(&c);
  }
  const detail::label_values_less less;
  std::sort(children.begin(), children.end(),
            [&](const child_data* a, const child_data* b) { return less(a->label_values, b->label_values); });
  for (std::size_t i = 1; i < children.size(); ++i)
    if (!less(children[i - 1]->label_values, children[i]->label_values))
      fail("\"" + f.name + "\" has two children with the same label values");
  if (children.empty()) return;
  const std::size_t size = out.size();
  try {
    append_children(out, f, children);
  } catch (...) {
    out.resize(size);
    throw;
  }
}

void append_family(std::string& out, const family& f) { f.append_to(out); }

// ---------------------------------------------------------------------------
// Children
// ---------------------------------------------------------------------------

void counter::inc(double amount) {
  if (std::isnan(amount) || amount < 0) fail("a counter can only increase");
  atomic_add(value_, amount);
}

double counter::value() const noexcept { return value_.load(std::memory_order_relaxed); }

void gauge::set(double value) noexcept { value_.store(value, std::memory_order_relaxed); }
void gauge::inc(double amount) noexcept { atomic_add(value_, amount); }
void gauge::dec(double amount) noexcept { atomic_add(value_, -amount); }
double gauge::value() const noexcept { return value_.load(std::memory_order_relaxed); }

histogram::histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  check_bucket_bounds(bounds_);
  counts_ = std::make_unique<std::atomic<std::uint64_t>[]>(bounds_.size() + 1);
}

void histogram::observe(double value) noexcept {
  if (std::isnan(value)) return;
  const auto bucket = static_cast<std::size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  atomic_add(sum_, value);
}

histogram_data histogram::collect() const {
  histogram_data out;
  out.upper_bounds = bounds_;
  out.cumulative_counts.reserve(bounds_.size());
  std::uint64_t running = 0;
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    out.cumulative_counts.push_back(running);
  }
  out.count = running + counts_[bounds_.size()].load(std::memory_order_relaxed);
  out.sum = sum_.load(std::memory_order_relaxed);
  return out;
}

// ---------------------------------------------------------------------------
// Families
// ---------------------------------------------------------------------------

family::family(metric_type type, std::string name, std::string help, std::vector<std::string> label_names)
    : type_(type), name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {
  check_family(type_, name_, help_, label_names_);
}

family::~family() = default;

void family::check_label_values(std::span<const std::string_view> values) const {
  check_values(name_, label_names_.size(), values);
}

family_data family::empty_data() const {
  family_data out;
  out.name = name_;
  out.help = help_;
  out.type = type_;
  out.label_names = label_names_;
  return out;
}

void family::append_to(std::string& out) const { append_family(out, collect()); }

counter_family::counter_family(std::string name, std::string help, std::vector<std::string> label_names)
    : family(metric_type::counter, std::move(name), std::move(help), std::move(label_names)) {
  if (this->label_names().empty()) with();
}

counter& counter_family::with(std::span<const std::string_view> label_values) {
  return children_.get(label_values, [&] {
    check_label_values(label_values);
    return std::make_unique<counter>();
  });
}
counter& counter_family::with(std::initializer_list<std::string_view> label_values) {
  return with(std::span<const std::string_view>(label_values.begin(), label_values.size()));
}
counter& counter_family::with(std::span<const std::string> label_values) {
  return children_.get(label_values, [&] {
    check_label_values(as_views(label_values));
    return std::make_unique<counter>();
  });
}

family_data counter_family::collect() const {
  family_data out = empty_data();
  children_.for_each([&](const std::vector<std::string>& values, const counter& c) {
    out.children.push_back(child_data{values, c.value(), {}});
  });
  return out;
}

gauge_family::gauge_family(std::string name, std::string help, std::vector<std::string> label_names)
    : family(metric_type::gauge, std::move(name), std::move(help), std::move(label_names)) {
  if (this->label_names().empty()) with();
}

gauge& gauge_family::with(std::span<const std::string_view> label_values) {
  return children_.get(label_values, [&] {
    check_label_values(label_values);
    return std::make_unique<gauge>();
  });
}
gauge& gauge_family::with(std::initializer_list<std::string_view> label_values) {
  return with(std::span<const std::string_view>(label_values.begin(), label_values.size()));
}
gauge& gauge_family::with(std::span<const std::string> label_values) {
  return children_.get(label_values, [&] {
    check_label_values(as_views(label_values));
    return std::make_unique<gauge>();
  });
}

family_data gauge_family::collect() const {
  family_data out = empty_data();
  children_.for_each([&](const std::vector<std::string>& values, const gauge& g) {
    out.children.push_back(child_data{values, g.value(), {}});
  });
  return out;
}

histogram_family::histogram_family(std::string name, std::string help, std::vector<std::string> label_names,
                                   std::vector<double> upper_bounds)
    : family(metric_type::histogram, std::move(name), std::move(help), std::move(label_names)),
      bounds_(std::move(upper_bounds)) {
  check_bucket_bounds(bounds_);
  if (this->label_names().empty()) with();
}

histogram& histogram_family::with(std::span<const std::string_view> label_values) {
  return children_.get(label_values, [&] {
    check_label_values(label_values);
    return std::make_unique<histogram>(bounds_);
  });
}
histogram& histogram_family::with(std::initializer_list<std::string_view> label_values) {
  return with(std::span<const std::string_view>(label_values.begin(), label_values.size()));
}
histogram& histogram_family::with(std::span<const std::string> label_values) {
  return children_.get(label_values, [&] {
    check_label_values(as_views(label_values));
    return std::make_unique<histogram>(bounds_);
  });
}

family_data histogram_family::collect() const {
  family_data out = empty_data();
  children_.for_each([&](const std::vector<std::string>& values, const histogram& h) {
    out.children.push_back(child_data{values, 0, h.collect()});
  });
  return out;
}

// ---------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------

registry::registry() = default;
registry::~registry() = default;

family& registry::add(std::unique_ptr<family> f) {
  const std::vector<std::string> names = series_names(*f);
  std::lock_guard lock(mutex_);
  for (const auto& existing : families_)
    for (const std::string& taken : series_names(*existing))
      for (const std::string& name : names)
        if (name == taken)
          fail("\"" + f->name() + "\" collides with the already registered \"" + existing->name() + "\"");
  families_.push_back(std::move(f));
  return *families_.back();
}

counter_family& registry::add_counter(std::string name, std::string help, std::vector<std::string> label_names) {
  return static_cast<counter_family&>(
      add(std::make_unique<counter_family>(std::move(name), std::move(help), std::move(label_names))));
}

gauge_family& registry::add_gauge(std::string name, std::string help, std::vector<std::string> label_names) {
  return static_cast<gauge_family&>(
      add(std::make_unique<gauge_family>(std::move(name), std::move(help), std::move(label_names))));
}

histogram_family& registry::add_histogram(std::string name, std::string help, std::vector<std::string> label_names,
                                          std::vector<double> upper_bounds) {
  return static_cast<histogram_family&>(add(std::make_unique<histogram_family>(
      std::move(name), std::move(help), std::move(label_names), std::move(upper_bounds))));
}

std::vector<family_data> registry::collect() const {
  std::lock_guard lock(mutex_);
  std::vector<family_data> out;
  out.reserve(families_.size());
  for (const auto& f : families_) out.push_back(f->collect());
  return out;
}

void registry::append_to(std::string& out) const {
  for (const family_data& f : collect()) append_family(out, f);
}

std::string registry::render() const {
  std::string out;
  append_to(out);
  return out;
}

}  // namespace covenant::prometheus
