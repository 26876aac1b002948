// covenant/runtime/json_schema_import.hpp - JSON Schema documents (draft 2020-12; also the `definitions`
// of older drafts and pydantic's output) into the schema model, so a schema written for another
// tool drives prompts, JSON Schema export and validation (dynamic.hpp) like a C++ type.
//
//     covenant::schema::model m = covenant::import_json_schema(boost::json::parse(text));
//     auto r = covenant::try_decode_dynamic(model_output, m);
//
// Supported: `type` (one name or an array; "null" in it makes the type nullable), `properties`,
// `required`, `additionalProperties` (a schema: a map; `propertyNames` gives its key type),
// `items`, `enum`, `const`, `anyOf` / `oneOf` (a union; a trailing {"type": "null"} makes it
// nullable), `allOf` with one subschema, `$ref` to "#", "#/$defs/Name" and "#/definitions/Name",
// `$defs` / `definitions`, every constraint keyword the exporter writes (minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, multipleOf, minLength, maxLength, pattern, format,
// minItems, maxItems, uniqueItems, minProperties, maxProperties), `description`, `title`,
// `default`, and OpenAPI's `nullable: true`. Annotations (`$comment`, `examples`, `$id`, ...) and
// unknown keywords are ignored. Keywords that change validation but have no place in the model
// (`not`, `if`/`then`/`else`, `patternProperties`, `prefixItems`, `contains`, remote `$ref`s,
// ...) are refused: importing never silently accepts more than the document allows.
//
// Names: the root object is the definition named by its `title` (else `root_name`); `$defs`
// keep their names; objects written inline become definitions named by their `title`, else
// `<Parent>_<property>`. A `$defs` entry that is a string enum becomes an enum, one with
// `properties` an object, anything else an alias.
//
// Round trip: for every model the typed core exports (covenant::to_json_schema of schema_of<T>()),
// exporting the imported model gives the same document, and decoding with it gives the typed
// decoder's issues, except where the document cannot carry the information: C++ predicates and
// cross-field rules only survive as text in descriptions; 32-bit and unsigned 32/64-bit integer
// fields read back as 64-bit integers (with `minimum: 0` for unsigned ones); and an integer
// constrained to exactly the range of an 8- or 16-bit C++ type reads back as that type.
#pragma once

#include <boost/json/value.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "covenant/types/config.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/runtime/schema_diagnostic.hpp"
#include "covenant/runtime/schema_file.hpp"

namespace covenant {

struct json_schema_import_options {
  /// Name of the root object when the document has no `title`.
  std::string root_name = "Root";
  /// Shown in diagnostics.
  std::string file;
  /// max_bytes (text form), max_depth (subschema nesting), max_types, max_fields, max_errors.
  schema_limit_options limits{};
};

struct json_schema_import_result {
  std::optional<schema::model> model;  ///< present when there are no issues
  schema_diagnostics issues;           ///< each with the JSON pointer of the offending keyword

  [[nodiscard]] bool ok() const noexcept { return issues.empty(); }
};

/// Imports a parsed JSON Schema document without throwing.
COVENANT_API json_schema_import_result try_import_json_schema(const boost::json::value& document,
                                                              const json_schema_import_options& options = {});
/// Parses JSON text (syntax errors carry line and column) and imports it without throwing.
COVENANT_API json_schema_import_result try_import_json_schema_text(std::string_view text,
                                                                   const json_schema_import_options& options = {});

/// Imports a parsed document; throws schema_error with every problem.
COVENANT_API schema::model import_json_schema(const boost::json::value& document,
                                              const json_schema_import_options& options = {});
/// Parses and imports JSON text; throws schema_error with every problem.
COVENANT_API schema::model import_json_schema_text(std::string_view text,
                                                   const json_schema_import_options& options = {});

/// A schema file (BAML syntax) or a JSON Schema document, loaded.
struct schema_document {
  std::string file;
  bool json_schema = false;
  /// The named types (JSON Schema: its definitions); meaningful when issues is empty.
  schema_set set{};
  /// JSON Schema: the document's own model (its root).
  std::optional<schema::model> document{};
  schema_diagnostics issues{};
  schema_diagnostics notes{};

  [[nodiscard]] bool ok() const noexcept { return issues.empty(); }
};

/// Whether `text` (from `file`) is a JSON Schema document: a .json name, or text that starts with
/// '{' (after white space and a byte order mark).
COVENANT_API bool is_json_schema_document(std::string_view file, std::string_view text) noexcept;

/// Loads `file` as a JSON Schema document or a schema file, whichever it is (see
/// is_json_schema_document), at most COVENANT_SCHEMA_MAX_BYTES, without throwing. Every problem
/// is in `issues`, a file that cannot be read included (io_error, limit_exceeded).
COVENANT_API schema_document try_load_schema_document(const std::filesystem::path& file);
/// Loads `file` as try_load_schema_document does; throws schema_error with every problem (the
/// returned document's `issues` are empty).
COVENANT_API schema_document load_schema_document(const std::filesystem::path& file);

}  // namespace covenant
