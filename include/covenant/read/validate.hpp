// covenant/read/validate.hpp - check a C++ value against its schema model, without any JSON text.
//
//     covenant::issue_list issues = covenant::validate(input);   // every constraint and rule
//
// The same constraints and messages as decoding: a value built in C++ is held to the rules a
// decoded one is. Strings must also be valid UTF-8 (they are sent to the model as JSON), and
// floating-point values must be finite.
#pragma once

#include <boost/pfr.hpp>

#include <charconv>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "covenant/read/detail/decode_context.hpp"
#include "covenant/types/detail/traits.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant {

namespace detail {

/// Whether `s` is well-formed UTF-8.
COVENANT_API bool valid_utf8(std::string_view s) noexcept;
/// `text` with every byte that is not part of valid UTF-8 replaced by U+FFFD.
COVENANT_API std::string repair_utf8(std::string_view text);
/// `text` with control characters and bytes that are not UTF-8 written as \xNN (for one line).
COVENANT_API std::string printable_text(std::string_view text);

/// A short rendering of a string for `issue::actual`: quoted, at most 64 bytes looked at.
struct string_preview {
  char buf[72];
  std::size_t n = 0;
  explicit string_preview(std::string_view s) noexcept {
    buf[n++] = '"';
    const std::size_t take = s.size() < 64 ? s.size() : 64;
    for (std::size_t i = 0; i < take; ++i) buf[n++] = s[i];
    if (s.size() <= 64) buf[n++] = '"';
  }
  [[nodiscard]] std::string_view view() const noexcept { return {buf, n}; }
};

template <class T>
void validate_value(const T& v, const schema::type& node, decode_context& ctx, const path_frame* at);

template <class S, std::size_t... I>
void validate_object(const S& v, const schema::type& node, decode_context& ctx, const path_frame* at,
                     std::index_sequence<I...>) {
  const schema::object_def& def = *std::get_if<schema::object_def>(&ctx.s.defs[node.def].body);
  const std::size_t before = ctx.issues.size();
  (
      [&] {
        path_frame f{at, def.fields[I].key, 0, false};
        validate_value(boost::pfr::get<I>(v), def.fields[I].type, ctx, &f);
      }(),
      ...);
  if (ctx.issues.size() == before) {
    if (!def.invariants.empty()) check_invariants_native(def, &v, ctx, at);
    if (!node.constraints.empty()) check_native(node.constraints, "object", &v, ctx, at);
  }
}

template <class T>
void validate_value(const T& v, const schema::type& node, decode_context& ctx, const path_frame* at) {
  if constexpr (is_optional<T>::value) {
    if (v.has_value()) validate_value(*v, node, ctx, at);
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!node.constraints.empty()) check_native(node.constraints, v ? "true" : "false", &v, ctx, at);
  } else if constexpr (is_integer_v<T>) {
    if (node.constraints.empty()) return;
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    check_number(node.constraints, static_cast<double>(v), std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)),
                 &v, ctx, at);
  } else if constexpr (std::is_floating_point_v<T>) {
    char buf[32];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    const std::string_view raw(buf, static_cast<std::size_t>(r.ptr - buf));
    if (!std::isfinite(v)) {
      ctx.add(at, issue_code::type_mismatch, "finite number", std::string(raw), "must be a finite number");
      return;
    }
    if (!node.constraints.empty()) check_number(node.constraints, static_cast<double>(v), raw, &v, ctx, at);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!valid_utf8(v)) {
      ctx.add(at, issue_code::type_mismatch, "UTF-8 text", "invalid UTF-8", "must be valid UTF-8");
      return;
    }
    if (node.constraints.empty()) return;
    const string_preview preview(v);
    check_string(node.constraints, v, preview.view(), &v, ctx, at);
  } else if constexpr (std::is_same_v<T, std::monostate> || is_json_value_v<T>) {
    // nothing to check
  } else if constexpr (is_media_v<T>) {
    check_media_value(v, ctx, at);
  } else if constexpr (is_vector<T>::value) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      path_frame f{at, {}, i, true};
      validate_value(v[i], node.args[0], ctx, &f);
    }
    if (!node.constraints.empty()) check_count(node.constraints, v.size(), false, "[...]", &v, ctx, at);
  } else if constexpr (is_string_map<T>::value) {
    for (const auto& [k, val] : v) {
      path_frame f{at, k, 0, false};
      validate_value(val, node.args[1], ctx, &f);
    }
    if (!node.constraints.empty()) check_count(node.constraints, v.size(), true, "{...}", &v, ctx, at);
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
          validate_value(alt, node.args[k], ctx, at);
        },
        v);
  } else if constexpr (std::is_enum_v<T>) {
    const schema::definition& def = ctx.s.defs[node.def];
    const auto n = static_cast<std::int64_t>(v);
    for (const auto& ev : std::get_if<schema::enum_def>(&def.body)->values) {
      if (ev.number == n && !ev.skip) {
        if (!node.constraints.empty()) check_native(node.constraints, ev.name, &v, ctx, at);
        return;
      }
    }
    enum_mismatch(ctx, at, def, std::to_string(n));
  } else {
    validate_object(v, node, ctx, at, std::make_index_sequence<field_count_v<T>>{});
  }
}

}  // namespace detail

namespace detail {
/// validate(), its media counted in `tally` (which says whether one was refused).
template <class T>
issue_list validate_input(const T& value, media_tally& tally) {
  const schema::model& s = schema_of<T>();
  issue_list issues;
  const decode_options options;
  decode_context ctx{s, options, issues};
  ctx.media = &tally;
  validate_value(value, s.root, ctx, nullptr);
  return issues;
}
}  // namespace detail

/// Every issue of `value` against the schema model of T (empty when valid). Media fields
/// (covenant/types/media.hpp) are checked against `limits` when given: a provider's accepted
/// types, sizes and counts (engine::media_limits()).
template <class T>
issue_list validate(const T& value, const media_limits* limits = nullptr) {
  media_tally tally{limits};
  return detail::validate_input(value, tally);
}

}  // namespace covenant
