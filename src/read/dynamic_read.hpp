// covenant/detail/dynamic_read.hpp - how read_dynamic() and dynamic contracts read a model's reply
// against a runtime schema: strict JSON first, then coercions, then the lenient reader's
// candidates, ranked by how well they decode.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/read/detail/coerce.hpp"
#include "covenant/read/detail/read_reply.hpp"
#include "covenant/read/lenient.hpp"

namespace covenant::detail {

/// Whether a note records a coercion that changed the shape of a value (a single value read as a
/// one-item list, a one-item list or a one-member object read as its item, a value read as the
/// only field of an object, a list or object read as its text) rather than its spelling.
bool shape_coercion(const note& n) noexcept;

/// Partial mode: whether an issue is one only the rest of the stream can settle, given the paths
/// of the unfinished values (a required field missing from an unfinished object, a constraint or
/// rule failed by an unfinished value). Sets `detail` to the note that replaces it.
bool pending_issue(const issue& i, const std::vector<path>& unfinished, std::string* detail = nullptr);

/// Partial mode: how many of `issues` are not pending_issue()s, given a candidate's notes.
std::size_t settled_issues(const issue_list& issues, const note_list& notes);

/// Reads `text` like read_reply_with (contract.hpp): strict JSON first; then (unless `reading.level`
/// is strict) for well-formed JSON with issues the same text with coercions (coerce level), and for
/// text that is not JSON the lenient reader's candidates. Candidates are ranked: the first that
/// decodes without issues and without changing the shape of a value wins; else the one without
/// issues that changes the fewest shapes (earliest among equals); else the one with the fewest
/// issues. `decode(text, options)` decodes one text.
template <class Decode>
decoded<boost::json::value> read_dynamic_reply(std::string_view text, const decode_options& options,
                                               const lenient_options& reading, note_list& notes,
                                               std::chrono::nanoseconds& parse_time,
                                               std::chrono::nanoseconds& validate_time,
                                               const std::function<time_point()>& clock, Decode&& decode) {
  using result = decoded<boost::json::value>;
  const strictness level = reading.level;
  auto now = [&] { return clock ? clock() : std::chrono::steady_clock::now(); };
  const time_point t0 = now();
  decode_options exact = options;
  exact.coerce = false;
  result r = decode(text, exact);
  if (r.ok() || level == strictness::strict) {
    validate_time += now() - t0;
    for (const note& n : r.notes) notes.push_back(n);  // failed soft checks
    return r;
  }
  decode_options lenient = options;
  lenient.coerce = level == strictness::coerce;
  if (r.issues.front().code != issue_code::parse_error) {
    if (lenient.coerce) {
      result c = decode(text, lenient);
      if (c.issues.size() < r.issues.size()) r = std::move(c);
    }
    validate_time += now() - t0;
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
  std::optional<result> best;
  const candidate* chosen = nullptr;
  std::size_t best_shapes = 0;
  bool chosen_ok = false;  // the best so far reads without (settled) issues
  note_list dropped;       // unfinished list items dropped from the candidate being read
  note_list best_dropped;  // ... from the best one
  for (const candidate& c : candidates) {
    source.read_from(c);
    result d = decode_from(c.json, lenient);
    dropped.clear();
    if (!reading.partial) drop_unfinished_items(c, d, lenient, decode_from, dropped);
    // Partial mode: a candidate whose only issues are pending ones (fields not written yet)
    // ranks as one without issues; read_dynamic sets them aside.
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
  validate_time += now() - t1;
  if (!best) return r;
  for (const note& n : chosen->notes) notes.push_back(n);
  for (auto& n : best_dropped) notes.push_back(std::move(n));
  for (auto& n : best->notes) notes.push_back(std::move(n));
  return std::move(*best);
}

}  // namespace covenant::detail
