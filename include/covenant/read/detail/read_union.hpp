// covenant/read/detail/read_union.hpp - which alternative of a union a value reads as: one rule
// for the typed decoder (std::variant) and the dynamic decoder (a union of a runtime schema).
#pragma once

#include <cstddef>

#include "covenant/read/detail/decode_context.hpp"
#include "covenant/read/detail/json_reader.hpp"
#include "covenant/types/schema.hpp"

namespace covenant::detail {

/// keep()'s alternative when no value is kept: the value fits no alternative, reported once for
/// the whole union.
inline constexpr std::size_t no_alternative = static_cast<std::size_t>(-1);

/// The decoder's union value, as functions.
struct union_target {
  void* self = nullptr;
  /// Reads alternative `k` (of the union's `args`, `alt`) at the reader into a scratch value.
  void (*read)(void* self, std::size_t k, json_reader& r, const schema::type& alt, decode_context& ctx,
               const path_frame* at) = nullptr;
  /// Keeps the scratch value (alternative `k`): as the best fit so far, or (`miss`) as the
  /// best-ranked value of an alternative that does not fit (k == no_alternative: none).
  void (*keep)(void* self, std::size_t k, bool miss) = nullptr;
  /// Coerce mode, between the pass that reads the alternatives as written and the one that
  /// coerces: a reading of the whole union at once (a union of string literals read as one
  /// choice). True when it read the value (or reported why not). May be null.
  bool (*whole)(void* self, json_reader& r, const schema::type& node, decode_context& ctx,
                const path_frame* at) = nullptr;
};

/// Reads the value at the reader as the alternative of the union `node` that fits it best; true
/// when one fits (kept with keep(k, false), its notes recorded) or `whole` read the value. The rule:
/// - in coerce mode, an alternative that fits as written wins over any that needs coercions
///   (a first pass reads them all without);
/// - the first alternative that fits with no coercion and no key of the value left unread wins;
///   otherwise, among those that fit, the one with the fewest objects or lists read as their text,
///   then the fewest keys left unread, then the fewest coercions (the earlier among equals);
/// - when none fits, the issues of the alternative with the fewest (kept with keep(k, true)); a
///   value of a kind no alternative takes, or naming none of a closed choice's values, ranks after
///   every alternative that only breaks a constraint, and is reported once for the whole union.
/// Keys left unread by the winner count for the unions around it (decode_context::ignored_keys).
COVENANT_API bool read_union(json_reader& r, const union_target& t, const schema::type& node, decode_context& ctx,
                             const path_frame* at);

}  // namespace covenant::detail
