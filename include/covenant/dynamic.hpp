// covenant/dynamic.hpp - decoding and validation against a runtime schema (a schema::model from
// a schema file, a JSON Schema document, the registry, or schema_of<T>()), producing a
// boost::json::value instead of a C++ struct.
//
//     covenant::schema::model m = covenant::schema_set::parse(text).model("FinalAnswer");
//     covenant::dynamic_result r = covenant::decode_dynamic(model_output, m);
//     if (!r) std::cerr << covenant::render_feedback(r.issues);
//     else use(r.value);                       // validated; keys as in the schema
//
// The issues are exactly those the typed decoder (decode.hpp) reports for an equivalent C++
// type: same paths, codes, expected/actual texts, messages and order, from the same constraint
// checks. On top of what C++ types can express, runtime schemas also have literal types, map
// key types (enums, string literals), @check/@assert rules (custom checks with check_json) and
// object-level rules written in the schema.
//
// The value: objects list their fields in schema order under their JSON keys (or declared names,
// see output_keys); fields the schema does not declare and @skip fields are dropped (unknown
// fields are issues with decode_options::reject_unknown_fields); absent fields with a default get
// it; absent optional fields without one stay absent; `float` values are doubles, `int` values
// integers; enum values use their JSON spelling (or declared name). When there are issues the
// value is a best-effort partial result; after a JSON syntax error it is null.
//
// Rules: constraints with a JSON check run after the keyword constraints of the same value;
// soft constraints (schema-file @check, constraint::soft, or object rules whose check is a soft
// expression check) add a note of kind check_failed instead of an issue. Native-only checks
// (C++ predicates of schema_of<T>() models) cannot run on JSON and are skipped; uniqueness
// (unique_items, unique_by) is checked on the JSON values. Rules see values with the keys of the
// output, except that an object's own rules read its fields by their declared names.
#pragma once

#include <boost/json/value.hpp>

#include <cstdint>
#include <string>
#include <string_view>

#include "covenant/detail/decode_context.hpp"
#include "covenant/issues.hpp"
#include "covenant/schema.hpp"

namespace covenant {

/// Which names the decoded value uses for object keys and enum values.
enum class output_keys : std::uint8_t {
  json,      ///< JSON keys / enum spellings (aliases applied): the value validates again
  declared,  ///< names as declared in the schema (BAML's parsed values)
};

/// Result of a dynamic decode: the value, every issue, and notes (failed soft checks).
struct dynamic_result {
  boost::json::value value;
  issue_list issues;
  note_list notes;

  [[nodiscard]] bool ok() const noexcept { return issues.empty(); }
  explicit operator bool() const noexcept { return ok(); }
};

/// Reads JSON `text` against the model's root type.
dynamic_result decode_dynamic(std::string_view text, const schema::model& m, const decode_options& options = {},
                              output_keys keys = output_keys::json);

/// Checks a JSON value against the model's root type (the value is read as its compact JSON
/// text, so the issues are those decode_dynamic reports for that text). `value` of the result is
/// the normalized value.
dynamic_result validate_value(const boost::json::value& value, const schema::model& m,
                              const decode_options& options = {}, output_keys keys = output_keys::json);

/// Compact JSON text of a value, numbers in shortest form (0.87 rather than 8.7E-1); non-finite
/// doubles are written as null.
std::string json_text(const boost::json::value& value);

}  // namespace covenant
