// Media fields of runtime-schema inputs: dynamic_media.hpp.
#include "dynamic_media.hpp"

#include "covenant/read/detail/decode_context.hpp"
#include "covenant/read/decode.hpp"
#include "covenant/read/validate.hpp"

namespace covenant::detail {

namespace {

namespace json = boost::json;

bool type_has_media(const schema::type& t) noexcept {
  if (schema::media_kind_of(t)) return true;
  for (const schema::type& a : t.args)
    if (type_has_media(a)) return true;
  return false;
}

struct walker {
  const schema::model& m;
  decode_context& ctx;
  std::string_view root;
  const std::vector<media>* originals;
  std::vector<media>& parts;
  media_numbering numbering{};

  // The alternative of a union a value of this JSON type is read as (the first that fits). Beside
  // a plain string alternative, a string is a media only when it is a URL, a data URL or a
  // reference ("hello" in a `string | image` is text, not a file name).
  const schema::type* alternative(const json::value& v, const schema::type& u) const {
    if (v.is_string()) {
      const std::string_view s(v.get_string().data(), v.get_string().size());
      bool named = s.starts_with("https://") || s.starts_with("http://") ||
                   (s.starts_with("data:") && s.find(";base64,") != std::string_view::npos);
      for (const media_kind k : {media_kind::image, media_kind::pdf, media_kind::audio})
        named = named || media::parse(k, s, {}, false).reference() != 0;
      bool plain = false;
      for (const schema::type& a : u.args)
        if (const schema::type* t = m.unalias(a); t != nullptr && t->kind == schema::kind::string && !schema::media_kind_of(*t))
          plain = true;
      if (plain && !named) return nullptr;
    }
    for (const schema::type& a : u.args) {
      const schema::type* t = m.unalias(a);
      if (t == nullptr) continue;
      if (v.is_string() && schema::media_kind_of(*t)) return t;
    }
    for (const schema::type& a : u.args) {
      const schema::type* t = m.unalias(a);
      if (t == nullptr) continue;
      if ((v.is_array() && t->kind == schema::kind::array) ||
          (v.is_object() && (t->kind == schema::kind::map || (t->kind == schema::kind::ref && m.resolve(*t) != nullptr &&
                                                              m.resolve(*t)->object() != nullptr))))
        return t;
    }
    return nullptr;
  }

  void one(json::value& v, media_kind kind, const path_frame* at) {
    media x = media::parse(kind, v.get_string(), root, originals == nullptr);
    if (x.path().empty() && !x.error().empty()) {  // refused as text, before any file was read
      const string_preview preview(std::string_view(v.get_string().data(), v.get_string().size()));
      ctx.add(at, issue_code::constraint_violation, std::string(to_string(kind)), std::string(preview.view()), x.error());
      return;
    }
    const std::size_t before = ctx.issues.size();
    check_media_value(x, ctx, at);  // a reference: whether it names one of the input's media
    if (ctx.issues.size() != before) return;
    if (x.reference() != 0) x = *x.resolve(*originals);
    parts.push_back(std::move(x));
    v = json::string(media_reference(kind, numbering.next(kind)));
  }

  void walk(json::value& v, const schema::type& declared, const path_frame* at, int depth) {
    if (v.is_null() || depth > 64) return;
    const schema::type* t = m.unalias(declared);
    if (t == nullptr) return;
    if (t->kind == schema::kind::union_) {
      t = alternative(v, *t);
      if (t == nullptr) return;
    }
    if (const std::optional<media_kind> k = schema::media_kind_of(*t)) {
      if (v.is_string()) one(v, *k, at);
      return;
    }
    switch (t->kind) {
      case schema::kind::array:
        if (v.is_array()) {
          json::array& a = v.get_array();
          for (std::size_t i = 0; i < a.size(); ++i) {
            path_frame f{at, {}, i, true};
            walk(a[i], t->args[0], &f, depth + 1);
          }
        }
        break;
      case schema::kind::map:
        if (v.is_object())
          for (auto& kv : v.get_object()) {
            path_frame f{at, std::string_view(kv.key().data(), kv.key().size()), 0, false};
            walk(kv.value(), t->args[1], &f, depth + 1);
          }
        break;
      case schema::kind::ref: {
        const schema::definition* d = m.resolve(*t);
        const schema::object_def* o = d != nullptr ? d->object() : nullptr;
        if (o == nullptr || !v.is_object()) break;
        for (const schema::field& f : o->fields) {
          json::value* member = v.get_object().if_contains(f.key);
          if (member == nullptr) continue;
          path_frame frame{at, f.key, 0, false};
          walk(*member, f.type, &frame, depth + 1);
        }
        break;
      }
      default: break;
    }
  }
};

}  // namespace

bool has_media(const schema::model& m) noexcept {
  if (type_has_media(m.root)) return true;
  for (const schema::definition& d : m.defs) {
    if (const schema::object_def* o = d.object())
      for (const schema::field& f : o->fields)
        if (type_has_media(f.type)) return true;
    if (const schema::alias_def* a = d.alias())
      if (type_has_media(a->target)) return true;
  }
  return false;
}

media_input read_media_fields(const boost::json::value& input, const schema::model& m, std::string_view root,
                              const std::vector<media>* originals, const media_limits* limits) {
  media_input out;
  out.shown = input;
  const decode_options options;
  media_tally tally{limits, originals};
  decode_context ctx{m, options, out.issues};
  ctx.media = &tally;
  walker w{m, ctx, root, originals, out.parts};
  w.walk(out.shown, m.root, nullptr, 0);
  return out;
}

}  // namespace covenant::detail
