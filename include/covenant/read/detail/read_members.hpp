// covenant/read/detail/read_members.hpp - the loops that read an object's members and a list's
// items: one for the typed decoder (decode.hpp) and the dynamic one (src/read/dynamic.cpp). They
// hold the rules (which key names which field, what is ignored, what a field not given reads as,
// which items the on-fail filter drops); each decoder gives the target that reads field j or
// item n into its own value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/read/detail/coerce.hpp"
#include "covenant/read/detail/decode_context.hpp"
#include "covenant/read/detail/json_reader.hpp"
#include "covenant/types/schema.hpp"

namespace covenant::detail {

/// A set of fields (by index): one bit each, in words of 64.
[[nodiscard]] constexpr std::size_t field_words(std::size_t n) noexcept { return n == 0 ? 1 : (n + 63) / 64; }
inline void mark(std::uint64_t* s, std::size_t j) noexcept { s[j / 64] |= std::uint64_t{1} << (j % 64); }
inline void unmark(std::uint64_t* s, std::size_t j) noexcept { s[j / 64] &= ~(std::uint64_t{1} << (j % 64)); }
[[nodiscard]] inline bool marked(const std::uint64_t* s, std::size_t j) noexcept { return ((s[j / 64] >> (j % 64)) & 1U) != 0; }

/// The object read_members reads into: each decoder's own value behind `self`.
struct members_target {
  void* self = nullptr;
  /// Per field, whether its key may be matched byte for byte as the next key (it has no '"' or
  /// '\\'); null: none is.
  const bool* plain = nullptr;
  /// Reads field j's value at the path frame `f`.
  void (*read)(void* self, std::size_t j, json_reader& r, decode_context& ctx, const path_frame* f) = nullptr;
  /// Field j was not given and reads as its default.
  void (*absent)(void* self, std::size_t j) = nullptr;
};

/// Reads the members of the object the reader is in (after begin_object() and the first
/// `in_order` fields, which the typed decoder reads on its own fast path) to its end, then
/// settles the fields not given. The rules:
/// - a key is the field whose JSON key it is; a repeated key is read again (the last value wins);
/// - in coerce mode, a key spelled otherwise (match_field_key) is that field's, noted, unless the
///   field's own key is written too, before or after (looked for once per field);
/// - any other key is ignored (counted in decode_context::ignored_keys; an unknown_field issue
///   with decode_options::reject_unknown_fields); a skipped field's value is passed over;
/// - a field not given reads as its default when it is not required; a required list does too in
///   coerce mode (noted), and any other required field is a missing_field issue.
/// `seen` (field_words(def.fields.size()) words) gets the fields read, the first `in_order`
/// included; a target may change it while it reads or settles a field. `f` is the path frame the
/// fields are read at. False on a syntax error. Out of line: both decoders call this one copy, on
/// the typed decoder's slow path only (members out of order, unknown or missing).
COVENANT_API bool read_members(json_reader& r, const members_target& t, const schema::object_def& def,
                               std::uint64_t* seen, std::size_t in_order, decode_context& ctx, path_frame& f,
                               const path_frame* at);

/// Coerce mode, a single value where a list is expected: item 0 of a one-item list (noted when it
/// reads without issues). False on a syntax error.
template <class Target>
bool read_one_item(json_reader& r, Target& t, decode_context& ctx, const path_frame* at) {
  const std::size_t before = ctx.issues.size();
  path_frame f{at, {}, 0, true};
  t.read(0, r, ctx, &f);
  if (r.failed()) return false;
  if (ctx.issues.size() == before) ctx.note(at, note_kind::coerced, std::string(one_item_list_note));
  return true;
}

/// Reads the items of the list the reader is at ('['), each by `t.read(n, r, ctx, f)` as item n
/// of those kept; an item that fails a check with the on-fail action filter is dropped
/// (`t.drop(n)`), and when every item is, the reason to refrain is reported for the list. `kept`
/// is the count of items kept; false on a syntax error.
template <class Target>
COVENANT_ALWAYS_INLINE bool read_items(json_reader& r, Target& t, std::size_t& kept, decode_context& ctx, const path_frame* at) {
  kept = 0;
  if (!r.begin_array()) return false;
  std::size_t dropped = 0;
  std::string all_dropped;  // the reason to refrain when every item is dropped
  bool first = true;
  path_frame f{at, {}, 0, true};
  while (r.next_element(first)) {
    first = false;
    f.index = kept + dropped;
    const std::size_t before = ctx.issues.size();
    t.read(kept, r, ctx, &f);
    if (r.failed()) return false;
    if (COVENANT_UNLIKELY(ctx.issues.size() != before) && take_filtered(ctx, before, &f, &all_dropped)) {
      ++dropped;
      t.drop(kept);
      continue;
    }
    ++kept;
  }
  if (r.failed()) return false;
  if (COVENANT_UNLIKELY(dropped > 0) && kept == 0 && !all_dropped.empty())
    all_items_dropped(ctx, at, dropped, std::move(all_dropped));
  return true;
}

}  // namespace covenant::detail
