// covenant/read/dynamic.hpp - decoding and validation against a runtime schema (a schema::model from
// a schema file, a JSON Schema document, the registry, or schema_of<T>()), producing a
// boost::json::value instead of a C++ struct.
//
//     covenant::schema::model m = covenant::schema_set::parse(text).model("FinalAnswer");
//     covenant::dynamic_result r = covenant::try_decode_dynamic(model_output, m);
//     if (!r) std::cerr << covenant::render_feedback(r.issues);
//     else use(r.value);                       // validated; keys as in the schema
//
//     boost::json::value v = covenant::decode_dynamic(model_output, m);   // or throws decode_error
//
// Each reader has a try_ form, which returns the value with every issue and never throws for bad
// input, and a plain form, which returns the value or throws covenant::decode_error carrying the
// issues of the try_ form.
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

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "covenant/read/detail/decode_context.hpp"
#include "covenant/types/encode.hpp"  // json_text, json_pretty
#include "covenant/types/issues.hpp"
#include "covenant/read/lenient.hpp"
#include "covenant/types/schema.hpp"

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
COVENANT_API dynamic_result try_decode_dynamic(std::string_view text, const schema::model& m,
                                               const decode_options& options = {},
                                               output_keys keys = output_keys::json);
/// Reads JSON `text` against the model's root type: the value, or throws decode_error carrying
/// every issue.
COVENANT_API boost::json::value decode_dynamic(std::string_view text, const schema::model& m,
                                               const decode_options& options = {},
                                               output_keys keys = output_keys::json);

/// Checks a JSON value against the model's root type (the value is read as its compact JSON
/// text, so the issues are those decode_dynamic reports for that text). `value` of the result is
/// the normalized value.
COVENANT_API dynamic_result try_validate_value(const boost::json::value& value, const schema::model& m,
                                               const decode_options& options = {},
                                               output_keys keys = output_keys::json);
/// Checks a JSON value against the model's root type: the normalized value, or throws
/// decode_error carrying every issue.
COVENANT_API boost::json::value validate_value(const boost::json::value& value, const schema::model& m,
                                               const decode_options& options = {},
                                               output_keys keys = output_keys::json);

// ---- reading model text ---------------------------------------------------------------------

/// How read_dynamic() and try_read_dynamic() read a model's reply.
struct read_options {
  /// strict: the text must be the JSON value; repair: also extraction (fences, prose, reasoning
  /// blocks) and syntax repairs; coerce (default): also schema-guided conversions.
  strictness level = strictness::coerce;
  /// The text is an unfinished stream (a prefix of a reply still being written): an unfinished
  /// value at the end is kept and noted as incomplete, and what only the rest of the stream can
  /// settle is not an issue (see try_read_dynamic). The schema's streaming attributes apply
  /// (@stream.done, @stream.not_null; docs/runtime-schemas.md), and an enum value or string
  /// literal is read only from a finished string.
  bool partial = false;
  /// Options of the decoder (unknown fields, limits). `coerce` is set from `level`.
  decode_options decode{};
  /// Keys and enum spellings of the value.
  output_keys keys = output_keys::json;
};

/// What try_read_dynamic() found.
struct read_result {
  /// The validated value; null when the reply could not be read as one (see `issues`).
  boost::json::value value;
  /// Every problem, as try_decode_dynamic reports them (a parse error when nothing could be read).
  issue_list issues;
  /// Every extraction, repair, coercion, truncation, unfinished value and failed soft check, in
  /// that order.
  note_list notes;
  /// The text ended inside the value: what was cut mid-way was dropped (final mode) or kept and
  /// marked incomplete (partial mode).
  bool truncated = false;

  [[nodiscard]] bool ok() const noexcept { return issues.empty(); }
  explicit operator bool() const noexcept { return ok(); }
};

/// Reads a model's reply against the model's root type the way contracts do
/// (covenant/contract/contract.hpp): the text as strict JSON first; then, unless the level is strict, for
/// well-formed JSON with issues the same text with schema-guided coercions (coerce level), and
/// for text that is not JSON the candidates of the lenient reader (lenient.hpp), each decoded,
/// keeping the first without issues (one that needed no change of a value's shape — a single
/// value read as a list, a value read as an object's only field — wins over an earlier one that
/// did), else the one with the fewest.
///
/// Partial mode (options.partial) reads the text as the beginning of a reply: when the text ends
/// inside the value, a required field missing from an unfinished object and a constraint or rule
/// failed by an unfinished value (a list still shorter than its minimum, a string still being
/// written) become `incomplete` notes instead of issues, so the value so far is returned as valid.
/// Values written completely are checked in full: a wrong type or a finished field out of range
/// is still an issue. Text that is complete JSON is read as in final mode.
COVENANT_API read_result try_read_dynamic(std::string_view text, const schema::model& m,
                                          const read_options& options = {});
/// Reads a model's reply as try_read_dynamic does: the value, or throws decode_error carrying
/// every issue (the notes and `truncated` are in try_read_dynamic's result only).
COVENANT_API boost::json::value read_dynamic(std::string_view text, const schema::model& m,
                                             const read_options& options = {});

}  // namespace covenant
