// covenant/detail/coerce.hpp - schema-guided readings of values written in the wrong form
// ("0.9" for a number, "HIGH" for the enum value high, "modelUsed" for the key model_used). Used
// by every decoder in coerce mode; each reading is recorded as a note by the caller. Nothing here
// invents data: a text that is not clearly one value of the target is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/read/detail/decode_context.hpp"
#include "covenant/read/detail/json_reader.hpp"
#include "covenant/read/lenient.hpp"
#include "covenant/types/schema.hpp"

namespace covenant::detail {

inline constexpr std::size_t no_match = static_cast<std::size_t>(-1);

/// A number written as text: "0.9", " -3 ", "1,234.5" (thousands separators), "9/10" (a
/// fraction), "87%" (a fraction 0.87 when `percent_is_fraction`, refused otherwise), "1e3"; or
/// the only number standing alone in a sentence ("1 cup of flour", "12.11."; not "gpt-4o",
/// not "3 or 4"). Surrounding whitespace is ignored. False when the text does not name exactly
/// one number.
COVENANT_API bool number_from_text(std::string_view text, bool percent_is_fraction, double& out) noexcept;

/// "true" / "false" in any letter case (surrounding whitespace ignored), or the only one of the
/// two words in a sentence ("The answer is **True**").
COVENANT_API bool bool_from_text(std::string_view text, bool& out) noexcept;

/// One name of a value (a value may have several: an enum value and its aliases).
struct named_value {
  std::string_view name;
  std::size_t index;
};

/// Index of the value `text` names: exactly, then ignoring letter case, spaces and punctuation
/// ("HIGH", "very-high", "\"high\"!"), then also ignoring accents ("cafe" for "café", "strasse"
/// for "Straße"), then as the only value named as a whole word in the text (as written first,
/// then in any letter case, then without accents). Ambiguity at a step (two values match) moves
/// on to the next; no_match when nothing names exactly one value. `how` describes the rule used.
COVENANT_API std::size_t match_name(const std::vector<named_value>& names, std::string_view text, std::string& how);

/// match_name over the enum's values: aliases count as names; skipped values never match.
COVENANT_API std::size_t match_enum_value(const schema::enum_def& e, std::string_view text, std::string& how);

/// An enum value at the reader (both decoders read enums with it): its name or an alias as
/// written, or in coerce mode a spelling match_enum_value accepts (noted at `at`). The index of the
/// value in the enum's values, or no_match: the value names none (the issue is reported) or the
/// text is not JSON (the reader failed). `start` is where the value begins.
COVENANT_API std::size_t read_enum_value(json_reader& r, const schema::type& node, const schema::definition& def,
                                         decode_context& ctx, const path_frame* at);

/// The JSON value of a number's text: an integer as int64 or uint64 when it is one that fits,
/// else a double; false when it is not a number or out of a double's range.
COVENANT_API bool number_value(std::string_view text, boost::json::value& out) noexcept;

/// Any JSON value at the reader, parsed whole (within the depth limit); a type_mismatch issue
/// when it cannot be.
COVENANT_API void read_json_value(json_reader& r, boost::json::value& out, decode_context& ctx, const path_frame* at);

/// Coerce mode, a value read through another shape than the one written (one implementation for
/// the typed and the dynamic decoder, src/read/reshape.cpp). The target as functions: `read` reads
/// the value of `node` at the reader into it; for an object target, `read_field` reads field `j`
/// of `def` into it (the target becomes that object) and `checks` runs the object's own checks
/// (invariants, then the constraints of `node`) on it, read from `raw`.
struct reshape_target {
  void* self = nullptr;
  void (*read)(void* self, json_reader& r, const schema::type& node, decode_context& ctx, const path_frame* at) = nullptr;
  void (*read_field)(void* self, json_reader& r, const schema::object_def& def, std::size_t j, decode_context& ctx,
                     const path_frame* at) = nullptr;
  void (*checks)(void* self, const schema::type& node, const schema::object_def& def, std::string_view raw,
                 decode_context& ctx, const path_frame* at) = nullptr;
};

/// What a target takes a value wrapped in a one-item list or a one-member object for: a number,
/// boolean, enum or scalar literal takes its only item or member; an object takes the only item of
/// a one-item list; nothing else does.
enum class wrapped_target : std::uint8_t { none, single_value, object };
COVENANT_API wrapped_target wrapped_kind(const schema::model& s, const schema::type& t) noexcept;

/// A one-item list or a one-member object at the reader where the target takes its only item or
/// member (wrapped_kind; one level: [[1]] and {"a": {"b": 1}} are not 1): that value read into the
/// target, noted. False, the reader back at the value (or failed), when it does not read so
/// without issues.
COVENANT_API bool read_unwrapped(json_reader& r, const reshape_target& t, const schema::type& node,
                                 decode_context& ctx, const path_frame* at);

/// An object target whose definition has exactly one field: a number or a boolean where that field
/// is a number, boolean, literal or union, read as the field; an object none of whose keys names
/// that field where the field is an object (or a union of objects), read as the field's value
/// (`{"name": ..}` for `class Wrapper { selected Inner }`). Noted, with the object's checks run.
/// False, the reader back at the value (or failed), when neither applies or the value does not
/// read so without issues.
COVENANT_API bool read_as_only_field(json_reader& r, const reshape_target& t, const schema::type& node,
                                     const schema::object_def& def, decode_context& ctx, const path_frame* at);

/// The object at the reader, looked at without reading it (the reader is left where it was): how
/// many keys it has, and whether one names a field of `def` that is not skipped (its key as
/// written, or spelled otherwise: match_field_key). False when the value is no object, or is not
/// JSON (then the reader failed).
struct object_keys {
  std::size_t count = 0;
  bool names_field = false;
};
COVENANT_API bool look_at_keys(json_reader& r, const schema::object_def& def, object_keys& out);

/// Index of the field whose key (or declared name) `key` denotes ignoring letter case, spaces and
/// punctuation (so modelUsed, ModelUsed, model-used and MODEL_USED all denote model_used), then
/// also accents ("direccion" for "dirección"), when exactly one field matches; no_match otherwise.
COVENANT_API std::size_t match_field_key(const schema::object_def& o, std::string_view key);

/// Coerce mode, a list, a map or an object expected: the reader at a string that holds the JSON
/// text of one object or list ("{\"model\": \"x\"}", "[1, 2]"; repairs allowed, read by the
/// lenient reader; nothing else around it, not cut off) consumes the string, notes the reading at
/// `at` and reads that text as `node` into the target (`t.read`, with a reader of its own) at the
/// same path; a text that is not strict JSON within the depth limit is a type mismatch. True when
/// it did (or the reader failed on bad syntax); false, the reader back at the string, when the
/// string holds no such value.
COVENANT_API bool read_json_in_string(json_reader& r, const reshape_target& t, const schema::type& node,
                                      decode_context& ctx, const path_frame* at);

/// Where the text being decoded (decode_options::source) was read from: a candidate of the lenient
/// reader, its `json` decoded, read from `input`.
struct source_map {
  std::string_view json;                            ///< the text being decoded
  std::string_view input;                           ///< the reply
  const std::vector<source_span>* spans = nullptr;  ///< candidate::spans
  bool partial = false;                             ///< the reply is still being written
  bool cut = false;  ///< the candidate ended inside a value (candidate::truncated): what is missing may be what was cut

  /// The map of the candidates of `reply`.
  static source_map of_reply(std::string_view reply, bool partial) noexcept {
    source_map m;
    m.input = reply;
    m.partial = partial;
    return m;
  }
  /// The candidate decoded next.
  void read_from(const candidate& c) noexcept {
    spans = &c.spans;
    cut = c.truncated;
  }
};

/// `decode(text, options)` that first tells `map` which text it decodes (a candidate, or the
/// candidate without an unfinished item: the offsets before that item hold).
template <class Decode>
auto decode_through(source_map& map, Decode& decode) {
  return [&map, &decode](std::string_view t, const decode_options& o) {
    map.json = t;
    return decode(t, o);
  };
}

/// Coerce level: whether a required field of type `t` that the text does not have is read as an
/// empty list (with a note) instead of being a missing field. Only for a list without bounds of
/// its own, in a final read of a text that was not cut off (a list cut at the end of the reply
/// was dropped and must not come back empty).
COVENANT_API bool missing_list_reads_as_empty(const decode_context& ctx, const schema::type& t) noexcept;

/// The note of that reading.
inline constexpr std::string_view missing_list_note = "missing list read as empty";

/// The notes of the shape coercions (detail::shape_coercion recognises a note by them): a single
/// value read as a one-item list, a one-item list read as its item, the only member of an object
/// read as the value (`only_member_note` + the key in JSON + `only_member_note_end`), a single
/// value read as an object's only field (+ the field's key in JSON).
inline constexpr std::string_view one_item_list_note = "a single value read as a one-item list";
inline constexpr std::string_view item_of_list_note = "a one-item list read as its item";
inline constexpr std::string_view only_member_note = "the only member ";
inline constexpr std::string_view only_member_note_end = " read as the value";
inline constexpr std::string_view only_field_note = "a single value read as the object's only field ";

/// Coerce mode, an object or a list where a string is wanted, `raw` being its JSON text in the text
/// being decoded: the text it was written as in the reply (ctx.opts.source), or `raw` itself when
/// that text is the reply's (strict JSON is its own text). False when the reply ended inside it
/// and is final (the cut text is not a value).
COVENANT_API bool written_text(const decode_context& ctx, std::string_view raw, std::string_view& text) noexcept;

/// The notes of that reading.
inline constexpr std::string_view list_as_text_note = "a list read as its text";
inline constexpr std::string_view object_as_text_note = "an object read as its text";
/// The note of that reading for `raw`.
inline std::string_view written_text_note(std::string_view raw) noexcept {
  return !raw.empty() && raw.front() == '[' ? list_as_text_note : object_as_text_note;
}
/// Whether `n` records that reading.
inline bool is_written_text_note(const note& n) noexcept {
  return n.kind == note_kind::coerced && (n.detail == list_as_text_note || n.detail == object_as_text_note);
}

/// How many of `notes` record that reading. A union takes an alternative that needed it only when
/// no alternative fits without (then the one that needed it fewest times).
COVENANT_API std::size_t written_text_readings(const note_list& notes) noexcept;

}  // namespace covenant::detail
