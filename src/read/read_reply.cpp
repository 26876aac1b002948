// How contracts read a model's reply (read/detail/read_reply.hpp): the one ranking of the
// readings of a reply, for every target (a C++ type, a runtime schema's JSON value).
#include "covenant/read/detail/read_reply.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace covenant::detail {

void read_reply_core(std::string_view text, const decode_options& options, const lenient_options& reading,
                     note_list& notes, std::chrono::nanoseconds& parse_time, std::chrono::nanoseconds& validate_time,
                     const std::function<time_point()>& clock, time_point t0, time_point* mark,
                     const reply_slots& slots) {
  constexpr int result = 0;     // the first reading, and in the end the one chosen
  constexpr int best = 1;       // the best candidate so far
  constexpr int candidate = 2;  // the candidate being read
  void* const self = slots.self;
  issue_list& result_issues = slots.issues(self, result);
  issue_list& best_issues = slots.issues(self, best);
  issue_list& read_issues = slots.issues(self, candidate);
  note_list& read_notes = slots.notes(self, candidate);

  auto now = [&] { return clock ? clock() : std::chrono::steady_clock::now(); };
  auto done = [&](time_point since) {
    const time_point t = now();
    validate_time += t - since;
    if (mark != nullptr) *mark = t;
  };
  // The first reading (strict JSON) is in `result`, with issues, and the level is not strict.
  decode_options lenient = options;
  lenient.coerce = reading.level == strictness::coerce;
  if (result_issues.front().code != issue_code::parse_error) {
    if (lenient.coerce) {
      slots.decode(self, candidate, text, lenient);
      if (read_issues.size() < result_issues.size()) slots.move(self, candidate, result);
    }
    done(t0);
    for (auto& n : slots.notes(self, result)) notes.push_back(std::move(n));
    return;
  }
  // Not JSON as a whole: read the candidates of the lenient reader and keep the best.
  const std::vector<covenant::candidate> candidates = extract_candidates(text, reading);
  const time_point t1 = now();
  parse_time += t1 - t0;
  // Where each candidate was read from (an object or a list where a string is wanted is read as
  // the text it was written as).
  source_map source = source_map::of_reply(text, reading.partial);
  if (lenient.coerce) lenient.source = &source;
  auto read = [&](std::string_view json) {
    source.json = json;
    slots.decode(self, candidate, json, lenient);
  };
  bool have_best = false;
  const covenant::candidate* chosen = nullptr;
  std::size_t best_shapes = 0;
  bool chosen_ok = false;  // the best so far reads without (settled) issues
  note_list dropped;       // unfinished list items dropped from the candidate being read
  note_list best_dropped;  // ... from the best one
  for (const covenant::candidate& c : candidates) {
    source.read_from(c);
    read(c.json);
    dropped.clear();
    if (!reading.partial && !read_issues.empty() && c.truncated) {
      // Final mode: read again without the unfinished last items of lists the issues are in
      // (drop_unfinished_item), innermost first, with a note for each item dropped.
      std::string json = c.json;
      std::string next;
      note n;
      while (!read_issues.empty() && read_issues.front().code != issue_code::parse_error &&
             drop_unfinished_item(json, c.notes, read_issues, next, n)) {
        read(next);
        json.swap(next);
        dropped.push_back(std::move(n));
      }
    }
    // Partial mode: a candidate whose only issues are pending ones (fields not written yet)
    // ranks as one without issues; the partial reader sets them aside.
    if (read_issues.empty() ||
        (reading.partial && slots.has_value(self, candidate) && settled_issues(read_issues, c.notes) == 0)) {
      const auto shapes = static_cast<std::size_t>(std::count_if(read_notes.begin(), read_notes.end(), shape_coercion));
      if (!have_best || !chosen_ok || shapes < best_shapes) {
        slots.move(self, candidate, best);
        have_best = true;
        chosen = &c;
        best_shapes = shapes;
        chosen_ok = true;
        best_dropped.swap(dropped);
      }
      if (shapes == 0) break;
      continue;
    }
    if (chosen_ok) continue;
    if (read_issues.front().code == issue_code::parse_error) continue;
    // A value of the wrong kind altogether (prose read as a string for an object) says less than
    // the parse error.
    if (read_issues.size() == 1 && read_issues.front().code == issue_code::type_mismatch &&
        read_issues.front().path.empty())
      continue;
    if (!have_best || read_issues.size() < best_issues.size()) {
      slots.move(self, candidate, best);
      have_best = true;
      chosen = &c;
      best_dropped.swap(dropped);
    }
  }
  done(t1);
  if (!have_best) return;
  for (const note& n : chosen->notes) notes.push_back(n);
  for (auto& n : best_dropped) notes.push_back(std::move(n));
  for (auto& n : slots.notes(self, best)) notes.push_back(std::move(n));
  slots.move(self, best, result);
}

}  // namespace covenant::detail
