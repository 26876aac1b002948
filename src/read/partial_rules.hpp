// The rules of partial (streaming) reads that do not depend on how the text was read: what a
// streaming reader shows of a value still being written (the schema's stream attributes), and
// which issues only the rest of the stream can settle. Private to the library.
#pragma once

#include <boost/json/value.hpp>

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

/// Whether the model has streaming attributes anywhere: else keep_streamed leaves out of a value
/// only unfinished strings of closed choices.
bool has_stream_attributes(const schema::model& m);

}  // namespace covenant::detail
