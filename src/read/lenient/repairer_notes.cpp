// The repairing reader's notes: the path of the current position (rebuilt only past the segments
// a reused note slot already has) and the note written there.
#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "repairer_state.hpp"

namespace covenant::lenient_impl {

// The path of the current position, written into p: the leading segments p already has
// (a note slot reused from an earlier text) are kept, the rest popped and rebuilt.
void repairer::impl::build_path(path& p) {
  const std::vector<path_segment>& segs = p.segments();
  const std::size_t n = frames_.size();
  const std::size_t lim = std::min(n, segs.size());
  std::size_t m = 0;
  for (; m < lim; ++m) {
    const frame& f = frames_[m];
    const path_segment& g = segs[m];
    if (f.is_index) {
      if (!g.is_index || g.index != f.index || !g.key.empty()) break;
      continue;
    }
    if (g.is_index || g.index != 0) break;
    if (f.plain) {
      const std::size_t len = f.key_end - f.key_begin;
      if (g.key.size() != len || !same_bytes(g.key.data(), ob_.data() + f.key_begin, len)) break;
    } else if (std::string_view(g.key) != frame_key(f)) {
      break;
    }
  }
  while (p.size() > m) p.pop();
  for (; m < n; ++m) {
    const frame& f = frames_[m];
    if (f.is_index) p.index(f.index);
    else p.key(frame_key(f));
  }
}

// The key of a frame, unescaped (in key_text_ when it had escapes).
std::string_view repairer::impl::frame_key(const frame& f) {
  std::string_view k(ob_.data() + f.key_begin, f.key_end - f.key_begin);
  if (f.plain || k.find('\\') == std::string_view::npos) return k;
  key_text_.clear();
  detail::unescape_json_string(k, key_text_);
  return key_text_;
}

note* repairer::impl::add(note_kind kind, std::string_view detail) {
  note* n = nw_->next(kind);
  if (n == nullptr) return nullptr;
  build_path(n->path);
  if (n->detail.size() != detail.size() || !same_bytes(n->detail.data(), detail.data(), detail.size()))
    n->detail.assign(detail.data(), detail.size());
  return n;
}

}  // namespace covenant::lenient_impl
