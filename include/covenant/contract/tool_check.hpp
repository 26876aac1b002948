// covenant/contract/tool_check.hpp - checks that call out to the application: is this URL reachable, does
// this document id exist, is this product in stock.
//
//     bool reachable(const std::string& url);                       // the application's predicate
//
//     covenant::field<&Resource::url>("Address.",
//         covenant::on_fail::filter(covenant::tool_check{reachable, "must be a reachable URL",
//                                                        {.max_concurrency = 8, .log_failures_as = "likely hallucination"}},
//                                   "no_valid_resources"))
//
// A tool check is a validator like the others (its rule is shown to the model, its on-fail action
// applies), but its predicate runs after the reply is read, not while it is decoded: every value
// it applies to in the output (each url of every resource) is checked concurrently, at most
// `max_concurrency` at once (on threads started for the check and joined before the call goes
// on), each distinct value once per call, and with `ttl` its verdict is kept across calls. An
// exception from the predicate counts as "invalid" and is logged at error level with the value; a
// failure of the logging itself never breaks the call. Tool checks run before post(), in typed
// contracts (covenant::contract); decode() alone does not run them.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "covenant/types/encode.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/types/validators.hpp"

namespace covenant {

struct tool_check_options {
  /// Values checked at once (1: one after the other).
  std::size_t max_concurrency = 8;
  /// Verdicts kept across calls for this long (0: only for the call).
  std::chrono::milliseconds ttl{0};
  /// When set, each value that fails is logged at warning level with this label ("likely
  /// hallucination").
  std::string_view log_failures_as{};
};

namespace detail {

/// The type-erased side of a tool check (run by the contract, see detail::apply_tool_checks()).
class COVENANT_API tool_check_base : public schema::custom_check {
 public:
  tool_check_base(std::string rule, const tool_check_options& options);
  ~tool_check_base() override;
  [[nodiscard]] bool is_tool() const noexcept override { return true; }
  /// The predicate on a value (may throw: invalid).
  [[nodiscard]] virtual bool run(const void* value) const = 0;
  /// The value as text: the cache key, and what logs show.
  [[nodiscard]] virtual std::string key(const void* value) const = 0;

  [[nodiscard]] const std::string& rule() const noexcept { return rule_; }
  [[nodiscard]] std::size_t max_concurrency() const noexcept { return max_concurrency_; }
  [[nodiscard]] const std::string& log_failures_as() const noexcept { return log_as_; }
  /// The verdict kept for `key`, if any and not expired (ttl > 0 only).
  [[nodiscard]] int cached(const std::string& key) const;  // -1: none, 0: invalid, 1: valid
  void remember(const std::string& key, bool ok) const;

 private:
  struct cache;
  std::string rule_;
  std::size_t max_concurrency_;
  std::chrono::milliseconds ttl_;
  std::string log_as_;
  std::unique_ptr<cache> cache_;
};

template <class F, class Fn>
class native_tool_check final : public tool_check_base {
 public:
  native_tool_check(Fn fn, std::string rule, const tool_check_options& options)
      : tool_check_base(std::move(rule), options), fn_(fn) {}
  [[nodiscard]] bool run(const void* value) const override { return fn_(*static_cast<const F*>(value)); }
  [[nodiscard]] std::string key(const void* value) const override {
    if constexpr (std::is_same_v<F, std::string>) return *static_cast<const F*>(value);
    else return to_json(*static_cast<const F*>(value));
  }

 private:
  Fn fn_;
};

}  // namespace detail

/// A check calling the application's predicate `bool(const F&)` (see the top of this file).
template <class Fn>
struct tool_check {
  static constexpr bool is_covenant_validator = true;
  Fn fn;
  std::string_view rule;
  tool_check_options options{};
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_invocable_r_v<bool, const Fn&, const F&>,
                  "covenant::tool_check: the predicate must take the field's value as `const F&` and return bool");
    schema::constraint& c = detail::add_constraint(t, schema::constraint_kind::predicate);
    c.text = std::string(rule);
    c.custom = std::make_shared<detail::native_tool_check<F, Fn>>(fn, c.text, options);
  }
};
template <class Fn>
tool_check(Fn, std::string_view) -> tool_check<Fn>;
template <class Fn, std::size_t N>
tool_check(Fn, const char (&)[N]) -> tool_check<Fn>;
template <class Fn>
tool_check(Fn, std::string_view, tool_check_options) -> tool_check<Fn>;
template <class Fn, std::size_t N>
tool_check(Fn, const char (&)[N], tool_check_options) -> tool_check<Fn>;

}  // namespace covenant
