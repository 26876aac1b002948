// covenant/types/json_schema.hpp - the schema model as JSON Schema (draft 2020-12), and the subset
// OpenAI's structured outputs accept in strict mode.
//
//     const boost::json::value& js = covenant::json_schema_of<FinalAnswer>();
//     boost::json::value rf = covenant::openai_response_format(covenant::schema_of<FinalAnswer>(), "final_answer");
//
// The root object is inlined at the top level (`$schema`, `title`, `description`, `type`,
// `properties`, `required`); every other object, enum and alias it uses lives in `$defs` and is
// referenced as {"$ref": "#/$defs/Name"}; a reference back to the root is {"$ref": "#"}.
// Constraints become keywords where JSON Schema has one. Rules without a keyword (predicates,
// uniqueness by key, cross-field invariants) are appended to the `description` as sentences, so
// a model reading the schema still learns them.
//
// Strict mode (to_openai_strict_schema) differs: every object has "additionalProperties": false
// and lists every property in `required` (optional fields become nullable; a field with a default
// value stays required and non-null and names its default in the description); only keywords
// OpenAI accepts stay keywords (strings: pattern, format date-time / time / date / email / uuid;
// numbers: minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf; arrays: minItems,
// maxItems; enum), every other constraint moves into the description. The root must be an
// object; maps and `any` values cannot be expressed and throw std::invalid_argument naming their
// path.
#pragma once

#include <boost/json/value.hpp>

#include <string_view>

#include "covenant/types/config.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant {

/// The `$schema` URI written at the top of exported schemas.
inline constexpr std::string_view json_schema_dialect = "https://json-schema.org/draft/2020-12/schema";

struct json_schema_options {
  /// Write "$schema" at the top (never in strict mode).
  bool include_schema_uri = true;
  /// OpenAI structured-outputs strict subset (see to_openai_strict_schema).
  bool openai_strict = false;
};

/// JSON Schema 2020-12 of the model. Throws std::invalid_argument only in strict mode, when the
/// model cannot be expressed (non-object root, maps, `any`).
COVENANT_API boost::json::value to_json_schema(const schema::model& s, const json_schema_options& options = {});

/// The OpenAI strict-mode schema of the model: to_json_schema(s, {.openai_strict = true}).
COVENANT_API boost::json::value to_openai_strict_schema(const schema::model& s);

/// {"type": "json_schema", "json_schema": {"name": name, "strict": true, "schema": ...}}, the
/// `response_format` of an OpenAI chat completion request. An empty name uses the root's title.
COVENANT_API boost::json::value openai_response_format(const schema::model& s, std::string_view name = {});

/// to_json_schema(schema_of<T>()), built on first use and cached.
template <class T>
const boost::json::value& json_schema_of() {
  static const boost::json::value v = to_json_schema(schema_of<T>());
  return v;
}

/// to_openai_strict_schema(schema_of<T>()), built on first use and cached.
template <class T>
const boost::json::value& openai_strict_schema_of() {
  static const boost::json::value v = to_openai_strict_schema(schema_of<T>());
  return v;
}

namespace detail {
/// Wraps a strict schema as an OpenAI `response_format`.
COVENANT_API boost::json::value response_format(const boost::json::value& strict_schema, std::string_view name);
}  // namespace detail

/// openai_response_format(schema_of<T>(), name), from the cached strict schema.
template <class T>
boost::json::value openai_response_format(std::string_view name = {}) {
  return detail::response_format(openai_strict_schema_of<T>(), name);
}

}  // namespace covenant
