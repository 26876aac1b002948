// covenant/types/prompt_format.hpp - the schema model as compact text for prompts.
//
// The text tells a model exactly which JSON to produce: field names, types, descriptions and every
// constraint, so the model learns the bounds before its first answer:
//
//     Answer with a JSON object in this schema:
//     {
//       // Confidence score. Between 0 and 1.
//       "confidence": float,
//       // Identifiers of the source documents. 1 to 50 items; each item non-empty.
//       "sources": string[],
//       // Explanation of the answer. At most 5000 characters. Optional.
//       "reasoning": string or null
//     }
//
// Nested objects are inlined with indentation; recursive definitions are printed once, by name,
// after the root. Enums read `"low" | "medium" | "high"`, unions `A | B`, maps `map<string, T>`.
// Cross-field rules are comment lines (`// Rule: ...`) inside the object's braces. The wording of a
// single constraint comes from schema::describe(), which error messages use as well.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "covenant/types/config.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant {

struct prompt_options {
  /// Start with "Answer with a JSON object in this schema:" ("array" / "value" for other roots).
  /// Turn off when the surrounding prompt introduces the format itself.
  bool header = true;
  /// Spaces per nesting level.
  std::size_t indent = 2;
};

/// Text that tells a model which JSON value to produce (no trailing newline).
COVENANT_API std::string prompt_text(const schema::model& s, const prompt_options& options = {});

/// prompt_text(schema_of<T>()) with default options, built on first use and cached.
template <class T>
const std::string& prompt_of() {
  static const std::string text = prompt_text(schema_of<T>());
  return text;
}

/// The constraints that hold at `t` as a model should see them: the declared ones, plus the range
/// of an unsigned or 8/16-bit C++ integer type (unless a declared bound is already tighter), with
/// bounds of the same direction reduced to the tightest one. Other constraints keep their order.
COVENANT_API std::vector<schema::constraint> effective_constraints(const schema::type& t);

/// The constraints `cs` on a value of kind `k` as one lower-case clause, merged where that reads
/// better: "non-empty, at most 10000 characters", "between 0 and 1", "1 to 50 items". Empty when
/// `cs` says nothing.
COVENANT_API std::string constraint_clause(const std::vector<schema::constraint>& cs, schema::kind k);

/// Every constraint of `t` as one clause, including those on list items and map values:
/// "1 to 50 items; each item non-empty".
COVENANT_API std::string constraint_clause(const schema::type& t);

/// Whether the schema says anything beyond names and types: a description, a constraint or a rule
/// anywhere in it (then its prompt text is worth showing for an input).
COVENANT_API bool has_prompt_metadata(const schema::model& s);

namespace detail {
/// `clause` as a sentence: first letter upper-case, final period.
COVENANT_API std::string sentence(std::string clause);
/// `a` and `b` joined as sentences ("" when both are empty).
COVENANT_API std::string join_sentences(std::string a, const std::string& b);
/// Descriptions of enum values: `"low": little risk; "high": needs review` ("" when none).
COVENANT_API std::string enum_value_notes(const schema::enum_def& e);
}  // namespace detail

}  // namespace covenant
