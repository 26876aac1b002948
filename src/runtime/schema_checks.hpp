// src/runtime/schema_checks.hpp - structural checks shared by the schema-file reader, the
// JSON Schema importer and the registry (see covenant::check_model).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "covenant/types/config.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/runtime/schema_diagnostic.hpp"

namespace covenant::detail {

/// One structural problem of a model, anchored at a definition (and a field of it, if any).
struct model_problem {
  schema_error_code code = schema_error_code::unknown_type;
  std::uint32_t def = schema::no_def;  ///< definition index (no_def: the root type)
  std::string field;                   ///< declared field name, or ""
  std::string message;
};

/// Every structural problem of `m` (see covenant::check_model for the list). Definitions that
/// contain one another more than `max_depth` levels deep (recursion counted once) are a
/// limit_exceeded problem: every consumer of the model may then recurse safely.
std::vector<model_problem> find_model_problems(const schema::model& m, std::size_t max_depth = COVENANT_SCHEMA_MAX_DEPTH);

/// Whether `key` is acceptable as a map key type (string, enum, string literal, a union of those,
/// or an alias of one), following refs in `m`.
bool valid_map_key(const schema::model& m, const schema::type& key);

}  // namespace covenant::detail
