// Partial results of streamed replies: the state tree, and the incremental reader (a resumable
// JSON tokenizer writing into C++ values through value_ops tables, or into JSON values).
#include "covenant/read/detail/stream_reader.hpp"

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <new>
#include <stdexcept>
#include <unordered_map>

#include "covenant/read/dynamic.hpp"
#include "dynamic_value.hpp"
#include "partial_rules.hpp"
#include "push_tokenizer.hpp"
#include "read/json_ops.hpp"

namespace covenant {

namespace json = boost::json;

// ---------------------------------------------------------------------------------------------
// value_state, partial_states, partial_json

std::string_view to_string(value_state s) noexcept {
  switch (s) {
    case value_state::absent: return "absent";
    case value_state::streaming: return "streaming";
    case value_state::complete: return "complete";
  }
  return "absent";
}

partial_states::partial_states() { clear(); }

void partial_states::clear() {
  nodes_.clear();
  nodes_.emplace_back();  // the root
}

std::uint32_t partial_states::add_member(std::uint32_t parent, std::string_view key) {
  node n;
  n.key.assign(key);
  return add(parent, std::move(n));
}

std::uint32_t partial_states::add_item(std::uint32_t parent) {
  node n;
  n.is_index = true;
  n.index = nodes_[parent].count;
  return add(parent, std::move(n));
}

std::uint32_t partial_states::add(std::uint32_t parent, node n) {
  n.state = value_state::streaming;
  const auto id = static_cast<std::uint32_t>(nodes_.size());
  nodes_.push_back(std::move(n));
  node& p = nodes_[parent];
  if (p.last == none) p.first = id;
  else nodes_[p.last].next = id;
  p.last = id;
  ++p.count;
  return id;
}

void partial_states::complete_all() noexcept {
  for (node& n : nodes_)
    if (n.state == value_state::streaming) n.state = value_state::complete;
}

std::uint32_t partial_states::find(const covenant::path& p) const {
  std::uint32_t at = root;
  if (nodes_[root].state == value_state::absent) return p.empty() ? root : none;
  for (const path_segment& seg : p) {
    std::uint32_t found = none;
    for (std::uint32_t c = nodes_[at].first; c != none; c = nodes_[c].next) {
      const node& n = nodes_[c];
      if (seg.is_index ? (n.is_index && n.index == seg.index) : (!n.is_index && n.key == seg.key)) found = c;
    }
    if (found == none) return none;
    at = found;
  }
  return at;
}

const partial_states::node* partial_states::find_text(std::string_view path) const {
  covenant::path p;
  try {
    p = covenant::path::parse(path);
  } catch (const std::exception&) {
    return nullptr;
  }
  const std::uint32_t id = find(p);
  return id == none ? nullptr : &nodes_[id];
}

value_state partial_states::state(std::string_view path) const {
  const node* n = find_text(path);
  return n == nullptr ? value_state::absent : n->state;
}

value_state partial_states::state(const covenant::path& p) const {
  const std::uint32_t id = find(p);
  return id == none ? value_state::absent : nodes_[id].state;
}

std::size_t partial_states::items(std::string_view path) const {
  const node* n = find_text(path);
  if (n == nullptr || n->first == none || !nodes_[n->first].is_index) return 0;
  return n->count;
}

std::size_t partial_states::complete_items(std::string_view path) const {
  const node* n = find_text(path);
  if (n == nullptr) return 0;
  std::size_t done = 0;
  for (std::uint32_t c = n->first; c != none; c = nodes_[c].next)
    if (nodes_[c].is_index && nodes_[c].state == value_state::complete) ++done;
  return done;
}

partial_json::partial_json() = default;
partial_json::~partial_json() = default;

namespace detail {

std::string_view object_field_key(const schema::model& m, std::size_t i) {
  const schema::definition* d = m.resolve(m.root);
  if (d == nullptr || d->object() == nullptr || i >= d->object()->fields.size()) return {};
  return d->object()->fields[i].key;
}

// ---------------------------------------------------------------------------------------------
// The incremental reader

namespace {

constexpr std::uint32_t no_node = partial_states::none;

/// Where the next value goes: a C++ value and its table, or a JSON value (json_ops(): the
/// dynamic target, and the JSON an opaque C++ value is built as). A member or an item of a JSON
/// value is made when its value is shown (place()): `target` is null until then, and `parent`
/// and `key` (or `item`) say where it goes.
struct slot {
  const value_ops* ops = nullptr;
  void* target = nullptr;
  void* parent = nullptr;
  std::string key;
  bool item = false;
  const schema::type* node = nullptr;
  std::uint32_t state = no_node;
  bool skip = false;               // read but not shown (an unknown key)
};

enum class frame_kind : std::uint8_t { object, array, skip };

struct frame {
  frame_kind kind = frame_kind::skip;
  slot at;                                 // the container itself
  const schema::object_def* def = nullptr;  // objects with a schema
  std::string key;                         // the key being read
  int field = -1;                          // the field of the next value (-1: unknown)
  std::vector<bool> seen;                  // the fields given so far (a key given again: the last wins)
  bool any_key = false;                    // maps / any: every key is kept (JSON)
  std::size_t count = 0;                   // list elements so far
  // An opaque typed value (variant, map, ...) is built as JSON here and assigned at its end.
  std::unique_ptr<json::value> scratch;
  const value_ops* opaque_ops = nullptr;
  void* opaque_target = nullptr;
};

}  // namespace

struct stream_core::impl {
  impl(const schema::model& m, const decode_options& o, strictness lvl, const value_ops* ops, void* root)
      : model(m), options(o), level(lvl), root_ops(ops), root_target(root), tokens(*this, std::min<std::size_t>(o.max_depth, 1000)) {
    options.coerce = level == strictness::coerce;
  }

  // --- schema helpers ---------------------------------------------------------------------

  /// The type after following aliases (null when unknown).
  [[nodiscard]] const schema::type* resolve(const schema::type* t) const {
    return t == nullptr ? nullptr : model.unalias(*t);
  }
  /// Whether the value at `t` is marked @stream.done (schema files): itself, or its class.
  [[nodiscard]] bool stream_done(const schema::type* t) const {
    if (t == nullptr) return false;
    const schema::object_def* o = model.object_of(*t);
    return ((t->stream | (o != nullptr ? o->stream : 0)) & schema::stream_flag::done) != 0;
  }

  /// Whether a finished scalar of kind `k` is shown in a JSON slot whose schema type is `t`: when
  /// `t` takes that kind as written (a value of another kind is the final reader's to coerce or
  /// refuse, as a C++ slot of another kind does not take it either).
  [[nodiscard]] bool takes(const schema::type* t, json::kind k) const {
    if (t == nullptr) return true;
    const bool number = k == json::kind::int64 || k == json::kind::uint64 || k == json::kind::double_;
    switch (t->kind) {
      case schema::kind::any: return true;
      case schema::kind::null: return k == json::kind::null;
      case schema::kind::boolean: return k == json::kind::bool_;
      case schema::kind::integer: return k == json::kind::int64 || k == json::kind::uint64;
      case schema::kind::number: return number;
      case schema::kind::string: return k == json::kind::string;
      case schema::kind::literal: return t->literal.kind() == k || (number && t->literal.is_number());
      case schema::kind::union_:
        return std::any_of(t->args.begin(), t->args.end(), [&](const schema::type& a) { return takes(resolve(&a), k); });
      case schema::kind::ref: {
        const schema::definition* d = model.resolve(*t);
        return d != nullptr && d->enumeration() != nullptr && k == json::kind::string;
      }
      default: return false;
    }
  }

  /// Whether the stream stops on a failure of `c`: only a check whose failure is fed back or ends
  /// the call (reask, refrain, exception), not one that is fixed, dropped or noted.
  static bool judged(const schema::constraint& c) noexcept {
    return c.on_fail != fail_action::noop && c.on_fail != fail_action::fix && c.on_fail != fail_action::filter;
  }

  /// Whether a check of a value (marked @stream.done: `done`) has its verdict once the value is
  /// finished, whatever text follows: keyword bounds, patterns, formats and choices; a rule on the
  /// JSON value of a @stream.done value (schema files' @assert). C++ predicates: see judged_type.
  static bool final_check(const schema::constraint& c, bool done) {
    if (!judged(c)) return false;
    switch (c.kind) {
      case schema::constraint_kind::minimum:
      case schema::constraint_kind::maximum:
      case schema::constraint_kind::exclusive_minimum:
      case schema::constraint_kind::exclusive_maximum:
      case schema::constraint_kind::multiple_of:
      case schema::constraint_kind::min_length:
      case schema::constraint_kind::max_length:
      case schema::constraint_kind::pattern:
      case schema::constraint_kind::format:
      case schema::constraint_kind::one_of: return true;
      case schema::constraint_kind::predicate: return done && c.custom && c.custom->has_json();
      default: return false;
    }
  }

  /// A type as the stream judges its values. A finished scalar: `type` keeps only its
  /// final_check()s; `native` holds the C++ predicates marked streaming_safe() (run on the typed
  /// value); `choice`: a closed choice or a literal, read alone whatever its checks. A growing
  /// string or list: `growing` holds only the maxima (of a length or a count), already broken
  /// while the value grows.
  struct judged_type {
    schema::type type;
    std::vector<schema::constraint> native;
    bool choice = false;
    std::vector<schema::constraint> growing;
  };

  void keep_final(schema::type& t) const {
    const bool done = stream_done(&t);
    std::erase_if(t.constraints, [&](const schema::constraint& c) { return !final_check(c, done); });
    for (schema::type& a : t.args) keep_final(a);
  }

  const judged_type& judged_of(const schema::type* t) {
    static const judged_type none;
    if (t == nullptr) return none;
    auto it = judged_cache.find(t);
    if (it != judged_cache.end()) return it->second;
    judged_type j;
    j.type = *t;
    keep_final(j.type);
    for (const schema::constraint& c : t->constraints) {
      if (!judged(c)) continue;
      if (c.kind == schema::constraint_kind::predicate && c.streaming_safe && c.custom && c.custom->has_native())
        j.native.push_back(c);
      if (c.kind == schema::constraint_kind::max_length || c.kind == schema::constraint_kind::max_items)
        j.growing.push_back(c);
    }
    j.choice = t->kind == schema::kind::literal || detail::choice_set(model, *t).has_value();
    return judged_cache.emplace(t, std::move(j)).first->second;
  }

  /// The typed value a finished scalar was stored into, for a C++ predicate: the slot's target
  /// when it is a string or number of the output type, else none (a JSON value, another shape).
  static const void* native_of(const slot& s, value_kind kind) noexcept {
    if (s.ops->kind != kind) return nullptr;
    if (kind != value_kind::string && kind != value_kind::integer && kind != value_kind::floating) return nullptr;
    return s.target;
  }

  // --- the path of the current value (for issues) -----------------------------------------

  covenant::path path;  // one step per open container's current member

  /// Runs `check(ctx, at)` with the current value's path; its issues become violations.
  template <class F>
  void with_path(F&& check) {
    if (!violations.empty()) return;  // the first violation is what stops the stream
    std::vector<path_frame> frames(path.size());
    const path_frame* at = nullptr;
    for (std::size_t i = 0; i < path.size(); ++i) {
      const path_segment& step = path.segments()[i];
      frames[i] = path_frame{at, step.key, step.index, step.is_index};
      at = &frames[i];
    }
    issue_list found;
    decode_context ctx{model, options, found, nullptr};
    check(ctx, at);
    if (found.empty()) return;
    for (issue& i : found) violations.push_back(std::move(i));
    // Where the stop was decided: the byte that finished the value, or within a string's run the
    // character that took it past its maximum (decided_in).
    decided = piece_at + tokens.offset_after(decided_in);
  }

  /// Judges a finished scalar (`json_text`; `native`: its typed value or null): read alone by the
  /// final reader, with its coercions at the stream's level, against judged_of() its type; then
  /// the C++ predicates on the typed value. What does not fit now will not fit in the final
  /// reading either.
  void judge(const judged_type& j, std::string_view json_text, const void* native) {
    with_path([&](decode_context& ctx, const path_frame* at) {
      json_reader r(json_text, options.max_depth);
      const std::size_t before = ctx.issues.size();
      read_dynamic_value(r, j.type, ctx, at);
      if (!r.finish()) ctx.issues.resize(before);  // a text it could not parse is not judged here
      if (native != nullptr && !j.native.empty()) check_native(j.native, json_text, native, ctx, at);
    });
  }

  /// The least maximum of kind `kind` among `growing` (SIZE_MAX when there is none).
  static std::size_t least_max(const std::vector<schema::constraint>& growing, schema::constraint_kind kind) noexcept {
    std::size_t least = static_cast<std::size_t>(-1);
    for (const schema::constraint& c : growing)
      if (c.kind == kind) least = std::min<std::size_t>(least, c.count);
    return least;
  }

  /// A string or a list already longer (`n`: code points, items) than a maximum of kind `kind`
  /// among `growing` (judged_type::growing) cannot get shorter: `check(ctx, at)` judges it now.
  template <class F>
  void judge_growing(const std::vector<schema::constraint>& growing, schema::constraint_kind kind, std::size_t n,
                     F&& check) {
    if (std::any_of(growing.begin(), growing.end(), [&](const schema::constraint& c) { return c.kind == kind && n > c.count; }))
      with_path(check);
  }

  // --- values ----------------------------------------------------------------------------

  /// The slot the next value goes to (the first one: the root, the one value the tokenizer reads).
  slot next_slot() {
    slot s;
    if (stack.empty()) {
      s.ops = root_ops;
      s.target = root_target;
      s.node = resolve(&model.root);
      s.state = partial_states::root;
      states.set(s.state, value_state::streaming);
      changed = true;
      return s;
    }
    frame& f = stack.back();
    s.skip = f.kind == frame_kind::skip || (f.kind == frame_kind::object && f.field < 0 && !f.any_key);
    if (s.skip) return s;
    if (f.kind == frame_kind::object) {
      if (f.field >= 0) s.node = resolve(&f.def->fields[static_cast<std::size_t>(f.field)].type);
      else if (f.at.node != nullptr && f.at.node->kind == schema::kind::map && f.at.node->args.size() == 2)
        s.node = resolve(&f.at.node->args[1]);  // a map or an untyped object (any_key): every key is kept
      if (f.at.ops->kind == value_kind::object) {  // (a C++ class: only its fields are read)
        const auto j = static_cast<std::size_t>(f.field);
        const field_ops& fs = f.at.ops->fields[j];
        s.ops = &fs.ops();
        s.target = fs.member(f.at.target);
        if (f.seen[j]) s.ops->clear(s.target);  // a key given again: its last value wins, as in the final reading
        f.seen[j] = true;
      } else {  // JSON: made by place() (member() starts every key afresh)
        s.ops = f.at.ops;
        s.parent = f.at.target;
      }
      s.state = states.add_member(f.at.state, f.key);
      path.key(f.key);
      if (s.parent != nullptr) s.key = std::move(f.key);  // (the frame reads its next key afresh)
      changed = true;
      return s;
    }
    // array
    if (f.at.node != nullptr && f.at.node->kind == schema::kind::array && !f.at.node->args.empty())
      s.node = resolve(&f.at.node->args[0]);
    s.ops = &f.at.ops->item();  // a C++ list, or a JSON array (its item made by place())
    if (f.at.ops->kind == value_kind::json) {
      s.parent = f.at.target;
      s.item = true;
    } else {
      s.target = f.at.ops->emplace(f.at.target);
    }
    s.state = states.add_item(f.at.state);
    ++f.count;
    changed = true;
    if (!fallback) {
      const std::vector<schema::constraint>& growing = judged_of(f.at.node).growing;
      judge_growing(growing, schema::constraint_kind::max_items, f.count, [&](decode_context& ctx, const path_frame* at) {
        check_count(growing, f.count, false, "[...]", nullptr, ctx, at);
      });
    }
    path.index(f.count - 1);
    return s;
  }

  /// Makes the JSON member or item of `s` (null) where its value is shown.
  static void place(slot& s) {
    if (s.target == nullptr && s.parent != nullptr) s.target = s.item ? s.ops->emplace(s.parent) : s.ops->member(s.parent, s.key);
  }

  /// The value at `s` is finished.
  void finish_value(const slot& s) {
    if (s.state == no_node) return;  // (not shown)
    states.set(s.state, value_state::complete);
    changed = true;
    if (s.state != partial_states::root && !path.empty()) path.pop();  // (a member or an item: its step)
  }

  /// `s` with its optional C++ values engaged (for a non-null value).
  static slot engaged(slot s) {
    while (s.ops != nullptr && s.ops->kind == value_kind::optional) {
      s.target = s.ops->emplace(s.target);
      s.ops = &s.ops->item();
    }
    return s;
  }

  void begin_container(bool object) {
    slot s = engaged(next_slot());
    frame f;
    f.kind = object ? frame_kind::object : frame_kind::array;
    if (!s.skip && s.ops->kind == value_kind::opaque) {
      // Build its JSON, assign it whole at its end.
      f.scratch = std::make_unique<json::value>();
      f.opaque_ops = s.ops;
      f.opaque_target = s.target;
      s.ops = &json_ops();
      s.target = f.scratch.get();
    }
    if (s.skip || (s.ops->kind != (object ? value_kind::object : value_kind::array) && s.ops->kind != value_kind::json)) {
      f.kind = frame_kind::skip;  // not shown, or a value of the wrong shape: the final reader decides
    } else if (s.ops->kind == value_kind::json) {
      place(s);
      s.ops->assign(s.target, object ? json::value(json::object()) : json::value(json::array()), options);
    }
    if (f.kind == frame_kind::object) {
      f.def = s.node != nullptr ? model.object_of(*s.node) : nullptr;
      f.any_key = f.def == nullptr && s.ops->kind == value_kind::json;
      if (f.def != nullptr) f.seen.assign(f.def->fields.size(), false);
    }
    f.at = std::move(s);
    stack.push_back(std::move(f));
  }

  void end_container() {
    frame f = std::move(stack.back());
    stack.pop_back();
    if (f.scratch) f.opaque_ops->assign(f.opaque_target, *f.scratch, options);
    finish_value(f.at);
  }

  void key_part(std::string_view s) {
    frame& f = stack.back();
    if (!key_open) {
      f.key.clear();
      key_open = true;
    }
    f.key.append(s);
  }

  void key_done() {
    key_open = false;
    frame& f = stack.back();
    f.field = -1;
    if (f.kind != frame_kind::object || f.def == nullptr) return;
    for (std::size_t i = 0; i < f.def->fields.size(); ++i) {
      const schema::field& fd = f.def->fields[i];
      if (!fd.skip && fd.key == f.key) {
        f.field = static_cast<int>(i);
        return;
      }
    }
  }

  void string_part(std::string_view part, bool last) {
    if (!string_open) {
      string_open = true;
      current = engaged(next_slot());
      string_scratch.clear();
      string_code_points = 0;
      // Shown as it grows only for plain strings not marked @stream.done (else shown once finished).
      const bool json_string = !current.skip && current.ops->kind == value_kind::json &&
                               (current.node == nullptr || current.node->kind == schema::kind::string ||
                                current.node->kind == schema::kind::any);
      grow_visible = !current.skip && (current.ops->kind == value_kind::string || json_string) && !stream_done(current.node);
      if (grow_visible) place(current);
      string_growing = grow_visible && !fallback ? &judged_of(current.node).growing : nullptr;
      if (string_growing != nullptr && string_growing->empty()) string_growing = nullptr;
    }
    if (grow_visible) {
      current.ops->append(current.target, part);  // a C++ string, or a JSON value made a string
      if (!part.empty()) changed = true;
    } else if (!current.skip) {
      string_scratch.append(part);
    }
    if (string_growing != nullptr && !last && violations.empty()) {
      const std::size_t before = string_code_points;
      string_code_points += code_points(part);
      // Judged as the string stood at the character that took it past its least maximum, however
      // the text was cut into pieces: the issue's count and the stop's place are the same each time.
      std::size_t keep = part.size();
      if (const std::size_t least = least_max(*string_growing, schema::constraint_kind::max_length);
          string_code_points > least && before <= least) {
        keep = first_code_points(part, least - before + 1).size();
        string_code_points = least + 1;
      }
      decided_in = part.data() + keep;
      judge_growing(*string_growing, schema::constraint_kind::max_length, string_code_points,
                    [&](decode_context& ctx, const path_frame* at) {
                      std::string_view so_far = current_string();
                      so_far = so_far.substr(0, so_far.size() - (part.size() - keep));
                      check_string(*string_growing, so_far, json::serialize(json::string(so_far)), nullptr, ctx, at);
                    });
      decided_in = nullptr;
    }
    if (!last) return;
    string_open = false;
    if (current.skip) {
      finish_value(current);
      return;
    }
    const std::string_view value = current_string();
    std::string raw;  // the value as JSON, written once when needed
    auto raw_of = [&]() -> const std::string& {
      if (raw.empty()) raw = json::serialize(json::string(value));
      return raw;
    };
    if (!grow_visible) {
      switch (current.ops->kind) {
        case value_kind::enumeration: {
          issue_list issues;
          current.ops->set_enum(current.target, raw_of(), options, issues);
          changed = true;
          break;
        }
        case value_kind::json:
          place(current);
          if (!takes(current.node, json::kind::string)) break;
          [[fallthrough]];
        case value_kind::opaque:
          current.ops->assign(current.target, json::value(json::string(value)), options);
          changed = changed || current.ops->kind == value_kind::json;
          break;
        default: break;  // another type: coercions are the final reader's business
      }
    }
    if (!fallback && violations.empty() && current.node != nullptr) {
      const judged_type& j = judged_of(current.node);
      if (j.choice || (current.node->kind == schema::kind::string &&
                       !(j.native.empty() && string_within_bounds(j.type.constraints, value.size()))))
        judge(j, raw_of(), grow_visible ? native_of(current, value_kind::string) : nullptr);
    }
    finish_value(current);
  }

  /// The current string as read so far: its target's text when shown as it grows, else the scratch.
  std::string_view current_string() const {
    if (grow_visible) {
      if (current.ops->kind == value_kind::string) return *static_cast<const std::string*>(current.target);
      const json::string& js = static_cast<const json::value*>(current.target)->as_string();
      return {js.data(), js.size()};
    }
    return string_scratch;
  }

  void number(const json::value& v) {
    slot s = engaged(next_slot());
    std::string raw;
    raw.swap(number_text);
    if (s.skip || v.is_null()) {  // (null: out of range, refused by the final reader)
      finish_value(s);
      return;
    }
    place(s);
    const double d = v.to_number<double>();
    bool stored = false;
    switch (s.ops->kind) {
      case value_kind::integer:
        if (v.is_int64()) stored = s.ops->set_integer(s.target, v.get_int64());
        else if (v.is_uint64()) stored = s.ops->set_unsigned(s.target, v.get_uint64());
        break;
      case value_kind::floating:
        s.ops->set_floating(s.target, d);
        stored = true;
        break;
      case value_kind::json:
        if (!takes(s.node, v.kind())) break;
        [[fallthrough]];
      case value_kind::opaque: stored = s.ops->assign(s.target, v, options); break;
      default: break;
    }
    if (stored) changed = true;
    const bool numeric_node =
        s.node != nullptr && (s.node->kind == schema::kind::number || s.node->kind == schema::kind::integer);
    // An integer that does not fit its width is that issue alone: its constraints are not judged.
    if (!fallback) {
      const judged_type& j = judged_of(s.node);
      const bool judged_number =
          stored && numeric_node &&
          !(s.node->kind == schema::kind::integer && (v.is_double() || !detail::integer_fits(*s.node, v))) &&
          !(j.native.empty() && number_within_bounds(j.type.constraints, d));
      if (judged_number || j.choice) judge(j, raw, native_of(s, s.ops->kind));
    }
    finish_value(s);
  }

  void boolean(bool b) {
    slot s = engaged(next_slot());
    if (!s.skip) {
      place(s);
      if (s.ops->kind == value_kind::boolean) s.ops->set_boolean(s.target, b);
      else if (s.ops->kind == value_kind::opaque || (s.ops->kind == value_kind::json && takes(s.node, json::kind::bool_)))
        s.ops->assign(s.target, json::value(b), options);
      changed = true;
      if (!fallback)
        if (const judged_type& j = judged_of(s.node); j.choice) judge(j, b ? "true" : "false", nullptr);
    }
    finish_value(s);
  }

  void null() {
    slot s = next_slot();
    if (!s.skip) {
      place(s);
      if (s.ops->kind == value_kind::optional) s.ops->reset(s.target);
      else if (s.ops->kind == value_kind::json) s.ops->clear(s.target);
      changed = true;
    }
    finish_value(s);
  }

  // --- feeding ---------------------------------------------------------------------------

  /// Back to no value read (the tokenizer too); the text and the violations stay.
  void restart() {
    tokens.reset();
    stack.clear();
    path = covenant::path();
    states.clear();
    number_text.clear();
    string_scratch.clear();
    string_open = false;
    key_open = false;
    current = slot{};
  }

  bool feed(std::string_view delta) {
    changed = false;
    text.append(delta);
    if (finished) return false;
    if (fallback) return reread(false);
    if (!started) {
      // Skip what comes before the value (prose, a ```json fence line).
      consumed = std::min(text.find_first_of("{[", consumed), text.size());
      started = consumed < text.size();
      if (!started) return false;
    }
    piece_at = consumed;
    const bool ok = tokens.feed(std::string_view(text).substr(consumed));
    consumed = text.size();
    // Not plain JSON (!ok): at the strict level the final reader will refuse it too, the partial
    // stops where the JSON stopped. Otherwise re-read the whole text leniently from now on,
    // geometrically.
    finished = tokens.done() || (!ok && level == strictness::strict);
    if (ok || finished) return changed;
    fallback = true;
    return reread(true);
  }

  /// The lenient reader over the whole text so far, when it has grown enough since the last time.
  bool reread(bool now) {
    if (!now && text.size() < last_reread + last_reread / 2 + 16) return false;
    last_reread = text.size();
    lenient_options lo;
    lo.level = level;  // repair or coerce: strict never falls back
    lo.partial = true;
    lo.max_depth = options.max_depth;
    lo.max_candidates = 1;
    const std::vector<candidate> found = extract_candidates(text, lo);
    if (found.empty()) return false;
    const std::string& json = found.front().json;  // compact JSON
    if (json.empty() || (json.front() != '{' && json.front() != '[')) return false;
    // Read the repaired text afresh, as if it had been streamed.
    root_ops->clear(root_target);
    restart();
    tokens.feed(json);
    states.complete_all();
    open_notes.clear();
    for (const note& nt : found.front().notes) {
      if (nt.kind != note_kind::incomplete) continue;
      open_notes.push_back(nt.path);
      const std::uint32_t id = states.find(nt.path);
      if (id != no_node) states.set(id, value_state::streaming);
    }
    return true;
  }

  /// The paths of the values not finished yet: the current one (and so its containers), or after
  /// the lenient fallback, those its reading left incomplete.
  std::vector<covenant::path> unfinished() const {
    if (fallback) return open_notes;
    if (states.at(partial_states::root) != value_state::streaming) return {};
    return {path};
  }

  const schema::model& model;
  decode_options options;
  strictness level;
  const value_ops* root_ops;
  void* root_target;
  push_tokenizer<impl> tokens;

  std::string text;
  std::size_t consumed = 0;
  std::size_t piece_at = 0;                      // where in `text` the piece being read starts
  std::size_t decided = std::string::npos;       // just past the byte that decided the first violation
  const char* decided_in = nullptr;              // (a place in a string's run: string_part)
  bool started = false;
  bool finished = false;
  bool fallback = false;  // re-reading leniently (its violations are never reported)
  std::vector<covenant::path> open_notes;  // the fallback's incomplete values
  std::size_t last_reread = 0;
  bool changed = false;

  partial_states states;
  issue_list violations;

  std::vector<frame> stack;
  bool key_open = false;
  bool string_open = false;
  bool grow_visible = false;
  slot current;
  std::string string_scratch;
  std::size_t string_code_points = 0;
  const std::vector<schema::constraint>* string_growing = nullptr;  // maxima of the current string shown as it grows
  std::string number_text;

  std::unordered_map<const schema::type*, judged_type> judged_cache;
};

stream_core::stream_core(const schema::model& m, const decode_options& options, strictness level,
                         const value_ops* root_ops, void* root)
    : impl_(std::make_unique<impl>(m, options, level, root_ops, root)) {}

stream_core::~stream_core() = default;

void stream_core::reset() {
  impl_->restart();
  impl_->text.clear();
  impl_->consumed = 0;
  impl_->started = false;
  impl_->finished = false;
  impl_->fallback = false;
  impl_->last_reread = 0;
  impl_->violations.clear();
  impl_->decided = std::string::npos;
}

bool stream_core::feed(std::string_view delta) {
  try {
    return impl_->feed(delta);
  } catch (const std::bad_alloc&) {
    // Out of memory holding the partial value: stop showing partials for this reply; the final
    // reader judges the whole text. Anything else (a check of the application's that threw) is the
    // caller's to see.
    impl_->finished = true;
    return false;
  } catch (const std::length_error&) {
    impl_->finished = true;
    return false;
  } catch (...) {
    impl_->finished = true;
    throw;
  }
}

const issue_list& stream_core::violations() const noexcept { return impl_->violations; }
std::size_t stream_core::decided_at() const noexcept {
  return impl_->violations.empty() ? impl_->text.size() : std::min(impl_->decided, impl_->text.size());
}
const partial_states& stream_core::states() const noexcept { return impl_->states; }
const std::string& stream_core::text() const noexcept { return impl_->text; }
bool stream_core::lenient() const noexcept { return impl_->fallback; }
std::vector<path> stream_core::unfinished() const { return impl_->unfinished(); }

/// What the streaming attributes hold back of the value while a view shows it.
struct dynamic_stream_reader::held {
  std::vector<held_value> values;
  boost::json::value none;  // shown when the whole value is held back
};

dynamic_stream_reader::dynamic_stream_reader(const schema::model& m, const decode_options& options, strictness level)
    : model_(m),
      attributes_(has_stream_attributes(model_)),
      core_(std::make_unique<stream_core>(model_, options, level, &json_ops(), &value_)) {
  if (attributes_) held_ = std::make_unique<held>();
  view_.value_ = &value_;
  view_.states_ = &core_->states();
}

dynamic_stream_reader::~dynamic_stream_reader() = default;

void dynamic_stream_reader::reset() {
  if (held_) held_->values.clear();
  value_ = nullptr;
  shown_ = nullptr;
  view_.value_ = &value_;
  core_->reset();
}

bool dynamic_stream_reader::feed(std::string_view delta) {
  if (!attributes_) return core_->feed(delta);
  // What the last view held back goes back where it was (the same places: the stream reader's
  // pointers into the value stay good), the stream writes on, and the attributes hold back again
  // what they leave out now: in the time of the open values' depth, not of the whole value.
  put_back_from(held_->values, 0);
  view_.value_ = &value_;
  const bool changed = core_->feed(delta);
  switch (hold_back_streamed(value_, model_, core_->unfinished(), held_->values)) {
    case hold_back::done: break;
    case hold_back::root: view_.value_ = &held_->none; break;
    case hold_back::cannot: {
      // (a key written twice, reopened in the middle of its object): a copy, as a partial reading shows it
      shown_ = value_;
      note_list notes;
      if (!keep_streamed(shown_, model_, core_->unfinished(), notes)) shown_ = nullptr;
      view_.value_ = &shown_;
      break;
    }
  }
  return changed;
}

}  // namespace detail

}  // namespace covenant
