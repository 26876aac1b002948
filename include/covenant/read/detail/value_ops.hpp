// covenant/read/detail/value_ops.hpp - a C++ value as the readers see it: one small table of
// functions per type (built at compile time from the type's shape) through which the stream
// reader (detail/stream_reader.hpp) writes a streamed reply piece by piece. Types without a table
// of their own (variants, maps, ...) are filled once their whole JSON value is there (try_from_value).
// The on-fail filter (detail/filter.hpp) and the tool checks walk a value already read through it.
#pragma once

#include <boost/json/fwd.hpp>
#include <boost/pfr/core.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "covenant/read/decode.hpp"
#include "covenant/read/detail/decode_context.hpp"
#include "covenant/types/detail/traits.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/reflect.hpp"

namespace covenant {

namespace detail {

/// What a table's value is. `json`: a boost::json::value, whatever its schema says (the runtime
/// schemas' target: its operations look at the value's own kind).
enum class value_kind : std::uint8_t { object, array, optional, string, integer, floating, boolean, enumeration, opaque, json };

struct value_ops;
using ops_ref = const value_ops& (*)();

/// A value and its table; `p` null: no value there.
struct value_ref {
  void* p = nullptr;
  const value_ops* ops = nullptr;
};

inline constexpr std::size_t not_a_list = static_cast<std::size_t>(-1);

/// One field of an aggregate: where it is in the object, and how to fill it.
struct field_ops {
  void* (*member)(void* object);
  ops_ref ops;
  // back to the value the field has in a default-made object; false when the type has none
  bool (*restore)(void* object);
};

struct value_ops {
  value_kind kind = value_kind::opaque;
  // object
  const field_ops* fields = nullptr;
  std::size_t field_count = 0;
  // array (a new element) and optional (the value, engaged)
  void* (*emplace)(void* self) = nullptr;
  ops_ref item = nullptr;
  // optional: disengage (null)
  void (*reset)(void* self) = nullptr;
  // every kind: back to a default-constructed value
  void (*clear)(void* self) = nullptr;
  // string
  void (*append)(void* self, std::string_view text) = nullptr;
  // integer: false when `v` does not fit
  bool (*set_integer)(void* self, std::int64_t v) = nullptr;
  bool (*set_unsigned)(void* self, std::uint64_t v) = nullptr;
  // floating
  void (*set_floating)(void* self, double v) = nullptr;
  // boolean
  void (*set_boolean)(void* self, bool v) = nullptr;
  // enumeration: the value's JSON text (a string); issues as the decoder reports them
  void (*set_enum)(void* self, std::string_view json, const decode_options& options, issue_list& issues) = nullptr;
  // opaque and json: the whole JSON value; false when it does not fit
  bool (*assign)(void* self, const boost::json::value& v, const decode_options& options) = nullptr;
  // json: the member `key` of an object, made null (a new or repeated key)
  void* (*member)(void* self, std::string_view key) = nullptr;

  // Walking a value already read (the on-fail filter, read/detail/filter.hpp). Null where the
  // kind has no such part.
  // optional: the value inside, or null when empty
  void* (*value)(void* self) = nullptr;
  // array: the number of items (not_a_list: the value is no list), an item, erase an item
  std::size_t (*size)(const void* self) = nullptr;
  void* (*item_at)(void* self, std::size_t i) = nullptr;
  void (*erase)(void* self, std::size_t i) = nullptr;
  // map with string keys: the value at `key`, or null (`item` is the values' table); and each
  // entry in turn, as fn(context, key, value)
  void* (*find)(void* self, std::string_view key) = nullptr;
  void (*each)(void* self, void* context, void (*fn)(void* context, std::string_view key, void* value)) = nullptr;
  // variant: the alternative it holds (`index` set to its index)
  value_ref (*alternative)(void* self, std::size_t& index) = nullptr;
  // object: field j of `def` (null p: absent), and dropping it as an absent field reads (an
  // optional one emptied, a defaulted one back to its default, a required nullable one null);
  // false when it is required, or empty already
  value_ref (*field)(void* self, const schema::object_def& def, std::size_t j) = nullptr;
  bool (*drop_field)(void* self, const schema::object_def& def, std::size_t j) = nullptr;
};

template <class T>
const value_ops& ops_of() noexcept;

template <class T, std::size_t I>
bool restore_field(void* o) {
  using F = boost::pfr::tuple_element_t<I, T>;
  if constexpr (std::is_default_constructible_v<T> && std::is_move_assignable_v<F>) {
    T fresh{};
    boost::pfr::get<I>(*static_cast<T*>(o)) = std::move(boost::pfr::get<I>(fresh));
    return true;
  } else {
    (void)o;
    return false;
  }
}

template <class T, std::size_t... I>
const field_ops* field_ops_of(std::index_sequence<I...>) noexcept {
  static const field_ops fields[] = {
      field_ops{[](void* o) -> void* { return &boost::pfr::get<I>(*static_cast<T*>(o)); },
                &ops_of<boost::pfr::tuple_element_t<I, T>>, &restore_field<T, I>}...};
  return fields;
}

template <class T>
value_ref typed_field(void* self, const schema::object_def&, std::size_t j) {
  const field_ops& f = field_ops_of<T>(std::make_index_sequence<field_count_v<T>>{})[j];
  return {f.member(self), &f.ops()};
}

template <class T>
bool drop_typed_field(void* self, const schema::object_def& def, std::size_t j) {
  const field_ops& f = field_ops_of<T>(std::make_index_sequence<field_count_v<T>>{})[j];
  void* member = f.member(self);
  const value_ops& ops = f.ops();
  if (ops.kind == value_kind::optional) {
    if (ops.value(member) == nullptr) return false;
    ops.reset(member);
    return true;
  }
  return !def.fields[j].required && f.restore(self);
}

template <class T>
value_ops make_ops() noexcept {
  value_ops o;
  o.clear = [](void* p) { *static_cast<T*>(p) = T{}; };
  if constexpr (std::is_same_v<T, std::string>) {
    o.kind = value_kind::string;
    o.append = [](void* p, std::string_view s) { static_cast<std::string*>(p)->append(s); };
  } else if constexpr (std::is_same_v<T, bool>) {
    o.kind = value_kind::boolean;
    o.set_boolean = [](void* p, bool v) { *static_cast<bool*>(p) = v; };
  } else if constexpr (std::is_integral_v<T>) {
    o.kind = value_kind::integer;
    o.set_integer = [](void* p, std::int64_t v) {
      if constexpr (std::is_signed_v<T>) {
        if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) return false;
      } else {
        if (v < 0 || static_cast<std::uint64_t>(v) > std::numeric_limits<T>::max()) return false;
      }
      *static_cast<T*>(p) = static_cast<T>(v);
      return true;
    };
    o.set_unsigned = [](void* p, std::uint64_t v) {
      if (v > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return false;
      *static_cast<T*>(p) = static_cast<T>(v);
      return true;
    };
  } else if constexpr (std::is_floating_point_v<T>) {
    o.kind = value_kind::floating;
    o.set_floating = [](void* p, double v) { *static_cast<T*>(p) = static_cast<T>(v); };
  } else if constexpr (std::is_enum_v<T>) {
    o.kind = value_kind::enumeration;
    o.set_enum = [](void* p, std::string_view json, const decode_options& options, issue_list& issues) {
      auto r = try_decode<T>(json, options);
      if (r.value) *static_cast<T*>(p) = *r.value;
      issues = std::move(r.issues);
    };
  } else if constexpr (is_optional<T>::value) {
    using U = typename T::value_type;
    o.kind = value_kind::optional;
    o.emplace = [](void* p) -> void* {
      auto& opt = *static_cast<T*>(p);
      if (!opt) opt.emplace();
      return &*opt;
    };
    o.reset = [](void* p) { static_cast<T*>(p)->reset(); };
    o.item = &ops_of<U>;
    o.value = [](void* p) -> void* {
      auto& opt = *static_cast<T*>(p);
      return opt ? &*opt : nullptr;
    };
  } else if constexpr (is_vector<T>::value) {
    using U = typename T::value_type;
    o.kind = value_kind::array;
    o.emplace = [](void* p) -> void* { return &static_cast<T*>(p)->emplace_back(); };
    o.item = &ops_of<U>;
    o.size = [](const void* p) { return static_cast<const T*>(p)->size(); };
    o.item_at = [](void* p, std::size_t i) -> void* { return &(*static_cast<T*>(p))[i]; };
    o.erase = [](void* p, std::size_t i) {
      auto& v = *static_cast<T*>(p);
      v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
    };
  } else if constexpr (reflectable_aggregate<T>) {
    o.kind = value_kind::object;
    o.fields = field_ops_of<T>(std::make_index_sequence<field_count_v<T>>{});
    o.field_count = field_count_v<T>;
    o.field = &typed_field<T>;
    o.drop_field = &drop_typed_field<T>;
  } else {
    o.kind = value_kind::opaque;
    o.assign = [](void* p, const boost::json::value& v, const decode_options& options) {
      auto r = try_from_value<T>(v, options);
      if (!r.value) return false;
      *static_cast<T*>(p) = std::move(*r.value);
      return true;
    };
    if constexpr (is_string_map<T>::value) {
      o.item = &ops_of<typename T::mapped_type>;
      o.find = [](void* p, std::string_view key) -> void* {
        auto& m = *static_cast<T*>(p);
        auto it = m.find(std::string(key));
        return it == m.end() ? nullptr : &it->second;
      };
      o.each = [](void* p, void* context, void (*fn)(void*, std::string_view, void*)) {
        for (auto& [key, value] : *static_cast<T*>(p)) fn(context, key, &value);
      };
    } else if constexpr (is_variant<T>::value) {
      o.alternative = [](void* p, std::size_t& index) -> value_ref {
        auto& v = *static_cast<T*>(p);
        index = v.index();
        return std::visit([](auto& x) { return value_ref{&x, &ops_of<std::decay_t<decltype(x)>>()}; }, v);
      };
    }
  }
  return o;
}

template <class T>
const value_ops& ops_of() noexcept {
  static const value_ops ops = make_ops<T>();
  return ops;
}

}  // namespace detail

}  // namespace covenant
