// Reading a model's reply against a runtime schema the way contracts do (read_dynamic), and the
// multi-line JSON writer (json_pretty).
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "covenant/contract.hpp"
#include "covenant/detail/dynamic_read.hpp"
#include "covenant/dynamic.hpp"
#include "covenant/encode.hpp"

namespace covenant {

namespace {

namespace json = boost::json;

void write_scalar(std::string& out, const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: out += "null"; break;
    case json::kind::bool_: out += v.get_bool() ? "true" : "false"; break;
    case json::kind::int64: out += std::to_string(v.get_int64()); break;
    case json::kind::uint64: out += std::to_string(v.get_uint64()); break;
    case json::kind::double_: detail::append_json_number(out, v.get_double()); break;
    case json::kind::string: detail::append_json_string(out, v.get_string()); break;
    default: break;
  }
}

bool empty_container(const json::value& v) {
  return (v.is_array() && v.get_array().empty()) || (v.is_object() && v.get_object().empty());
}

// Whether `p` is one of `paths`.
bool listed(const std::vector<path>& paths, const path& p) {
  return std::any_of(paths.begin(), paths.end(), [&](const path& q) { return q == p; });
}

}  // namespace

namespace detail {

bool shape_coercion(const note& n) noexcept {
  if (n.kind != note_kind::coerced) return false;
  const std::string_view d = n.detail;
  return d == "a single value read as a one-item list" || d == "a one-item list read as its item" ||
         d == "a list read as its JSON text" || d == "an object read as its JSON text" ||
         (d.starts_with("the only member ") && d.ends_with(" read as the value")) ||
         d.starts_with("a single value read as the object's only field ");
}

}  // namespace detail

std::string json_pretty(const boost::json::value& value, std::size_t indent) {
  std::string out;
  struct frame {
    const json::value* v;
    std::size_t next;
  };
  std::vector<frame> stack;
  auto newline = [&] {
    out.push_back('\n');
    out.append(stack.size() * indent, ' ');
  };
  auto open = [&](const json::value& v) {
    if (empty_container(v)) {
      out += v.is_array() ? "[]" : "{}";
    } else if (v.is_array() || v.is_object()) {
      out.push_back(v.is_array() ? '[' : '{');
      stack.push_back({&v, 0});
    } else {
      write_scalar(out, v);
    }
  };
  open(value);
  while (!stack.empty()) {
    frame& f = stack.back();
    const bool is_array = f.v->is_array();
    const std::size_t size = is_array ? f.v->get_array().size() : f.v->get_object().size();
    if (f.next == size) {
      stack.pop_back();
      newline();
      out.push_back(is_array ? ']' : '}');
      continue;
    }
    if (f.next != 0) out.push_back(',');
    const std::size_t i = f.next++;
    newline();
    if (is_array) {
      open(f.v->get_array()[i]);
    } else {
      const auto& kv = *(f.v->get_object().begin() + static_cast<std::ptrdiff_t>(i));
      detail::append_json_string(out, kv.key());
      out += ": ";
      open(kv.value());
    }
  }
  return out;
}

read_result read_dynamic(std::string_view text, const schema::model& m, const read_options& options) {
  lenient_options reading;
  reading.level = options.level;
  reading.partial = options.partial;
  reading.max_depth = options.decode.max_depth;
  note_list notes;
  std::chrono::nanoseconds parse_time{0};
  std::chrono::nanoseconds validate_time{0};
  const output_keys keys = options.keys;
  decoded<boost::json::value> r = detail::read_dynamic_reply(
      text, options.decode, reading, notes, parse_time, validate_time, {},
      [&](std::string_view t, const decode_options& o) {
        dynamic_result d = decode_dynamic(t, m, o, keys);
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
  if (options.partial && result.truncated && !r.issues.empty()) {
    // What only the rest of the stream can settle: fields not written yet in an unfinished object,
    // constraints and rules of unfinished values.
    // Copies: notes are added below, which may move the notes' paths.
    std::vector<path> unfinished;
    for (const note& n : result.notes)
      if (n.kind == note_kind::incomplete) unfinished.push_back(n.path);
    issue_list kept;
    for (issue& i : r.issues) {
      bool pending = false;
      std::string detail;
      if (i.code == issue_code::missing_field && !i.path.empty()) {
        path parent = i.path;
        parent.pop();
        pending = listed(unfinished, parent);
        detail = "required field not written yet";
      } else if (i.code == issue_code::constraint_violation || i.code == issue_code::invariant_violation) {
        pending = listed(unfinished, i.path);
        detail = "unfinished value, not checked yet: " + i.message;
      }
      if (pending) {
        note n;
        n.kind = note_kind::incomplete;
        n.path = std::move(i.path);
        n.detail = std::move(detail);
        result.notes.push_back(std::move(n));
      } else {
        kept.push_back(std::move(i));
      }
    }
    r.issues = std::move(kept);
  }
  result.issues = std::move(r.issues);
  if (result.issues.empty() && r.value) result.value = std::move(*r.value);
  return result;
}

}  // namespace covenant
