// Reading a model's reply against a runtime schema the way contracts do (read_dynamic).
#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "covenant/read/detail/read_reply.hpp"
#include "covenant/read/dynamic.hpp"
#include "covenant/types/encode.hpp"
#include "covenant/types/schema.hpp"
#include "partial_rules.hpp"

namespace covenant {

read_result try_read_dynamic(std::string_view text, const schema::model& m, const read_options& options) {
  lenient_options reading;
  reading.level = options.level;
  reading.partial = options.partial;
  reading.max_depth = options.decode.max_depth;
  note_list notes;
  std::chrono::nanoseconds parse_time{0};
  std::chrono::nanoseconds validate_time{0};
  const output_keys keys = options.keys;
  decoded<boost::json::value> r = detail::read_reply_with<boost::json::value>(
      text, options.decode, reading, notes, parse_time, validate_time, {},
      [&](std::string_view t, const decode_options& o) {
        dynamic_result d = try_decode_dynamic(t, m, o, keys);
        decoded<boost::json::value> out;
        out.issues = std::move(d.issues);
        out.notes = std::move(d.notes);
        out.value.emplace(std::move(d.value));  // kept with issues too: partial mode may accept it
        return out;
      });

  read_result result;
  result.notes = std::move(notes);
  result.truncated = std::any_of(result.notes.begin(), result.notes.end(), [](const note& n) {
    return n.kind == note_kind::truncated || n.kind == note_kind::incomplete;
  });
  const bool unfinished = options.partial && result.truncated;
  if (unfinished) detail::set_aside_pending(r.issues, result.notes);
  result.issues = std::move(r.issues);
  if (!result.issues.empty() || !r.value) return result;
  result.value = std::move(*r.value);
  if (unfinished && !detail::keep_streamed(result.value, m, detail::unfinished_paths(result.notes), result.notes)) {
    result.value = nullptr;
    if ((m.root.stream & schema::stream_flag::not_null) != 0) {
      issue i;
      i.code = issue_code::missing_field;
      i.expected = schema::type_expression(m.root);
      i.message = "no finished value yet (@stream.not_null)";
      result.issues.push_back(std::move(i));
    }
  }
  return result;
}

boost::json::value read_dynamic(std::string_view text, const schema::model& m, const read_options& options) {
  read_result r = try_read_dynamic(text, m, options);
  if (!r.ok()) throw decode_error(std::move(r.issues));
  return std::move(r.value);
}

}  // namespace covenant
