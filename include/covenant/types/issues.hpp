// covenant/types/issues.hpp - problems found in model output (or input), as values with paths.
//
// An issue says where (a path such as `sources[1]` or `metadata.token_usage.input_tokens`), what
// kind of problem (a code), what was expected, what was found (short; long values are elided)
// and a compact message. Text for a model or a log is rendered at the edge, one line per issue:
//
//     confidence: must be <= 1 (got 1.7)
//     sources[1]: must not be empty (got "")
//     answer: required field is missing
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/types/config.hpp"

namespace covenant {

/// What kind of problem an issue reports.
enum class issue_code : std::uint8_t {
  missing_field,            ///< a required field is absent (or null where null is not allowed)
  type_mismatch,            ///< the value has the wrong JSON type, or does not fit the C++ type
  constraint_violation,     ///< a field-level constraint (range, length, pattern, ...) failed
  invariant_violation,      ///< a cross-field rule of a type failed
  parse_error,              ///< the text is not readable JSON (has line and column)
  unknown_field,            ///< a field the type does not declare (only in strict-fields mode)
  precondition_violation,   ///< an Expression's pre() rejected the input
  postcondition_violation,  ///< an Expression's post() rejected the output
  hook_exception,           ///< a hook threw something other than covenant::violation
  engine_error,             ///< the engine could not produce a reply (transport, quota, ...)
  cancelled,                ///< the call was cancelled (a stop request, the engine destroyed)
  deadline,                 ///< the call's deadline passed before it ended (or a tool's timeout)
  unknown_tool,             ///< the model called a tool the agent does not have
  limit_reached,            ///< a limit of the agent loop was reached (steps, tool calls)
};

/// Stable snake_case name of a code ("missing_field", ...).
COVENANT_API std::string_view to_string(issue_code code) noexcept;

/// What happens when a check fails (its on-fail action; see docs/policies.md).
enum class fail_action : std::uint8_t {
  reask,      ///< the issue goes back to the model (the default)
  fix,        ///< the check's own fix is applied (clamp, cut, trim, drop duplicates...) and noted
  filter,     ///< the failing list item or optional field is dropped and noted; the rest is kept
  refrain,    ///< give up on this output without asking again: the call fails (reason "refrained")
  noop,       ///< accepted as it is; the failure is a note (check_failed)
  exception,  ///< the call fails at once (reason "exception"), without asking again
};

/// "reask", "fix", "filter", "refrain", "noop", "exception".
COVENANT_API std::string_view to_string(fail_action a) noexcept;
/// The action named `name` (the spellings of to_string(fail_action)); nullopt when there is none.
COVENANT_API std::optional<fail_action> parse_fail_action(std::string_view name) noexcept;

/// One step of a path: an object key or an array index.
struct path_segment {
  std::string key;          ///< object key (when !is_index)
  std::size_t index = 0;    ///< array index (when is_index)
  bool is_index = false;

  friend bool operator==(const path_segment&, const path_segment&) = default;
};

/// Location of a value inside a document: `metadata.token_usage.input_tokens`, `sources[1]`.
class COVENANT_API path {
 public:
  path() = default;

  /// Parses the rendered form (`a.b[2]["odd key"]`). Inverse of to_string().
  static path parse(std::string_view text);
  /// A path of these segments.
  explicit path(std::vector<path_segment> segments) : segments_(std::move(segments)) {}

  path& key(std::string_view k) {
    segments_.push_back(path_segment{std::string(k), 0, false});
    return *this;
  }
  path& index(std::size_t i) {
    segments_.push_back(path_segment{{}, i, true});
    return *this;
  }
  void pop() { segments_.pop_back(); }

  [[nodiscard]] bool empty() const noexcept { return segments_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return segments_.size(); }
  [[nodiscard]] const std::vector<path_segment>& segments() const noexcept { return segments_; }
  [[nodiscard]] auto begin() const noexcept { return segments_.begin(); }
  [[nodiscard]] auto end() const noexcept { return segments_.end(); }

  /// `metadata.token_usage.input_tokens`, `sources[1]`, `headers["content-type"]`; "" for the root.
  [[nodiscard]] std::string to_string() const;
  /// Appends the rendered form to `out`.
  void append_to(std::string& out) const;

  friend bool operator==(const path&, const path&) = default;

 private:
  std::vector<path_segment> segments_;
};

/// One problem, with where, what, expected and actual.
struct COVENANT_API issue {
  covenant::path path;
  issue_code code = issue_code::constraint_violation;
  std::string expected;  ///< e.g. "<= 1", "string", "one of: low, high"
  std::string actual;    ///< short rendering of what was found, e.g. "1.7", "\"\"" (empty when absent)
  std::string message;   ///< compact phrase without the path, e.g. "must be <= 1"
  std::uint32_t line = 0;    ///< 1-based, parse errors only
  std::uint32_t column = 0;  ///< 1-based, parse errors only
  /// The failed check's on-fail action. By the time an issue reaches an outcome, fix, filter and
  /// noop have been applied; reask issues are fed back, refrain and exception end the call.
  fail_action action = fail_action::reask;
  /// refrain and exception: the snake_case reason the outcome reports (empty: "refrained" or
  /// "exception"), e.g. "no_valid_resources".
  std::string reason;

  /// `path: message (got actual)`; an issue of the whole value renders as `message (got actual)`.
  [[nodiscard]] std::string to_string() const;
  void append_to(std::string& out) const;

  friend bool operator==(const issue&, const issue&) = default;
};

using issue_list = std::vector<issue>;

/// What a lenient reader did to make text readable (recorded, never silent).
enum class note_kind : std::uint8_t {
  extracted,   ///< the value was taken from part of the text (a fenced block, an object in prose...)
  repaired,    ///< a syntax repair (trailing comma, quotes, comments, unquoted key, ...)
  coerced,     ///< a schema-guided conversion ("0.9" read as 0.9, "HIGH" as high, ...)
  truncated,   ///< the text ended mid-value; what was cut off was dropped (or kept, when partial)
  incomplete,  ///< partial (streaming) mode: this value is not finished yet
  check_failed, ///< a check whose action is noop (schema-file @check) failed; the value is kept
  stopped_early, ///< a streamed reply was stopped as soon as it broke a rule no later text could fix
  fixed,        ///< a failed check's fix was applied (on-fail action fix)
  filtered,     ///< a failing list item or optional field was dropped (on-fail action filter)
};

/// Stable snake_case name of a note kind.
COVENANT_API std::string_view to_string(note_kind kind) noexcept;

/// One repair, coercion or observation, with where it applies.
struct COVENANT_API note {
  note_kind kind = note_kind::repaired;
  covenant::path path;  ///< where in the value ("" = the whole text)
  std::string detail;   ///< short human text: "removed trailing comma", "\"0.9\" read as number"

  /// `kind at path: detail`
  [[nodiscard]] std::string to_string() const;
  friend bool operator==(const note&, const note&) = default;
};

using note_list = std::vector<note>;

/// One line per issue, ready to be shown to a model or a person.
COVENANT_API std::string render_feedback(const issue_list& issues);
/// Appends render_feedback(issues) to `out`.
COVENANT_API void render_feedback(const issue_list& issues, std::string& out);

COVENANT_API std::ostream& operator<<(std::ostream& os, const issue& i);
COVENANT_API std::ostream& operator<<(std::ostream& os, const path& p);

/// Thrown by the readers' plain forms (decode, decode_into, from_value, decode_dynamic,
/// validate_value, read_dynamic); carries every issue their try_ forms return.
class COVENANT_API decode_error : public std::runtime_error {
 public:
  explicit decode_error(issue_list issues);
  [[nodiscard]] const issue_list& issues() const noexcept { return issues_; }

 private:
  issue_list issues_;
};

/// Short, single-line rendering of a value for `issue::actual`: at most
/// COVENANT_ACTUAL_MAX_CHARS characters (cut on a UTF-8 boundary) followed by "...".
COVENANT_API std::string elide(std::string_view text);

}  // namespace covenant
