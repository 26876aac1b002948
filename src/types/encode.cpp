// JSON text: strings and numbers (the typed writer's pieces), and any boost::json::value written
// compact (json_text) or over several lines (json_pretty).
#include "covenant/types/encode.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <array>
#include <charconv>
#include <cmath>
#include <vector>

namespace covenant::detail {

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  static constexpr auto plain = [] {
    std::array<bool, 256> t{};
    for (int c = 0x20; c < 256; ++c) t[static_cast<std::size_t>(c)] = c != '"' && c != '\\';
    return t;
  }();
  std::size_t run = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (plain[c]) continue;
    out.append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        out += "\\u00";
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 0xF]);
    }
  }
  out.append(s.data() + run, s.size() - run);
  out.push_back('"');
}

void append_json_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

void write_media(std::string& out, const media& m, media_sink* sink) {
  if (sink != nullptr && sink->parts != nullptr) {
    // A reference the model wrote back ("<image 2>") stands for the call's own media of that number.
    const media* original = sink->originals != nullptr ? m.resolve(*sink->originals) : nullptr;
    const media& part = original != nullptr ? *original : m;
    sink->parts->push_back(part);
    append_json_string(out, media_reference(part.kind(), sink->numbering.next(part.kind())));
    return;
  }
  if (m.is_url()) return append_json_string(out, m.url());
  if (!m.path().empty()) return append_json_string(out, m.path());
  if (m.reference() != 0)
    return append_json_string(out, media_reference(m.kind(), m.reference()));
  if (m.empty()) return out.append("null"), void();
  std::string text(1, '<');
  text.append(to_string(m.kind())).append(" ").append(m.media_type()).append(" ").append(std::to_string(m.size()));
  text.append(" bytes sha256:").append(m.sha256()).append(">");
  append_json_string(out, text);
}

}  // namespace covenant::detail

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

// Iterative, so values of any depth are written without exhausting the stack.
void write_json(std::string& out, const json::value& root) {
  struct frame {
    const json::value* v;
    std::size_t next;
  };
  std::vector<frame> stack;
  auto open = [&](const json::value& v) {
    if (v.is_array()) {
      out.push_back('[');
      stack.push_back({&v, 0});
    } else if (v.is_object()) {
      out.push_back('{');
      stack.push_back({&v, 0});
    } else {
      write_scalar(out, v);
    }
  };
  open(root);
  while (!stack.empty()) {
    frame& f = stack.back();
    if (f.v->is_array()) {
      const auto& a = f.v->get_array();
      if (f.next == a.size()) {
        out.push_back(']');
        stack.pop_back();
        continue;
      }
      if (f.next != 0) out.push_back(',');
      const json::value& child = a[f.next++];
      open(child);
    } else {
      const auto& o = f.v->get_object();
      if (f.next == o.size()) {
        out.push_back('}');
        stack.pop_back();
        continue;
      }
      if (f.next != 0) out.push_back(',');
      const auto& kv = *(o.begin() + static_cast<std::ptrdiff_t>(f.next++));
      detail::append_json_string(out, kv.key());
      out.push_back(':');
      open(kv.value());
    }
  }
}

}  // namespace

std::string json_text(const boost::json::value& value) {
  std::string out;
  write_json(out, value);
  return out;
}

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

}  // namespace covenant
