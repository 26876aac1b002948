// covenant/types/encode.hpp - a C++ value as JSON, with the keys and spellings of its schema model.
//
//     std::string text = covenant::to_json(answer);          // compact JSON
//     boost::json::value v = covenant::to_value(answer);
//
// Empty std::optional fields are omitted; decode(to_json(x)) gives x back. Non-finite floating
// point values, which JSON cannot represent, are written as null.
#pragma once

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/pfr.hpp>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "covenant/types/detail/traits.hpp"
#include "covenant/types/media.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant {

/// Compact JSON text of a value, numbers in shortest form (0.87 rather than 8.7E-1); non-finite
/// doubles are written as null.
COVENANT_API std::string json_text(const boost::json::value& value);

/// The same JSON written over several lines: each array element and object member on its own
/// line, indented by `indent` spaces per level, `"key": value`; empty arrays and objects stay
/// `[]` and `{}`. No trailing newline. Values of any depth are written without recursion.
COVENANT_API std::string json_pretty(const boost::json::value& value, std::size_t indent = 2);

namespace detail {

/// Appends `s` as a JSON string literal (quotes included).
COVENANT_API void append_json_string(std::string& out, std::string_view s);
/// Appends the shortest representation that reads back as the same double.
COVENANT_API void append_json_number(std::string& out, double v);

/// Where the media of an input go while its message is written (covenant/types/media.hpp): each
/// media field is written as its reference ("<image 1>") and the media appended to `parts`. A
/// reference read back from the model ("<image 2>" in a repaired input) stands for the media of
/// `originals` it names.
struct media_sink {
  std::vector<media>* parts = nullptr;
  const std::vector<media>* originals = nullptr;
  media_numbering numbering{};
};

/// Writes a media field: with a sink, its reference (the media goes to the sink); without one, its
/// URL, its file's path, or a description ("<image image/png 1234 bytes sha256:...>"), never its bytes.
COVENANT_API void write_media(std::string& out, const media& m, media_sink* sink);

template <class T>
void write_value(std::string& out, const T& v, const schema::type& node, const schema::model& s,
                 media_sink* media = nullptr);

template <class S, std::size_t... I>
void write_object(std::string& out, const S& v, const schema::object_def& def, const schema::model& s,
                  media_sink* media, std::index_sequence<I...>) {
  out.push_back('{');
  bool first = true;
  (
      [&] {
        const auto& member = boost::pfr::get<I>(v);
        if constexpr (is_optional<std::decay_t<decltype(member)>>::value) {
          if (!member.has_value()) return;
        }
        if (!first) out.push_back(',');
        first = false;
        append_json_string(out, def.fields[I].key);
        out.push_back(':');
        write_value(out, member, def.fields[I].type, s, media);
      }(),
      ...);
  out.push_back('}');
}

template <class T>
void write_value(std::string& out, const T& v, const schema::type& node, const schema::model& s, media_sink* media) {
  if constexpr (is_optional<T>::value) {
    if (v.has_value()) write_value(out, *v, node, s, media);
    else out += "null";
  } else if constexpr (std::is_same_v<T, bool>) {
    out += v ? "true" : "false";
  } else if constexpr (is_integer_v<T>) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, static_cast<std::size_t>(r.ptr - buf));
  } else if constexpr (std::is_floating_point_v<T>) {
    append_json_number(out, static_cast<double>(v));
  } else if constexpr (std::is_same_v<T, std::string>) {
    append_json_string(out, v);
  } else if constexpr (std::is_same_v<T, std::monostate>) {
    out += "null";
  } else if constexpr (is_json_value_v<T>) {
    out += boost::json::serialize(v);
  } else if constexpr (is_media_v<T>) {
    write_media(out, v, media);
  } else if constexpr (is_vector<T>::value) {
    out.push_back('[');
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) out.push_back(',');
      write_value(out, v[i], node.args[0], s, media);
    }
    out.push_back(']');
  } else if constexpr (is_string_map<T>::value) {
    out.push_back('{');
    bool first = true;
    for (const auto& [k, val] : v) {
      if (!first) out.push_back(',');
      first = false;
      append_json_string(out, k);
      out.push_back(':');
      write_value(out, val, node.args[1], s, media);
    }
    out.push_back('}');
  } else if constexpr (is_variant<T>::value) {
    std::visit(
        [&](const auto& alt) {
          using A = std::decay_t<decltype(alt)>;
          constexpr std::size_t k = [] {
            std::size_t idx = 0;
            [&]<std::size_t... K>(std::index_sequence<K...>) {
              (void)((std::is_same_v<std::variant_alternative_t<K, T>, A> ? (idx = K, true) : false) || ...);
            }(std::make_index_sequence<std::variant_size_v<T>>{});
            return idx;
          }();
          write_value(out, alt, node.args[k], s, media);
        },
        v);
  } else if constexpr (std::is_enum_v<T>) {
    const auto& values = std::get<schema::enum_def>(s.defs[node.def].body).values;
    const auto n = static_cast<std::int64_t>(v);
    for (const auto& ev : values) {
      if (ev.number == n) {
        append_json_string(out, ev.name);
        return;
      }
    }
    out += "null";  // not a named enumerator
  } else {
    const auto& def = std::get<schema::object_def>(s.defs[node.def].body);
    write_object(out, v, def, s, media, std::make_index_sequence<field_count_v<T>>{});
  }
}

template <class F>
boost::json::value default_value_of(const F& v, const schema::type& node, const schema::model& s) {
  std::string text;
  write_value(text, v, node, s);
  return boost::json::parse(text);
}

}  // namespace detail

/// Appends the JSON of `value` to `out`.
template <class T>
void to_json(const T& value, std::string& out) {
  const schema::model& s = schema_of<T>();
  detail::write_value(out, value, s.root, s);
}

namespace detail {
/// The JSON of an input with its media written as references and collected in `sink`.
template <class T>
void write_input_json(const T& value, std::string& out, media_sink& sink) {
  const schema::model& s = schema_of<T>();
  write_value(out, value, s.root, s, &sink);
}
}  // namespace detail

/// Compact JSON of `value`.
template <class T>
std::string to_json(const T& value) {
  std::string out;
  to_json(value, out);
  return out;
}

/// `value` as a boost::json::value.
template <class T>
boost::json::value to_value(const T& value) {
  return boost::json::parse(to_json(value));
}

}  // namespace covenant
