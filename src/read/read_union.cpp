// Which alternative of a union a value reads as (read/detail/read_union.hpp): one rule for both
// decoders.
#include "covenant/read/detail/read_union.hpp"

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "covenant/read/detail/coerce.hpp"

namespace covenant::detail {

namespace {

// The score of an alternative the value is of the wrong kind for, or names none of the values of
// (ranked after every alternative that only breaks a constraint).
constexpr std::size_t wrong_kind = std::numeric_limits<std::size_t>::max() - 1;

std::size_t coerced_notes(const note_list& notes) {
  return static_cast<std::size_t>(
      std::count_if(notes.begin(), notes.end(), [](const note& n) { return n.kind == note_kind::coerced; }));
}

// Whether `t` is a closed choice (enum, literal, union of them) without constraints of its own, so
// that its one constraint violation at its position is naming none of its values.
bool bare_choice(const schema::model& s, const schema::type& t) {
  const schema::type* u = s.unalias(t);
  return u != nullptr && u->constraints.empty() && choice_set(s, t).has_value();
}

struct the_best_miss {
  issue_list issues;
  std::size_t score = std::numeric_limits<std::size_t>::max();
};

// One pass over the alternatives with context `c`: true when one fits (kept, its notes recorded
// and its unread keys counted in `c`, the reader after it). Otherwise `miss` holds the issues of the
// best-ranked alternative.
bool pass(json_reader& r, const union_target& t, const schema::type& node, decode_context& c, const char* start,
          const path& here, the_best_miss& miss, const path_frame* at) {
  struct fitting {
    note_list notes;
    const char* end = nullptr;
    std::size_t ignored = 0;
    std::size_t coerced = 0;
    std::size_t text = 0;  // objects and lists read as their text: ranked after every other fit
  };
  std::optional<fitting> fit;
  for (std::size_t k = 0; k < node.args.size(); ++k) {
    const schema::type& alt = node.args[k];
    r.rewind(start);
    issue_list local;
    note_list local_notes;
    decode_context sub{c.s, c.opts, local, &local_notes};
    t.read(t.self, k, r, alt, sub, at);
    if (r.failed()) return false;  // a syntax error is the same for every alternative
    if (local.empty()) {
      const std::size_t ignored = sub.ignored_keys;
      const std::size_t coerced = coerced_notes(local_notes);
      const std::size_t text = coerced == 0 ? 0 : written_text_readings(local_notes);
      if (!fit || text < fit->text ||
          (text == fit->text && (ignored < fit->ignored || (ignored == fit->ignored && coerced < fit->coerced)))) {
        t.keep(t.self, k, false);
        fit = fitting{std::move(local_notes), r.position(), ignored, coerced, text};
      }
      if (ignored == 0 && coerced == 0) break;  // fits as it is: no later one can do better
      continue;
    }
    bool wrong_type = local.size() == 1 && local.front().path == here &&
                      (local.front().code == issue_code::type_mismatch ||
                       (local.front().code == issue_code::constraint_violation && bare_choice(c.s, alt)));
    if (!wrong_type && c.opts.coerce) {
      if (const schema::object_def* def = c.s.object_of(alt)) {
        // an object none of whose keys names a field of the alternative does not fit it at all
        r.rewind(start);  // (every alternative is read from there again)
        object_keys keys;
        wrong_type = look_at_keys(r, *def, keys) && keys.count > 0 && !keys.names_field;
      }
    }
    const std::size_t score = wrong_type ? wrong_kind : local.size();
    if (score < miss.score) {
      miss.score = score;
      miss.issues = std::move(local);
      t.keep(t.self, k, true);
    }
  }
  if (!fit) return false;
  r.rewind(fit->end);
  if (c.notes != nullptr)
    for (auto& n : fit->notes) c.notes->push_back(std::move(n));
  c.ignored_keys += fit->ignored;
  return true;
}

}  // namespace

bool read_union(json_reader& r, const union_target& t, const schema::type& node, decode_context& ctx,
                const path_frame* at) {
  r.peek();
  const char* start = r.position();
  const path here = to_path(at);
  the_best_miss miss;
  bool fits = false;
  if (ctx.opts.coerce) {
    // An alternative that fits as written wins over one that needs coercion.
    decode_options exact = ctx.opts;
    exact.coerce = false;
    decode_context strict_ctx{ctx.s, exact, ctx.issues, ctx.notes};
    fits = pass(r, t, node, strict_ctx, start, here, miss, at);
    ctx.ignored_keys += strict_ctx.ignored_keys;
    if (!fits && !r.failed()) {
      r.rewind(start);
      if (t.whole != nullptr && t.whole(t.self, r, node, ctx, at)) return true;
      if (r.failed()) return false;
      miss = {};
      fits = pass(r, t, node, ctx, start, here, miss, at);
    }
  } else {
    fits = pass(r, t, node, ctx, start, here, miss, at);
  }
  if (r.failed() || fits) return fits;
  r.rewind(start);
  std::string_view raw;
  if (!r.skip_value(raw)) return false;
  if (miss.issues.size() == 1 && miss.issues.front().path == here && miss.score == wrong_kind) {
    // A union of choices (enums and literals) is one choice: a value of a kind it has names none of its values.
    t.keep(t.self, no_alternative, true);
    if (const auto choices = choice_set(ctx.s, node); choices && choice_kind(*choices, raw))
      choice_mismatch(ctx, at, *choices, raw);
    else
      type_mismatch(ctx, at, node, raw);
    return false;
  }
  for (auto& i : miss.issues) ctx.issues.push_back(std::move(i));
  return false;
}

}  // namespace covenant::detail
