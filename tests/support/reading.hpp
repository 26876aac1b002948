// Helpers of the reading tests: issues as text, the coercion notes of a reading, the typed reader
// of a model reply as contracts use it, and the runtime-schema reader at a level.
#pragma once

#include <covenant/detail/read_reply.hpp>
#include <covenant/dynamic.hpp>
#include <covenant/issues.hpp>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace covenant_test::reading {

/// One line per issue (`path: message (got actual)`), for failure messages and exact checks.
inline std::string rendered(const covenant::issue_list& issues) {
  std::string s;
  for (const auto& i : issues) s += i.to_string() + "\n";
  return s;
}

/// The `coerced` notes, as text (`coerced at path: detail`).
inline std::vector<std::string> coerced_notes(const covenant::note_list& notes) {
  std::vector<std::string> out;
  for (const auto& n : notes)
    if (n.kind == covenant::note_kind::coerced) out.push_back(n.to_string());
  return out;
}

/// The typed reader of a model reply, as contracts use it; the result carries every note of the
/// reading (also copied to `notes_out` when given).
template <class T>
covenant::decoded<T> read_typed(std::string_view reply, covenant::strictness level = covenant::strictness::coerce,
                                covenant::note_list* notes_out = nullptr) {
  covenant::note_list notes;
  std::chrono::nanoseconds parse{0};
  std::chrono::nanoseconds validate{0};
  auto r = covenant::detail::read_reply<T>(reply, {}, level, notes, parse, validate, {});
  if (notes_out != nullptr) *notes_out = notes;
  r.notes = std::move(notes);
  return r;
}

/// read_dynamic() of `reply` against `model` at `level`, final or partial.
inline covenant::read_result read_against(std::string_view reply, const covenant::schema::model& model,
                                          covenant::strictness level = covenant::strictness::coerce,
                                          bool partial = false) {
  covenant::read_options o;
  o.level = level;
  o.partial = partial;
  return covenant::read_dynamic(reply, model, o);
}

}  // namespace covenant_test::reading
