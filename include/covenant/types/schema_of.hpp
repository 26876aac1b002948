// covenant/types/schema_of.hpp - the schema model of a C++ type, built once from reflection and
// covenant::describe<T> metadata, then cached (later calls cost one static-guard check).
//
// Supported types: bool; every integer type (values outside the type's range are issues, never
// narrowed); float, double; std::string; std::vector<T>; std::optional<T> (field may be absent
// or null); nested aggregates; std::map<std::string, T> and std::unordered_map<std::string, T>;
// enums (as their names, see describe<E>::values for aliases); std::variant<...> (alternatives are
// tried in declaration order, std::monostate stands for null); boost::json::value (any JSON).
// Recursive aggregates work through std::vector members (struct Node { std::vector<Node> children; }).
// covenant::image, covenant::pdf and covenant::audio (covenant/types/media.hpp) are strings of format
// "image", "pdf" or "audio": the reference the model sees in place of the media.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "covenant/types/describe.hpp"
#include "covenant/types/detail/traits.hpp"
#include "covenant/types/media.hpp"
#include "covenant/types/reflect.hpp"
#include "covenant/types/schema.hpp"

namespace covenant {

template <class T>
const schema::model& schema_of();

namespace detail {

template <class T>
inline constexpr bool is_describable_aggregate_v =
    reflectable_aggregate<T> && !is_vector<T>::value && !is_string_map<T>::value && !is_optional<T>::value &&
    !is_variant<T>::value && !std::is_same_v<T, std::string> && !is_json_value_v<T> &&
    !std::is_same_v<T, std::monostate>;

/// Assigns definition names and indexes while a schema is being built. Non-template parts live in
/// the library.
class COVENANT_API schema_builder_base {
 public:
  explicit schema_builder_base(schema::model& s) : s_(s) {}

  /// Index of the definition registered for `key`, or schema::no_def.
  [[nodiscard]] std::uint32_t find(const void* key) const noexcept;
  /// Registers a new definition (empty body of the given alternative) under a unique name
  /// derived from `preferred` (or from `qualified` when `preferred` is taken).
  std::uint32_t add(const void* key, std::string_view preferred, std::string_view qualified, bool is_enum);

  schema::model& target() noexcept { return s_; }

  /// Work to run once every definition exists (defaults need the finished schema): each job
  /// gets the model and the definition index stored beside it.
  std::vector<void (*)(schema::model&, std::uint32_t)> deferred;
  std::vector<std::uint32_t> deferred_defs;

 private:
  schema::model& s_;
  std::vector<std::pair<const void*, std::uint32_t>> known_;
};

/// Encodes one value with the finished schema (defined in encode.hpp); used for field defaults.
template <class F>
boost::json::value default_value_of(const F& v, const schema::type& node, const schema::model& s);

class schema_builder : public schema_builder_base {
 public:
  using schema_builder_base::schema_builder_base;

  template <class T>
  schema::type type_of() {
    if constexpr (is_optional<T>::value) {
      schema::type t = type_of<typename T::value_type>();
      t.nullable = true;
      return t;
    } else if constexpr (std::is_same_v<T, bool>) {
      return schema::make_primitive(schema::kind::boolean);
    } else if constexpr (is_integer_v<T>) {
      schema::type t = schema::make_primitive(schema::kind::integer);
      t.int_bits = static_cast<std::uint8_t>(sizeof(T) * 8);
      t.is_unsigned = std::is_unsigned_v<T>;
      return t;
    } else if constexpr (std::is_floating_point_v<T>) {
      schema::type t = schema::make_primitive(schema::kind::number);
      if constexpr (std::is_same_v<T, float>) t.float_bits = 32;
      return t;
    } else if constexpr (std::is_same_v<T, std::string>) {
      return schema::make_primitive(schema::kind::string);
    } else if constexpr (is_json_value_v<T>) {
      return schema::make_primitive(schema::kind::any);
    } else if constexpr (is_media_v<T>) {
      schema::type t = schema::make_primitive(schema::kind::string);
      t.constraints.push_back(schema::media_format(T::media_kind_v));
      return t;
    } else if constexpr (std::is_same_v<T, std::monostate>) {
      return schema::make_primitive(schema::kind::null);
    } else if constexpr (is_vector<T>::value) {
      return schema::make_array(type_of<typename T::value_type>());
    } else if constexpr (is_string_map<T>::value) {
      return schema::make_map(type_of<typename T::mapped_type>());
    } else if constexpr (is_variant<T>::value) {
      return variant_type(static_cast<T*>(nullptr));
    } else if constexpr (std::is_enum_v<T>) {
      return enum_type<T>();
    } else if constexpr (is_describable_aggregate_v<T>) {
      return object_type<T>();
    } else {
      static_assert(dependent_false_v<T>,
                    "covenant: unsupported field type. Supported: bool, integers, float, double, std::string, "
                    "std::vector<T>, std::optional<T>, std::map<std::string, T>, enums, std::variant<...>, "
                    "boost::json::value, covenant::image/pdf/audio and plain aggregates of these");
      return {};
    }
  }

 private:
  template <class... A>
  schema::type variant_type(std::variant<A...>*) {
    schema::type t;
    t.kind = schema::kind::union_;
    (t.args.push_back(type_of<A>()), ...);
    return t;
  }

  template <class E>
  schema::type enum_type() {
    const void* key = &type_key<E>::id;
    std::uint32_t idx = find(key);
    if (idx == schema::no_def) {
      idx = add(key, schema_name<E>(), qualified_type_name_v<E>, true);
      schema::enum_def body;
      for (const auto& entry : enum_entries_v<E>) {
        schema::enum_value v;
        v.name = std::string(entry.name);
        v.declared_name = v.name;
        v.number = static_cast<std::int64_t>(entry.value);
        body.values.push_back(std::move(v));
      }
      if constexpr (has_value_metadata<E>) {
        static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(describe<E>::values)>::owner, E>,
                      "covenant::describe<E>::values must be built with covenant::values<E>(...)");
        std::apply([&](const auto&... spec) { (apply_value_spec(body, spec), ...); }, describe<E>::values.specs);
      }
      auto& def = target().defs[idx];
      if constexpr (has_type_description<E>) def.description = std::string(describe<E>::description);
      def.body = std::move(body);
    }
    schema::type t;
    t.kind = schema::kind::ref;
    t.name = target().defs[idx].name;
    t.def = idx;
    return t;
  }

  template <class Spec>
  static void apply_value_spec(schema::enum_def& body, const Spec& spec) {
    const auto number = static_cast<std::int64_t>(Spec::enumerator);
    for (auto& v : body.values) {
      if (v.number != number) continue;
      v.description = std::string(spec.description);
      std::apply(
          [&](const auto&... opt) {
            (
                [&] {
                  using O = std::decay_t<decltype(opt)>;
                  if constexpr (std::is_same_v<O, alias>) {
                    v.aliases.push_back(v.name);
                    v.name = std::string(opt.name);
                  } else {
                    for (auto n : opt.names) v.aliases.emplace_back(n);
                  }
                }(),
                ...);
          },
          spec.options);
    }
  }

  template <class T>
  schema::type object_type() {
    const void* key = &type_key<T>::id;
    std::uint32_t idx = find(key);
    if (idx == schema::no_def) {
      idx = add(key, schema_name<T>(), qualified_type_name_v<T>, false);
      schema::object_def body;
      build_fields<T>(body, std::make_index_sequence<field_count_v<T>>{});
      if constexpr (has_field_metadata<T>) {
        static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(describe<T>::fields)>::owner, T>,
                      "covenant::describe<T>::fields must be built with covenant::fields<T>(...) for the same T");
        std::apply([&](const auto&... spec) { (apply_field_spec<T>(body, spec), ...); }, describe<T>::fields.specs);
      }
      if constexpr (has_invariants<T>) {
        static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(describe<T>::invariants)>::owner, T>,
                      "covenant::describe<T>::invariants must be built with covenant::invariants<T>(...)");
        std::apply([&](const auto&... spec) { (add_invariant<T>(body, spec), ...); }, describe<T>::invariants.specs);
      }
      auto& def = target().defs[idx];
      if constexpr (has_type_description<T>) def.description = std::string(describe<T>::description);
      def.body = std::move(body);
    }
    schema::type t;
    t.kind = schema::kind::ref;
    t.name = target().defs[idx].name;
    t.def = idx;
    return t;
  }

  template <class T, std::size_t... I>
  void build_fields(schema::object_def& body, std::index_sequence<I...>) {
    (
        [&] {
          using F = field_type_t<T, I>;
          schema::field f;
          f.name = std::string(field_name_v<T, I>);
          f.key = f.name;
          f.type = type_of<F>();
          f.required = !is_optional<F>::value;
          body.fields.push_back(std::move(f));
        }(),
        ...);
  }

  template <class T, class Spec>
  void apply_field_spec(schema::object_def& body, const Spec& spec) {
    constexpr std::size_t I = member_index<T, Spec::member>();
    using F = strip_optional_t<field_type_t<T, I>>;
    schema::field& f = body.fields[I];
    f.description = std::string(spec.description);
    std::apply(
        [&](const auto&... opt) {
          (
              [&] {
                using O = std::decay_t<decltype(opt)>;
                if constexpr (std::is_same_v<O, alias>) {
                  f.key = std::string(opt.name);
                } else if constexpr (std::is_same_v<O, defaulted>) {
                  f.required = false;
                  const std::uint32_t def_index = find(&type_key<T>::id);
                  deferred.push_back(&set_default<T, I>);
                  deferred_defs.push_back(def_index);
                } else {
                  opt.template apply<F>(f.type);
                }
              }(),
              ...);
        },
        spec.options);
  }

  template <class T, std::size_t I>
  static void set_default(schema::model& s, std::uint32_t def_index) {
    static const T defaults{};
    auto& obj = std::get<schema::object_def>(s.defs[def_index].body);
    obj.fields[I].default_value = default_value_of(boost::pfr::get<I>(defaults), obj.fields[I].type, s);
  }

  template <class T, class Spec>
  void add_invariant(schema::object_def& body, const Spec& spec) {
    schema::invariant inv;
    inv.description = std::string(spec.description);
    if constexpr (!std::is_same_v<std::remove_cv_t<decltype(Spec::anchor)>, std::nullptr_t>) {
      constexpr std::size_t I = member_index<T, Spec::anchor>();
      inv.anchor = body.fields[I].key;
    }
    inv.check = std::make_shared<native_predicate<T, decltype(spec.fn)>>(spec.fn);
    inv.on_fail = spec.action;
    body.invariants.push_back(std::move(inv));
  }
};

template <class T>
schema::model build_schema() {
  schema::model s;
  schema_builder b(s);
  s.root = b.type_of<T>();
  for (std::size_t i = 0; i < b.deferred.size(); ++i) b.deferred[i](s, b.deferred_defs[i]);
  return s;
}

}  // namespace detail

/// The schema model of T: built on first use (thread-safe), then cached.
/// Throws std::invalid_argument on first use if a covenant::pattern does not compile.
template <class T>
const schema::model& schema_of() {
  // Never destroyed, like the process-wide runtimes: work still running on their threads when the
  // process exits (a call in flight, a tool past its timeout) may still read it.
  static const schema::model& s = *new schema::model(detail::build_schema<T>());
  return s;
}

}  // namespace covenant

#include "covenant/types/encode.hpp"  // default_value_of
