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

/// Assigns definition names and indexes while a schema is being built, and makes its parts.
/// Non-template parts live in the library: a type's parts are made in place, so the model's
/// containers are only grown and destroyed there.
class COVENANT_API schema_builder_base {
 public:
  explicit schema_builder_base(schema::model& s);
  ~schema_builder_base();
  schema_builder_base(const schema_builder_base&) = delete;
  schema_builder_base& operator=(const schema_builder_base&) = delete;

  /// Index of the definition registered for `key`, or schema::no_def.
  [[nodiscard]] std::uint32_t find(const void* key) const noexcept;
  /// Registers a new definition (empty body of the given alternative) under a unique name
  /// derived from `preferred` (or from `qualified` when `preferred` is taken).
  std::uint32_t add(const void* key, std::string_view preferred, std::string_view qualified, bool is_enum);

  schema::model& target() noexcept { return s_; }

  /// `t` becomes a list and returns its item type (to be made).
  static schema::type& make_array(schema::type& t);
  /// `t` becomes a map with string keys and returns its value type (to be made).
  static schema::type& make_map(schema::type& t);
  /// `t` becomes a union (when it is not one yet) and returns a new alternative (to be made).
  static schema::type& add_alternative(schema::type& t);
  /// `t` becomes a string of media format `k`.
  static void make_media(schema::type& t, media_kind k);
  /// `t` becomes a reference to definition `def`.
  void make_ref(schema::type& t, std::uint32_t def);

  /// A new object body, kept here until commit_object() moves it into definition `def`.
  schema::object_def& new_object();
  /// A new field of `body` (its type to be made).
  static schema::field& add_field(schema::object_def& body, std::string_view name, bool required);
  static schema::invariant& add_invariant(schema::object_def& body, std::string_view description);
  void commit_object(std::uint32_t def, schema::object_def& body, std::string_view description);

  /// The enum body of definition `def`, with a value added for each enumerator.
  void add_enum_value(std::uint32_t def, std::string_view name, std::int64_t number);
  /// The values of enum definition `def`.
  std::vector<schema::enum_value>& enum_values(std::uint32_t def);
  void describe_def(std::uint32_t def, std::string_view description);

  /// Work to run once every definition exists (defaults need the finished schema): each job
  /// gets the model and the definition index stored beside it.
  void defer(void (*job)(schema::model&, std::uint32_t), std::uint32_t def);
  /// Runs the deferred work.
  void finish();

 private:
  schema::model& s_;
  std::vector<std::pair<const void*, std::uint32_t>> known_;
  std::vector<std::unique_ptr<schema::object_def>> bodies_;
  std::vector<std::pair<void (*)(schema::model&, std::uint32_t), std::uint32_t>> deferred_;
};

/// Encodes one value with the finished schema (defined in encode.hpp); used for field defaults.
template <class F>
boost::json::value default_value_of(const F& v, const schema::type& node, const schema::model& s);

class schema_builder : public schema_builder_base {
 public:
  using schema_builder_base::schema_builder_base;

  /// Makes `t` (default-made) the type of T.
  template <class T>
  void make(schema::type& t) {
    if constexpr (is_optional<T>::value) {
      make<typename T::value_type>(t);
      t.nullable = true;
    } else if constexpr (std::is_same_v<T, bool>) {
      t.kind = schema::kind::boolean;
    } else if constexpr (is_integer_v<T>) {
      t.kind = schema::kind::integer;
      t.int_bits = static_cast<std::uint8_t>(sizeof(T) * 8);
      t.is_unsigned = std::is_unsigned_v<T>;
    } else if constexpr (std::is_floating_point_v<T>) {
      t.kind = schema::kind::number;
      if constexpr (std::is_same_v<T, float>) t.float_bits = 32;
    } else if constexpr (std::is_same_v<T, std::string>) {
      t.kind = schema::kind::string;
    } else if constexpr (is_json_value_v<T>) {
      t.kind = schema::kind::any;
    } else if constexpr (is_media_v<T>) {
      make_media(t, T::media_kind_v);
    } else if constexpr (std::is_same_v<T, std::monostate>) {
      t.kind = schema::kind::null;
    } else if constexpr (is_vector<T>::value) {
      make<typename T::value_type>(make_array(t));
    } else if constexpr (is_string_map<T>::value) {
      make<typename T::mapped_type>(make_map(t));
    } else if constexpr (is_variant<T>::value) {
      make_variant(t, static_cast<T*>(nullptr));
    } else if constexpr (std::is_enum_v<T>) {
      make_enum<T>(t);
    } else if constexpr (is_describable_aggregate_v<T>) {
      make_object<T>(t);
    } else {
      static_assert(dependent_false_v<T>,
                    "covenant: unsupported field type. Supported: bool, integers, float, double, std::string, "
                    "std::vector<T>, std::optional<T>, std::map<std::string, T>, enums, std::variant<...>, "
                    "boost::json::value, covenant::image/pdf/audio and plain aggregates of these");
    }
  }

 private:
  template <class... A>
  void make_variant(schema::type& t, std::variant<A...>*) {
    (make<A>(add_alternative(t)), ...);
  }

  template <class E>
  void make_enum(schema::type& t) {
    const void* key = &type_key<E>::id;
    std::uint32_t idx = find(key);
    if (idx == schema::no_def) {
      idx = add(key, schema_name<E>(), qualified_type_name_v<E>, true);
      for (const auto& entry : enum_entries_v<E>) add_enum_value(idx, entry.name, static_cast<std::int64_t>(entry.value));
      if constexpr (has_value_metadata<E>) {
        static_assert(std::is_same_v<typename std::remove_cvref_t<decltype(describe<E>::values)>::owner, E>,
                      "covenant::describe<E>::values must be built with covenant::values<E>(...)");
        std::apply([&](const auto&... spec) { (apply_value_spec(idx, spec), ...); }, describe<E>::values.specs);
      }
      if constexpr (has_type_description<E>) describe_def(idx, describe<E>::description);
    }
    make_ref(t, idx);
  }

  template <class Spec>
  void apply_value_spec(std::uint32_t def, const Spec& spec) {
    const auto number = static_cast<std::int64_t>(Spec::enumerator);
    for (auto& v : enum_values(def)) {
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
  void make_object(schema::type& t) {
    const void* key = &type_key<T>::id;
    std::uint32_t idx = find(key);
    if (idx == schema::no_def) {
      idx = add(key, schema_name<T>(), qualified_type_name_v<T>, false);
      schema::object_def& body = new_object();
      make_fields<T>(body, std::make_index_sequence<field_count_v<T>>{});
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
      if constexpr (has_type_description<T>) commit_object(idx, body, describe<T>::description);
      else commit_object(idx, body, {});
    }
    make_ref(t, idx);
  }

  template <class T, std::size_t... I>
  void make_fields(schema::object_def& body, std::index_sequence<I...>) {
    (make<field_type_t<T, I>>(add_field(body, field_name_v<T, I>, !is_optional<field_type_t<T, I>>::value).type), ...);
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
                  defer(&set_default<T, I>, find(&type_key<T>::id));
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
    schema::invariant& inv = schema_builder_base::add_invariant(body, spec.description);
    if constexpr (!std::is_same_v<std::remove_cv_t<decltype(Spec::anchor)>, std::nullptr_t>) {
      constexpr std::size_t I = member_index<T, Spec::anchor>();
      inv.anchor = body.fields[I].key;
    }
    inv.check = std::make_shared<native_predicate<T, decltype(spec.fn)>>(spec.fn);
    inv.on_fail = spec.action;
  }
};

/// A new, empty model, and its end (made and destroyed in the library, like a model's parts).
COVENANT_API schema::model* new_model();
COVENANT_API void delete_model(schema::model* m) noexcept;

/// Builds the schema model of T into `s` (a new model).
template <class T>
void build_schema(schema::model& s) {
  schema_builder b(s);
  b.make<T>(s.root);
  b.finish();
}

}  // namespace detail

/// The schema model of T: built on first use (thread-safe), then cached.
/// Throws std::invalid_argument on first use if a covenant::pattern does not compile.
template <class T>
const schema::model& schema_of() {
  // Never destroyed, like the process-wide runtimes: work still running on their threads when the
  // process exits (a call in flight, a tool past its timeout) may still read it.
  static const schema::model& s = *[] {
    schema::model* m = detail::new_model();
    try {
      detail::build_schema<T>(*m);
    } catch (...) {
      detail::delete_model(m);
      throw;
    }
    return m;
  }();
  return s;
}

}  // namespace covenant

#include "covenant/types/encode.hpp"  // default_value_of
