// covenant/types/describe.hpp - side-car metadata for plain aggregates and enums.
//
// Structs stay plain aggregates; what the model must know about them lives beside them, in a
// specialization of covenant::describe<T>, keyed by pointer to member:
//
//     struct FinalAnswer { std::string answer; double confidence; std::vector<std::string> sources; };
//
//     template <> struct covenant::describe<FinalAnswer> {
//       static constexpr std::string_view description = "A validated answer.";
//       static constexpr auto fields = covenant::fields<FinalAnswer>(
//           covenant::field<&FinalAnswer::answer>("The final answer text", covenant::non_empty{}),
//           covenant::field<&FinalAnswer::confidence>("Confidence", covenant::range{0.0, 1.0}));
//       static constexpr auto invariants = covenant::invariants<FinalAnswer>(
//           covenant::invariant<&FinalAnswer::sources>("high confidence needs a source",
//               [](const FinalAnswer& a) { return a.confidence < 0.9 || !a.sources.empty(); }));
//     };
//
// Every member of `describe<T>` is optional, and a struct with no specialization works unchanged.
// Naming a member of another type, or an option that is not one, does not compile.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "covenant/types/reflect.hpp"
#include "covenant/types/validators.hpp"

namespace covenant {

/// Specialize for your aggregates and enums. Recognised members (all optional):
///   aggregates: `name`, `description`, `fields` (covenant::fields<T>(...)),
///               `invariants` (covenant::invariants<T>(...))
///   enums:      `name`, `description`, `values` (covenant::values<E>(...))
template <class T>
struct describe {};

/// JSON spelling of a field key or an enum value, when it differs from the C++ name.
struct alias {
  std::string_view name;
};

/// The field may be absent from the JSON; it then keeps its default member initializer, which
/// the JSON Schema shows as `default`.
struct defaulted {};

/// Extra spellings accepted for an enum value (the first spelling stays the one shown).
template <std::size_t N>
struct also_accept {
  std::array<std::string_view, N> names;
  template <class... S>
  constexpr explicit also_accept(S... s) : names{std::string_view(s)...} {}
};
template <class... S>
also_accept(S...) -> also_accept<sizeof...(S)>;

namespace detail {
template <class O>
struct is_also_accept : std::false_type {};
template <std::size_t N>
struct is_also_accept<also_accept<N>> : std::true_type {};

template <class O>
inline constexpr bool is_field_option_v =
    validator<O> || std::is_same_v<O, alias> || std::is_same_v<O, defaulted>;

template <class O>
inline constexpr bool is_value_option_v = std::is_same_v<O, alias> || is_also_accept<O>::value;

template <class... O>
struct first_type {
  using type = void;
};
template <class F, class... O>
struct first_type<F, O...> {
  using type = F;
};
}  // namespace detail

/// Metadata of one field: description and options (validators, alias, defaulted).
template <auto MemberPtr, class... Opts>
struct field_spec {
  static constexpr auto member = MemberPtr;
  std::string_view description;
  std::tuple<Opts...> options;
};

/// Metadata of the field `MemberPtr`: field<&T::m>("description", validators...).
template <auto MemberPtr, class... Opts>
constexpr field_spec<MemberPtr, Opts...> field(std::string_view description, Opts... opts) {
  static_assert(std::is_member_object_pointer_v<decltype(MemberPtr)>,
                "covenant::field<&T::m>: m must be a data member of T");
  static_assert((detail::is_field_option_v<Opts> && ...),
                "covenant::field: every option must be a validator (covenant::range, covenant::non_empty, ...), "
                "covenant::alias or covenant::defaulted");
  return {description, std::tuple<Opts...>(opts...)};
}

/// Metadata of the field `MemberPtr` without a description: field<&T::m>(validators...).
template <auto MemberPtr, class... Opts>
  requires(!std::is_convertible_v<typename detail::first_type<Opts...>::type, std::string_view>)
constexpr field_spec<MemberPtr, Opts...> field(Opts... opts) {
  return field<MemberPtr>(std::string_view{}, opts...);
}

/// The field metadata of T, as stored in describe<T>::fields.
template <class T, class... Specs>
struct field_list {
  using owner = T;
  std::tuple<Specs...> specs;
};

namespace detail {
template <class T, class Spec>
constexpr bool spec_names_member_of() {
  return std::is_same_v<member_class_t<Spec::member>, T>;
}

template <class T, class... Specs>
constexpr bool distinct_members() {
  constexpr std::array<std::size_t, sizeof...(Specs)> idx{member_index<T, Specs::member>()...};
  for (std::size_t i = 0; i < idx.size(); ++i)
    for (std::size_t j = i + 1; j < idx.size(); ++j)
      if (idx[i] == idx[j]) return false;
  return true;
}
}  // namespace detail

/// Collects field metadata for T. Every covenant::field<&C::m> must name a member of T itself.
template <class T, class... Specs>
constexpr field_list<T, Specs...> fields(Specs... specs) {
  static_assert(reflectable_aggregate<T>,
                "covenant::fields<T>: T must be a plain aggregate (no constructors, no base classes)");
  static_assert((detail::spec_names_member_of<T, Specs>() && ...),
                "covenant::fields<T>: a covenant::field<&C::m> names a member of another type; "
                "every field must be a member of T");
  if constexpr ((detail::spec_names_member_of<T, Specs>() && ...)) {
    static_assert(detail::distinct_members<T, Specs...>(),
                  "covenant::fields<T>: the same member is described twice");
  }
  return {std::tuple<Specs...>(specs...)};
}

// ---------------------------------------------------------------------------------------------
// Enums
// ---------------------------------------------------------------------------------------------

/// Metadata of one enumerator: description, alias (JSON spelling), also_accept.
template <auto Enumerator, class... Opts>
struct value_spec {
  static constexpr auto enumerator = Enumerator;
  std::string_view description;
  std::tuple<Opts...> options;
};

template <auto Enumerator, class... Opts>
constexpr value_spec<Enumerator, Opts...> value(std::string_view description, Opts... opts) {
  static_assert(std::is_enum_v<decltype(Enumerator)>, "covenant::value<E::x>: x must be an enumerator");
  static_assert((detail::is_value_option_v<Opts> && ...),
                "covenant::value: every option must be covenant::alias or covenant::also_accept");
  return {description, std::tuple<Opts...>(opts...)};
}

template <auto Enumerator, class... Opts>
  requires(!std::is_convertible_v<typename detail::first_type<Opts...>::type, std::string_view>)
constexpr value_spec<Enumerator, Opts...> value(Opts... opts) {
  return value<Enumerator>(std::string_view{}, opts...);
}

template <class E, class... Specs>
struct value_list {
  using owner = E;
  std::tuple<Specs...> specs;
};

/// Collects enumerator metadata for E.
template <class E, class... Specs>
constexpr value_list<E, Specs...> values(Specs... specs) {
  static_assert(std::is_enum_v<E>, "covenant::values<E>: E must be an enum");
  static_assert((std::is_same_v<std::remove_cv_t<decltype(Specs::enumerator)>, E> && ...),
                "covenant::values<E>: a covenant::value<X::v> names an enumerator of another enum");
  return {std::tuple<Specs...>(specs...)};
}

// ---------------------------------------------------------------------------------------------
// Cross-field invariants
// ---------------------------------------------------------------------------------------------

/// A rule over a whole object. `Anchor` (optional) is the member the issue is reported on.
template <auto Anchor, class Fn>
struct invariant_spec {
  static constexpr auto anchor = Anchor;
  std::string_view description;
  Fn fn;
  fail_action action = fail_action::reask;
};

/// invariant("rule shown to the model", [](const T& t) { return ...; }) — the callable returns
/// bool, or std::optional<std::string> (nullopt = satisfied, otherwise the violation message).
/// invariant<&T::m>(...) reports the violation on field m.
template <auto Anchor = nullptr, class Fn>
constexpr invariant_spec<Anchor, Fn> invariant(std::string_view description, Fn fn) {
  static_assert(std::is_same_v<decltype(Anchor), std::nullptr_t> ||
                    std::is_member_object_pointer_v<decltype(Anchor)>,
                "covenant::invariant<&T::m>: m must be a data member");
  return {description, fn, fail_action::reask};
}

/// invariant("rule", fn, covenant::on_fail::filter): the same with an on-fail action (an
/// invariant has no fix).
template <auto Anchor = nullptr, class Fn, fail_action A>
constexpr invariant_spec<Anchor, Fn> invariant(std::string_view description, Fn fn, on_fail::action_t<A>) {
  static_assert(A != fail_action::fix, "covenant::invariant: a cross-field rule has no fix (use reask, filter, "
                                       "refrain, noop or exception)");
  static_assert(std::is_same_v<decltype(Anchor), std::nullptr_t> ||
                    std::is_member_object_pointer_v<decltype(Anchor)>,
                "covenant::invariant<&T::m>: m must be a data member");
  return {description, fn, A};
}

template <class T, class... Specs>
struct invariant_list {
  using owner = T;
  std::tuple<Specs...> specs;
};

namespace detail {
template <class T, class Spec>
constexpr bool invariant_fits() {
  if constexpr (!std::is_same_v<std::remove_cv_t<decltype(Spec::anchor)>, std::nullptr_t>) {
    if constexpr (!std::is_same_v<member_class_t<Spec::anchor>, T>) return false;
  }
  return true;
}
template <class T, class Spec>
constexpr bool invariant_callable() {
  using Fn = decltype(Spec::fn);
  if constexpr (!std::is_invocable_v<const Fn&, const T&>) {
    return false;
  } else {
    using R = std::invoke_result_t<const Fn&, const T&>;
    return std::is_same_v<R, bool> || std::is_same_v<R, std::optional<std::string>>;
  }
}
}  // namespace detail

/// Collects the invariants of T.
template <class T, class... Specs>
constexpr invariant_list<T, Specs...> invariants(Specs... specs) {
  static_assert((detail::invariant_fits<T, Specs>() && ...),
                "covenant::invariants<T>: an invariant<&C::m> anchors on a member of another type");
  static_assert((detail::invariant_callable<T, Specs>() && ...),
                "covenant::invariants<T>: each callable must take `const T&` and return bool or "
                "std::optional<std::string>");
  return {std::tuple<Specs...>(specs...)};
}

// ---------------------------------------------------------------------------------------------
// Detection
// ---------------------------------------------------------------------------------------------

template <class T>
concept has_field_metadata = requires { describe<T>::fields; };
template <class T>
concept has_type_description = requires { std::string_view(describe<T>::description); };
template <class T>
concept has_type_name = requires { std::string_view(describe<T>::name); };
template <class T>
concept has_invariants = requires { describe<T>::invariants; };
template <class T>
concept has_value_metadata = requires { describe<T>::values; };

/// Name of T in schemas and prompts: describe<T>::name, else the unqualified C++ name.
template <class T>
constexpr std::string_view schema_name() noexcept {
  if constexpr (has_type_name<T>) return describe<T>::name;
  else return type_name_v<T>;
}

}  // namespace covenant
