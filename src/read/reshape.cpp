// Coerce mode: values read through another shape than the one written (a value wrapped in a
// one-item list or a one-member object, a value for an object's only field). One implementation
// for both decoders: they hand in their target as a reshape_target.
#include <string>
#include <string_view>
#include <utility>

#include "covenant/read/detail/coerce.hpp"
#include "covenant/types/encode.hpp"

namespace covenant::detail {

namespace {

using schema::kind;

std::string_view span_from(const json_reader& r, const char* start) {
  return {start, static_cast<std::size_t>(r.position() - start)};
}

// The one field of an object definition that is not skipped, or nullptr when there are more or none.
const schema::field* only_field(const schema::object_def& def) {
  const schema::field* only = nullptr;
  for (const auto& f : def.fields) {
    if (f.skip) continue;
    if (only != nullptr) return nullptr;
    only = &f;
  }
  return only;
}

// Whether `t` names an object definition, or is a union whose alternatives all do.
bool object_like(const schema::model& m, const schema::type& t) {
  const schema::type* u = m.unalias(t);
  if (u == nullptr) return false;
  if (u->kind == kind::ref) return m.object_of(*u) != nullptr;
  if (u->kind != kind::union_ || u->args.empty()) return false;
  for (const auto& a : u->args)
    if (!object_like(m, a)) return false;
  return true;
}

void keep_notes(decode_context& ctx, note_list& notes) {
  if (ctx.notes != nullptr)
    for (auto& n : notes) ctx.notes->push_back(std::move(n));
}

// The value at the reader read as the object's only field `only` (field `j`), the target made
// that object (noted with `how`, the object's checks run). False, the reader back at the value,
// when it does not read as that field without issues.
bool read_in_field(json_reader& r, const reshape_target& t, const schema::type& node, const schema::object_def& def,
                   std::size_t j, std::string_view how, decode_context& ctx, const path_frame* at) {
  const char* start = r.position();
  issue_list local;
  note_list local_notes;
  decode_context sub{ctx.s, ctx.opts, local, &local_notes};
  const schema::field& only = def.fields[j];
  path_frame f{at, only.key, 0, false};
  t.read_field(t.self, r, def, j, sub, &f);
  if (r.failed()) return false;
  if (!local.empty()) {
    r.rewind(start);
    return false;
  }
  ctx.note(at, note_kind::coerced, std::string(how) + only.key);
  keep_notes(ctx, local_notes);
  t.checks(t.self, node, def, span_from(r, start), ctx, at);
  return true;
}

}  // namespace

bool look_at_keys(json_reader& r, const schema::object_def& def, object_keys& out) {
  out = {};
  if (r.peek() != '{') return false;
  const char* start = r.position();
  if (!r.begin_object()) return false;
  std::string scratch;
  std::string_view key;
  bool first = true;
  while (r.next_key(first, key, scratch)) {  // to the end: the reader's depth is restored
    first = false;
    ++out.count;
    if (!out.names_field) {
      for (const auto& f : def.fields) out.names_field = out.names_field || (!f.skip && f.key == key);
      out.names_field = out.names_field || match_field_key(def, key) != no_match;
    }
    std::string_view ignored;
    if (!r.skip_value(ignored)) return false;
  }
  if (r.failed()) return false;
  r.rewind(start);
  return true;
}

wrapped_target wrapped_kind(const schema::model& s, const schema::type& t) noexcept {
  switch (t.kind) {
    case kind::boolean:
    case kind::integer:
    case kind::number: return wrapped_target::single_value;
    case kind::literal:
      return t.literal.is_object() || t.literal.is_array() ? wrapped_target::none : wrapped_target::single_value;
    case kind::ref: {
      const schema::definition* d = s.resolve(t);
      if (d == nullptr) return wrapped_target::none;
      if (d->enumeration() != nullptr) return wrapped_target::single_value;
      if (d->object() != nullptr) return wrapped_target::object;
      return wrapped_target::none;
    }
    default: return wrapped_target::none;
  }
}

bool read_unwrapped(json_reader& r, const reshape_target& t, const schema::type& node, decode_context& ctx,
                    const path_frame* at) {
  const char c = r.peek();
  const wrapped_target w = wrapped_kind(ctx.s, node);
  if (w == wrapped_target::none || (w == wrapped_target::object && c != '[')) return false;
  const char* start = r.position();
  const bool list = c == '[';
  if (!(list ? r.begin_array() : r.begin_object())) return false;
  std::string scratch;
  std::string_view key;
  std::string member;
  if (!(list ? r.next_element(true) : r.next_key(true, key, scratch))) {  // empty
    if (!r.failed()) r.rewind(start);
    return false;
  }
  // One level: [[1]] and {"a": {"b": 1}} are not 1, [[{..}]] is no object.
  const char inner = r.peek();
  if (inner == '[' || (inner == '{' && w == wrapped_target::single_value)) {
    std::string_view ignored;
    do {
      if (!r.skip_value(ignored)) return false;
    } while (list ? r.next_element(false) : r.next_key(false, key, scratch));
    if (!r.failed()) r.rewind(start);
    return false;
  }
  if (!list) member = std::string(key);
  issue_list local;
  note_list local_notes;
  decode_context sub{ctx.s, ctx.opts, local, &local_notes};
  t.read(t.self, r, node, sub, at);
  if (r.failed()) return false;
  const bool single = !(list ? r.next_element(false) : r.next_key(false, key, scratch));
  if (!single) {
    std::string_view ignored;
    do {
      if (!r.skip_value(ignored)) return false;
    } while (list ? r.next_element(false) : r.next_key(false, key, scratch));
  }
  if (r.failed()) return false;
  if (!single || !local.empty()) {
    r.rewind(start);
    return false;
  }
  std::string detail;
  if (list) {
    detail = item_of_list_note;
  } else {
    detail = only_member_note;
    append_json_string(detail, member);
    detail += only_member_note_end;
  }
  ctx.note(at, note_kind::coerced, std::move(detail));
  keep_notes(ctx, local_notes);
  return true;
}

bool read_as_only_field(json_reader& r, const reshape_target& t, const schema::type& node,
                        const schema::object_def& def, decode_context& ctx, const path_frame* at) {
  const schema::field* only = only_field(def);
  if (only == nullptr) return false;
  const auto j = static_cast<std::size_t>(only - def.fields.data());
  const char c = r.peek();
  if (c != '{') {
    if (c != '-' && c != 't' && c != 'f' && (c < '0' || c > '9')) return false;  // numbers, booleans
    const schema::type* ft = ctx.s.unalias(only->type);
    if (ft == nullptr || (ft->kind != kind::integer && ft->kind != kind::number && ft->kind != kind::boolean &&
                          ft->kind != kind::literal && ft->kind != kind::union_))
      return false;
    return read_in_field(r, t, node, def, j, only_field_note, ctx, at);
  }
  if (!object_like(ctx.s, only->type)) return false;
  // Does a key of the object name the field? Then it is read as the class itself.
  object_keys keys;
  if (!look_at_keys(r, def, keys) || keys.names_field) return false;
  return read_in_field(r, t, node, def, j, "an object read as the value of the only field ", ctx, at);
}

}  // namespace covenant::detail
