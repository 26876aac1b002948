// src/read/read_members.cpp - the one loop that reads an object's members for both decoders
// (covenant/read/detail/read_members.hpp): which key names which field, what is ignored, what a
// field not given reads as.
#include "covenant/read/detail/read_members.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace covenant::detail {

bool read_members(json_reader& r, const members_target& t, const schema::object_def& def, std::uint64_t* seen,
                  std::size_t in_order, decode_context& ctx, path_frame& f, const path_frame* at) {
  const std::size_t n = def.fields.size();
  for (std::size_t j = 0; j < in_order; ++j) mark(seen, j);
  // Fields whose own key was found written later (key spellings).
  std::uint64_t follows_word = 0;
  std::vector<std::uint64_t> follows_words;
  std::uint64_t* follows = &follows_word;
  if (n > 64) {
    follows_words.assign(field_words(n), 0);
    follows = follows_words.data();
  }
  std::string scratch;
  std::string_view key;
  std::size_t hint = in_order;
  bool first = in_order == 0;
  bool matched = false;
  while (r.next_key(first, key, scratch,
                    hint < n && t.plain != nullptr && t.plain[hint] ? std::string_view(def.fields[hint].key)
                                                                    : std::string_view(),
                    matched)) {
    first = false;
    std::size_t j = n;
    if (matched) {
      j = hint;
    } else {
      for (std::size_t k = 0; k < n; ++k) {
        if (def.fields[k].key == key) {
          j = k;
          break;
        }
      }
    }
    if (j == n && ctx.opts.coerce) {
      const std::size_t m = match_field_key(def, key);
      if (m != no_match && !marked(seen, m) && !marked(follows, m)) {
        if (r.later_key_is(def.fields[m].key)) {
          mark(follows, m);
        } else {
          j = m;
          path_frame g{at, def.fields[j].key, 0, false};
          ctx.note(&g, note_kind::coerced, "key \"" + std::string(key) + "\" read as \"" + def.fields[j].key + "\"");
        }
      }
    }
    if (j == n || def.fields[j].skip) {
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
    f.key = def.fields[j].key;
    t.read(t.self, j, r, ctx, &f);
    if (r.failed()) return false;
  }
  if (r.failed()) return false;
  for (std::size_t j = 0; j < n; ++j) {
    if (marked(seen, j) || def.fields[j].skip) continue;
    if (!def.fields[j].required) {
      t.absent(t.self, j);
      continue;
    }
    path_frame g{at, def.fields[j].key, 0, false};
    if (missing_list_reads_as_empty(ctx, def.fields[j].type)) {
      t.absent(t.self, j);
      ctx.note(&g, note_kind::coerced, std::string(missing_list_note));
    } else {
      missing_field(ctx, &g, def.fields[j].key);
    }
  }
  return true;
}

}  // namespace covenant::detail
