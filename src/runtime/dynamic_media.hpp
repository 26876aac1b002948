// Media fields of a runtime schema's input (covenant/types/media.hpp): an input record names each
// media by a string (an http(s) URL, a data URL, a file path, or a reference "<image 1>" in a
// repaired input); the contract sends the media and shows the model the record with references.
#pragma once

#include <boost/json/value.hpp>

#include <string_view>
#include <vector>

#include "covenant/types/issues.hpp"
#include "covenant/types/media.hpp"
#include "covenant/types/schema.hpp"

namespace covenant::detail {

/// Whether any type of `m` is a media field.
bool has_media(const schema::model& m) noexcept;

/// A record with its media read.
struct media_input {
  boost::json::value shown;   ///< the record with each media field replaced by its reference
  std::vector<media> parts;   ///< the media, in the order of their references
  issue_list issues;          ///< media that cannot be read or sent, at their paths
};

/// Reads the media fields of `input` (valid against `m`): relative file paths from `root`
/// (the current directory when empty), references from `originals` (null: a reference is an
/// issue, and paths are read: the caller's input; else paths are not read: a repaired input the
/// model wrote names media by URL or reference only), each checked with check_media() against
/// `limits` (null: only what holds everywhere). `refused` in the result: a media cannot be sent.
media_input read_media_fields(const boost::json::value& input, const schema::model& m, std::string_view root,
                              const std::vector<media>* originals, const media_limits* limits);

}  // namespace covenant::detail
