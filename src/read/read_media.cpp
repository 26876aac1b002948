// Media fields of the typed path (covenant/types/media.hpp): reading one from its text, and the
// check of one in an input, which the runtime-schema path calls too.
#include "covenant/read/decode.hpp"
#include "covenant/read/validate.hpp"

namespace covenant::detail {

void read_media(json_reader& r, media& out, media_kind kind, const schema::type& node, decode_context& ctx,
                const path_frame* at) {
  std::string text;
  const std::size_t before = ctx.issues.size();
  read_text(r, text, node, ctx, at, false);
  if (r.failed() || ctx.issues.size() != before) return;
  out = media::parse(kind, text, {}, false);
  if (!out.error().empty()) {
    const string_preview preview(text);
    ctx.add(at, issue_code::type_mismatch, std::string(to_string(kind)), std::string(preview.view()), out.error());
  }
}

void check_media_value(const media& m, decode_context& ctx, const path_frame* at) {
  media_tally none;
  media_tally& tally = ctx.media != nullptr ? *ctx.media : none;
  std::string why = check_media(m, tally);
  if (why.empty()) return;
  tally.refused = true;
  std::string actual = m.empty()            ? std::string("nothing")
                       : m.reference() != 0 ? media_reference(m.kind(), m.reference())
                       : m.is_url()         ? m.url()
                       : !m.path().empty()  ? m.path()
                                            : std::string(m.media_type().empty() ? "bytes" : m.media_type()) + ", " +
                                                 std::to_string(m.size()) + " bytes";
  ctx.add(at, issue_code::constraint_violation, std::string(to_string(m.kind())), std::move(actual), std::move(why));
}

}  // namespace covenant::detail
