// The dynamic decoder's reading of one value at a node of a runtime schema, for the readers that
// judge a part of a text on its own (the stream reader's finished scalars). Private to the library.
#pragma once

#include <boost/json/value.hpp>

#include "covenant/read/detail/decode_context.hpp"
#include "covenant/read/detail/json_reader.hpp"
#include "covenant/read/dynamic.hpp"
#include "covenant/types/schema.hpp"

namespace covenant::detail {

/// Reads the value at the reader as `t` (of ctx.s) the way decode_dynamic reads a whole text, its
/// issues and notes at the path `at`; null when it could not be read.
boost::json::value read_dynamic_value(json_reader& r, const schema::type& t, decode_context& ctx, const path_frame* at,
                                      output_keys keys = output_keys::json);

}  // namespace covenant::detail
