#include "covenant/types/validators.hpp"

#include "covenant/types/encode.hpp"

namespace covenant::detail {

void add_number_constraint(schema::type& t, schema::constraint_kind k, double v) {
  schema::constraint& c = t.constraints.emplace_back();
  c.kind = k;
  c.number = v;
}

void add_count_constraint(schema::type& t, schema::constraint_kind k, std::size_t n) {
  schema::constraint& c = t.constraints.emplace_back();
  c.kind = k;
  c.count = n;
}

void add_format_constraint(schema::type& t, std::string_view format) {
  schema::constraint& c = t.constraints.emplace_back();
  c.kind = schema::constraint_kind::format;
  c.text = std::string(format);
}

schema::constraint& add_constraint(schema::type& t, schema::constraint_kind k) {
  schema::constraint& c = t.constraints.emplace_back();
  c.kind = k;
  return c;
}

std::string render_unique_by_duplicate(std::string_view key, std::string_view value_json, std::size_t first,
                                       std::size_t second) {
  std::string out = std::string(key) + " values must be unique (";
  if (!value_json.empty()) {
    out += value_json;
    out += " appears at ";
  } else {
    out += "duplicate at ";
  }
  // Appended piece by piece: "[" + std::to_string(first) makes GCC 12 report a false -Wrestrict
  // in Release builds.
  out += '[';
  out += std::to_string(first);
  out += "] and [";
  out += std::to_string(second);
  out += "])";
  return out;
}

std::string encode_scalar_for_message(const std::string& v) {
  std::string out;
  append_json_string(out, v);
  return out;
}

}  // namespace covenant::detail
