// covenant/detail/read_reply.hpp - how contracts read a model's reply into a type: strict JSON
// first, then schema-guided coercions, then the lenient reader's candidates.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "covenant/read/decode.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/read/lenient.hpp"

namespace covenant::detail {

using time_point = std::chrono::steady_clock::time_point;

/// Whether a note records a coercion that changed the shape of a value (a single value read as a
/// one-item list, a one-item list or a one-member object read as its item, a value read as the
/// only field of an object, a list or object read as its text) rather than its spelling.
COVENANT_API bool shape_coercion(const note& n) noexcept;

/// Partial mode: how many of `issues` are not ones only the rest of the stream can settle, given
/// a candidate's notes (src/read/partial_rules.cpp: a required field missing from an unfinished
/// object, a constraint or rule failed by an unfinished value).
COVENANT_API std::size_t settled_issues(const issue_list& issues, const note_list& notes);

/// Final mode, a candidate of a reply cut off inside the last item of a list (an item the path
/// of its deepest `truncated` note runs through): when some of `issues` lie inside
/// such an item, writes `json` without the innermost one into `out`, sets `dropped` to the
/// `truncated` note that says so, and returns true. False when no issue lies inside one.
COVENANT_API bool drop_unfinished_item(std::string_view json, const note_list& candidate_notes,
                                       const issue_list& issues, std::string& out, note& dropped);

/// The decoder of read_reply<T>: try_decode<T>, also in place into a reading's storage (strings and
/// lists keep their capacity from one candidate to the next).
template <class T>
struct typed_decode {
  decoded<T> operator()(std::string_view t, const decode_options& o) const { return try_decode<T>(t, o); }
  void operator()(decoded<T>& d, std::string_view t, const decode_options& o) const {
    d.notes.clear();
    if (!d.value) d.value.emplace();
    d.issues = try_decode_into(t, *d.value, o, &d.notes);
    if (!d.issues.empty()) d.value.reset();
  }
};

/// The readings of one reply, kept by read_reply_core for its caller: three results of the
/// caller's decoder (slot 0: the first reading, and in the end the one chosen; 1: the best
/// candidate so far; 2: the candidate being read), as functions. References to a slot's issues and
/// notes stay valid while it is read into and moved.
struct reply_slots {
  void* self = nullptr;
  /// Decodes `text` with `options` into slot `k`.
  void (*decode)(void* self, int k, std::string_view text, const decode_options& options) = nullptr;
  issue_list& (*issues)(void* self, int k) = nullptr;
  note_list& (*notes)(void* self, int k) = nullptr;
  /// Whether slot `k` holds a value (partial mode keeps one with issues).
  bool (*has_value)(void* self, int k) = nullptr;
  /// Slot `to` takes slot `from`'s reading.
  void (*move)(void* self, int from, int to) = nullptr;
};

/// The one ranking of the readings of a reply, behind read_reply_with (its rules are there), once
/// the first reading (strict JSON, in slot 0, begun at `t0`) has issues at a level that is not
/// strict; the chosen reading ends in slot 0.
COVENANT_API void read_reply_core(std::string_view text, const decode_options& options, const lenient_options& reading,
                                  note_list& notes, std::chrono::nanoseconds& parse_time,
                                  std::chrono::nanoseconds& validate_time, const std::function<time_point()>& clock,
                                  time_point t0, time_point* mark, const reply_slots& slots);

/// Reads a model reply into T. Strict JSON first (one pass, the fast path); then, unless the
/// strictness is `strict`: for well-formed JSON with issues, the same text with schema-guided
/// coercions (coerce level); for text that is not JSON, the candidates of the lenient reader
/// (fences, prose, repairs, truncation), each decoded and ranked: the first that decodes without
/// issues and without changing the shape of a value wins; else the one without issues that
/// changes the fewest shapes (the earliest among equals); else the one with the fewest issues.
/// A candidate cut off inside the last item of a list that its issues lie in is read again without
/// that item (final mode, drop_unfinished_item).
/// In partial mode a candidate whose only issues are ones the rest of the stream can settle
/// (settled_issues) ranks as one without issues. Notes say what was extracted, repaired and
/// coerced. `decode(text, options)` reads one JSON text into a decoded<T> (typed or dynamic
/// decoding; a value kept with issues, for partial mode).
/// `reading` gives the strictness (`level`), partial mode and the lenient reader's limits.
/// With `mark`, reading starts at *mark (no clock read) and *mark is set to when it ended.
template <class T, class Decode>
decoded<T> read_reply_with(std::string_view text, const decode_options& options, const lenient_options& reading,
                           note_list& notes, std::chrono::nanoseconds& parse_time,
                           std::chrono::nanoseconds& validate_time, const std::function<time_point()>& clock,
                           Decode&& decode, time_point* mark = nullptr) {
  // The first reading, strict JSON: the fast path, read straight into the value returned.
  const time_point t0 = mark != nullptr ? *mark : clock ? clock() : std::chrono::steady_clock::now();
  decode_options exact = options;
  exact.coerce = false;
  decoded<T> first = decode(text, exact);
  if (first.ok() || reading.level == strictness::strict) {
    const time_point t = clock ? clock() : std::chrono::steady_clock::now();
    validate_time += t - t0;
    if (mark != nullptr) *mark = t;
    for (const note& n : first.notes) notes.push_back(n);  // failed soft checks
    return first;
  }
  decoded<T> best;
  decoded<T> candidate;
  struct readings {
    std::remove_reference_t<Decode>& decode;
    decoded<T>* slot[3];
  } r{decode, {&first, &best, &candidate}};
  reply_slots slots;
  slots.self = &r;
  slots.decode = [](void* self, int k, std::string_view t, const decode_options& o) {
    auto& x = *static_cast<readings*>(self);
    decoded<T>& d = *x.slot[k];
    if constexpr (requires { x.decode(d, t, o); }) x.decode(d, t, o);  // in place, when it can
    else d = x.decode(t, o);
  };
  slots.issues = [](void* self, int k) -> issue_list& { return static_cast<readings*>(self)->slot[k]->issues; };
  slots.notes = [](void* self, int k) -> note_list& { return static_cast<readings*>(self)->slot[k]->notes; };
  slots.has_value = [](void* self, int k) { return static_cast<readings*>(self)->slot[k]->value.has_value(); };
  slots.move = [](void* self, int from, int to) {
    auto& x = *static_cast<readings*>(self);
    *x.slot[to] = std::move(*x.slot[from]);
  };
  read_reply_core(text, options, reading, notes, parse_time, validate_time, clock, t0, mark, slots);
  return first;
}

/// read_reply_with at strictness `level` (final mode; the lenient reader's depth limit is the
/// decoder's).
template <class T, class Decode>
decoded<T> read_reply_with(std::string_view text, const decode_options& options, strictness level, note_list& notes,
                           std::chrono::nanoseconds& parse_time, std::chrono::nanoseconds& validate_time,
                           const std::function<time_point()>& clock, Decode&& decode, time_point* mark = nullptr) {
  lenient_options reading;
  reading.level = level;
  reading.max_depth = options.max_depth;
  return read_reply_with<T>(text, options, reading, notes, parse_time, validate_time, clock,
                            std::forward<Decode>(decode), mark);
}

template <class T>
decoded<T> read_reply(std::string_view text, const decode_options& options, strictness level, note_list& notes,
                      std::chrono::nanoseconds& parse_time, std::chrono::nanoseconds& validate_time,
                      const std::function<time_point()>& clock, time_point* mark = nullptr) {
  return read_reply_with<T>(text, options, level, notes, parse_time, validate_time, clock, typed_decode<T>{}, mark);
}

}  // namespace covenant::detail
