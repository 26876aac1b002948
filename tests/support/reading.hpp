// Helpers of the reading tests: issues as text, the coercion notes of a reading, the typed reader
// of a model reply as contracts use it, the runtime-schema reader at a level, and the three readers
// of one schema side by side (readers_of / expect_readers_agree).
#pragma once

#include <covenant/read/detail/read_reply.hpp>
#include <covenant/read/detail/stream_reader.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/types/encode.hpp>
#include <covenant/types/issues.hpp>
#include <covenant/types/json_equal.hpp>
#include <covenant/types/schema_of.hpp>
#include <gtest/gtest.h>

#include <boost/json/value.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
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

/// try_read_dynamic() of `reply` against `model` at `level`, final or partial.
inline covenant::read_result read_against(std::string_view reply, const covenant::schema::model& model,
                                          covenant::strictness level = covenant::strictness::coerce,
                                          bool partial = false) {
  covenant::read_options o;
  o.level = level;
  o.partial = partial;
  return covenant::try_read_dynamic(reply, model, o);
}

/// The violations a stream reader of `text` stops on, fed `piece` bytes at a time (0: whole).
template <class Reader>
covenant::issue_list stream_violations(Reader& reader, std::string_view text, std::size_t piece) {
  if (piece == 0) piece = text.size() == 0 ? 1 : text.size();
  for (std::size_t at = 0; at < text.size(); at += piece) reader.feed(text.substr(at, piece));
  return reader.violations();
}

/// What each of the three readers of one schema makes of a text: the typed decoder and the dynamic
/// decoder on schema_of<T>() (value, issues, notes), and the violations the typed and the dynamic
/// stream readers stop on (fed one byte at a time, and whole).
template <class T>
struct readings {
  covenant::decoded<T> typed;
  covenant::dynamic_result dynamic;
  covenant::issue_list typed_stream;    ///< one byte at a time
  covenant::issue_list dynamic_stream;  ///< one byte at a time
  covenant::issue_list typed_stream_whole;
  covenant::issue_list dynamic_stream_whole;
};

/// The stream level that goes with decode options (coerce: coerce, else strict).
inline covenant::strictness stream_level(const covenant::decode_options& o) {
  return o.coerce ? covenant::strictness::coerce : covenant::strictness::strict;
}

template <class T>
readings<T> readers_of(std::string_view text, const covenant::decode_options& o = {}) {
  readings<T> r{covenant::try_decode<T>(text, o), covenant::try_decode_dynamic(text, covenant::schema_of<T>(), o), {}, {}, {}, {}};
  covenant::decode_options so = o;
  so.coerce = false;  // the stream readers set it from their level
  for (std::size_t piece : {std::size_t{1}, std::size_t{0}}) {
    covenant::detail::stream_reader<T> typed(so, stream_level(o));
    covenant::detail::dynamic_stream_reader dynamic(covenant::schema_of<T>(), so, stream_level(o));
    (piece == 1 ? r.typed_stream : r.typed_stream_whole) = stream_violations(typed, text, piece);
    (piece == 1 ? r.dynamic_stream : r.dynamic_stream_whole) = stream_violations(dynamic, text, piece);
  }
  return r;
}

/// A violation as text without `actual` when the check judged a value still growing (a string or a
/// list already over its maximum: how far over depends on where the pieces of the stream ended).
inline std::string violation_text(const covenant::issue& v) {
  const bool growing = v.message.starts_with("must have at most") || v.message.starts_with("must have exactly");
  if (!growing) return v.to_string();
  covenant::issue w = v;
  w.actual.clear();
  return w.to_string();
}

inline std::string violations_text(const covenant::issue_list& vs) {
  std::string s;
  for (const auto& v : vs) s += violation_text(v) + "\n";
  return s;
}

/// Checks that the three readers of T agree on `text`: try_decode<T> and try_decode_dynamic on
/// schema_of<T>() report the same issues and notes and, when the text reads, the same value; the
/// typed and the dynamic stream stop on the same violations, and each one is an issue of the final
/// reading. Returns what they read, for checks of the rule itself.
template <class T>
readings<T> expect_readers_agree(std::string_view text, const covenant::decode_options& o = {}) {
  readings<T> r = readers_of<T>(text, o);
  const std::string where = "text: " + std::string(text) + (o.coerce ? " (coerce)" : "");
  EXPECT_EQ(rendered(r.dynamic.issues), rendered(r.typed.issues)) << where;
  EXPECT_EQ(r.dynamic.issues, r.typed.issues) << where;
  EXPECT_EQ(r.dynamic.notes, r.typed.notes) << where;
  if (r.typed.ok()) {
    const boost::json::value typed = covenant::to_value(*r.typed.value);
    EXPECT_TRUE(covenant::json_equal(r.dynamic.value, typed))
        << where << "\ntyped:   " << covenant::json_text(typed) << "\ndynamic: " << covenant::json_text(r.dynamic.value);
  }
  EXPECT_EQ(violations_text(r.dynamic_stream), violations_text(r.typed_stream)) << where;
  EXPECT_EQ(violations_text(r.typed_stream_whole), violations_text(r.typed_stream)) << where;
  EXPECT_EQ(violations_text(r.dynamic_stream_whole), violations_text(r.dynamic_stream)) << where;
  for (const covenant::issue& v : r.typed_stream) {
    bool found = false;
    for (const covenant::issue& i : r.typed.issues) found = found || violation_text(i) == violation_text(v);
    EXPECT_TRUE(found) << where << "\nthe stream stops on " << v.to_string() << ", not an issue of the final reading";
  }
  return r;
}

}  // namespace covenant_test::reading
