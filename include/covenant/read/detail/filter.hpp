// covenant/read/detail/filter.hpp - the on-fail action filter after hooks: a hook's filter
// violations drop the list item or the field that is not required that they point at (or the
// nearest one around it), on a C++ value or a JSON value alike (one walk over value_ops).
#pragma once

#include "covenant/read/detail/value_ops.hpp"
#include "covenant/types/config.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant::detail {

/// Applies the filter violations among `issues` to `root` (a value of schema `m`): each drops the
/// deepest list item or field that is not required on its path (an optional field emptied, a
/// defaulted one back to its default, a required nullable one null; map values never go), with
/// one `filtered` note, and leaves `issues`. One that has nothing to drop stays (the contract asks
/// about it again). A list that lost every item to filters with a reason gets a refrain issue
/// "every item was dropped" (got "N dropped"). Returns whether anything was dropped.
COVENANT_API bool apply_filters(value_ref root, const schema::model& m, issue_list& issues, note_list& notes);

/// apply_filters() on a C++ value.
template <class T>
bool apply_filters(T& value, issue_list& issues, note_list& notes) {
  return apply_filters(value_ref{&value, &ops_of<T>()}, schema_of<T>(), issues, notes);
}

}  // namespace covenant::detail
