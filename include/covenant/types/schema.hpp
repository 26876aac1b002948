// covenant/types/schema.hpp - the one, format-neutral schema model.
//
// A schema describes the shape of a JSON document: types, fields, descriptions, constraints and
// cross-field rules. It is built once per C++ type from reflection and side-car metadata
// (covenant::schema_of<T>(), see schema_of.hpp) or loaded at run time from a schema file. The same
// model drives JSON Schema export (json_schema.hpp), prompt text (prompt_format.hpp) and
// validation (decode.hpp), so the three can never disagree.
#pragma once

#include <boost/json/value.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "covenant/types/config.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/media.hpp"

namespace covenant::schema {

/// A user-supplied check that is not expressible as a keyword (predicates, cross-field rules,
/// uniqueness by key). Native checks see the C++ object; JSON checks see a boost::json::value.
class COVENANT_API custom_check {
 public:
  virtual ~custom_check() = default;
  /// Whether check_native() is meaningful (checks built from C++ callables).
  [[nodiscard]] virtual bool has_native() const noexcept { return false; }
  /// Whether check_json() is meaningful (checks loaded from schema files).
  [[nodiscard]] virtual bool has_json() const noexcept { return false; }
  /// nullopt when satisfied; otherwise a violation message ("" = use the constraint's message).
  [[nodiscard]] virtual std::optional<std::string> check_native(const void* value) const;
  /// nullopt when satisfied; otherwise a violation message ("" = use the constraint's message).
  [[nodiscard]] virtual std::optional<std::string> check_json(const boost::json::value& value) const;
  /// The check's own fix (on-fail action fix) on the C++ value: true when it changed the value so
  /// that it passes. Checks without a fix return false.
  virtual bool fix_native(void* value) const;
  /// A tool check (covenant/contract/tool_check.hpp): run by the contract after the value is read, never
  /// while it is decoded.
  [[nodiscard]] virtual bool is_tool() const noexcept { return false; }
};

/// Compiled regular expression (RE2: linear time, no catastrophic backtracking).
class compiled_pattern;

enum class constraint_kind : std::uint8_t {
  minimum,            ///< number >= value
  maximum,            ///< number <= value
  exclusive_minimum,  ///< number > value
  exclusive_maximum,  ///< number < value
  multiple_of,        ///< number is an integer multiple of value
  min_length,         ///< string has >= count Unicode code points
  max_length,         ///< string has <= count Unicode code points
  min_items,          ///< array / map has >= count elements
  max_items,          ///< array / map has <= count elements
  pattern,            ///< string contains a match of `text` (RE2 syntax, unanchored like JSON Schema)
  format,             ///< string has format `text`: uri, uuid, date-time, date, time, email
  one_of,             ///< value equals one of `values`
  unique_items,       ///< array elements are pairwise distinct
  unique_by,          ///< array elements have pairwise distinct `text` members
  predicate,          ///< `custom` accepts the value; `text` is the rule shown to the model
};

/// One constraint on a value. Which members are used depends on `kind`.
struct constraint {
  constraint_kind kind = constraint_kind::minimum;
  double number = 0;                               ///< bounds, multiple_of
  std::size_t count = 0;                           ///< lengths and item counts
  std::string text;                                ///< pattern, format name, unique_by key, predicate rule
  std::vector<boost::json::value> values;          ///< one_of
  std::shared_ptr<const compiled_pattern> regex;   ///< pattern, compiled once
  std::shared_ptr<const custom_check> custom;      ///< predicate, unique_by (native), invariants
  std::string label;                               ///< optional name (schema-file @assert(name, ...))
  /// What happens when the constraint fails (noop: a note, not an issue; schema-file @check).
  fail_action on_fail = fail_action::reask;
  /// refrain, exception: the reason the outcome reports; filter: the call refrains with this
  /// reason when the filter drops every item of a list ("" = never).
  std::string reason;
  /// predicate: judged as soon as its value is finished while the reply streams, so a violation
  /// stops the stream early (the check only ever depends on that value).
  bool streaming_safe = false;
};

enum class kind : std::uint8_t {
  any,      ///< any JSON value
  null,     ///< only null
  boolean,  ///< true / false
  integer,  ///< whole number (range of the C++ type, see `int_bits` / `is_unsigned`)
  number,   ///< any number
  string,   ///< text
  array,    ///< args[0] is the item type
  map,      ///< args[0] is the key type (string, enum or string literals), args[1] the value type
  ref,      ///< a named definition (object, enum or alias): `name`, resolved to `def`
  union_,   ///< one of args (tried in order)
  literal,  ///< exactly `literal`
};

inline constexpr std::uint32_t no_def = 0xffffffffu;

/// Streaming attributes (schema files: @stream.done, @stream.not_null, @stream.with_state, and
/// @@stream.done, @@stream.not_null on a class): how a partial (streaming) read shows a value.
/// Bits of type::stream and object_def::stream; validation ignores them.
namespace stream_flag {
inline constexpr std::uint8_t done = 1;        ///< shown only once finished
inline constexpr std::uint8_t not_null = 2;    ///< the containing value is shown only once this one is
inline constexpr std::uint8_t with_state = 4;  ///< reported with its state (kept as a hint)
}  // namespace stream_flag

/// A type, with the constraints that apply at this position.
struct type {
  schema::kind kind = schema::kind::any;
  bool nullable = false;               ///< null is also accepted (std::optional, `T?`)
  std::uint8_t int_bits = 64;          ///< integer: width of the C++ type
  bool is_unsigned = false;            ///< integer: unsigned C++ type
  std::uint8_t float_bits = 64;        ///< number: 32 for a C++ float (read and fixed at its width)
  std::string name;                    ///< ref: definition name
  std::uint32_t def = no_def;          ///< ref: index into schema::defs
  std::vector<type> args;              ///< array: {item}; map: {key, value}; union_: alternatives
  std::vector<constraint> constraints;
  boost::json::value literal;          ///< literal
  std::uint8_t stream = 0;             ///< stream_flag bits at this position (partial reads)
};

/// A field of an object type.
struct field {
  std::string name;         ///< declared name (C++ member name, schema-file field name)
  std::string key;          ///< JSON key (alias if any, else name)
  std::string description;
  schema::type type;
  bool required = true;     ///< must be present (std::optional and defaulted fields are not)
  std::optional<boost::json::value> default_value;
  bool skip = false;        ///< not shown to the model and not read (schema-file @skip)
};

/// A cross-field rule of an object type.
struct invariant {
  std::string description;                    ///< the rule, shown in prompts
  std::string anchor;                         ///< key of the field the issue is reported on ("" = object)
  std::shared_ptr<const custom_check> check;  ///< sees the whole object
  fail_action on_fail = fail_action::reask;    ///< reask, filter, refrain, noop or exception (no fix)
};

struct object_def {
  std::vector<field> fields;
  std::vector<invariant> invariants;
  std::uint8_t stream = 0;  ///< stream_flag bits of the class itself (partial reads)
};

struct enum_value {
  std::string name;                  ///< JSON spelling (alias if any)
  std::string declared_name;         ///< name in the declaration (C++ enumerator, schema file)
  std::string description;
  std::vector<std::string> aliases;  ///< other accepted spellings
  bool skip = false;                 ///< not offered and not accepted
  std::int64_t number = 0;           ///< value of the C++ enumerator
};

struct enum_def {
  std::vector<enum_value> values;
};

struct alias_def {
  schema::type target;
};

/// Where a definition was declared (schema files only).
struct source_location {
  std::string file;
  std::uint32_t line = 0;
  std::uint32_t column = 0;
};

/// A named type: an object (class), an enum or an alias.
struct definition {
  std::string name;
  std::string description;
  std::variant<object_def, enum_def, alias_def> body;
  source_location where;

  [[nodiscard]] const object_def* object() const noexcept { return std::get_if<object_def>(&body); }
  [[nodiscard]] const enum_def* enumeration() const noexcept { return std::get_if<enum_def>(&body); }
  [[nodiscard]] const alias_def* alias() const noexcept { return std::get_if<alias_def>(&body); }
};

/// A root type plus every definition it (transitively) refers to.
struct COVENANT_API model {
  type root;
  std::vector<definition> defs;

  /// Definition by name, or nullptr.
  [[nodiscard]] const definition* find(std::string_view name) const noexcept;
  /// Definition a ref type points to (resolved index, else by name), or nullptr.
  [[nodiscard]] const definition* resolve(const type& t) const noexcept;
  /// `t` after following refs to aliases: a non-ref type, or a ref to an object or an enum.
  /// nullptr for unresolvable refs and alias cycles.
  [[nodiscard]] const type* unalias(const type& t) const noexcept;
  /// The object definition `t` names (after aliases), or nullptr.
  [[nodiscard]] const object_def* object_of(const type& t) const noexcept;
  /// Title of the root: its definition name for refs, else the type expression.
  [[nodiscard]] std::string title() const;
};

/// Type expression as written in schema files: `string`, `int`, `Foo[]`, `map<string, int>`,
/// `Foo | null`, `"a" | "b"`.
COVENANT_API std::string type_expression(const type& t);

/// Ready-made types.
COVENANT_API type make_primitive(kind k);
COVENANT_API type make_array(type item);
COVENANT_API type make_map(type value);
COVENANT_API type make_ref(std::string name);

/// Prompt phrase of a constraint: "at most 10000 characters", "at least 0", "one of \"a\", \"b\"".
COVENANT_API std::string describe(const constraint& c);

/// Whether `c` on a value of kind `k` has a fix (on-fail action fix): bounds, multiple_of,
/// max_length, max_items (arrays), pattern and format (surrounding whitespace), string one_of
/// (case and whitespace), unique_items and unique_by.
COVENANT_API bool has_fix(const constraint& c, kind k) noexcept;

/// The JSON Schema keyword of `c` on a value of kind `k` ("maxLength", "minProperties", ...;
/// "x-unique-by"; "" for predicates).
COVENANT_API std::string_view keyword_of(const constraint& c, kind k) noexcept;

/// The format constraint of a media field: a string of format "image", "pdf" or "audio", the
/// reference ("<image 1>") the model sees in place of the media (covenant/types/media.hpp).
COVENANT_API constraint media_format(media_kind k);
/// The media kind of a string type with a media format; nullopt for every other type.
COVENANT_API std::optional<media_kind> media_kind_of(const type& t) noexcept;

/// Compiles a pattern (RE2 syntax). Returns nullptr and sets `error` when it does not compile.
COVENANT_API std::shared_ptr<const compiled_pattern> compile_pattern(std::string_view pattern,
                                                                     std::string* error = nullptr);

/// Whether `text` contains a match of `pattern`.
COVENANT_API bool pattern_matches(const compiled_pattern& pattern, std::string_view text) noexcept;

}  // namespace covenant::schema
