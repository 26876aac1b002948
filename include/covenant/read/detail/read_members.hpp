// covenant/read/detail/read_members.hpp - the loops that read an object's members and a list's
// items: one for the typed decoder (decode.hpp) and the dynamic one (src/read/dynamic.cpp). They
// hold the rules (which key names which field, what is ignored, what a field not given reads as,
// which items the on-fail filter drops); each decoder gives the target that reads field j or
// item n into its own value.
#pragma once

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "covenant/read/detail/coerce.hpp"
#include "covenant/read/detail/decode_context.hpp"
#include "covenant/read/detail/json_reader.hpp"
#include "covenant/types/schema.hpp"

namespace covenant::detail {

/// The fields of an object seen so far: one word for up to 64 fields of a C++ type, bits beyond,
/// a vector for a runtime schema.
template <std::size_t N>
using field_set = std::conditional_t<(N <= 64), std::uint64_t, std::bitset<N == 0 ? 1 : N>>;

inline void mark(std::uint64_t& s, std::size_t j) noexcept { s |= std::uint64_t{1} << j; }
inline bool marked(std::uint64_t s, std::size_t j) noexcept { return ((s >> j) & 1U) != 0; }
inline bool all_marked(std::uint64_t s, std::size_t n) noexcept {
  return n == 64 ? s == ~std::uint64_t{0} : s == (std::uint64_t{1} << n) - 1;
}
template <std::size_t N>
void mark(std::bitset<N>& s, std::size_t j) {
  s.set(j);
}
template <std::size_t N>
bool marked(const std::bitset<N>& s, std::size_t j) {
  return s.test(j);
}
template <std::size_t N>
bool all_marked(const std::bitset<N>& s, std::size_t) {
  return s.all();
}
inline void mark(std::vector<bool>& s, std::size_t j) { s[j] = true; }
inline bool marked(const std::vector<bool>& s, std::size_t j) { return s[j]; }
inline bool all_marked(const std::vector<bool>& s, std::size_t) {
  for (bool b : s)
    if (!b) return false;
  return true;
}

/// Reads the members of the object the reader is in (after begin_object() and the first
/// `in_order` members, which the typed decoder reads on its own fast path) to its end, then
/// settles the fields not given. The rules:
/// - a key is the field whose JSON key it is; a repeated key is read again (the last value wins);
/// - in coerce mode, a key spelled otherwise (match_field_key) is that field's, noted, unless the
///   field's own key is written too, before or after (looked for once per field);
/// - any other key is ignored (counted in decode_context::ignored_keys; an unknown_field issue
///   with decode_options::reject_unknown_fields); a skipped field's value is passed over;
/// - a field not given reads as its default when it is not required; a required list does too in
///   coerce mode (noted), and any other required field is a missing_field issue.
/// `Target` gives: size() (the fields), key(k) (field k's JSON key), plain(k) (whether that key
/// may be matched byte for byte as the next key), read(j, r, ctx, f) (reads field j's value at
/// the path frame f) and absent(j) (field j reads as its default). False on a syntax error.
template <class Target, class Set>
COVENANT_ALWAYS_INLINE bool read_members(json_reader& r, Target& t, const schema::object_def& def, Set& seen,
                                          Set& follows, std::size_t in_order, decode_context& ctx, path_frame& f,
                                          const path_frame* at) {
  const std::size_t n = t.size();
  std::string scratch;
  std::string_view key;
  std::size_t hint = in_order;
  bool first = in_order == 0;
  bool matched = false;
  while (r.next_key(first, key, scratch, hint < n && t.plain(hint) ? std::string_view(t.key(hint)) : std::string_view(),
                    matched)) {
    first = false;
    std::size_t j = n;
    if (matched) {
      j = hint;
    } else {
      for (std::size_t k = 0; k < n; ++k) {
        if (t.key(k) == key) {
          j = k;
          break;
        }
      }
    }
    if (COVENANT_UNLIKELY(j == n) && ctx.opts.coerce) {
      const std::size_t m = match_field_key(def, key);
      if (m != no_match && !marked(seen, m) && !marked(follows, m)) {
        if (r.later_key_is(t.key(m))) {
          mark(follows, m);
        } else {
          j = m;
          path_frame g{at, def.fields[j].key, 0, false};
          ctx.note(&g, note_kind::coerced, "key \"" + std::string(key) + "\" read as \"" + def.fields[j].key + "\"");
        }
      }
    }
    if (COVENANT_UNLIKELY(j == n || def.fields[j].skip)) {
      if (j == n) ++ctx.ignored_keys;
      const std::string k(key);
      path_frame g{at, k, 0, false};
      std::string_view ignored;
      if (!r.skip_value(ignored)) return false;
      if (j == n && ctx.opts.reject_unknown_fields) unknown_field(ctx, &g);
      continue;
    }
    mark(seen, j);
    hint = j + 1;
    f.key = t.key(j);
    t.read(j, r, ctx, &f);
    if (r.failed()) return false;
  }
  if (r.failed()) return false;
  if (all_marked(seen, n)) return true;
  for (std::size_t j = 0; j < n; ++j) {
    if (marked(seen, j) || def.fields[j].skip) continue;
    if (!def.fields[j].required) {
      t.absent(j);
      continue;
    }
    path_frame g{at, def.fields[j].key, 0, false};
    if (missing_list_reads_as_empty(ctx, def.fields[j].type)) {
      t.absent(j);
      ctx.note(&g, note_kind::coerced, std::string(missing_list_note));
    } else {
      missing_field(ctx, &g, def.fields[j].key);
    }
  }
  return true;
}

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
