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

/// Partial mode: whether an issue is one only the rest of the stream can settle, given the paths
/// of the unfinished values (a required field missing from an unfinished object, a constraint or
/// rule failed by an unfinished value). Sets `detail` to the note that replaces it.
COVENANT_API bool pending_issue(const issue& i, const std::vector<path>& unfinished, std::string* detail = nullptr);

/// Partial mode: how many of `issues` are not pending_issue()s, given a candidate's notes.
COVENANT_API std::size_t settled_issues(const issue_list& issues, const note_list& notes);

/// Final mode, a candidate of a reply cut off inside the last item of a list (an item the path
/// of its deepest `truncated` note runs through): when some of `issues` lie inside
/// such an item, writes `json` without the innermost one into `out`, sets `dropped` to the
/// `truncated` note that says so, and returns true. False when no issue lies inside one.
COVENANT_API bool drop_unfinished_item(std::string_view json, const note_list& candidate_notes,
                                       const issue_list& issues, std::string& out, note& dropped);

/// Final mode: re-decodes candidate `c` without the unfinished last items of lists that `d` has
/// issues in (drop_unfinished_item), innermost first, adding a note for each item dropped.
template <class R, class Decode>
void drop_unfinished_items(const candidate& c, R& d, const decode_options& options, Decode& decode,
                           note_list& dropped) {
  if (d.ok() || !c.truncated) return;
  std::string json = c.json;
  std::string next;
  note n;
  while (!d.issues.empty() && d.issues.front().code != issue_code::parse_error &&
         drop_unfinished_item(json, c.notes, d.issues, next, n)) {
    d = decode(std::string_view(next), options);
    json.swap(next);
    dropped.push_back(std::move(n));
  }
}

/// Reads a model reply into T. Strict JSON first (one pass, the fast path); then, unless the
/// strictness is `strict`: for well-formed JSON with issues, the same text with schema-guided
/// coercions (coerce level); for text that is not JSON, the candidates of the lenient reader
/// (fences, prose, repairs, truncation), each decoded and ranked: the first that decodes without
/// issues and without changing the shape of a value wins; else the one without issues that
/// changes the fewest shapes (the earliest among equals); else the one with the fewest issues.
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
  const strictness level = reading.level;
  auto now = [&] { return clock ? clock() : std::chrono::steady_clock::now(); };
  auto done = [&](time_point since) {
    const time_point t = now();
    validate_time += t - since;
    if (mark != nullptr) *mark = t;
  };
  const time_point t0 = mark != nullptr ? *mark : now();
  decode_options exact = options;
  exact.coerce = false;
  decoded<T> r = decode(text, exact);
  if (r.ok() || level == strictness::strict) {
    done(t0);
    for (const note& n : r.notes) notes.push_back(n);  // failed soft checks
    return r;
  }
  decode_options lenient = options;
  lenient.coerce = level == strictness::coerce;
  if (r.issues.front().code != issue_code::parse_error) {
    if (lenient.coerce) {
      decoded<T> c = decode(text, lenient);
      if (c.issues.size() < r.issues.size()) r = std::move(c);
    }
    done(t0);
    for (auto& n : r.notes) notes.push_back(std::move(n));
    return r;
  }
  // Not JSON as a whole: read the candidates of the lenient reader and keep the best.
  const std::vector<candidate> candidates = extract_candidates(text, reading);
  const time_point t1 = now();
  parse_time += t1 - t0;
  // Where each candidate was read from (an object or a list where a string is wanted is read as
  // the text it was written as).
  source_map source = source_map::of_reply(text, reading.partial);
  if (lenient.coerce) lenient.source = &source;
  auto decode_from = decode_through(source, decode);
  std::optional<decoded<T>> best;
  const candidate* chosen = nullptr;
  std::size_t best_shapes = 0;
  bool chosen_ok = false;  // the best so far reads without (settled) issues
  note_list dropped;       // unfinished list items dropped from the candidate being read
  note_list best_dropped;  // ... from the best one
  for (const candidate& c : candidates) {
    source.read_from(c);
    decoded<T> d = decode_from(c.json, lenient);
    dropped.clear();
    if (!reading.partial) drop_unfinished_items(c, d, lenient, decode_from, dropped);
    // Partial mode: a candidate whose only issues are pending ones (fields not written yet)
    // ranks as one without issues; the partial reader sets them aside.
    if (d.ok() || (reading.partial && d.value && settled_issues(d.issues, c.notes) == 0)) {
      const auto shapes = static_cast<std::size_t>(std::count_if(d.notes.begin(), d.notes.end(), shape_coercion));
      if (!best || !chosen_ok || shapes < best_shapes) {
        best = std::move(d);
        chosen = &c;
        best_shapes = shapes;
        chosen_ok = true;
        best_dropped.swap(dropped);
      }
      if (shapes == 0) break;
      continue;
    }
    if (chosen_ok) continue;
    if (d.issues.front().code == issue_code::parse_error) continue;
    // A value of the wrong kind altogether (prose read as a string for an object) says less than
    // the parse error.
    if (d.issues.size() == 1 && d.issues.front().code == issue_code::type_mismatch && d.issues.front().path.empty())
      continue;
    if (!best || d.issues.size() < best->issues.size()) {
      best = std::move(d);
      chosen = &c;
      best_dropped.swap(dropped);
    }
  }
  done(t1);
  if (!best) return r;
  for (const note& n : chosen->notes) notes.push_back(n);
  for (auto& n : best_dropped) notes.push_back(std::move(n));
  for (auto& n : best->notes) notes.push_back(std::move(n));
  r = std::move(*best);
  return r;  // every path returns r: no copy or move of the value on the way out
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
  return read_reply_with<T>(
      text, options, level, notes, parse_time, validate_time, clock,
      [](std::string_view t, const decode_options& o) { return decode<T>(t, o); }, mark);
}

}  // namespace covenant::detail
