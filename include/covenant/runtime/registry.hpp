// covenant/runtime/registry.hpp - named, versioned runtime schemas, and backward-compatibility checks
// between versions.
//
//     covenant::schema_registry reg;
//     reg.add_schema_file("FinalAnswer", "v1", baml_text);               // type FinalAnswer of the file
//     reg.add_json_schema("FinalAnswer", "v2", json_schema_document);
//     reg.add_type<FinalAnswer>("FinalAnswer", "v3");                     // from schema_of<T>()
//     covenant::registered_schema s = reg.get("FinalAnswer@v2");          // or "FinalAnswer": latest
//     covenant::compat_report c = reg.check_compatibility("FinalAnswer", "v1", "v2");
//     if (!c.compatible()) std::cerr << c.to_string();                    // field by field
//
// Versions are free-form labels ordered naturally ("v2" < "v10", "1.9" < "1.10"); the latest is
// the greatest. Every registered model passes covenant::check_model first. A registry is
// thread-safe: any number of threads may register, look up and list at once; lookups return the
// model by shared pointer, so it stays valid whatever happens to the registry later.
//
// Errors are registry_error values with a code: unknown_schema (no schema of that name),
// unknown_version (the name exists, the version does not; the answer validator's BAML-ERR-007 "schema version
// not found"), duplicate_version, invalid_schema (the definition does not load or fails the
// structural checks; the answer validator's BAML-ERR-008, with every diagnostic) and invalid_reference.
//
// Compatibility: version B is backward compatible with version A when every document valid
// under A is still valid under B and every field readers of A rely on is still there. Breaking:
// a field removed, a required field added, an optional field made required, a type narrowed or
// changed (null no longer accepted, number to integer, an alternative or literal removed), an
// enum value removed, a constraint added or tightened (a higher minimum, a shorter maximum length,
// fewer one-of values, a new pattern, format, uniqueness or rule). Compatible: optional fields
// added, required fields made optional, types widened (null accepted, integer to number, an
// alternative added, a literal to its base type), enum values added, constraints removed or
// loosened, soft (@check) rules changed. Fields are matched by JSON key; paths read
// `metadata.token_usage.input_tokens`, `sources[]` (list items) and `counts{}` (map values).
#pragma once

#include <boost/json/value.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/runtime/json_schema_import.hpp"
#include "covenant/types/config.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/runtime/schema_diagnostic.hpp"
#include "covenant/runtime/schema_file.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant {

// ---- compatibility ----------------------------------------------------------------------------

/// What changed between two versions of a schema at one path.
enum class change_kind : std::uint8_t {
  field_removed,         ///< breaking
  field_added,           ///< compatible when optional (or defaulted), breaking when required
  became_required,       ///< breaking: an optional field is now required
  became_optional,       ///< compatible
  type_changed,          ///< breaking: the new type accepts different values
  type_narrowed,         ///< breaking: the new type accepts fewer values (null, an alternative, ...)
  type_widened,          ///< compatible: the new type accepts more values
  enum_value_removed,    ///< breaking
  enum_value_added,      ///< compatible
  constraint_tightened,  ///< breaking: a constraint or rule added or made stricter
  constraint_loosened,   ///< compatible: a constraint or rule removed or relaxed
};

/// Stable snake_case name of a change kind.
COVENANT_API std::string_view to_string(change_kind kind) noexcept;

/// One difference, at a path of the document ("" = the root value).
struct COVENANT_API schema_change {
  std::string path;
  change_kind kind = change_kind::type_changed;
  bool breaking = true;
  std::string detail;  ///< e.g. "maximum length 200 -> 100", "\"medium\" removed"

  /// `breaking: path: detail` or `compatible: path: detail` (`(root)` for the root).
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const schema_change&, const schema_change&) = default;
};

struct COVENANT_API compat_report {
  std::vector<schema_change> changes;  ///< in document order (fields in declaration order)

  /// No breaking change.
  [[nodiscard]] bool compatible() const noexcept;
  /// The breaking changes only.
  [[nodiscard]] std::vector<schema_change> breaking() const;
  /// One line per change.
  [[nodiscard]] std::string to_string() const;
};

/// Compares the root types of two models (older first).
COVENANT_API compat_report check_compatibility(const schema::model& older, const schema::model& newer);

// ---- registry ---------------------------------------------------------------------------------

enum class registry_error_code : std::uint8_t {
  unknown_schema,     ///< no schema of that name
  unknown_version,    ///< the name exists but not that version (the answer validator's BAML-ERR-007)
  duplicate_version,  ///< name@version is already registered
  invalid_schema,     ///< the definition does not load or fails check_model (the answer validator's BAML-ERR-008)
  invalid_reference,  ///< a "Name@version" text that is malformed
};

/// Stable snake_case name of a code.
COVENANT_API std::string_view to_string(registry_error_code code) noexcept;

class COVENANT_API registry_error : public std::runtime_error {
 public:
  registry_error(registry_error_code code, std::string message, schema_diagnostics issues = {});
  [[nodiscard]] registry_error_code code() const noexcept { return code_; }
  /// The load problems of an invalid_schema error.
  [[nodiscard]] const schema_diagnostics& issues() const noexcept { return issues_; }

 private:
  registry_error_code code_;
  schema_diagnostics issues_;
};

/// "Name@version" split in two; version is "" for a bare name (the latest).
struct schema_ref {
  std::string name;
  std::string version;
  friend bool operator==(const schema_ref&, const schema_ref&) = default;
};

/// Parses "FinalAnswer@v2" or "FinalAnswer"; nullopt when the text is neither (an empty name or
/// version, a second '@').
COVENANT_API std::optional<schema_ref> parse_schema_ref(std::string_view text);

/// Natural order of version labels: digit runs compare as numbers ("v2" < "v10").
COVENANT_API bool version_less(std::string_view a, std::string_view b) noexcept;

/// A registered schema. The model is shared and immutable.
struct registered_schema {
  std::string name;
  std::string version;
  std::shared_ptr<const schema::model> model;
  std::string origin;  ///< "schema file", "JSON Schema", "C++ type" or "model"

  /// "Name@version".
  [[nodiscard]] std::string ref() const { return name + "@" + version; }
};

/// One name and its versions, oldest first.
struct schema_listing {
  std::string name;
  std::vector<std::string> versions;
  friend bool operator==(const schema_listing&, const schema_listing&) = default;
};

class COVENANT_API schema_registry {
 public:
  schema_registry() = default;
  schema_registry(const schema_registry&) = delete;
  schema_registry& operator=(const schema_registry&) = delete;

  /// Registers a model under name@version. Throws registry_error (duplicate_version,
  /// invalid_schema, invalid_reference for an empty name or version or one containing '@').
  registered_schema add(std::string_view name, std::string_view version, schema::model m,
                        std::string_view origin = "model");
  /// Registers type `type` (default: `name`) of a schema file's text.
  registered_schema add_schema_file(std::string_view name, std::string_view version, std::string_view text,
                                    std::string_view type = {}, const schema_load_options& options = {});
  /// Registers a JSON Schema document.
  registered_schema add_json_schema(std::string_view name, std::string_view version,
                                    const boost::json::value& document, const json_schema_import_options& options = {});
  /// Registers the schema of a C++ type.
  template <class T>
  registered_schema add_type(std::string_view name, std::string_view version) {
    return add(name, version, schema_of<T>(), "C++ type");
  }

  /// The schema name@version; throws registry_error (unknown_schema, unknown_version).
  [[nodiscard]] registered_schema get(std::string_view name, std::string_view version) const;
  /// "Name@version", or "Name" for its latest version.
  [[nodiscard]] registered_schema get(std::string_view ref) const;
  /// Like get, without throwing.
  [[nodiscard]] std::optional<registered_schema> find(std::string_view name, std::string_view version = {}) const;
  /// The latest version of `name`; throws registry_error(unknown_schema).
  [[nodiscard]] registered_schema latest(std::string_view name) const;
  /// Versions of `name`, oldest first (empty when unknown).
  [[nodiscard]] std::vector<std::string> versions(std::string_view name) const;
  /// Every name (sorted) with its versions.
  [[nodiscard]] std::vector<schema_listing> list() const;
  /// Removes name@version; false when it was not registered.
  bool remove(std::string_view name, std::string_view version);

  /// Whether version `to` of `name` is backward compatible with version `from`.
  [[nodiscard]] compat_report check_compatibility(std::string_view name, std::string_view from,
                                                  std::string_view to) const;

 private:
  struct version_order {
    using is_transparent = void;
    bool operator()(std::string_view a, std::string_view b) const noexcept { return version_less(a, b); }
  };
  using versions_map = std::map<std::string, registered_schema, version_order>;

  registered_schema get_locked(std::string_view name, std::string_view version) const;

  mutable std::shared_mutex mutex_;
  std::map<std::string, versions_map, std::less<>> entries_;
};

}  // namespace covenant
