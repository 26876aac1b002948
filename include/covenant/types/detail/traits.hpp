// covenant/types/detail/traits.hpp - classification of supported field types.
#pragma once

#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include "covenant/types/reflect.hpp"

namespace covenant::detail {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};

template <class T>
struct is_string_map : std::false_type {};
template <class V, class C, class A>
struct is_string_map<std::map<std::string, V, C, A>> : std::true_type {};
template <class V, class H, class E, class A>
struct is_string_map<std::unordered_map<std::string, V, H, E, A>> : std::true_type {};

template <class T>
struct is_variant : std::false_type {};
template <class... T>
struct is_variant<std::variant<T...>> : std::true_type {};

template <class T>
struct strip_optional {
  using type = T;
};
template <class T>
struct strip_optional<std::optional<T>> {
  using type = T;
};
template <class T>
using strip_optional_t = typename strip_optional<T>::type;

template <class T>
inline constexpr bool is_integer_v = std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> &&
                                     !std::is_same_v<T, wchar_t> && !std::is_same_v<T, char8_t> &&
                                     !std::is_same_v<T, char16_t> && !std::is_same_v<T, char32_t>;

template <class T>
inline constexpr bool is_number_v = is_integer_v<T> || std::is_floating_point_v<T>;

template <class T>
inline constexpr bool is_container_v = is_vector<T>::value || is_string_map<T>::value;

template <class T>
inline constexpr bool is_json_value_v = std::is_same_v<T, boost::json::value>;

/// Whether T is a type covenant can read and write (recursively checked when used).
template <class T>
inline constexpr bool is_supported_leaf_v =
    std::is_same_v<T, bool> || is_number_v<T> || std::is_same_v<T, std::string> || std::is_enum_v<T> ||
    is_json_value_v<T> || std::is_same_v<T, std::monostate>;

template <class T>
struct container_value {
  using type = void;
};
template <class T, class A>
struct container_value<std::vector<T, A>> {
  using type = T;
};
template <class V, class C, class A>
struct container_value<std::map<std::string, V, C, A>> {
  using type = V;
};
template <class V, class H, class E, class A>
struct container_value<std::unordered_map<std::string, V, H, E, A>> {
  using type = V;
};

template <class...>
inline constexpr bool dependent_false_v = false;

// A unique address per type, used as a key.
template <class T>
struct type_key {
  static constexpr char id = 0;
};

}  // namespace covenant::detail
