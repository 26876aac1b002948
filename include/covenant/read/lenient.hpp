// covenant/read/lenient.hpp - messy model text into candidate strict-JSON texts, every change noted.
//
// Models wrap JSON in prose and markdown fences, think aloud before answering, leave trailing
// commas, use single quotes, drop the quotes around keys, write Python dicts, and stop in the
// middle of a value. extract_candidates() reads such text and offers the values it finds as
// strict JSON texts (compact, valid RFC 8259), most plausible first, each with the notes that say
// what was taken from where and what was repaired:
//
//     auto cands = covenant::extract_candidates(reply);       // strictness::coerce by default
//     for (const auto& c : cands) {
//       auto r = covenant::try_decode<Answer>(c.json);         // strict decoder on the candidate
//       if (r) { use(*r.value, c.notes); break; }              // (decoders rank: fewest issues)
//     }
//
// Valid JSON should not come here: looks_like_strict_json() is a constant-time check that is true
// for every valid JSON text, so callers try the strict decoder first and fall back to this only
// when it reports a parse error (or the check says no).
//
// Nothing here decides what a value means for a type: choosing between candidates and coercions
// such as "0.9" -> 0.9 belong to the decoders. This layer only reads text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/types/config.hpp"
#include "covenant/types/issues.hpp"

/// Default largest text extract_candidates() reads, in bytes (4 MiB); larger texts give no
/// candidates and a problem.
#ifndef COVENANT_LENIENT_MAX_INPUT_BYTES
#define COVENANT_LENIENT_MAX_INPUT_BYTES (4u * 1024u * 1024u)
#endif

/// Default number of candidates extract_candidates() returns at most.
#ifndef COVENANT_LENIENT_MAX_CANDIDATES
#define COVENANT_LENIENT_MAX_CANDIDATES 8
#endif

/// Notes kept per candidate; further repairs are summed up in one last note.
#ifndef COVENANT_LENIENT_MAX_NOTES
#define COVENANT_LENIENT_MAX_NOTES 256
#endif

namespace covenant {

/// How much a reader may change to make text readable.
enum class strictness : std::uint8_t {
  strict,  ///< no repairs: the text must be the JSON value itself
  repair,  ///< syntax repairs and extraction (fences, prose, quotes, commas, truncation, ...)
  coerce,  ///< repair + schema-guided conversions by the decoders; also offers the whole text
           ///< as a string (for primitive targets). The default for contracts.
};

/// "strict", "repair", "coerce".
COVENANT_API std::string_view to_string(strictness level) noexcept;

/// Options of extract_candidates().
struct lenient_options {
  strictness level = strictness::coerce;
  /// The text is an unfinished stream: an unfinished value at the end is kept (and noted as
  /// incomplete) instead of dropped.
  bool partial = false;
  /// Larger texts give no candidates (and a problem in extraction::issues).
  std::size_t max_input_bytes = COVENANT_LENIENT_MAX_INPUT_BYTES;
  /// Deepest nesting of arrays/objects read (values nested deeper give no candidate and a
  /// problem); at most 1000 is used whatever the setting.
  std::size_t max_depth = COVENANT_DEFAULT_MAX_DEPTH;
  /// Most candidates returned; the search stops once this many were found.
  std::size_t max_candidates = COVENANT_LENIENT_MAX_CANDIDATES;
};

/// Where a candidate came from, most plausible first (the order of extraction).
enum class candidate_kind : std::uint8_t {
  whole_text,       ///< the text is the value (possibly repaired; trailing prose ignored)
  after_reasoning,  ///< the value right after a reasoning block (</think>, </thinking>, ...)
  fenced_block,     ///< the value in a markdown ``` block (closed or not, with or without a tag)
  in_prose,         ///< a balanced object or array found inside prose
  string_encoded,   ///< JSON text encoded inside a JSON string ("{\"a\": 1}")
  array_element,    ///< the object inside a one-element array ([{...}])
  all_values,       ///< every object found in the text, as one array
  scalar_text,      ///< the whole text as a JSON string (coerce level: for primitive targets)
};

/// "whole_text", "after_reasoning", ...
COVENANT_API std::string_view to_string(candidate_kind kind) noexcept;

/// Where an object or array of a candidate's `json` was read from in the input.
struct source_span {
  std::size_t json_offset = 0;    ///< its opening bracket in candidate::json
  std::size_t source_offset = 0;  ///< the bytes of the input it was read from (from its opening
  std::size_t source_length = 0;  ///< bracket; trailing whitespace left out)
  bool closed = true;             ///< false: the text ended inside it
};

/// One reading of the text as strict JSON.
struct COVENANT_API candidate {
  /// Strict JSON (RFC 8259, valid UTF-8), compact: decode it with the strict decoders.
  std::string json;
  /// What was taken from where (extracted), repaired, dropped (truncated) or left unfinished
  /// (incomplete, partial mode), each with the path in the value where it happened.
  note_list notes;
  /// The text (or the block the value was read from) ended inside the value: whatever was cut
  /// mid-way was dropped (or kept as incomplete in partial mode) and open brackets were closed.
  bool truncated = false;
  /// Human-readable origin: "whole text", "fenced block 2 (json)", "object in prose at line 3",
  /// "after </think>", ...
  std::string origin;
  candidate_kind kind = candidate_kind::whole_text;
  /// Byte range of the input the value was read from.
  std::size_t source_offset = 0;
  std::size_t source_length = 0;
  /// Where each object and array of a *repaired* `json` was read from, in order of json_offset
  /// (for reading one as the text it was written as, where a string is wanted). Empty when `json`
  /// is the input's text as written (then each value's JSON text is its source text) and for
  /// the JSON read from inside a string (string_encoded).
  std::vector<source_span> spans;

  /// Number of `repaired` notes (0 when the value was strict JSON where it was found).
  [[nodiscard]] std::size_t repairs() const noexcept;
};

/// Candidates, and the limits that stopped the search (if any).
struct extraction {
  std::vector<candidate> candidates;
  /// Why (part of) the text could not be read: input larger than max_input_bytes, nesting deeper
  /// than max_depth, a search stopped by its work budget. parse_error issues with a message
  /// (and line/column where one applies).
  issue_list issues;
  /// max_candidates stopped the search before every candidate was found.
  bool more_candidates = false;
};

/// Candidates for the values in `text`, most plausible first, without duplicates, at most
/// `options.max_candidates`. Order: the whole text, the value after a reasoning block, fenced
/// blocks in order, objects/arrays in prose in order (each followed by the candidates derived
/// from it: JSON inside a string, the object inside a one-element array), all objects as one
/// array, then (coerce level) the whole text as a string. Strict level: the text unchanged as the
/// only candidate. Never throws except std::bad_alloc; time is linear in the size of the text.
COVENANT_API std::vector<candidate> extract_candidates(std::string_view text, const lenient_options& options = {});

/// Like extract_candidates(), with the issues that limited the search.
COVENANT_API extraction extract(std::string_view text, const lenient_options& options = {});

/// Like extract(), writing into `out` and reusing its storage (the strings and note lists of
/// earlier candidates keep their capacity), for callers that read many texts.
COVENANT_API void extract_into(std::string_view text, const lenient_options& options, extraction& out);

/// Constant-time check: false only when `text` is certainly not a JSON text (its first and last
/// non-whitespace characters cannot start and end one). True for every valid JSON text, so a
/// caller can try the strict decoder first and come here only on a parse error.
COVENANT_API bool looks_like_strict_json(std::string_view text) noexcept;

}  // namespace covenant
