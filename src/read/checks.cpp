// Constraint checks and issue construction shared by every decoder.
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <charconv>
#include <cmath>
#include <optional>
#include <string>

#include "covenant/read/detail/coerce.hpp"
#include "covenant/read/detail/decode_context.hpp"
#include "covenant/types/formats.hpp"
#include "covenant/types/detail/utf8.hpp"
#include "covenant/types/encode.hpp"
#include "covenant/types/json_equal.hpp"
#include "covenant/types/validators.hpp"
#include "types/number_text.hpp"

namespace covenant::detail {

covenant::path to_path(const path_frame* at) {
  std::size_t depth = 0;
  for (const path_frame* f = at; f != nullptr; f = f->parent) ++depth;
  std::vector<path_segment> segments(depth);
  for (const path_frame* f = at; f != nullptr; f = f->parent) {
    path_segment& s = segments[--depth];
    s.is_index = f->is_index;
    if (f->is_index) s.index = f->index;
    else s.key.assign(f->key.data(), f->key.size());
  }
  return covenant::path(std::move(segments));
}

void decode_context::add(const path_frame* at, issue_code code, std::string expected, std::string actual,
                         std::string message, fail_action action) {
  if (issues.capacity() == 0) issues.reserve(4);
  issue i;
  i.path = to_path(at);
  i.code = code;
  i.expected = std::move(expected);
  i.actual = std::move(actual);
  i.message = std::move(message);
  i.action = action;
  issues.push_back(std::move(i));
}

std::string check_failed_detail(std::string_view message, std::string_view actual) {
  std::string detail = "check failed: ";
  detail += message;
  if (!actual.empty()) {
    detail += " (got ";
    detail += actual;
    detail += ')';
  }
  return detail;
}

void decode_context::failed(const path_frame* at, fail_action action, issue_code code, std::string expected,
                            std::string actual, std::string message, std::string_view reason) {
  if (action == fail_action::noop) {
    note(at, note_kind::check_failed, check_failed_detail(message, actual));
    return;
  }
  add(at, code, std::move(expected), std::move(actual), std::move(message),
      action == fail_action::fix ? fail_action::reask : action);
  if (!reason.empty()) issues.back().reason.assign(reason.data(), reason.size());
}

void all_items_dropped(decode_context& ctx, const path_frame* at, std::size_t dropped, std::string reason) {
  ctx.add(at, issue_code::constraint_violation, "at least one valid item", std::to_string(dropped) + " dropped",
          "every item was dropped", fail_action::refrain);
  ctx.issues.back().reason = std::move(reason);
}

bool take_filtered(decode_context& ctx, std::size_t before, const path_frame* at, std::string* reason) {
  const issue* first = nullptr;
  for (std::size_t k = before; k < ctx.issues.size() && first == nullptr; ++k)
    if (ctx.issues[k].action == fail_action::filter) first = &ctx.issues[k];
  if (first == nullptr) return false;
  if (reason != nullptr && !first->reason.empty()) *reason = first->reason;
  std::string detail = "dropped: " + first->to_string();
  ctx.issues.erase(ctx.issues.begin() + static_cast<std::ptrdiff_t>(before), ctx.issues.end());
  ctx.note(at, note_kind::filtered, std::move(detail));
  return true;
}

void decode_context::note(const path_frame* at, note_kind kind, std::string detail) {
  if (notes == nullptr) return;
  covenant::note n;
  n.kind = kind;
  n.path = to_path(at);
  n.detail = std::move(detail);
  notes->push_back(std::move(n));
}

namespace {

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string json_text(const boost::json::value& v) { return boost::json::serialize(v); }

std::string one_of_text(const std::vector<boost::json::value>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += values[i].is_double() ? number_text(values[i].get_double()) : json_text(values[i]);
  }
  return out;
}

// The count when a list's min and max bounds (or a string's) are equal: "exactly N".
std::size_t exact_count(const std::vector<schema::constraint>& cs, schema::constraint_kind lo,
                        schema::constraint_kind hi) noexcept {
  std::size_t a = SIZE_MAX;
  std::size_t b = SIZE_MAX - 1;
  for (const auto& c : cs) {
    if (c.kind == lo) a = c.count;
    if (c.kind == hi) b = c.count;
  }
  return a == b ? a : SIZE_MAX;
}

// A rule `c` that does not hold (`r`: its check's message, or empty). A list's or a map's
// (`container`) is reported like its counts: the rule as expected, no actual.
void rule_failed(const schema::constraint& c, std::string&& r, std::string_view raw, bool container,
                 decode_context& ctx, const path_frame* at) {
  if (container) {
    std::string message = r.empty() ? (c.text.empty() ? schema::describe(c) : c.text) : std::move(r);
    ctx.failed(at, c, issue_code::constraint_violation, schema::describe(c), "", std::move(message));
  } else {
    std::string message = r.empty() ? (c.text.empty() ? std::string("must satisfy its rule") : c.text) : std::move(r);
    ctx.failed(at, c, issue_code::constraint_violation, c.text, actual_of(raw), std::move(message));
  }
}

void custom(const schema::constraint& c, std::string_view raw, const void* native, decode_context& ctx,
            const path_frame* at) {
  if (!c.custom || native == nullptr || !c.custom->has_native()) return;
  if (auto r = c.custom->check_native(native)) rule_failed(c, std::move(*r), raw, false, ctx, at);
}

const char* format_message(const std::string& format) {
  if (format == "uri") return "must be an absolute URL";
  if (format == "uuid") return "must be a UUID (8-4-4-4-12 hexadecimal digits)";
  if (format == "date-time") return "must be an ISO 8601 date-time with time zone, such as 2025-01-15T10:30:00Z";
  if (format == "date") return "must be a date such as 2025-01-15";
  if (format == "time") return "must be a time such as 10:30:00";
  if (format == "email") return "must be an e-mail address";
  return "must have the declared format";
}

}  // namespace

namespace {

// The number as written in `text` when it is an integer (exactly, also beyond 2^53), else `v`.
boost::json::value written_number(std::string_view text, double v) {
  boost::json::value out;
  if (!number_value(text, out) || out.is_double()) out = v;
  return out;
}

// The fix of a failed number constraint: true when `v` was changed to satisfy it.
bool fix_number(const schema::constraint& c, double& v, bool integral) {
  switch (c.kind) {
    case schema::constraint_kind::minimum: v = integral ? std::ceil(c.number) : c.number; return true;
    case schema::constraint_kind::maximum: v = integral ? std::floor(c.number) : c.number; return true;
    case schema::constraint_kind::exclusive_minimum:
      v = integral ? std::floor(c.number) + 1 : std::nextafter(c.number, HUGE_VAL);
      return true;
    case schema::constraint_kind::exclusive_maximum:
      v = integral ? std::ceil(c.number) - 1 : std::nextafter(c.number, -HUGE_VAL);
      return true;
    case schema::constraint_kind::multiple_of:
      if (c.number == 0 || !std::isfinite(c.number)) return false;
      v = std::round(v / c.number) * c.number;
      return !integral || std::trunc(v) == v;
    default:
      return false;
  }
}

// Whether the whole number `w` (a fix's result) fits the integer width of `t` (integer_fits).
bool fits_width(const schema::type& t, double w) noexcept {
  if (!(w >= -9223372036854775808.0 && w < 18446744073709551616.0)) return false;
  if (w < 9223372036854775808.0) return integer_fits(t, boost::json::value(static_cast<std::int64_t>(w)));
  return integer_fits(t, boost::json::value(static_cast<std::uint64_t>(w)));
}

// `integer`: the schema node of an integer (its fixes must fit its width), else null.
bool number_checks(const std::vector<schema::constraint>& cs, double& v, const schema::type* integer, bool can_fix,
                   std::string_view raw, const void* native, decode_context& ctx, const path_frame* at) {
  const bool integral = integer != nullptr;
  bool changed = false;
  std::string now;  // the value as it reads after a fix
  for (const auto& c : cs) {
    const char* op = nullptr;
    bool bad = false;
    std::string expected;
    std::string message;
    switch (c.kind) {
      case schema::constraint_kind::minimum: bad = v < c.number; op = ">= "; break;
      case schema::constraint_kind::maximum: bad = v > c.number; op = "<= "; break;
      case schema::constraint_kind::exclusive_minimum: bad = !(v > c.number); op = "> "; break;
      case schema::constraint_kind::exclusive_maximum: bad = !(v < c.number); op = "< "; break;
      case schema::constraint_kind::multiple_of: {
        if (c.number != 0) {
          const double q = v / c.number;
          bad = std::fabs(q - std::round(q)) > 1e-9 * std::fmax(1.0, std::fabs(q));
        }
        if (!bad) continue;
        expected = "multiple of " + number_text(c.number);
        message = "must be a " + expected;
        break;
      }
      case schema::constraint_kind::one_of: {
        const boost::json::value seen = written_number(changed ? std::string_view(now) : raw, v);
        bool found = false;
        for (const auto& val : c.values) {
          found = val.is_number() && json_equal(val, seen);
          if (found) break;
        }
        if (found) continue;
        const std::string list = one_of_text(c.values);
        ctx.failed(at, c, issue_code::constraint_violation, "one of " + list,
                   actual_of(changed ? std::string_view(now) : raw), "must be one of " + list);
        continue;
      }
      case schema::constraint_kind::predicate:
      case schema::constraint_kind::unique_by:
      case schema::constraint_kind::unique_items:
        custom(c, changed ? std::string_view(now) : raw, changed ? nullptr : native, ctx, at);
        continue;
      default:
        continue;
    }
    if (!bad) continue;
    if (op != nullptr) {
      expected = op + number_text(c.number);
      message = "must be " + expected;
    }
    const std::string_view shown = changed ? std::string_view(now) : raw;
    if (can_fix && c.on_fail == fail_action::fix) {
      double w = v;
      if (fix_number(c, w, integral) && (integer == nullptr || fits_width(*integer, w))) {
        std::string to = number_text(w);
        ctx.note(at, note_kind::fixed, std::string(shown) + " changed to " + to + " (" + message + ")");
        v = w;
        now = std::move(to);
        changed = true;
        continue;
      }
    }
    ctx.failed(at, c, issue_code::constraint_violation, std::move(expected), actual_of(shown), std::move(message));
  }
  return changed;
}

}  // namespace

void check_number(const std::vector<schema::constraint>& cs, double v, std::string_view raw, const void* native,
                  decode_context& ctx, const path_frame* at) {
  number_checks(cs, v, nullptr, false, raw, native, ctx, at);
}

bool check_number_fix(const schema::type& node, double& v, std::string_view raw, const void* native,
                      decode_context& ctx, const path_frame* at) {
  return number_checks(node.constraints, v, node.kind == schema::kind::integer ? &node : nullptr, true, raw, native,
                       ctx, at);
}

namespace {

std::string_view trim_ws(std::string_view v) noexcept {
  const auto ws = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!v.empty() && ws(v.front())) v.remove_prefix(1);
  while (!v.empty() && ws(v.back())) v.remove_suffix(1);
  return v;
}

bool iequal_ascii(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool string_checks(const std::vector<schema::constraint>& cs, std::string_view v, std::string_view raw,
                   const std::string* native, bool can_fix, decode_context& ctx, const path_frame* at,
                   std::string* fixed) {
  bool changed = false;
  std::string work;
  std::string shown_after;
  // Replaces the value by `to` and notes why.
  auto apply = [&](std::string to, std::string why) {
    ctx.note(at, note_kind::fixed, std::move(why));
    work = std::move(to);
    v = work;
    native = &work;
    shown_after = "\"" + work + "\"";
    changed = true;
  };
  auto shown = [&]() { return changed ? std::string_view(shown_after) : raw; };
  const bool fixing = [&] {
    if (!can_fix) return false;
    for (const auto& c : cs)
      if (c.on_fail == fail_action::fix) return true;
    return false;
  }();
  for (const auto& c : cs) {
    const bool fix = fixing && c.on_fail == fail_action::fix;
    switch (c.kind) {
      case schema::constraint_kind::min_length: {
        if (v.size() >= 4 * c.count) break;
        const std::size_t n = v.size() < c.count ? v.size() : code_points(v);
        if (n >= c.count) break;
        const bool exact = exact_count(cs, schema::constraint_kind::min_length, schema::constraint_kind::max_length) ==
                           c.count;
        if (c.count == 1 && !exact) {
          ctx.failed(at, c, issue_code::constraint_violation, "non-empty string", "\"\"", "must not be empty");
        } else {
          const std::string bound = (exact ? "exactly " : "at least ") + plural(c.count, "character", "characters");
          ctx.failed(at, c, issue_code::constraint_violation, bound,
                     n == 0 ? std::string("\"\"") : plural(n, "character", "characters"), "must have " + bound);
        }
        break;
      }
      case schema::constraint_kind::max_length: {
        if (v.size() <= c.count) break;
        const std::size_t n = code_points(v);
        if (n <= c.count) break;
        const bool exact = exact_count(cs, schema::constraint_kind::min_length, schema::constraint_kind::max_length) ==
                           c.count;
        const std::string bound = (exact ? "exactly " : "at most ") + plural(c.count, "character", "characters");
        if (fix) {
          apply(std::string(first_code_points(v, c.count)),
                "cut to " + plural(c.count, "character", "characters") + " (was " + std::to_string(n) + ")");
          break;
        }
        ctx.failed(at, c, issue_code::constraint_violation, bound, plural(n, "character", "characters"),
                   "must have " + bound);
        break;
      }
      case schema::constraint_kind::pattern:
        if (c.regex && !schema::pattern_matches(*c.regex, v)) {
          const std::string_view t = trim_ws(v);
          if (fix && t.size() != v.size() && schema::pattern_matches(*c.regex, t)) {
            apply(std::string(t), "surrounding whitespace removed (must match the regular expression " + c.text + ")");
            break;
          }
          ctx.failed(at, c, issue_code::constraint_violation, "matches " + c.text, actual_of(shown()),
                     "must match the regular expression " + c.text);
        }
        break;
      case schema::constraint_kind::format:
        if (!formats::matches_format(c.text, v)) {
          const std::string_view t = trim_ws(v);
          if (fix && t.size() != v.size() && formats::matches_format(c.text, t)) {
            apply(std::string(t), std::string("surrounding whitespace removed (") + format_message(c.text) + ")");
            break;
          }
          ctx.failed(at, c, issue_code::constraint_violation, "format " + c.text, actual_of(shown()),
                     format_message(c.text));
        }
        break;
      case schema::constraint_kind::one_of: {
        bool found = false;
        for (const auto& val : c.values) {
          if (val.is_string() && std::string_view(val.get_string()) == v) {
            found = true;
            break;
          }
        }
        if (found) break;
        const std::string list = one_of_text(c.values);
        if (fix) {
          const std::string_view t = trim_ws(v);
          const boost::json::value* hit = nullptr;
          for (const auto& val : c.values)
            if (val.is_string() && iequal_ascii(val.get_string(), t)) hit = &val;
          if (hit != nullptr) {
            std::string to(hit->get_string());
            apply(to, std::string(shown()) + " read as \"" + to + "\" (must be one of " + list + ")");
            break;
          }
        }
        ctx.failed(at, c, issue_code::constraint_violation, "one of " + list, actual_of(shown()),
                   "must be one of " + list);
        break;
      }
      case schema::constraint_kind::predicate:
        custom(c, shown(), native, ctx, at);
        break;
      default:
        break;
    }
  }
  if (changed && fixed != nullptr) *fixed = std::move(work);
  return changed;
}

}  // namespace

void check_string(const std::vector<schema::constraint>& cs, std::string_view v, std::string_view raw,
                  const void* native, decode_context& ctx, const path_frame* at) {
  string_checks(cs, v, raw, static_cast<const std::string*>(native), false, ctx, at, nullptr);
}

bool check_string_fix(const std::vector<schema::constraint>& cs, std::string_view v, std::string_view raw,
                      const std::string* native, decode_context& ctx, const path_frame* at, std::string& fixed) {
  return string_checks(cs, v, raw, native, true, ctx, at, &fixed);
}

namespace {

// A runtime schema's list as its uniqueness checks see it: the JSON array, the type of its
// items, and whether objects are keyed by their fields' declared names.
struct json_list {
  boost::json::array* items;
  const schema::type* item;
  bool declared;
};

std::optional<std::string> json_duplicates(const json_list& l, const schema::constraint& c, bool fix,
                                           const decode_context& ctx);

// `json`: a runtime schema's list (its uniqueness checked here; custom checks are on C++ values).
bool count_checks(const std::vector<schema::constraint>& cs, std::size_t n, bool is_map, void* native,
                  const container_ops* ops, decode_context& ctx, const path_frame* at,
                  const json_list* json = nullptr) {
  const char* one = is_map ? "entry" : "item";
  const char* many = is_map ? "entries" : "items";
  bool changed = false;
  for (const auto& c : cs) {
    const bool fix = ops != nullptr && native != nullptr && c.on_fail == fail_action::fix;
    switch (c.kind) {
      case schema::constraint_kind::min_items: {
        if (n >= c.count) break;
        const bool exact =
            exact_count(cs, schema::constraint_kind::min_items, schema::constraint_kind::max_items) == c.count;
        if (c.count == 1 && !exact) {
          ctx.failed(at, c, issue_code::constraint_violation, std::string("at least 1 ") + one,
                     is_map ? "{}" : "[]", "must not be empty");
        } else {
          const std::string bound = (exact ? "exactly " : "at least ") + plural(c.count, one, many);
          ctx.failed(at, c, issue_code::constraint_violation, bound, plural(n, one, many), "must have " + bound);
        }
        break;
      }
      case schema::constraint_kind::max_items: {
        if (n <= c.count) break;
        if (fix && ops->cut != nullptr) {
          ops->cut(native, c.count);
          ctx.note(at, note_kind::fixed,
                   "cut to " + plural(c.count, one, many) + " (was " + std::to_string(n) + "; the first are kept)");
          n = ops->size(native);
          changed = true;
          break;
        }
        const bool exact =
            exact_count(cs, schema::constraint_kind::min_items, schema::constraint_kind::max_items) == c.count;
        const std::string bound = (exact ? "exactly " : "at most ") + plural(c.count, one, many);
        ctx.failed(at, c, issue_code::constraint_violation, bound, plural(n, one, many), "must have " + bound);
        break;
      }
      case schema::constraint_kind::unique_items:
      case schema::constraint_kind::unique_by:
      case schema::constraint_kind::predicate: {
        // A JSON array answers uniqueness here; a C++ value through its custom check.
        const bool json_unique = c.kind != schema::constraint_kind::predicate && json != nullptr;
        const bool native_check = json == nullptr && c.custom && native != nullptr && c.custom->has_native();
        if (!json_unique && !native_check) break;
        std::optional<std::string> r = json_unique ? json_duplicates(*json, c, fix, ctx) : c.custom->check_native(native);
        if (!r) break;
        if (fix && (json_unique || c.custom->fix_native(native))) {
          const std::size_t m = ops->size(native);
          ctx.note(at, note_kind::fixed,
                   "dropped " + plural(n - m, "duplicate", "duplicates") + " (" + *r + "; the first is kept)");
          n = m;
          changed = true;
          break;
        }
        rule_failed(c, std::move(*r), {}, true, ctx, at);
        break;
      }
      default:
        break;
    }
  }
  return changed;
}

}  // namespace

void check_count(const std::vector<schema::constraint>& cs, std::size_t n, bool is_map, std::string_view raw,
                 const void* native, decode_context& ctx, const path_frame* at) {
  (void)raw;
  count_checks(cs, n, is_map, const_cast<void*>(native), nullptr, ctx, at);
}

bool check_count_fix(const std::vector<schema::constraint>& cs, bool is_map, std::string_view raw, void* native,
                     const container_ops& ops, decode_context& ctx, const path_frame* at) {
  (void)raw;
  return count_checks(cs, ops.size(native), is_map, native, &ops, ctx, at);
}

void check_native(const std::vector<schema::constraint>& cs, std::string_view raw, const void* native,
                  decode_context& ctx, const path_frame* at) {
  for (const auto& c : cs)
    if (c.kind == schema::constraint_kind::predicate) custom(c, raw, native, ctx, at);
}

void check_json_rules(const std::vector<schema::constraint>& cs, const boost::json::value& v, std::string_view raw,
                      bool container, decode_context& ctx, const path_frame* at) {
  for (const auto& c : cs) {
    if (c.kind != schema::constraint_kind::predicate || !c.custom || !c.custom->has_json()) continue;
    if (auto r = c.custom->check_json(v)) rule_failed(c, std::move(*r), raw, container, ctx, at);
  }
}

void check_json_value(const std::vector<schema::constraint>& cs, const boost::json::value& v, std::string_view raw,
                      decode_context& ctx, const path_frame* at) {
  if (v.is_string()) check_string(cs, v.get_string(), raw, nullptr, ctx, at);
  else if (v.is_number()) check_number(cs, v.to_number<double>(), raw, nullptr, ctx, at);
  else if (v.is_array()) check_count(cs, v.get_array().size(), false, raw, nullptr, ctx, at);
  else if (v.is_object()) check_count(cs, v.get_object().size(), true, raw, nullptr, ctx, at);
  check_json_rules(cs, v, raw, v.is_array() || v.is_object(), ctx, at);
}

void check_json_list(const schema::type& t, boost::json::value& v, std::string_view raw, bool declared_keys,
                     decode_context& ctx, const path_frame* at) {
  static constexpr container_ops ops{
      [](const void* c) { return static_cast<const boost::json::array*>(c)->size(); },
      [](void* c, std::size_t n) {
        auto& items = *static_cast<boost::json::array*>(c);
        if (n < items.size()) items.resize(n);
      }};
  boost::json::array& a = v.get_array();
  const json_list list{&a, &t.args[0], declared_keys};
  count_checks(t.constraints, a.size(), false, &a, &ops, ctx, at, &list);
  check_json_rules(t.constraints, v, raw, true, ctx, at);
}

namespace {

// unique_items and unique_by on a JSON array: the first two equal items, with the typed
// validators' messages, or nullopt; with `fix`, the later of equal items are dropped.
std::optional<std::string> json_duplicates(const json_list& l, const schema::constraint& c, bool fix,
                                           const decode_context& ctx) {
  namespace json = boost::json;
  std::string key = c.text;  // unique_by: the member's key in the output, and its type
  const schema::type* mtype = nullptr;
  if (const schema::object_def* o = c.kind == schema::constraint_kind::unique_by ? ctx.s.object_of(*l.item) : nullptr) {
    for (const auto& f : o->fields) {
      if (f.name == c.text || f.key == c.text) {
        key = l.declared ? f.name : f.key;
        mtype = &f.type;
        break;
      }
    }
  }
  static const json::value null_value;
  auto part = [&](const json::value& v) -> const json::value& {
    if (c.kind == schema::constraint_kind::unique_items) return v;
    const json::value* m = v.is_object() ? v.get_object().if_contains(key) : nullptr;
    return m != nullptr ? *m : null_value;
  };
  auto equal = [&](const json::value& x, const json::value& y) { return json_equal(part(x), part(y)); };
  json::array& a = *l.items;
  std::optional<std::string> found;
  for (std::size_t i = 0; i < a.size() && !found; ++i) {
    for (std::size_t j = i + 1; j < a.size() && !found; ++j) {
      if (!equal(a[i], a[j])) continue;
      if (c.kind == schema::constraint_kind::unique_items) {
        found = "items must be unique ([" + std::to_string(i) + "] and [" + std::to_string(j) + "] are equal)";
        continue;
      }
      // the value shown as the typed message shows it (a plain scalar member)
      const json::value& x = part(a[i]);
      std::string shown;
      const schema::type* mt = mtype == nullptr ? nullptr : ctx.s.unalias(*mtype);
      if (mt != nullptr && !mtype->nullable && !mt->nullable) {
        if (mt->kind == schema::kind::string && x.is_string()) append_json_string(shown, x.get_string());
        else if (mt->kind == schema::kind::integer && x.is_int64()) shown = std::to_string(x.get_int64());
        else if (mt->kind == schema::kind::integer && x.is_uint64()) shown = std::to_string(x.get_uint64());
        else if (mt->kind == schema::kind::number && x.is_number()) shown = std::to_string(x.to_number<double>());
        else if (mt->kind == schema::kind::boolean && x.is_bool()) shown = std::to_string(x.get_bool() ? 1 : 0);
      }
      found = render_unique_by_duplicate(c.text, shown, i, j);
    }
  }
  if (found && fix) keep_first_of_equal(a, equal);
  return found;
}

}  // namespace

namespace {

// An invariant that does not hold (`r`: its check's message, or empty), on its anchor field.
void invariant_failed(const schema::invariant& inv, std::string&& r, decode_context& ctx, const path_frame* at) {
  path_frame anchor{at, inv.anchor, 0, false};
  const path_frame* where = inv.anchor.empty() ? at : &anchor;
  std::string message = r.empty() ? "must satisfy: " + inv.description : std::move(r);
  ctx.failed(where, inv.on_fail, issue_code::invariant_violation, inv.description, "", std::move(message));
}

}  // namespace

void check_invariants_native(const schema::object_def& def, const void* object, decode_context& ctx,
                             const path_frame* at) {
  for (const auto& inv : def.invariants) {
    if (!inv.check || !inv.check->has_native()) continue;
    if (auto r = inv.check->check_native(object)) invariant_failed(inv, std::move(*r), ctx, at);
  }
}

void check_invariants_json(const schema::object_def& def, const boost::json::value& object, decode_context& ctx,
                           const path_frame* at) {
  for (const auto& inv : def.invariants) {
    if (!inv.check || !inv.check->has_json()) continue;
    if (auto r = inv.check->check_json(object)) invariant_failed(inv, std::move(*r), ctx, at);
  }
}

std::string expected_of(const schema::model& s, const schema::type& t) {
  std::string out;
  switch (t.kind) {
    case schema::kind::any: out = "any JSON value"; break;
    case schema::kind::null: out = "null"; break;
    case schema::kind::boolean: out = "boolean"; break;
    case schema::kind::integer: out = "integer"; break;
    case schema::kind::number: out = "number"; break;
    case schema::kind::string: out = "string"; break;
    case schema::kind::array: out = "array"; break;
    case schema::kind::map: out = "object"; break;
    case schema::kind::literal: out = json_text(t.literal); break;
    case schema::kind::union_:
      for (std::size_t i = 0; i < t.args.size(); ++i) {
        if (i) out += " or ";
        out += expected_of(s, t.args[i]);
      }
      break;
    case schema::kind::ref: {
      const schema::definition* d = s.resolve(t);
      if (d == nullptr) out = t.name;
      else if (d->object()) out = "object (" + d->name + ")";
      else if (const auto* e = d->enumeration()) {
        out = "one of ";
        bool first = true;
        for (const auto& v : e->values) {
          if (v.skip) continue;
          if (!first) out += ", ";
          first = false;
          out += "\"" + v.name + "\"";
        }
      } else if (const auto* a = d->alias()) {
        out = expected_of(s, a->target);
      }
      break;
    }
  }
  if (t.nullable && t.kind != schema::kind::null) out += " or null";
  return out;
}

std::string actual_of(std::string_view raw) { return elide(raw); }

void type_mismatch(decode_context& ctx, const path_frame* at, const schema::type& t, std::string_view raw) {
  std::string expected = expected_of(ctx.s, t);
  std::string message = "expected " + expected;
  ctx.add(at, issue_code::type_mismatch, std::move(expected), actual_of(raw), std::move(message));
}

void missing_field(decode_context& ctx, const path_frame* at, std::string_view) {
  ctx.add(at, issue_code::missing_field, "present", "", "required field is missing");
}

void unknown_field(decode_context& ctx, const path_frame* at) {
  ctx.add(at, issue_code::unknown_field, "no such field", "", "unknown field");
}

void parse_failure(decode_context& ctx, std::string_view text, std::size_t offset, const char* message) {
  const auto [line, column] = line_column(text, offset);
  issue i;
  i.code = issue_code::parse_error;
  i.expected = "valid JSON";
  i.line = line;
  i.column = column;
  if (offset < text.size()) i.actual = elide(text.substr(offset, 24));
  else if (!text.empty()) i.actual = "end of input";
  i.message = "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
  ctx.issues.push_back(std::move(i));
}

void integer_out_of_range(decode_context& ctx, const path_frame* at, const schema::type& t, std::string_view raw) {
  std::string lo;
  std::string hi;
  if (t.is_unsigned) {
    lo = "0";
    hi = t.int_bits >= 64 ? "18446744073709551615" : std::to_string((std::uint64_t{1} << t.int_bits) - 1);
  } else if (t.int_bits >= 64) {
    lo = "-9223372036854775808";
    hi = "9223372036854775807";
  } else {
    lo = std::to_string(-(std::int64_t{1} << (t.int_bits - 1)));
    hi = std::to_string((std::int64_t{1} << (t.int_bits - 1)) - 1);
  }
  std::string expected = "integer between " + lo + " and " + hi;
  ctx.add(at, issue_code::type_mismatch, expected, actual_of(raw), "must be an " + expected);
}

namespace {

// The values an enum's text may name (skipped ones excluded).
void add_enum_values(const schema::enum_def& e, std::vector<boost::json::value>& out) {
  for (const auto& v : e.values)
    if (!v.skip) out.emplace_back(boost::json::string(v.name));
}

bool add_choices(const schema::model& s, const schema::type& t, std::vector<boost::json::value>& out) {
  const schema::type* u = s.unalias(t);
  if (u == nullptr) return false;
  switch (u->kind) {
    case schema::kind::literal:
      if (!u->literal.is_string() && !u->literal.is_bool() && !u->literal.is_number()) return false;
      out.push_back(u->literal);
      return true;
    case schema::kind::ref: {
      const schema::definition* d = s.resolve(*u);
      const schema::enum_def* e = d == nullptr ? nullptr : d->enumeration();
      if (e == nullptr) return false;
      add_enum_values(*e, out);
      return true;
    }
    case schema::kind::union_: {
      bool any = false;
      for (const schema::type& a : u->args) {
        const schema::type* x = s.unalias(a);
        if (x != nullptr && x->kind == schema::kind::null) continue;
        if (!add_choices(s, a, out)) return false;
        any = true;
      }
      return any;
    }
    default: return false;
  }
}

}  // namespace

std::optional<std::vector<boost::json::value>> choice_set(const schema::model& s, const schema::type& t) {
  std::vector<boost::json::value> out;
  if (!add_choices(s, t, out)) return std::nullopt;
  return out;
}

bool choice_kind(const std::vector<boost::json::value>& values, std::string_view raw) noexcept {
  const char c = raw.empty() ? '\0' : raw.front();
  for (const auto& v : values) {
    if (v.is_string() && c == '"') return true;
    if (v.is_bool() && (c == 't' || c == 'f')) return true;
    if (v.is_number() && (c == '-' || (c >= '0' && c <= '9'))) return true;
  }
  return false;
}

void choice_mismatch(decode_context& ctx, const path_frame* at, const std::vector<boost::json::value>& values,
                     std::string_view raw, std::string_view what) {
  const std::string list = one_of_text(values);
  ctx.add(at, issue_code::constraint_violation, std::string(what) + "one of " + list, actual_of(raw),
          std::string(what) + "must be one of " + list);
}

bool integer_fits(const schema::type& t, const boost::json::value& v) noexcept {
  if (t.is_unsigned) {
    if (v.is_int64()) return v.get_int64() >= 0 && (t.int_bits >= 64 || static_cast<std::uint64_t>(v.get_int64()) >> t.int_bits == 0);
    if (v.is_uint64()) return t.int_bits >= 64 || v.get_uint64() >> t.int_bits == 0;
    return false;
  }
  if (v.is_uint64()) return false;  // over INT64_MAX
  if (!v.is_int64()) return false;
  if (t.int_bits >= 64) return true;
  const std::int64_t hi = (std::int64_t{1} << (t.int_bits - 1)) - 1;
  return v.get_int64() >= -hi - 1 && v.get_int64() <= hi;
}

void enum_mismatch(decode_context& ctx, const path_frame* at, const schema::definition& def, std::string_view raw) {
  std::vector<boost::json::value> values;
  if (const auto* e = def.enumeration()) add_enum_values(*e, values);
  choice_mismatch(ctx, at, values, raw);
}

}  // namespace covenant::detail
