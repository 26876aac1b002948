// covenant/runtime/schema_file.hpp - schemas declared in a file, in the type-declaration part of BAML's
// language, loaded at run time into the same schema model the C++ types use.
//
//     auto set = covenant::schema_set::parse(R"(   // throws schema_error; try_parse does not
//       enum Priority { LOW  HIGH @alias("urgent") }
//       class Ticket {
//         title string @assert({{ this|length > 0 }})
//         priority Priority
//         tags string[]
//         due string? @description("ISO date")
//       }
//     )", {.file = "ticket.baml"});
//     covenant::schema::model m = set.model("Ticket");          // root: Ticket
//     covenant::schema::model l = set.model_for("Ticket[]");    // root: any type expression
//
// The model then drives prompt text (prompt_format.hpp), JSON Schema (json_schema.hpp) and
// validation (dynamic.hpp) exactly as for a C++ type.
//
// The language (see docs/runtime-schemas.md for the full description):
//   class Name { field type @attr... }   enum Name { VALUE @attr... }   type Name = type
//   model Name { field: type  field?: type  nested?: { ... } }   (inline objects become
//                                                                  definitions Name_field)
//   types: string int float bool null, T[], T?, map<K, V>, list[T], A | B, literals "a" 1 true,
//          (parentheses), names of classes, enums and aliases
//   comments: // line, /* block */, /// doc comment (becomes the description)
//   field attributes: @alias("key") @description("...") @skip @check(name, {{ expr }})
//                     @assert(name, {{ expr }}) (name optional) @stream.done @stream.not_null
//                     @stream.with_state
//   class/enum attributes: @@assert @@check @@description @@alias @@dynamic @@stream.done
//                          @@stream.not_null
//   enum value attributes: @alias @description @skip
// Mapping: int -> integer (64-bit), float -> number, T? -> nullable (and an optional field),
// A | null -> nullable A, @alias -> the field's JSON key (or the enum value's spelling; the
// declared name stays accepted), @assert -> constraints (simple rules such as `this >= 0` or
// `this|length <= 200` become keyword constraints, others predicates evaluated on JSON values),
// @check -> soft constraints (failures are notes, not issues), @@assert on a class -> a
// cross-field rule, on an enum -> a rule on every use of the enum.
// `function`, `client`, `generator`, `test`, `template_string` and `retry_policy` blocks are
// skipped (each leaves a note); any other declaration is refused with its line and column.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "covenant/types/config.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/runtime/schema_diagnostic.hpp"

namespace covenant {

/// Limits that keep a hostile schema from exhausting memory, stack or time. Exceeding one is a
/// limit_exceeded diagnostic, never a crash.
struct schema_limit_options {
  std::size_t max_bytes = COVENANT_SCHEMA_MAX_BYTES;    ///< size of the text
  std::size_t max_depth = COVENANT_SCHEMA_MAX_DEPTH;    ///< nesting of types, inline objects, expressions
  std::size_t max_types = COVENANT_SCHEMA_MAX_TYPES;    ///< named types declared
  std::size_t max_fields = COVENANT_SCHEMA_MAX_FIELDS;  ///< fields and enum values, in total
  std::size_t max_errors = 100;                         ///< stop collecting problems after this many
};

struct schema_load_options {
  /// Name shown in diagnostics and recorded in definitions' source locations.
  std::string file;
  schema_limit_options limits{};
};

/// A BAML streaming attribute (@stream.done, @stream.not_null, @stream.with_state, or the @@
/// forms on a class). The model records them too (schema::type::stream, object_def::stream), and
/// partial reads (read_dynamic) apply them; validation ignores them.
struct stream_hint {
  std::string type;       ///< declared name of the class
  std::string field;      ///< declared field name; "" for the class itself
  std::string attribute;  ///< "done", "not_null" or "with_state"
  friend bool operator==(const stream_hint&, const stream_hint&) = default;
};

class schema_set;

namespace detail {
struct schema_file_access;
}  // namespace detail

/// What a non-throwing load returns: the set (meaningful only when ok()), every problem, and
/// notes about skipped declarations.
struct schema_load_result;

/// What a non-throwing model lookup returns: the model when there are no issues, else every problem.
struct schema_model_result {
  std::optional<schema::model> model;
  schema_diagnostics issues;
  [[nodiscard]] bool ok() const noexcept { return issues.empty(); }
};

/// The named types of one schema file (or text). Cheap to copy only as a whole model; build once
/// and share. Thread-safe for concurrent const use.
class COVENANT_API schema_set {
 public:
  schema_set() = default;

  /// Loads `text`; throws schema_error carrying every problem.
  static schema_set parse(std::string_view text, const schema_load_options& options = {});
  /// Loads `text` without throwing: the set (meaningful when ok()), every problem in `issues`,
  /// and the notes.
  static schema_load_result try_parse(std::string_view text, const schema_load_options& options = {});
  /// Reads and loads a file (options.file defaults to the path); throws schema_error.
  static schema_set load(const std::filesystem::path& file, schema_load_options options = {});
  /// Reads and loads a file without throwing (io_error or limit_exceeded when it cannot be read).
  static schema_load_result try_load(const std::filesystem::path& file, schema_load_options options = {});
  /// The definitions of a model built elsewhere (a JSON Schema import, a registered schema) as a
  /// set, so that model(name) and model_for(type expression) work over them; the model's root is
  /// not kept. Throws schema_error with the problems check_model() finds.
  static schema_set from_model(schema::model m);

  /// Every definition, in declaration order (inline objects right after their parent); the
  /// root is `any`.
  [[nodiscard]] const schema::model& all() const noexcept { return all_; }
  /// Declared type names, in declaration order.
  [[nodiscard]] std::vector<std::string> names() const;
  /// Whether a type of that (declared or @@alias) name exists.
  [[nodiscard]] bool contains(std::string_view name) const noexcept;
  /// The definition of that (declared or @@alias) name, or nullptr.
  [[nodiscard]] const schema::definition* find(std::string_view name) const noexcept;

  /// The model rooted at the named type, with only the definitions it reaches.
  /// Throws schema_error (unknown_type) for an unknown name.
  [[nodiscard]] schema::model model(std::string_view name) const;
  /// The model rooted at a type expression over this set's types: "Foo", "Foo[]", "Foo | Bar",
  /// "map<string, int>", "string?", "(A | B) @stream.done"... Throws schema_error.
  [[nodiscard]] schema::model model_for(std::string_view type_expression) const;
  /// Like model_for, without throwing: the model, or every problem in `issues`.
  [[nodiscard]] schema_model_result try_model_for(std::string_view type_expression) const;

  /// Notes about skipped declarations (function, client, ...) and ignored attributes.
  [[nodiscard]] const schema_diagnostics& notes() const noexcept { return notes_; }
  /// Streaming attributes, in declaration order.
  [[nodiscard]] const std::vector<stream_hint>& stream_hints() const noexcept { return stream_hints_; }

 private:
  friend struct detail::schema_file_access;
  schema::model all_;
  std::unordered_map<std::string, std::uint32_t> by_name_;  // declared and final names
  std::vector<std::string> declared_;                       // declared names, by definition index
  std::vector<std::vector<schema::constraint>> enum_rules_;  // @@assert/@@check of enums, by index
  schema_diagnostics notes_;
  std::vector<stream_hint> stream_hints_;
  schema_limit_options limits_;
};

struct schema_load_result {
  schema_set set;
  schema_diagnostics issues;
  schema_diagnostics notes;
  [[nodiscard]] bool ok() const noexcept { return issues.empty(); }
};

}  // namespace covenant
