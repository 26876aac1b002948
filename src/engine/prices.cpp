// Token prices by model (covenant/engine/prices.hpp). A price file is read by the typed decoder
// into a plain struct, so its issues come with paths, all at once, like a model's reply's.
#include "covenant/engine/prices.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "covenant/read/decode.hpp"
#include "covenant/types/formats.hpp"

namespace covenant {

namespace detail {

/// A price file: {"taken": "2026-11-01", "source": "...", "models": {"name or pattern": {...}}}.
/// (Not in an unnamed namespace: reflection gives the type a variable of external linkage.)
struct price_file {
  std::string taken;
  std::optional<std::string> source;
  std::map<std::string, token_price> models;
};

}  // namespace detail

template <>
struct describe<detail::price_file> {
  static constexpr auto fields = covenant::fields<detail::price_file>(
      covenant::field<&detail::price_file::taken>("the date the prices were taken", covenant::date{}),
      covenant::field<&detail::price_file::source>("where they were taken from"),
      covenant::field<&detail::price_file::models>("prices by model name or pattern (* for any characters)",
                                                   covenant::non_empty{}));
};

double cost_of(const usage& u, const token_price& p) noexcept {
  const auto cached = static_cast<double>(std::min(u.cached_input_tokens, u.input_tokens));
  const auto written = static_cast<double>(std::min(u.cache_write_tokens, u.input_tokens - std::min(u.cached_input_tokens, u.input_tokens)));
  const double fresh = static_cast<double>(u.input_tokens) - cached - written;
  const auto reasoning = static_cast<double>(std::min(u.reasoning_tokens, u.output_tokens));
  const double answer = static_cast<double>(u.output_tokens) - reasoning;
  const double dollars = fresh * p.input + cached * p.cached_input.value_or(p.input) +
                         written * p.cache_write.value_or(p.input) + answer * p.output +
                         reasoning * p.reasoning.value_or(p.output);
  return dollars / 1e6;
}

std::string format_usd(double dollars) {
  char text[64];
  std::snprintf(text, sizeof text, dollars >= 1 ? "$%.4f" : "$%.6f", dollars);
  return text;
}

void price_table::set(std::string model, token_price price) {
  const auto stars = static_cast<std::size_t>(std::count(model.begin(), model.end(), '*'));
  for (entry& e : entries_) {
    if (e.model == model) {
      e.price = price;
      return;
    }
  }
  entries_.push_back(entry{std::move(model), price, 0, stars != 0});
  entries_.back().literal = entries_.back().model.size() - stars;
}

namespace {

// Whether `name` matches `pattern`, where '*' stands for any run of characters.
bool matches(std::string_view pattern, std::string_view name) noexcept {
  // The classic greedy match with one backtrack point: linear in practice, no recursion.
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace

const token_price* price_table::find(std::string_view model) const noexcept {
  const entry* best = nullptr;
  for (const entry& e : entries_) {
    if (!e.pattern) {
      if (e.model == model) return &e.price;
      continue;
    }
    if ((best == nullptr || e.literal > best->literal) && matches(e.model, model)) best = &e;
  }
  return best == nullptr ? nullptr : &best->price;
}

std::optional<double> price_table::cost(std::string_view model, const usage& u) const noexcept {
  const token_price* p = find(model);
  if (p == nullptr) return std::nullopt;
  return cost_of(u, *p);
}

price_table_result price_table::try_parse(std::string_view json) {
  price_table_result out;
  decode_options o;
  o.reject_unknown_fields = true;  // a misspelt price must not pass as absent
  decoded<detail::price_file> d = try_decode<detail::price_file>(json, o);
  out.issues = std::move(d.issues);
  if (d.value) {
    for (const auto& [model, price] : d.value->models) {
      if (!model.empty()) continue;
      issue i;
      i.path.key("models").key("");
      i.code = issue_code::constraint_violation;
      i.expected = "a model name or pattern";
      i.message = "a model name must not be empty";
      out.issues.push_back(std::move(i));
    }
  }
  if (!out.issues.empty() || !d.value) return out;
  out.table.taken_ = std::move(d.value->taken);
  for (auto& [model, price] : d.value->models) out.table.set(model, price);
  return out;
}

price_table price_table::parse(std::string_view json, std::string_view source) {
  price_table_result r = try_parse(json);
  if (!r.ok()) throw price_error(source, std::move(r.issues));
  return std::move(r.table);
}

price_table_result price_table::try_load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || in.bad()) {
    const int err = errno;
    price_table_result out;
    issue i;
    i.code = issue_code::parse_error;
    i.message = "cannot read the price file " + file.string() + (err != 0 ? std::string(": ") + std::strerror(err) : "");
    out.issues.push_back(std::move(i));
    return out;
  }
  return try_parse(text.str());
}

price_table price_table::load(const std::filesystem::path& file) {
  price_table_result r = try_load(file);
  if (!r.ok()) throw price_error(file.string(), std::move(r.issues));
  return std::move(r.table);
}

namespace {

std::string error_text(std::string_view source, const issue_list& issues) {
  std::string s(source);
  s += issues.size() == 1 ? ": " : ": " + std::to_string(issues.size()) + " issues:";
  for (const issue& i : issues) {
    if (issues.size() != 1) s += "\n  ";
    s += i.to_string();
  }
  return s;
}

}  // namespace

price_error::price_error(std::string_view source, issue_list issues)
    : std::runtime_error(error_text(source, issues)), issues_(std::move(issues)) {}

}  // namespace covenant
