// covenant/runtime/schema_diagnostic.hpp - problems found in a schema while it is loaded (schema files,
// JSON Schema documents, models handed to the registry), and the structural checks every runtime
// schema goes through.
//
// A diagnostic says where (file, line and column for schema files; a JSON pointer for JSON Schema
// documents), what kind of problem (a code) and a message:
//
//     answer.baml:12:5: error: unknown type 'Sourcee' [unknown_type]
//     /properties/confidence/minimum: error: must be a number [invalid_json_schema]
//
// Loading collects every problem before failing, so one run shows them all.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/types/config.hpp"
#include "covenant/types/schema.hpp"

namespace covenant {

/// What kind of problem a schema diagnostic reports.
enum class schema_error_code : std::uint8_t {
  syntax_error,          ///< the text does not parse
  unsupported,           ///< a declaration, type or keyword outside the supported language
  unknown_type,          ///< a type name no declaration defines
  duplicate_type,        ///< two declarations with the same name
  duplicate_field,       ///< two fields of one class with the same name
  duplicate_value,       ///< two values of one enum with the same name
  conflicting_alias,     ///< two fields (or enum values, or types) with the same JSON spelling
  unescaped_recursion,   ///< a type that only an infinitely deep value could satisfy
  invalid_constraint,    ///< a @check/@assert expression that does not parse or cannot apply
  unknown_attribute,     ///< an attribute the reader does not know
  invalid_attribute,     ///< a known attribute with wrong arguments or in the wrong place
  invalid_map_key,       ///< a map key type other than string, an enum or string literals
  limit_exceeded,        ///< a load limit (bytes, depth, types, fields) was exceeded
  io_error,              ///< the file cannot be read
  invalid_json_schema,   ///< a JSON Schema keyword with a value of the wrong kind
  skipped,               ///< (note) a declaration that was skipped on purpose (function, client, ...)
};

/// Stable snake_case name of a code ("unknown_type", ...).
COVENANT_API std::string_view to_string(schema_error_code code) noexcept;

/// One problem (or note) found while loading a schema.
struct COVENANT_API schema_diagnostic {
  schema_error_code code = schema_error_code::syntax_error;
  std::string file;          ///< file name as given to the loader ("" when none)
  std::uint32_t line = 0;    ///< 1-based; 0 when the source has no lines (JSON Schema values)
  std::uint32_t column = 0;  ///< 1-based, in code points
  std::string pointer;       ///< JSON Schema documents: JSON pointer of the offending keyword
  std::string message;       ///< compact phrase, e.g. "unknown type 'Sourcee'"

  /// `file:line:column: error: message [code]` (`note:` for skipped declarations); the parts
  /// that are unknown are left out.
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const schema_diagnostic&, const schema_diagnostic&) = default;
};

using schema_diagnostics = std::vector<schema_diagnostic>;

/// One line per diagnostic.
COVENANT_API std::string render_diagnostics(const schema_diagnostics& diagnostics);

COVENANT_API std::ostream& operator<<(std::ostream& os, const schema_diagnostic& d);

/// Thrown by the loaders that do not return diagnostics (the forms without try_); carries every
/// problem.
class COVENANT_API schema_error : public std::runtime_error {
 public:
  explicit schema_error(schema_diagnostics issues);
  [[nodiscard]] const schema_diagnostics& issues() const noexcept { return issues_; }

 private:
  schema_diagnostics issues_;
};

/// Structural checks of a model built outside a schema file (JSON Schema import, hand-built or
/// registered models): every ref names a definition, map keys are strings, enums or string
/// literals, no object has two fields with the same key, no enum accepts one spelling for two
/// values, and no type can only be satisfied by an infinite value (an object that requires itself
/// through required, non-null fields that are not lists or maps, or an alias that reaches itself
/// without passing through a list, a map or an object), and definitions do not contain one
/// another more than COVENANT_SCHEMA_MAX_DEPTH levels deep (recursion counted once).
/// Diagnostics carry the definition's source location and name the path ("Node.next").
COVENANT_API schema_diagnostics check_model(const schema::model& m);

/// The model rooted at `root`, keeping only the definitions `root` reaches (in the order they
/// are first met, depth first, like schema_of<T>()), with `def` indexes renumbered. Refs are
/// resolved by index when set, else by name.
COVENANT_API schema::model reachable_model(const schema::model& all, const schema::type& root);

}  // namespace covenant
