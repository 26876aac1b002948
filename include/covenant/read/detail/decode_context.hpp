// covenant/detail/decode_context.hpp - state shared by the decoders while one document is read,
// and the constraint checks (one implementation for typed and runtime schemas).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/types/config.hpp"
#include "covenant/read/detail/json_reader.hpp"  // COVENANT_ALWAYS_INLINE
#include "covenant/types/issues.hpp"
#include "covenant/types/schema.hpp"

namespace covenant {

namespace detail {
struct source_map;
}

/// Options of the decoders.
struct decode_options {
  /// Report fields the type does not declare as unknown_field issues (default: ignore them).
  bool reject_unknown_fields = false;
  /// Deepest nesting of arrays/objects accepted.
  std::size_t max_depth = COVENANT_DEFAULT_MAX_DEPTH;
  /// Largest input accepted, in bytes.
  std::size_t max_input_bytes = COVENANT_DEFAULT_MAX_INPUT_BYTES;
  /// Schema-guided coercions: read "0.9" as the number 0.9 ("87%" as 0.87 for a float, "9/10",
  /// "1,234"), "true" as a boolean, a number as a string, "HIGH" or "the answer is high" as the
  /// enum value high, modelUsed as the key model_used, a single value as a one-item list, an
  /// object or a list as its text for a string (see `source`), a missing required list without
  /// bounds as empty. Each one is recorded as a note; a value that cannot be read for its field is
  /// still an issue.
  bool coerce = false;
  /// Where the text being decoded was read from, when it is a candidate of the lenient reader (set
  /// by the readers of model replies): with coerce, an object or a list where a string is wanted is
  /// read as the text it was written as there. Null: the text decoded is that text.
  const detail::source_map* source = nullptr;
};

namespace detail {

/// One step of the current path, kept on the C++ stack while decoding (no allocation).
struct path_frame {
  const path_frame* parent = nullptr;
  std::string_view key;
  std::size_t index = 0;
  bool is_index = false;
};

COVENANT_API covenant::path to_path(const path_frame* at);

struct COVENANT_API decode_context {
  const schema::model& s;
  const decode_options& opts;
  issue_list& issues;

  /// Where coercions are recorded (may be null: not recorded).
  note_list* notes = nullptr;
  /// Keys of objects that no field reads, so far (read_union ranks the alternatives by them).
  std::size_t ignored_keys = 0;
  /// The media checked so far and the provider's limits (validation of an input; null: only what
  /// holds for every provider is checked).
  media_tally* media = nullptr;

  void add(const path_frame* at, issue_code code, std::string expected, std::string actual, std::string message,
           fail_action action = fail_action::reask);
  void note(const path_frame* at, note_kind kind, std::string detail);
  /// A failed check with on-fail action `action`: noop is a check_failed note, fix (when the fix
  /// could not be applied) an ordinary reask issue, any other action an issue carrying it.
  void failed(const path_frame* at, fail_action action, issue_code code, std::string expected, std::string actual,
              std::string message, std::string_view reason = {});
  /// The same for constraint `c` (its action and reason).
  void failed(const path_frame* at, const schema::constraint& c, issue_code code, std::string expected,
              std::string actual, std::string message) {
    failed(at, c.on_fail, code, std::move(expected), std::move(actual), std::move(message), c.reason);
  }
};

// ---- constraint checks ---------------------------------------------------------------------
// `raw` is the value as written (for `actual`); `native` points to the C++ value of the node's
// type for custom checks (predicates, uniqueness), or is null (runtime schemas: JSON checks).

/// A media field of an input: check_media() with the context's tally; its reason is an issue.
COVENANT_API void check_media_value(const media& m, decode_context& ctx, const path_frame* at);

COVENANT_API void check_number(const std::vector<schema::constraint>& cs, double v, std::string_view raw,
                               const void* native, decode_context& ctx, const path_frame* at);
COVENANT_API void check_string(const std::vector<schema::constraint>& cs, std::string_view v, std::string_view raw,
                               const void* native, decode_context& ctx, const path_frame* at);
/// Constraints of arrays (is_map = false) and maps: item counts, uniqueness, predicates.
COVENANT_API void check_count(const std::vector<schema::constraint>& cs, std::size_t n, bool is_map,
                              std::string_view raw, const void* native, decode_context& ctx, const path_frame* at);
// Fixing variants (the decoders): a failed constraint whose action is fix is fixed in place and
// noted (note_kind::fixed) instead of reported. They return true when the value changed.

/// Numbers of schema `node`: clamps to bounds, rounds to a multiple. An integer's fix that would
/// not fit the node's width (`int_bits`, `is_unsigned`) is not applied: the issue stays.
COVENANT_API bool check_number_fix(const schema::type& node, double& v, std::string_view raw, const void* native,
                                   decode_context& ctx, const path_frame* at);
/// Strings: cuts to a maximum length, takes the listed spelling of a one_of value written with
/// other case or surrounding whitespace, trims surrounding whitespace when that satisfies a
/// pattern or format. The fixed value is put in `fixed`.
COVENANT_API bool check_string_fix(const std::vector<schema::constraint>& cs, std::string_view v, std::string_view raw,
                                   const std::string* native, decode_context& ctx, const path_frame* at,
                                   std::string& fixed);
/// How the count checks change a container they fix: its size, and cutting it to n elements.
struct container_ops {
  std::size_t (*size)(const void* c) = nullptr;
  void (*cut)(void* c, std::size_t n) = nullptr;  ///< null: cannot be cut (maps)
};
/// Lists and maps: cuts a list to its maximum item count, drops later duplicates (unique_items,
/// unique_by through custom_check::fix_native).
COVENANT_API bool check_count_fix(const std::vector<schema::constraint>& cs, bool is_map, std::string_view raw,
                                  void* native, const container_ops& ops, decode_context& ctx, const path_frame* at);

/// Whether the issues from `before` on hold one whose action is filter. When they do, they are all
/// dropped (the value they are about is dropped by the caller) and a `filtered` note is recorded;
/// `reason` (when given) gets the filter's reason for refraining when a whole list is dropped.
COVENANT_API bool take_filtered(decode_context& ctx, std::size_t before, const path_frame* at,
                                std::string* reason = nullptr);
/// The detail of a check_failed note (a noop check that failed): "check failed: <message> (got <actual>)".
COVENANT_API std::string check_failed_detail(std::string_view message, std::string_view actual);
/// A list that had items lost every one to filters whose reason is `reason`: the call refrains.
COVENANT_API void all_items_dropped(decode_context& ctx, const path_frame* at, std::size_t dropped, std::string reason);

/// Custom checks only (predicates on booleans, enums, objects).
COVENANT_API void check_native(const std::vector<schema::constraint>& cs, std::string_view raw, const void* native,
                               decode_context& ctx, const path_frame* at);
/// Rules of a runtime schema's value on its JSON value `v` read from `raw` (predicates with a JSON
/// check: schema files' @check/@assert). A list's or a map's (`container`) is reported like its
/// counts: the rule as expected, no actual.
COVENANT_API void check_json_rules(const std::vector<schema::constraint>& cs, const boost::json::value& v,
                                   std::string_view raw, bool container, decode_context& ctx, const path_frame* at);
/// Every constraint of a runtime schema's value on its JSON value: the keyword checks of its kind
/// (strings, numbers, the counts of lists and maps), then check_json_rules.
COVENANT_API void check_json_value(const std::vector<schema::constraint>& cs, const boost::json::value& v,
                                   std::string_view raw, decode_context& ctx, const path_frame* at);
/// The constraints of a runtime schema's list `t` on its JSON array `v`, in their declared order:
/// counts (a fix cuts it), unique_items and unique_by (by JSON equality, with the typed
/// validators' messages; a fix drops the later duplicates; `declared_keys`: its objects are keyed
/// by their fields' declared names), rules.
COVENANT_API void check_json_list(const schema::type& t, boost::json::value& v, std::string_view raw,
                                  bool declared_keys, decode_context& ctx, const path_frame* at);
/// Cross-field rules of an object, on the C++ object.
COVENANT_API void check_invariants_native(const schema::object_def& def, const void* object, decode_context& ctx,
                                          const path_frame* at);
/// Cross-field rules of an object, on its JSON value (runtime schemas). Both report alike: a noop
/// rule is a check_failed note "check failed: must satisfy: <rule>".
COVENANT_API void check_invariants_json(const schema::object_def& def, const boost::json::value& object,
                                        decode_context& ctx, const path_frame* at);

// Inline screens in front of the checks above: true when the constraints are plain bounds that
// the value meets, so the check would report nothing and need not be called. False means "call
// the check" (a bound is not met, or there is a constraint the screen does not know).

COVENANT_ALWAYS_INLINE bool number_within_bounds(const std::vector<schema::constraint>& cs, double v) noexcept {
  for (const auto& c : cs) {
    switch (c.kind) {
      case schema::constraint_kind::minimum:
        if (v < c.number) return false;
        break;
      case schema::constraint_kind::maximum:
        if (v > c.number) return false;
        break;
      case schema::constraint_kind::exclusive_minimum:
        if (!(v > c.number)) return false;
        break;
      case schema::constraint_kind::exclusive_maximum:
        if (!(v < c.number)) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/// `size` in bytes: a string of n bytes has between n / 4 and n code points.
COVENANT_ALWAYS_INLINE bool string_within_bounds(const std::vector<schema::constraint>& cs, std::size_t size) noexcept {
  for (const auto& c : cs) {
    switch (c.kind) {
      case schema::constraint_kind::min_length:
        if (size < 4 * c.count) return false;
        break;
      case schema::constraint_kind::max_length:
        if (size > c.count) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

COVENANT_ALWAYS_INLINE bool count_within_bounds(const std::vector<schema::constraint>& cs, std::size_t n) noexcept {
  for (const auto& c : cs) {
    switch (c.kind) {
      case schema::constraint_kind::min_items:
        if (n < c.count) return false;
        break;
      case schema::constraint_kind::max_items:
        if (n > c.count) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

// ---- issue helpers ---------------------------------------------------------------------------

/// "string", "integer", "Foo", "string[]", "\"a\" | \"b\"" ... for `expected`.
COVENANT_API std::string expected_of(const schema::model& s, const schema::type& t);
/// Short rendering of a JSON value as written.
COVENANT_API std::string actual_of(std::string_view raw);
COVENANT_API void type_mismatch(decode_context& ctx, const path_frame* at, const schema::type& t, std::string_view raw);
COVENANT_API void missing_field(decode_context& ctx, const path_frame* at, std::string_view key);
COVENANT_API void unknown_field(decode_context& ctx, const path_frame* at);
COVENANT_API void parse_failure(decode_context& ctx, std::string_view text, std::size_t offset, const char* message);
COVENANT_API void integer_out_of_range(decode_context& ctx, const path_frame* at, const schema::type& t,
                                       std::string_view raw);
/// Whether the integer `v` (an int64 or uint64 JSON value) fits the width and sign of the integer
/// type `t`; the constraints of one that does not are never judged (integer_out_of_range is the issue).
COVENANT_API bool integer_fits(const schema::type& t, const boost::json::value& v) noexcept;
COVENANT_API void enum_mismatch(decode_context& ctx, const path_frame* at, const schema::definition& def,
                                std::string_view raw);
/// The values a closed choice accepts, in declared order: an enum's names, a string, number or
/// boolean literal (a one-value choice), or a union whose non-null alternatives are all choices.
/// nullopt when `t` is not a closed choice.
COVENANT_API std::optional<std::vector<boost::json::value>> choice_set(const schema::model& s, const schema::type& t);
/// Whether the JSON text `raw` is of the JSON kind of one of `values` (string, number or boolean).
COVENANT_API bool choice_kind(const std::vector<boost::json::value>& values, std::string_view raw) noexcept;
/// A value of the right kind that names none of `values`: constraint_violation "must be one of <list>",
/// the check enums and `one_of` report (`what` before it: "key " for a map's key). A value of
/// another kind is a type_mismatch.
COVENANT_API void choice_mismatch(decode_context& ctx, const path_frame* at,
                                  const std::vector<boost::json::value>& values, std::string_view raw,
                                  std::string_view what = {});

}  // namespace detail
}  // namespace covenant
