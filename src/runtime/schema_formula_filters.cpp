// The formulas' filters (length, lower, ..., sum, map, round, unique) and their evaluation errors.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "covenant/types/formats.hpp"
#include "covenant/types/detail/utf8.hpp"
#include "covenant/types/json_equal.hpp"
#include "schema_formula_impl.hpp"

namespace covenant::detail::formula_impl {

namespace {

std::string trimmed(std::string_view s) {
  std::size_t b = 0;
  std::size_t e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\n' || s[e - 1] == '\r')) --e;
  return std::string(s.substr(b, e - b));
}

// How an evaluation error names a value: its kind, and the value itself when it is short.
std::string describe_value(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return v.get_bool() ? "a boolean (true)" : "a boolean (false)";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "a number";
    case json::kind::string: {
      std::string_view text(v.get_string().data(), v.get_string().size());
      std::string out = "a string (\"";
      if (text.size() <= 40) {
        out += text;
      } else {
        std::size_t cut = 40;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // a whole character
        out += text.substr(0, cut);
        out += "...";
      }
      return out + "\")";
    }
    case json::kind::array: return "a list";
    case json::kind::object: return "an object";
  }
  return "a value";
}

// The member at `path` ("amount", "price.amount", "lines.0") of `item`, as Jinja's attribute
// lookup reads it; nullptr when there is none.
const json::value* attribute_of(const json::value& item, std::string_view path) {
  const json::value* cur = &item;
  for (;;) {
    const std::size_t dot = path.find('.');
    const std::string_view part = path.substr(0, dot);
    if (const json::object* o = cur->if_object()) {
      cur = o->if_contains(part);
    } else if (const json::array* a = cur->if_array()) {
      std::size_t i = 0;
      const auto r = std::from_chars(part.data(), part.data() + part.size(), i);
      cur = r.ec == std::errc() && r.ptr == part.data() + part.size() && i < a->size() ? &(*a)[i] : nullptr;
    } else {
      cur = nullptr;
    }
    if (cur == nullptr || dot == std::string_view::npos) return cur;
    path.remove_prefix(dot + 1);
  }
}

std::string item_name(std::size_t i) { return "item [" + std::to_string(i) + "]"; }

[[noreturn]] void no_attribute(std::string_view filter, std::size_t i, const json::value& item, std::string_view path) {
  std::string message = std::string(filter) + ": " + item_name(i);
  if (!item.is_object() && !item.is_array()) message += " (" + describe_value(item) + ")";
  throw evaluation_error(message + " has no attribute \"" + std::string(path) + "\"");
}

bool to_int64(const json::value& v, std::int64_t& out) {
  if (v.is_int64()) {
    out = v.get_int64();
    return true;
  }
  if (v.is_uint64() && v.get_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    out = static_cast<std::int64_t>(v.get_uint64());
    return true;
  }
  return false;
}

// start + the terms: an integer when every one is an integer and the total fits in 64 bits,
// otherwise a float added up in order with Neumaier's compensation (as Python's sum since 3.12).
json::value sum_of(const json::value& start, const std::vector<const json::value*>& terms) {
  bool floats = start.is_double();
  for (const json::value* t : terms) floats = floats || t->is_double();
  if (!floats) {
    std::int64_t total = 0;
    bool exact = to_int64(start, total);
    for (const json::value* t : terms) {
      std::int64_t x = 0;
      if (!exact || !to_int64(*t, x) || __builtin_add_overflow(total, x, &total)) {
        exact = false;
        break;
      }
    }
    if (exact) return total;
  }
  double s = as_double(start);
  double c = 0;
  for (const json::value* t : terms) {
    const double x = as_double(*t);
    const double u = s + x;
    c += std::fabs(s) >= std::fabs(x) ? (s - u) + x : (x - u) + s;
    s = u;
  }
  if (!std::isfinite(s)) return json::value(s);
  return json::value(s + c);
}

// Python's round(x, digits): the nearest value with that many decimals, halves (of the exact
// binary value) to even.
double round_common(double x, std::int64_t digits) {
  if (!std::isfinite(x) || std::fabs(x) >= 4503599627370496.0) return x;  // 2^52 and up: whole numbers
  char buf[64];
  const auto w = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, static_cast<int>(digits));
  double out = x;
  if (w.ec == std::errc()) std::from_chars(buf, w.ptr, out);
  return out;
}

}  // namespace

json::value apply_filter(const node& n, const json::value& self) {
  json::value v = eval(n.kids[0], self);
  const std::string& f = n.name;
  if (f == "length") {
    if (v.is_string()) return static_cast<std::int64_t>(code_points(v.get_string()));
    if (v.is_array()) return static_cast<std::int64_t>(v.get_array().size());
    if (v.is_object()) return static_cast<std::int64_t>(v.get_object().size());
    return nullptr;
  }
  if (f == "lower" || f == "upper") {
    if (!v.is_string()) return nullptr;
    std::string s(v.get_string());
    for (char& c : s) {
      if (f == "lower" && c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      if (f == "upper" && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    }
    return json::string(s);
  }
  if (f == "trim") return v.is_string() ? json::value(json::string(trimmed(v.get_string()))) : json::value(nullptr);
  if (f == "abs") {
    if (v.is_int64()) return v.get_int64() < 0 ? number_result(-as_double(v)) : v;
    if (is_number(v)) return json::value(std::fabs(as_double(v)));
    return nullptr;
  }
  if (f == "int") {
    if (is_number(v)) return number_result(std::trunc(as_double(v)));
    if (v.is_string()) {
      std::int64_t i = 0;
      const std::string s = trimmed(v.get_string());
      const auto r = std::from_chars(s.data(), s.data() + s.size(), i);
      if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return i;
    }
    return nullptr;
  }
  if (f == "float") {
    if (is_number(v)) return json::value(as_double(v));
    if (v.is_string()) {
      double d = 0;
      const std::string s = trimmed(v.get_string());
      const auto r = std::from_chars(s.data(), s.data() + s.size(), d);
      if (r.ec == std::errc() && r.ptr == s.data() + s.size()) return d;
    }
    return nullptr;
  }
  if (f == "first" || f == "last") {
    if (v.is_array() && !v.get_array().empty()) return f == "first" ? v.get_array().front() : v.get_array().back();
    return nullptr;
  }
  if (f == "regex_match") {
    if (!v.is_string() || !n.regex) return false;
    return schema::pattern_matches(*n.regex, v.get_string());
  }
  if (f == "format") {
    if (!v.is_string()) return false;
    const json::string& name = n.kids[1].value.get_string();
    const json::string& text = v.get_string();
    return formats::matches_format(std::string_view(name.data(), name.size()), std::string_view(text.data(), text.size()));
  }
  if (f == "sum") {
    if (!v.is_array()) throw evaluation_error("sum: expected a list, got " + describe_value(v));
    const json::string* attribute = n.kids[1].value.if_string();
    const std::string_view path = attribute != nullptr ? std::string_view(attribute->data(), attribute->size()) : "";
    const json::value start = eval(n.kids[2], self);
    if (!is_number(start)) throw evaluation_error("sum: start must be a number, got " + describe_value(start));
    std::vector<const json::value*> terms;
    terms.reserve(v.get_array().size());
    std::size_t i = 0;
    for (const json::value& item : v.get_array()) {
      const json::value* x = &item;
      if (attribute != nullptr) {
        x = attribute_of(item, path);
        if (x == nullptr) no_attribute("sum", i, item, path);
      }
      if (!is_number(*x)) {
        throw evaluation_error("sum: " + item_name(i) + (attribute != nullptr ? "." + std::string(path) : "") + " is " +
                               describe_value(*x) + ", not a number");
      }
      terms.push_back(x);
      ++i;
    }
    return sum_of(start, terms);
  }
  if (f == "map") {
    if (!v.is_array()) throw evaluation_error("map: expected a list, got " + describe_value(v));
    json::array out;
    out.reserve(v.get_array().size());
    if (n.kids[1].o == op::filter) {  // map("filter", ...): the filter with `this` bound to each item
      for (const json::value& item : v.get_array()) out.push_back(eval(n.kids[1], item));
      return out;
    }
    const json::string& attribute = n.kids[1].value.get_string();
    const std::string_view path(attribute.data(), attribute.size());
    const json::value fallback = eval(n.kids[2], self);
    std::size_t i = 0;
    for (const json::value& item : v.get_array()) {
      if (const json::value* x = attribute_of(item, path)) out.push_back(*x);
      else if (!fallback.is_null()) out.push_back(fallback);
      else no_attribute("map", i, item, path);
      ++i;
    }
    return out;
  }
  if (f == "round") {
    if (!is_number(v)) return nullptr;
    const std::int64_t digits = n.kids[1].value.get_int64();
    const json::string& method = n.kids[2].value.get_string();
    if (method == "common") return v.is_double() ? json::value(round_common(v.get_double(), digits)) : v;
    const double scale = std::pow(10.0, static_cast<double>(digits));
    const double x = as_double(v) * scale;
    return json::value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
  }
  if (f == "unique") {
    if (!v.is_array()) return nullptr;
    const bool by_member = n.kids.size() == 2;
    json::array out;
    static const json::value null_value;
    // The member of an item (an item without it, or not an object, has null there).
    auto member_of = [&](const json::value& item) -> const json::value& {
      if (!by_member) return item;
      const json::string& member = n.kids[1].value.get_string();
      const json::object* o = item.if_object();
      const json::value* m = o != nullptr ? o->if_contains(std::string_view(member.data(), member.size())) : nullptr;
      return m != nullptr ? *m : null_value;
    };
    for (const json::value& item : v.get_array()) {
      bool seen = false;
      for (const json::value& kept : out) {
        if (json_equal(member_of(kept), member_of(item))) {
          seen = true;
          break;
        }
      }
      if (!seen) out.push_back(item);
    }
    return out;
  }
  return nullptr;
}

}  // namespace covenant::detail::formula_impl
