// The rules of partial (streaming) reads that do not depend on how the text was read: what a
// streaming reader shows of a value still being written (the schema's stream attributes), and
// which issues only the rest of the stream can settle. Private to the library.
#pragma once

#include <boost/json/value.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "covenant/types/issues.hpp"
#include "covenant/types/schema.hpp"

namespace covenant::detail {

/// Partial mode: applies the schema's streaming attributes (@stream.done, @stream.not_null,
/// @@stream.done) and the rule that an enum value or a string literal is read only from a finished
/// string to `v`, the value of the model's root, given the paths of the unfinished values
/// (`incomplete` notes). Values left out are noted in `notes`; false when `v` itself is to be left
/// out.
bool keep_streamed(boost::json::value& v, const schema::model& m, std::vector<path> unfinished, note_list& notes);

/// A value keep_streamed leaves out of a value still being written, moved out of it for as long as
/// a partial view shows it: `container` (a JSON object or array) gets it back, at its end (where it
/// was: a value still being written is the last of its container).
struct held_value {
  boost::json::value* container;
  std::string key;  // (an object's member)
  boost::json::value value;
};
enum class hold_back : std::uint8_t {
  done,    ///< what is left out is in `held`
  root,    ///< the whole value is left out (and what was held inside it put back)
  cannot,  ///< a value to leave out is not the last of its container: nothing held, `v` unchanged
};
/// keep_streamed's rule applied in place to the value a stream is writing, in the time of the
/// unfinished values' depth rather than of the whole value: only the values on the `unfinished`
/// paths can be left out (a finished value never is), so only they are visited, and each value
/// left out is moved into `held` (put_back_from restores them).
hold_back hold_back_streamed(boost::json::value& v, const schema::model& m, std::vector<path> unfinished,
                             std::vector<held_value>& held);
/// Puts the values held from position `from` on back into their containers, the last first.
void put_back_from(std::vector<held_value>& held, std::size_t from);
/// The paths of the values a partial reading left unfinished: those of its `incomplete` notes.
std::vector<path> unfinished_paths(const note_list& notes);

/// Partial mode: takes out of `issues` those only the rest of the stream can settle, given the
/// unfinished values of `notes` (a required field missing from an unfinished object, a constraint
/// or rule failed by an unfinished value), each noted in `notes` as `incomplete` with what it
/// waits for.
void set_aside_pending(issue_list& issues, note_list& notes);

/// Whether the model has streaming attributes anywhere: else keep_streamed leaves out of a value
/// only unfinished strings of closed choices.
bool has_stream_attributes(const schema::model& m);

}  // namespace covenant::detail
