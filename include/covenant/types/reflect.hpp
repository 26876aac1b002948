// covenant/types/reflect.hpp - compile-time reflection of plain aggregates and enums.
//
// Field count and field order come from Boost.PFR. Field *names* (which Boost 1.81's PFR does
// not provide) are read from the compiler's __PRETTY_FUNCTION__ of a template instantiated with
// a pointer to a member of a declared-but-never-defined object. The extraction calibrates itself
// against a known struct and fails to compile if the compiler prints something unexpected.
//
// Limits: types declared inside a function body cannot be reflected (the never-defined object
// needs a type with linkage); aggregates with base classes, references or bit-fields are not
// supported by Boost.PFR.
#pragma once

#include <boost/pfr.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>

#include "covenant/types/config.hpp"

namespace covenant {

namespace detail {

template <class T>
struct never_defined_wrapper {
  T const value;
};

#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wundefined-var-template"
#endif
// Declared, never defined: only its members' addresses are used, in constant expressions.
template <class T>
extern const never_defined_wrapper<T> covenant_reflected_object;

template <class T>
constexpr const T& fake_object() noexcept {
  return covenant_reflected_object<T>.value;
}
#if defined(__clang__)
#pragma clang diagnostic pop
#endif

// clang 14 does not print a raw pointer-to-subobject NTTP with its member name; wrapped in a
// struct it does. GCC prints the raw pointer and cannot take the wrapped one.
template <class P>
struct pointer_wrapper {
  P ptr;
};
template <class P>
pointer_wrapper(P) -> pointer_wrapper<P>;

template <auto Ptr>
constexpr std::string_view pretty_function_of() noexcept {
  return __PRETTY_FUNCTION__;
}

template <class T, std::size_t I>
constexpr const auto& fake_member() noexcept {
  return boost::pfr::detail::sequence_tuple::get<I>(boost::pfr::detail::tie_as_tuple(fake_object<T>()));
}

template <class T, std::size_t I>
constexpr std::string_view raw_member_signature() noexcept {
#if defined(__clang__)
  return pretty_function_of<pointer_wrapper{&fake_member<T, I>()}>();
#else
  return pretty_function_of<&fake_member<T, I>()>();
#endif
}

struct calibration_struct {
  int covenant_calibration_member;
};
inline constexpr std::string_view calibration_name = "covenant_calibration_member";

// Number of characters the compiler prints after the member name.
inline constexpr std::size_t member_suffix_length = [] {
  constexpr std::string_view sig = raw_member_signature<calibration_struct, 0>();
  constexpr std::size_t pos = sig.rfind(calibration_name);
  static_assert(pos != std::string_view::npos,
                "covenant: this compiler's __PRETTY_FUNCTION__ does not show member names; "
                "field-name reflection is unsupported here");
  return sig.size() - pos - calibration_name.size();
}();

constexpr std::string_view member_name_from_signature(std::string_view sig) noexcept {
  const std::size_t end = sig.size() - member_suffix_length;
  std::size_t begin = end;
  while (begin > 0) {
    const char c = sig[begin - 1];
    if (c == '.' || c == ':' || c == '>' || c == '&' || c == ' ' || c == '(' || c == '{') break;
    --begin;
  }
  return sig.substr(begin, end - begin);
}

static_assert(member_name_from_signature(raw_member_signature<calibration_struct, 0>()) == calibration_name,
              "covenant: field-name extraction failed to calibrate on this compiler");

template <class T, std::size_t I>
inline constexpr std::string_view member_name_v = member_name_from_signature(raw_member_signature<T, I>());

template <class T>
constexpr std::string_view pretty_type_signature() noexcept {
  return __PRETTY_FUNCTION__;
}

// "[with T = ns::Foo; ...]" (GCC) or "[T = ns::Foo]" (clang) -> "ns::Foo"
constexpr std::string_view qualified_name_from_signature(std::string_view sig) noexcept {
  std::size_t begin = sig.find("T = ");
  if (begin == std::string_view::npos) return {};
  begin += 4;
  std::size_t end = begin;
  int angle = 0;
  while (end < sig.size()) {
    const char c = sig[end];
    if (c == '<') ++angle;
    else if (c == '>') --angle;
    else if (angle == 0 && (c == ';' || c == ']')) break;
    ++end;
  }
  return sig.substr(begin, end - begin);
}

// "ns::Foo<ns::Bar>" -> "Foo<ns::Bar>"
constexpr std::string_view unqualified(std::string_view q) noexcept {
  int angle = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < q.size(); ++i) {
    const char c = q[i];
    if (c == '<') ++angle;
    else if (c == '>') --angle;
    else if (angle == 0 && c == ':' && i + 1 < q.size() && q[i + 1] == ':') start = i + 2;
  }
  return q.substr(start);
}

template <class M>
struct member_pointer_traits;
template <class C, class M>
struct member_pointer_traits<M C::*> {
  using class_type = C;
  using member_type = M;
};

}  // namespace detail

/// A type whose fields covenant can enumerate: a class-type aggregate (no user constructors,
/// no base classes, no virtual functions), default-constructible.
template <class T>
concept reflectable_aggregate =
    std::is_class_v<T> && std::is_aggregate_v<T> && !std::is_union_v<T> && std::is_default_constructible_v<T> &&
    !std::is_polymorphic_v<T>;

/// Number of fields of an aggregate.
template <reflectable_aggregate T>
inline constexpr std::size_t field_count_v = boost::pfr::tuple_size_v<T>;

/// Name of the I-th field of an aggregate, as written in its declaration.
template <reflectable_aggregate T, std::size_t I>
inline constexpr std::string_view field_name_v = detail::member_name_v<T, I>;

/// All field names of an aggregate, in declaration order.
template <reflectable_aggregate T>
inline constexpr auto field_names_v = []<std::size_t... I>(std::index_sequence<I...>) {
  return std::array<std::string_view, sizeof...(I)>{field_name_v<T, I>...};
}(std::make_index_sequence<field_count_v<T>>{});

/// Type of the I-th field.
template <reflectable_aggregate T, std::size_t I>
using field_type_t = boost::pfr::tuple_element_t<I, T>;

/// Qualified type name as the compiler spells it ("ns::Foo").
template <class T>
inline constexpr std::string_view qualified_type_name_v =
    detail::qualified_name_from_signature(detail::pretty_type_signature<T>());

/// Unqualified type name ("Foo").
template <class T>
inline constexpr std::string_view type_name_v = detail::unqualified(qualified_type_name_v<T>);

/// Class of a pointer to data member.
template <auto MemberPtr>
using member_class_t = typename detail::member_pointer_traits<decltype(MemberPtr)>::class_type;

/// Index of the field a pointer to data member designates, or field_count_v<T> if it designates none.
template <class T, auto MemberPtr>
constexpr std::size_t member_index() noexcept {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    std::size_t found = sizeof...(I);
    (void)((static_cast<const void*>(&(detail::fake_object<T>().*MemberPtr)) ==
                    static_cast<const void*>(&detail::fake_member<T, I>())
                ? (found = I, true)
                : false) ||
           ...);
    return found;
  }(std::make_index_sequence<field_count_v<T>>{});
}

// ---------------------------------------------------------------------------------------------
// Enums
// ---------------------------------------------------------------------------------------------

namespace detail {

template <auto E>
constexpr std::string_view enum_signature() noexcept {
  return __PRETTY_FUNCTION__;
}

// Valid enumerators print as "Name" or "ns::Enum::Name"; invalid values print as "(ns::Enum)7".
template <auto E>
constexpr std::string_view enumerator_name() noexcept {
  constexpr std::string_view sig = enum_signature<E>();
  constexpr std::size_t eq = sig.find("E = ");
  if (eq == std::string_view::npos) return {};
  std::size_t begin = eq + 4;
  std::size_t end = begin;
  while (end < sig.size() && sig[end] != ';' && sig[end] != ']') ++end;
  const std::string_view v = sig.substr(begin, end - begin);
  if (v.empty() || v.front() == '(' || (v.front() >= '0' && v.front() <= '9') || v.front() == '-') return {};
  const std::size_t colon = v.rfind(':');
  return colon == std::string_view::npos ? v : v.substr(colon + 1);
}

template <class E>
constexpr long long enum_scan_min() {
  using U = std::underlying_type_t<E>;
  constexpr long long lo = COVENANT_ENUM_MIN;
  if constexpr (std::is_signed_v<U>) {
    return lo < static_cast<long long>(std::numeric_limits<U>::min())
               ? static_cast<long long>(std::numeric_limits<U>::min())
               : lo;
  } else {
    return lo < 0 ? 0 : lo;
  }
}

template <class E>
constexpr long long enum_scan_max() {
  using U = std::underlying_type_t<E>;
  constexpr long long hi = COVENANT_ENUM_MAX;
  return static_cast<unsigned long long>(hi) > static_cast<unsigned long long>(std::numeric_limits<U>::max())
             ? static_cast<long long>(std::numeric_limits<U>::max())
             : hi;
}

template <class E, long long Min, std::size_t... I>
constexpr auto enum_names_scan(std::index_sequence<I...>) {
  return std::array<std::string_view, sizeof...(I)>{
      enumerator_name<static_cast<E>(static_cast<std::underlying_type_t<E>>(Min + static_cast<long long>(I)))>()...};
}

}  // namespace detail

/// One reflected enumerator.
template <class E>
struct enum_entry {
  E value;
  std::string_view name;
};

/// The named enumerators of E within [COVENANT_ENUM_MIN, COVENANT_ENUM_MAX], in value order.
template <class E>
  requires std::is_enum_v<E>
inline constexpr auto enum_entries_v = [] {
  constexpr long long lo = detail::enum_scan_min<E>();
  constexpr long long hi = detail::enum_scan_max<E>();
  constexpr auto names =
      detail::enum_names_scan<E, lo>(std::make_index_sequence<static_cast<std::size_t>(hi - lo + 1)>{});
  constexpr std::size_t count = [&] {
    std::size_t n = 0;
    for (auto s : names) n += s.empty() ? 0 : 1;
    return n;
  }();
  static_assert(count > 0,
                "covenant: no enumerators found for this enum in [COVENANT_ENUM_MIN, COVENANT_ENUM_MAX]; "
                "widen the range by defining those macros");
  std::array<enum_entry<E>, count> out{};
  std::size_t k = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!names[i].empty()) {
      out[k++] = {static_cast<E>(static_cast<std::underlying_type_t<E>>(lo + static_cast<long long>(i))), names[i]};
    }
  }
  return out;
}();

}  // namespace covenant
