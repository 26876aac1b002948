// covenant/types/validators.hpp - field validators.
//
// A validator is a small literal type that contributes a constraint to the schema model. The
// same constraint is exported as a JSON Schema keyword, shown in the prompt text and checked when
// decoding, so the three never disagree. Attach validators to fields in covenant::describe<T>:
//
//     covenant::field<&FinalAnswer::confidence>("Confidence score", covenant::range{0.0, 1.0})
//
// Lengths of strings count Unicode code points (not bytes, not UTF-16 units).
// Patterns use RE2 syntax and, like JSON Schema's `pattern`, match anywhere in the string unless
// anchored with ^...$. RE2 runs in time linear in the input, so model-controlled text cannot
// trigger catastrophic backtracking.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "covenant/types/detail/traits.hpp"
#include "covenant/types/reflect.hpp"
#include "covenant/types/schema.hpp"

namespace covenant {

namespace detail {

template <class T>
bool deep_equal(const T& a, const T& b);

template <class T>
bool deep_equal_impl(const T& a, const T& b) {
  if constexpr (is_optional<T>::value) {
    if (a.has_value() != b.has_value()) return false;
    return !a.has_value() || deep_equal(*a, *b);
  } else if constexpr (is_vector<T>::value || is_string_map<T>::value) {
    if (a.size() != b.size()) return false;
    if constexpr (is_vector<T>::value) {
      for (std::size_t i = 0; i < a.size(); ++i)
        if (!deep_equal(a[i], b[i])) return false;
      return true;
    } else {
      for (const auto& [k, v] : a) {
        auto it = b.find(k);
        if (it == b.end() || !deep_equal(v, it->second)) return false;
      }
      return true;
    }
  } else if constexpr (is_variant<T>::value) {
    if (a.index() != b.index()) return false;
    return std::visit(
        [&](const auto& av) {
          using A = std::decay_t<decltype(av)>;
          return deep_equal(av, *std::get_if<A>(&b));
        },
        a);
  } else if constexpr (std::is_class_v<T> && std::is_aggregate_v<T>) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return (deep_equal(boost::pfr::get<I>(a), boost::pfr::get<I>(b)) && ...);
    }(std::make_index_sequence<field_count_v<T>>{});
  } else {
    return a == b;
  }
}

template <class T>
bool deep_equal(const T& a, const T& b) {
  return deep_equal_impl(a, b);
}

/// Adds a constraint to `t` (made and grown in the library, like the rest of a schema model).
COVENANT_API void add_number_constraint(schema::type& t, schema::constraint_kind k, double v);
COVENANT_API void add_count_constraint(schema::type& t, schema::constraint_kind k, std::size_t n);
COVENANT_API void add_format_constraint(schema::type& t, std::string_view format);
/// A new constraint of kind `k` on `t`, for the caller to fill.
COVENANT_API schema::constraint& add_constraint(schema::type& t, schema::constraint_kind k);

template <class F, class Fn>
class native_predicate final : public schema::custom_check {
 public:
  explicit native_predicate(Fn fn) : fn_(fn) {}
  [[nodiscard]] bool has_native() const noexcept override { return true; }
  [[nodiscard]] std::optional<std::string> check_native(const void* value) const override {
    using R = std::invoke_result_t<const Fn&, const F&>;
    if constexpr (std::is_same_v<R, bool>) {
      if (fn_(*static_cast<const F*>(value))) return std::nullopt;
      return std::string();
    } else {
      return fn_(*static_cast<const F*>(value));
    }
  }

 private:
  Fn fn_;
};

/// Keeps the first of the elements `same` calls equal, in order; true when any was dropped (the
/// fix of unique_items and unique_by).
template <class V, class Same>
bool keep_first_of_equal(V& v, Same same) {
  const std::size_t before = v.size();
  std::size_t kept = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    bool seen = false;
    for (std::size_t j = 0; j < kept && !seen; ++j) seen = same(v[j], v[i]);
    if (seen) continue;
    if (kept != i) v[kept] = std::move(v[i]);
    ++kept;
  }
  v.erase(v.begin() + static_cast<std::ptrdiff_t>(kept), v.end());
  return kept != before;
}

template <class F>
class native_unique_items final : public schema::custom_check {
 public:
  [[nodiscard]] bool has_native() const noexcept override { return true; }
  [[nodiscard]] std::optional<std::string> check_native(const void* value) const override {
    const auto& v = *static_cast<const F*>(value);
    for (std::size_t i = 0; i < v.size(); ++i)
      for (std::size_t j = i + 1; j < v.size(); ++j)
        if (deep_equal(v[i], v[j]))
          return "items must be unique ([" + std::to_string(i) + "] and [" + std::to_string(j) + "] are equal)";
    return std::nullopt;
  }
  bool fix_native(void* value) const override {
    return keep_first_of_equal(*static_cast<F*>(value), [](const auto& a, const auto& b) { return deep_equal(a, b); });
  }
};

COVENANT_API std::string render_unique_by_duplicate(std::string_view key, std::string_view value_json,
                                                    std::size_t first, std::size_t second);
COVENANT_API std::string encode_scalar_for_message(const std::string& v);
template <class V>
std::string encode_scalar_for_message(const V& v) {
  if constexpr (std::is_arithmetic_v<V>) return std::to_string(v);
  else return {};
}

template <class F, auto MemberPtr>
class native_unique_by final : public schema::custom_check {
 public:
  explicit native_unique_by(std::string_view key) : key_(key) {}
  [[nodiscard]] bool has_native() const noexcept override { return true; }
  [[nodiscard]] std::optional<std::string> check_native(const void* value) const override {
    const auto& v = *static_cast<const F*>(value);
    for (std::size_t i = 0; i < v.size(); ++i)
      for (std::size_t j = i + 1; j < v.size(); ++j)
        if (deep_equal(v[i].*MemberPtr, v[j].*MemberPtr))
          return render_unique_by_duplicate(key_, encode_scalar_for_message(v[i].*MemberPtr), i, j);
    return std::nullopt;
  }
  bool fix_native(void* value) const override {
    return keep_first_of_equal(*static_cast<F*>(value),
                               [](const auto& a, const auto& b) { return deep_equal(a.*MemberPtr, b.*MemberPtr); });
  }

 private:
  std::string key_;
};

template <class... C>
constexpr auto choice_type() {
  if constexpr ((std::is_convertible_v<C, std::string_view> && ...)) {
    return std::type_identity<std::string_view>{};
  } else if constexpr ((is_integer_v<C> && ...)) {
    return std::type_identity<std::int64_t>{};  // exact, also beyond 2^53
  } else if constexpr ((is_number_v<C> && ...)) {
    return std::type_identity<double>{};
  } else {
    static_assert(dependent_false_v<C...>, "covenant::one_of lists either strings or numbers, not both");
  }
}
template <class... C>
using choice_type_t = typename decltype(choice_type<C...>())::type;

template <class V>
constexpr bool validator_has_fix = requires { requires V::has_fix; };

}  // namespace detail

/// Marks a type as a covenant validator (customization point for your own validators: give your
/// type `static constexpr bool is_covenant_validator = true;` and
/// `template <class F> void apply(schema::type&) const`).
template <class V>
concept validator = requires { requires V::is_covenant_validator; };

/// number >= value
struct minimum {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  double value;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_number_v<F>, "covenant::minimum applies to numeric fields");
    detail::add_number_constraint(t, schema::constraint_kind::minimum, value);
  }
};

/// number <= value
struct maximum {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  double value;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_number_v<F>, "covenant::maximum applies to numeric fields");
    detail::add_number_constraint(t, schema::constraint_kind::maximum, value);
  }
};

/// number > value
struct exclusive_minimum {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  double value;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_number_v<F>, "covenant::exclusive_minimum applies to numeric fields");
    detail::add_number_constraint(t, schema::constraint_kind::exclusive_minimum, value);
  }
};

/// number < value
struct exclusive_maximum {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  double value;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_number_v<F>, "covenant::exclusive_maximum applies to numeric fields");
    detail::add_number_constraint(t, schema::constraint_kind::exclusive_maximum, value);
  }
};

/// lo <= number <= hi
struct range {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  double lo;
  double hi;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_number_v<F>, "covenant::range applies to numeric fields");
    detail::add_number_constraint(t, schema::constraint_kind::minimum, lo);
    detail::add_number_constraint(t, schema::constraint_kind::maximum, hi);
  }
};

/// number > 0
struct positive {
  static constexpr bool is_covenant_validator = true;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_number_v<F>, "covenant::positive applies to numeric fields");
    detail::add_number_constraint(t, schema::constraint_kind::exclusive_minimum, 0);
  }
};

/// number >= 0
struct non_negative {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_number_v<F>, "covenant::non_negative applies to numeric fields");
    detail::add_number_constraint(t, schema::constraint_kind::minimum, 0);
  }
};

/// number is a multiple of value
struct multiple_of {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  double value;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_number_v<F>, "covenant::multiple_of applies to numeric fields");
    detail::add_number_constraint(t, schema::constraint_kind::multiple_of, value);
  }
};

/// string has at least n code points
struct min_length {
  static constexpr bool is_covenant_validator = true;
  std::size_t n;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_same_v<F, std::string>,
                  "covenant::min_length applies to string fields (use covenant::min_items for lists)");
    detail::add_count_constraint(t, schema::constraint_kind::min_length, n);
  }
};

/// string has at most n code points
struct max_length {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  std::size_t n;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_same_v<F, std::string>,
                  "covenant::max_length applies to string fields (use covenant::max_items for lists)");
    detail::add_count_constraint(t, schema::constraint_kind::max_length, n);
  }
};

/// lo <= code points <= hi
struct length {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  std::size_t lo;
  std::size_t hi;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_same_v<F, std::string>,
                  "covenant::length applies to string fields (use covenant::item_count for lists)");
    detail::add_count_constraint(t, schema::constraint_kind::min_length, lo);
    detail::add_count_constraint(t, schema::constraint_kind::max_length, hi);
  }
};

/// list or map has at least n elements
struct min_items {
  static constexpr bool is_covenant_validator = true;
  std::size_t n;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_container_v<F>, "covenant::min_items applies to std::vector and std::map fields");
    detail::add_count_constraint(t, schema::constraint_kind::min_items, n);
  }
};

/// list or map has at most n elements
struct max_items {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  std::size_t n;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_container_v<F>, "covenant::max_items applies to std::vector and std::map fields");
    detail::add_count_constraint(t, schema::constraint_kind::max_items, n);
  }
};

/// lo <= elements <= hi
struct item_count {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  std::size_t lo;
  std::size_t hi;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_container_v<F>, "covenant::item_count applies to std::vector and std::map fields");
    detail::add_count_constraint(t, schema::constraint_kind::min_items, lo);
    detail::add_count_constraint(t, schema::constraint_kind::max_items, hi);
  }
};

/// string: at least one code point; list/map: at least one element
struct non_empty {
  static constexpr bool is_covenant_validator = true;
  template <class F>
  void apply(schema::type& t) const {
    if constexpr (std::is_same_v<F, std::string>) {
      detail::add_count_constraint(t, schema::constraint_kind::min_length, 1);
    } else if constexpr (detail::is_container_v<F>) {
      detail::add_count_constraint(t, schema::constraint_kind::min_items, 1);
    } else {
      static_assert(detail::dependent_false_v<F>,
                    "covenant::non_empty applies to string, std::vector and std::map fields");
    }
  }
};

/// value is one of the listed strings (string fields) or numbers (numeric fields)
template <class V, std::size_t N>
struct one_of {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = std::is_same_v<V, std::string_view>;  // the listed spelling
  std::array<V, N> choices;
  template <class... C>
  constexpr explicit one_of(C... c) : choices{static_cast<V>(c)...} {}
  template <class F>
  void apply(schema::type& t) const {
    if constexpr (std::is_same_v<V, std::string_view>) {
      static_assert(std::is_same_v<F, std::string>, "covenant::one_of with strings applies to string fields");
    } else {
      static_assert(detail::is_number_v<F>, "covenant::one_of with numbers applies to numeric fields");
    }
    schema::constraint& c = detail::add_constraint(t, schema::constraint_kind::one_of);
    for (const auto& ch : choices) {
      if constexpr (std::is_same_v<V, std::string_view>) c.values.emplace_back(boost::json::string_view(ch.data(), ch.size()));
      else if constexpr (detail::is_integer_v<F>) c.values.emplace_back(static_cast<std::int64_t>(ch));
      else c.values.emplace_back(static_cast<double>(ch));
    }
  }
};
template <class... C>
one_of(C...) -> one_of<detail::choice_type_t<C...>, sizeof...(C)>;

/// string contains a match of an RE2 regular expression (anchor with ^...$ for a full match)
struct pattern {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  std::string_view regex;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_same_v<F, std::string>, "covenant::pattern applies to string fields");
    std::string error;
    auto compiled = schema::compile_pattern(regex, &error);
    if (!compiled)
      throw std::invalid_argument("covenant::pattern: invalid regular expression '" + std::string(regex) + "': " + error);
    schema::constraint& c = detail::add_constraint(t, schema::constraint_kind::pattern);
    c.text = std::string(regex);
    c.regex = std::move(compiled);
  }
};

/// string is an absolute URL with a scheme and host (http, https, ftp, ...)
struct url {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_same_v<F, std::string>, "covenant::url applies to string fields");
    detail::add_format_constraint(t, "uri");
  }
};

/// string is a UUID in 8-4-4-4-12 hexadecimal form
struct uuid {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_same_v<F, std::string>, "covenant::uuid applies to string fields");
    detail::add_format_constraint(t, "uuid");
  }
};

/// string is an ISO 8601 / RFC 3339 date-time with a time zone: 2025-12-16T10:30:00Z
struct iso8601 {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_same_v<F, std::string>, "covenant::iso8601 applies to string fields");
    detail::add_format_constraint(t, "date-time");
  }
};
using date_time = iso8601;

/// string is a calendar date: 2025-12-16
struct date {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_same_v<F, std::string>, "covenant::date applies to string fields");
    detail::add_format_constraint(t, "date");
  }
};

/// string is an e-mail address (local@domain.tld)
struct email {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_same_v<F, std::string>, "covenant::email applies to string fields");
    detail::add_format_constraint(t, "email");
  }
};

/// list elements are pairwise distinct
struct unique_items {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_vector<F>::value, "covenant::unique_items applies to std::vector fields");
    detail::add_constraint(t, schema::constraint_kind::unique_items).custom =
        std::make_shared<detail::native_unique_items<F>>();
  }
};

/// list elements (aggregates) have pairwise distinct values of one member: unique_by<&Result::id>
template <auto MemberPtr>
struct unique_by {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = true;
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_member_object_pointer_v<decltype(MemberPtr)>,
                  "covenant::unique_by<&T::m>: m must be a data member");
    static_assert(detail::is_vector<F>::value, "covenant::unique_by applies to std::vector fields");
    using E = typename F::value_type;
    static_assert(std::is_same_v<member_class_t<MemberPtr>, E>,
                  "covenant::unique_by<&T::m>: T must be the element type of the list");
    constexpr std::size_t idx = member_index<E, MemberPtr>();
    schema::constraint& c = detail::add_constraint(t, schema::constraint_kind::unique_by);
    c.text = std::string(field_name_v<E, idx>);
    c.custom = std::make_shared<detail::native_unique_by<F, MemberPtr>>(c.text);
  }
};

/// A custom check with the rule the model is shown: predicate{[](double x) { ... }, "must be ..."}.
/// The callable takes the field's value (const F&) and returns bool, or std::optional<std::string>
/// (nullopt = satisfied, otherwise the violation message).
///
/// predicate{...}.streaming_safe() says the verdict depends on nothing but the value itself, so a
/// streamed reply is judged by it as soon as that value is finished and a violation stops the
/// stream early (contract_options::early_stop). For fields that are strings or numbers.
template <class Fn>
struct predicate {
  static constexpr bool is_covenant_validator = true;
  Fn fn;
  std::string_view rule;
  bool while_streaming = false;
  constexpr predicate(Fn f, std::string_view r) : fn(f), rule(r) {}
  /// The same check, also judged while the reply streams.
  [[nodiscard]] constexpr predicate streaming_safe() const {
    predicate p = *this;
    p.while_streaming = true;
    return p;
  }
  template <class F>
  void apply(schema::type& t) const {
    static_assert(std::is_invocable_v<const Fn&, const F&>,
                  "covenant::predicate: the callable must accept the field's value as `const F&`");
    using R = std::invoke_result_t<const Fn&, const F&>;
    static_assert(std::is_same_v<R, bool> || std::is_same_v<R, std::optional<std::string>>,
                  "covenant::predicate: the callable must return bool or std::optional<std::string>");
    schema::constraint& c = detail::add_constraint(t, schema::constraint_kind::predicate);
    c.text = std::string(rule);
    c.custom = std::make_shared<detail::native_predicate<F, Fn>>(fn);
    c.streaming_safe = while_streaming;
  }
};
template <class Fn>
predicate(Fn, std::string_view) -> predicate<Fn>;
template <class Fn, std::size_t N>
predicate(Fn, const char (&)[N]) -> predicate<Fn>;

/// Applies validators to every element of a list (or every value of a map):
/// each{non_empty{}, max_length{200}}
template <class... V>
struct each {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = (detail::validator_has_fix<V> && ...);
  std::tuple<V...> validators;
  constexpr explicit each(V... v) : validators(v...) {}
  template <class F>
  void apply(schema::type& t) const {
    static_assert(detail::is_container_v<F>, "covenant::each applies to std::vector and std::map fields");
    using E = detail::strip_optional_t<typename detail::container_value<F>::type>;
    schema::type& elem = detail::is_vector<F>::value ? t.args.at(0) : t.args.at(1);
    std::apply([&](const auto&... v) { (v.template apply<E>(elem), ...); }, validators);
  }
};

// ---------------------------------------------------------------------------------------------
// On-fail actions
// ---------------------------------------------------------------------------------------------

namespace detail {

// Sizes of the constraint lists of a type and of its arguments, in a fixed walk order.
inline void constraint_sizes(const schema::type& t, std::vector<std::size_t>& out) {
  out.push_back(t.constraints.size());
  for (const auto& a : t.args) constraint_sizes(a, out);
}
// Sets `action` on every constraint added since constraint_sizes() recorded `sizes`.
inline void mark_added(schema::type& t, const std::vector<std::size_t>& sizes, std::size_t& k, fail_action action,
                       std::string_view reason) {
  const std::size_t from = k < sizes.size() ? sizes[k] : 0;
  ++k;
  for (std::size_t i = from; i < t.constraints.size(); ++i) {
    t.constraints[i].on_fail = action;
    t.constraints[i].reason = std::string(reason);
  }
  for (auto& a : t.args) mark_added(a, sizes, k, action, reason);
}

}  // namespace detail

/// A validator with an on-fail action other than reask: on_fail::fix(range{0.0, 1.0}).
template <class V, fail_action A>
struct with_action {
  static constexpr bool is_covenant_validator = true;
  static constexpr bool has_fix = A == fail_action::fix;
  V inner;
  /// refrain, exception: the outcome's reason; filter: refrain with this reason when every item
  /// of a list is dropped.
  std::string_view reason{};
  template <class F>
  void apply(schema::type& t) const {
    if constexpr (A == fail_action::fix) {
      static_assert(detail::validator_has_fix<V>,
                    "covenant::on_fail::fix: this validator has no fix (validators with one: bounds and range, "
                    "multiple_of, max_length, length, max_items, item_count, string one_of, pattern and formats, "
                    "unique_items, unique_by)");
      static_assert(!detail::is_string_map<F>::value || (!std::is_same_v<V, max_items> && !std::is_same_v<V, item_count>),
                    "covenant::on_fail::fix: a map has no order to cut by (max_items can be fixed on lists only)");
    }
    std::vector<std::size_t> sizes;
    detail::constraint_sizes(t, sizes);
    inner.template apply<F>(t);
    std::size_t k = 0;
    detail::mark_added(t, sizes, k, A, reason);
  }
};

/// On-fail actions, each one a tag for invariants and a wrapper for validators:
///
///     covenant::field<&Answer::confidence>("...", covenant::on_fail::fix(covenant::range{0.0, 1.0}))
///     covenant::invariant<&Answer::sources>("...", fn, covenant::on_fail::refrain)
///
/// See docs/policies.md.
namespace on_fail {

template <fail_action A>
struct action_t {
  static constexpr fail_action value = A;
  template <class V>
  constexpr with_action<V, A> operator()(V v) const {
    static_assert(validator<V>, "covenant::on_fail: the argument must be a covenant validator");
    return with_action<V, A>{v, {}};
  }
  /// With a reason: refrain and exception report it as the outcome's reason; filter refrains
  /// with it when it drops every item of a list (on_fail::filter(check, "no_valid_resources")).
  template <class V>
  constexpr with_action<V, A> operator()(V v, std::string_view reason) const {
    static_assert(validator<V>, "covenant::on_fail: the argument must be a covenant validator");
    static_assert(A == fail_action::refrain || A == fail_action::exception || A == fail_action::filter,
                  "covenant::on_fail: a reason is given to refrain, exception or filter");
    return with_action<V, A>{v, reason};
  }
};

/// the issue goes back to the model (the default)
inline constexpr action_t<fail_action::reask> reask{};
/// the validator's own fix is applied and noted (validators without one do not compile)
inline constexpr action_t<fail_action::fix> fix{};
/// the failing list item or optional field is dropped and noted
inline constexpr action_t<fail_action::filter> filter{};
/// the call fails at once without asking again (reason "refrained")
inline constexpr action_t<fail_action::refrain> refrain{};
/// accepted; the failure is a note (check_failed)
inline constexpr action_t<fail_action::noop> noop{};
/// the call fails at once (reason "exception"); forward still runs
inline constexpr action_t<fail_action::exception> exception{};

}  // namespace on_fail

}  // namespace covenant
