// Final mode: the last item of a list, cut off by the end of the reply, dropped when it does not
// read without issues (the way the lenient reader drops an unfinished string or number).
#include <string>
#include <string_view>
#include <vector>

#include "covenant/read/detail/json_reader.hpp"
#include "covenant/read/detail/read_reply.hpp"
#include "covenant/types/issues.hpp"

namespace covenant::detail {

namespace {

bool starts_with(const path& p, const path& prefix) {
  if (prefix.size() > p.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (!(p.segments()[i] == prefix.segments()[i])) return false;
  return true;
}

// The byte range of the value at `at` in the strict JSON text `json`, with the comma before it
// when it is not the first item of its list. False when the text has no value there.
bool locate(std::string_view json, const path& at, std::size_t& begin, std::size_t& end) {
  json_reader r(json, 1000);
  std::string scratch;
  std::string_view key;
  std::string_view ignored;
  for (const path_segment& s : at) {
    const char c = r.peek();
    if (s.is_index) {
      if (c != '[' || !r.begin_array()) return false;
      std::size_t i = 0;
      bool found = false;
      for (bool first = true; r.next_element(first); first = false, ++i) {
        if (i == s.index) {
          found = true;
          break;
        }
        if (!r.skip_value(ignored)) return false;
      }
      if (!found) return false;
    } else {
      if (c != '{' || !r.begin_object()) return false;
      bool found = false;
      for (bool first = true; r.next_key(first, key, scratch); first = false) {
        if (key == s.key) {
          found = true;
          break;
        }
        if (!r.skip_value(ignored)) return false;
      }
      if (!found) return false;
    }
  }
  r.peek();
  const char* b = r.position();
  if (!r.skip_value(ignored)) return false;
  begin = static_cast<std::size_t>(b - json.data());
  end = static_cast<std::size_t>(r.position() - json.data());
  if (begin > 0 && json[begin - 1] == ',') --begin;
  return true;
}

}  // namespace

bool drop_unfinished_item(std::string_view json, const note_list& candidate_notes, const issue_list& issues,
                          std::string& out, note& dropped) {
  // Every truncated note is at the end of the text (a value dropped there, the brackets closed
  // there), so the deepest one's path runs through every item left unfinished.
  const note* deepest = nullptr;
  for (const note& n : candidate_notes)
    if (n.kind == note_kind::truncated && (deepest == nullptr || n.path.size() > deepest->path.size())) deepest = &n;
  if (deepest == nullptr) return false;
  // The list items on that path, innermost first: the first one holding an issue goes.
  const std::vector<path_segment>& segs = deepest->path.segments();
  for (std::size_t n = segs.size(); n > 0; --n) {
    if (!segs[n - 1].is_index) continue;
    const path item(std::vector<path_segment>(segs.begin(), segs.begin() + static_cast<std::ptrdiff_t>(n)));
    const issue* inside = nullptr;
    for (const issue& i : issues) {
      if (starts_with(i.path, item)) {
        inside = &i;
        break;
      }
    }
    if (inside == nullptr) continue;
    std::size_t b = 0;
    std::size_t e = 0;
    if (!locate(json, item, b, e)) continue;
    out.assign(json.data(), b);
    out.append(json.data() + e, json.size() - e);
    dropped = note{};
    dropped.kind = note_kind::truncated;
    dropped.path = item;
    dropped.detail = "dropped the unfinished last item, which does not read: " + inside->to_string();
    return true;
  }
  return false;
}

}  // namespace covenant::detail
