// Partial (streaming) reads: what is shown of unfinished values, and which issues are pending.
#include "partial_rules.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "covenant/read/detail/coerce.hpp"
#include "covenant/read/detail/read_reply.hpp"
#include "covenant/types/json_equal.hpp"

namespace covenant {

namespace {

namespace json = boost::json;

// Whether `p` is one of `paths`.
bool listed(const std::vector<path>& paths, const path& p) {
  return std::any_of(paths.begin(), paths.end(), [&](const path& q) { return q == p; });
}

// Partial mode: whether an issue is one only the rest of the stream can settle, given the paths
// of the unfinished values (a required field missing from an unfinished object, a constraint or
// rule failed by an unfinished value). Sets `detail` to the note that replaces it.
bool pending_issue(const issue& i, const std::vector<path>& unfinished, std::string* detail = nullptr) {
  if (i.code == issue_code::missing_field && !i.path.empty()) {
    path parent = i.path;
    parent.pop();
    if (detail != nullptr) *detail = "required field not written yet";
    return listed(unfinished, parent);
  }
  if (i.code == issue_code::constraint_violation || i.code == issue_code::invariant_violation) {
    if (detail != nullptr) *detail = "unfinished value, not checked yet: " + i.message;
    return listed(unfinished, i.path);
  }
  return false;
}

bool has_stream_flags(const schema::type& t) {
  return t.stream != 0 || std::any_of(t.args.begin(), t.args.end(), has_stream_flags);
}

// Partial mode: what a streaming reader shows of a value still being written, following the
// schema's streaming attributes (schema::stream_flag) and the rule that an enum value or a string
// literal is read only from a finished string.
class stream_view {
 public:
  stream_view(const schema::model& m, std::vector<path> unfinished, note_list& notes)
      : m_(m), unfinished_(std::move(unfinished)), notes_(notes) {}

  /// In place (hold_back_streamed): only the values on the unfinished paths are visited (a finished
  /// value is never left out, nor is anything inside it), and a value left out is moved into
  /// `held` instead of being dropped. `fits` turns false when one is not the last member or item
  /// of its container (then the caller puts everything back and copies instead).
  void hold_in(std::vector<detail::held_value>& held) { held_ = &held; }
  [[nodiscard]] bool fits() const noexcept { return fits_; }

  // Applies the rules to `v` of type `t` at `at`; false when `v` is to be left out altogether
  // (the reason is then noted).
  bool keep(json::value& v, const schema::type& t, std::uint8_t extra = 0) {
    const schema::definition* def = t.kind == schema::kind::ref ? m_.resolve(t) : nullptr;
    if (def != nullptr && def->alias() != nullptr) return keep(v, def->alias()->target, extra | t.stream);
    if (v.is_null() || depth_ > 256) return true;
    const schema::object_def* obj = def != nullptr ? def->object() : nullptr;
    const std::uint8_t flags = extra | t.stream | (obj != nullptr ? obj->stream : 0);
    const bool open = unfinished();
    if (open && (flags & schema::stream_flag::done) != 0) return leave_out("unfinished value left out until it is finished (@stream.done)");
    if (open && v.is_string() && closed_choice(t)) return leave_out("unfinished string not read as a value of " + schema::type_expression(t) + " yet");
    ++depth_;
    bool kept = true;
    if (t.kind == schema::kind::union_) {
      if (const schema::type* alt = alternative(v, t)) kept = keep(v, *alt);
    } else if (v.is_array() && t.kind == schema::kind::array && !t.args.empty()) {
      auto& a = v.get_array();
      std::vector<std::size_t> out;
      for (std::size_t i = held_ != nullptr && !a.empty() ? a.size() - 1 : 0; i < a.size(); ++i) {
        at_.push_back(step{std::to_string(i), {}, true, i});
        if (visit() && !keep_child(a[i], t.args[0])) out.push_back(i);
        at_.pop_back();
      }
      if (held_ != nullptr) {
        if (!out.empty()) hold(v, {}, std::move(a.back()));
        if (!out.empty()) a.pop_back();
      } else {
        for (auto i = out.rbegin(); i != out.rend(); ++i) a.erase(a.begin() + static_cast<std::ptrdiff_t>(*i));
      }
    } else if (v.is_object() && t.kind == schema::kind::map && t.args.size() == 2) {
      auto& o = v.get_object();
      std::vector<std::string> out;
      for (auto& kv : o) {
        at_.push_back(step{std::string(kv.key()), {}, false, 0});
        if (visit() && !keep_child(kv.value(), t.args[1])) out.emplace_back(kv.key());
        at_.pop_back();
      }
      erase_members(v, out);
    } else if (v.is_object() && obj != nullptr) {
      kept = keep_object(v, *obj, open);
    }
    --depth_;
    return kept;
  }

 private:
  struct step {
    std::string key;        // as written in the value
    std::string other_key;  // the other spelling of a field's key (declared name or JSON key)
    bool is_index = false;
    std::size_t index = 0;
  };

  bool keep_object(json::value& v, const schema::object_def& obj, bool open) {
    json::object& o = v.get_object();
    std::vector<std::string> out;
    for (const schema::field& f : obj.fields) {
      const std::string* key = nullptr;
      if (o.contains(f.name)) key = &f.name;
      else if (o.contains(f.key)) key = &f.key;
      if (key == nullptr) continue;
      at_.push_back(step{*key, *key == f.name ? f.key : f.name, false, 0});
      // (if_contains, not operator[], which may grow the object's table: the stream reader keeps
      // pointers to its members)
      if (visit() && !keep_child(*o.if_contains(*key), f.type)) out.push_back(*key);
      at_.pop_back();
    }
    erase_members(v, out);
    if (!open) return true;
    for (const schema::field& f : obj.fields) {
      std::uint8_t flags = f.type.stream;
      if (f.type.kind == schema::kind::ref)
        if (const auto* d = m_.resolve(f.type); d != nullptr && d->object() != nullptr) flags |= d->object()->stream;
      if ((flags & schema::stream_flag::not_null) == 0) continue;
      const json::value* got = o.if_contains(f.name);
      if (got == nullptr) got = o.if_contains(f.key);
      if (got == nullptr || got->is_null())
        return leave_out("unfinished object left out until its field " + f.name + " has a value (@stream.not_null)");
    }
    return true;
  }

  // A closed choice with strings among its choices (an enum, a string literal, a union of
  // literals): what a string can name.
  bool closed_choice(const schema::type& t) const {
    const auto choices = detail::choice_set(m_, t);
    return choices && detail::choice_kind(*choices, "\"");
  }

  // The alternative of a union that `v` was read as: for an object, the class that knows most of
  // its keys and whose literal fields it matches; else the first of the value's kind.
  const schema::type* alternative(const json::value& v, const schema::type& u) const {
    const schema::type* best = nullptr;
    std::size_t best_score = 0;
    for (const schema::type& a : u.args) {
      const schema::definition* d = a.kind == schema::kind::ref ? m_.resolve(a) : nullptr;
      while (d != nullptr && d->alias() != nullptr) {
        const schema::type& x = d->alias()->target;
        if (x.kind == schema::kind::union_) {
          if (const schema::type* inner = alternative(v, x)) return inner;
          d = nullptr;
          break;
        }
        d = x.kind == schema::kind::ref ? m_.resolve(x) : nullptr;
      }
      if (v.is_object()) {
        if (d == nullptr || d->object() == nullptr) {
          if (a.kind == schema::kind::map && best == nullptr) best = &a;
          continue;
        }
        std::size_t score = 1;
        bool fits = true;
        for (const schema::field& f : d->object()->fields) {
          const json::value* got = v.get_object().if_contains(f.name);
          if (got == nullptr) got = v.get_object().if_contains(f.key);
          if (got == nullptr) continue;
          if (f.type.kind == schema::kind::literal && !json_equal(*got, f.type.literal)) fits = false;
          ++score;
        }
        if (fits && score > best_score) {
          best = &a;
          best_score = score;
        }
      } else if (v.is_array()) {
        if (a.kind == schema::kind::array && best == nullptr) best = &a;
      } else if (v.is_string()) {
        if (best == nullptr && (a.kind == schema::kind::string || closed_choice(a))) best = &a;
      }
    }
    return best;
  }

  // Whether the value here is not finished: an incomplete note at or below it.
  bool unfinished() const {
    return std::any_of(unfinished_.begin(), unfinished_.end(), [&](const path& p) {
      if (p.size() < at_.size()) return false;
      for (std::size_t i = 0; i < at_.size(); ++i) {
        const path_segment& s = p.segments()[i];
        const step& x = at_[i];
        if (s.is_index != x.is_index) return false;
        if (s.is_index ? s.index != x.index : (s.key != x.key && s.key != x.other_key)) return false;
      }
      return true;
    });
  }

  bool leave_out(std::string why) {
    note n;
    n.kind = note_kind::incomplete;
    for (const step& s : at_) {
      if (s.is_index) n.path.index(s.index);
      else n.path.key(s.key);
    }
    n.detail = std::move(why);
    notes_.push_back(std::move(n));
    return false;
  }

  // In place: whether the value at at_ is to be visited (it is on an unfinished path).
  bool visit() const { return held_ == nullptr || unfinished(); }

  // keep() of a member or item; in place, what was held inside a value left out goes back into it
  // first (the value is held whole).
  bool keep_child(json::value& v, const schema::type& t) {
    const std::size_t mark = held_ != nullptr ? held_->size() : 0;
    if (keep(v, t)) return true;
    if (held_ != nullptr) detail::put_back_from(*held_, mark);
    return false;
  }

  // Removes the members `out` of the object `v`.
  void erase_members(json::value& v, const std::vector<std::string>& out) {
    json::object& o = v.get_object();
    if (held_ == nullptr) {
      for (const auto& k : out) o.erase(k);
      return;
    }
    for (const auto& k : out) {
      if (o.empty() || (o.end() - 1)->key() != k) {
        fits_ = false;  // (a key written twice: not the last member)
        continue;
      }
      hold(v, k, std::move((o.end() - 1)->value()));
      o.erase(o.end() - 1);
    }
  }

  void hold(json::value& container, std::string key, json::value value) {
    held_->push_back(detail::held_value{&container, std::move(key), std::move(value)});
  }

  const schema::model& m_;
  std::vector<path> unfinished_;
  note_list& notes_;
  std::vector<step> at_;
  std::size_t depth_ = 0;
  std::vector<detail::held_value>* held_ = nullptr;
  bool fits_ = true;
};

}  // namespace

namespace detail {

bool keep_streamed(boost::json::value& v, const schema::model& m, std::vector<path> unfinished, note_list& notes) {
  stream_view view(m, std::move(unfinished), notes);
  return view.keep(v, m.root);
}

void put_back_from(std::vector<held_value>& held, std::size_t from) {
  while (held.size() > from) {
    held_value& h = held.back();
    if (h.container->is_array()) h.container->get_array().push_back(std::move(h.value));
    else h.container->get_object().emplace(h.key, std::move(h.value));
    held.pop_back();
  }
}

hold_back hold_back_streamed(boost::json::value& v, const schema::model& m, std::vector<path> unfinished,
                             std::vector<held_value>& held) {
  note_list notes;
  stream_view view(m, std::move(unfinished), notes);
  view.hold_in(held);
  const bool kept = view.keep(v, m.root);
  if (!view.fits()) {
    put_back_from(held, 0);
    return hold_back::cannot;
  }
  if (kept) return hold_back::done;
  put_back_from(held, 0);  // (the value is left out whole)
  return hold_back::root;
}

bool has_stream_attributes(const schema::model& m) {
  if (has_stream_flags(m.root)) return true;
  for (const schema::definition& d : m.defs) {
    if (const schema::object_def* o = d.object()) {
      if (o->stream != 0 || std::any_of(o->fields.begin(), o->fields.end(),
                                        [](const schema::field& f) { return has_stream_flags(f.type); }))
        return true;
    } else if (const schema::alias_def* a = d.alias(); a != nullptr && has_stream_flags(a->target)) {
      return true;
    }
  }
  return false;
}

bool shape_coercion(const note& n) noexcept {
  if (n.kind != note_kind::coerced) return false;
  if (is_written_text_note(n)) return true;
  const std::string_view d = n.detail;
  return d == one_item_list_note || d == item_of_list_note ||
         (d.starts_with(only_member_note) && d.ends_with(only_member_note_end)) || d.starts_with(only_field_note);
}


std::vector<path> unfinished_paths(const note_list& notes) {
  std::vector<path> unfinished;
  for (const note& n : notes)
    if (n.kind == note_kind::incomplete) unfinished.push_back(n.path);
  return unfinished;
}

void set_aside_pending(issue_list& issues, note_list& notes) {
  if (issues.empty()) return;
  const std::vector<path> unfinished = unfinished_paths(notes);  // (a copy: notes are added below)
  issue_list kept;
  for (issue& i : issues) {
    note n;
    if (pending_issue(i, unfinished, &n.detail)) {
      n.kind = note_kind::incomplete;
      n.path = std::move(i.path);
      notes.push_back(std::move(n));
    } else {
      kept.push_back(std::move(i));
    }
  }
  issues = std::move(kept);
}

std::size_t settled_issues(const issue_list& issues, const note_list& notes) {
  const std::vector<path> unfinished = unfinished_paths(notes);
  if (unfinished.empty()) return issues.size();
  return static_cast<std::size_t>(
      std::count_if(issues.begin(), issues.end(), [&](const issue& i) { return !pending_issue(i, unfinished); }));
}

}  // namespace detail

}  // namespace covenant
