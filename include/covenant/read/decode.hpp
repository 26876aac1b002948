// covenant/decode.hpp - JSON text (or a boost::json::value) into a C++ type, with every issue.
// try_decode<T>(text) and try_from_value<T>(boost::json::value) return the issues; decode<T> and
// from_value<T> return the value and throw covenant::decode_error carrying them.
//
//     auto r = covenant::try_decode<FinalAnswer>(text);
//     if (!r) std::cerr << covenant::render_feedback(r.issues);   // one line per issue
//     else use(*r.value);
//
//     FinalAnswer a = covenant::decode<FinalAnswer>(text);        // or throws decode_error
//
// Decoding reads the text straight into the struct (no intermediate DOM), checks every
// constraint and cross-field rule of the schema model as it goes, and collects every issue with
// its path instead of stopping at the first. Malformed JSON yields one parse_error issue with
// line and column; the try_ forms never throw for bad input.
#pragma once

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/pfr.hpp>

#include <array>
#include <bitset>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "covenant/read/detail/coerce.hpp"
#include "covenant/read/detail/decode_context.hpp"
#include "covenant/read/detail/json_reader.hpp"
#include "covenant/read/detail/read_members.hpp"
#include "covenant/read/detail/read_union.hpp"
#include "covenant/types/detail/traits.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/schema_of.hpp"

namespace covenant {

/// Result of decoding: the value when there were no issues, and every issue.
template <class T>
struct decoded {
  std::optional<T> value;
  issue_list issues;
  note_list notes;  ///< coercions applied (decode_options::coerce)

  [[nodiscard]] bool ok() const noexcept { return issues.empty(); }
  explicit operator bool() const noexcept { return ok(); }
};

namespace detail {

template <class T>
COVENANT_ALWAYS_INLINE void read_value(json_reader& r, T& out, const schema::type& node, decode_context& ctx,
                                       const path_frame* at);
// read_value out of line: one copy per type, for the readers off the decoder's fast path (members
// out of order, reshaping rules, union alternatives).
template <class T>
COVENANT_NOINLINE void read_value_cold(json_reader& r, T& out, const schema::type& node, decode_context& ctx,
                                       const path_frame* at) {
  read_value(r, out, node, ctx, at);
}
template <class S>
struct object_codec;

inline std::string_view span_from(const json_reader& r, const char* start) {
  return {start, static_cast<std::size_t>(r.position() - start)};
}

// Skips the value at the reader and reports a type mismatch for it.
inline void mismatch_and_skip(json_reader& r, const schema::type& node, decode_context& ctx, const path_frame* at) {
  std::string_view raw;
  if (r.skip_value(raw)) type_mismatch(ctx, at, node, raw);
}

// The value `out` as a reshaping rule (coerce.hpp: read_unwrapped, read_json_in_string) reads it.
template <class T>
reshape_target value_target(T& out) {
  reshape_target t;
  t.self = &out;
  t.read = [](void* self, json_reader& r, const schema::type& n, decode_context& c, const path_frame* a) {
    read_value_cold(r, *static_cast<T*>(self), n, c, a);
  };
  return t;
}

// The constraints of a number that failed the inline screen (or has others), with fixes
// (on-fail action fix) written back. `native`: C++ predicates see the value (false for a JSON
// target, whose schema's C++ checks never run).
template <class N>
COVENANT_NOINLINE void number_constraints(N& out, const schema::type& node, std::string_view raw, decode_context& ctx,
                                          const path_frame* at, bool native = true) {
  double v = static_cast<double>(out);
  if (check_number_fix(node, v, raw, native ? &out : nullptr, ctx, at)) out = static_cast<N>(v);  // fits: checked
}

// The constraints of a string, with fixes written back.
COVENANT_NOINLINE inline void string_constraints(std::string& out, const schema::type& node, std::string_view raw,
                                                 decode_context& ctx, const path_frame* at, bool native = true) {
  std::string fixed;
  if (check_string_fix(node.constraints, out, raw, native ? &out : nullptr, ctx, at, fixed)) out = std::move(fixed);
}

// Coerce mode, an object or a list where a string is wanted: read as the text it was written as
// in the reply (written_text). Out of line, off the decoder's fast path.
COVENANT_NOINLINE inline void read_written_text(json_reader& r, std::string& out, const schema::type& node,
                                                decode_context& ctx, const path_frame* at, bool native = true) {
  std::string_view raw;
  if (!r.skip_value(raw)) return;
  std::string_view text;
  if (!written_text(ctx, raw, text)) return type_mismatch(ctx, at, node, raw);
  out.assign(text.data(), text.size());
  ctx.note(at, note_kind::coerced, std::string(written_text_note(raw)));
  if (!node.constraints.empty()) string_constraints(out, node, text, ctx, at, native);
}

// The constraints of a list or map, with fixes applied to it.
template <class C>
COVENANT_NOINLINE void count_constraints(C& out, const schema::type& node, std::string_view raw, decode_context& ctx,
                                         const path_frame* at) {
  static constexpr container_ops ops{
      [](const void* c) { return static_cast<const C*>(c)->size(); },
      [](void* c, std::size_t n) {
        if constexpr (is_vector<C>::value) {
          auto& v = *static_cast<C*>(c);
          if (n < v.size()) v.erase(v.begin() + static_cast<std::ptrdiff_t>(n), v.end());
        } else {
          (void)c, (void)n;
        }
      }};
  if constexpr (is_vector<C>::value) check_count_fix(node.constraints, false, raw, &out, ops, ctx, at);
  else check_count_fix(node.constraints, true, raw, &out, container_ops{ops.size, nullptr}, ctx, at);
}

// An object or a map expected, something else written: in coerce mode a string holding its JSON
// text is read as it, and an object the only item of a one-item list (read_unwrapped); anything
// else is a type mismatch. Out of line, off the decoder's fast path.
template <class T>
COVENANT_NOINLINE void not_a_container(json_reader& r, T& out, const schema::type& node, decode_context& ctx,
                                       const path_frame* at) {
  if (ctx.opts.coerce) {
    const char c = r.peek();
    if (c == '"' && read_json_in_string(r, value_target(out), node, ctx, at)) return;
    if constexpr (!is_string_map<T>::value) {
      if (c == '[' && (read_unwrapped(r, object_codec<T>::target(out), node, ctx, at) || r.failed())) return;
    }
  }
  mismatch_and_skip(r, node, ctx, at);
}

// A number, boolean or enum expected, and a value whose first character its reader does not take:
// in coerce mode a one-item list or a one-member object holding it (read_unwrapped); else a type
// mismatch. `native` false: the dynamic decoder, which tried the shapes itself. Out of line.
template <class T>
COVENANT_NOINLINE void other_shape(json_reader& r, T& out, const schema::type& node, decode_context& ctx,
                                   const path_frame* at, bool native) {
  const char c = r.peek();
  if (native && ctx.opts.coerce && (c == '[' || c == '{') && (read_unwrapped(r, value_target(out), node, ctx, at) || r.failed()))
    return;
  mismatch_and_skip(r, node, ctx, at);
}

// Coerce mode, a list expected and neither a list nor null written: a string holding the JSON
// text of a list is read as that list; any other single value as a one-item list.
template <class V>
COVENANT_NOINLINE void read_list_coerced(json_reader& r, V& out, const schema::type& node, decode_context& ctx,
                                         const path_frame* at) {
  if (r.peek() == '"' && read_json_in_string(r, value_target(out), node, ctx, at)) return;
  out.resize(1);
  struct item {
    V& out;
    const schema::type& node;
    void read(std::size_t, json_reader& r, decode_context& ctx, const path_frame* f) { read_value_cold(r, out[0], node, ctx, f); }
  } t{out, node.args[0]};
  if (!read_one_item(r, t, ctx, at)) return;
  if (!node.constraints.empty()) count_constraints(out, node, "[...]", ctx, at);
}

template <class I>
COVENANT_ALWAYS_INLINE bool integer_from_token(const number_token& tok, I& out) noexcept {
  if (tok.integral) {
    const char* q = tok.begin + (tok.negative ? 1 : 0);
    const std::size_t digits = static_cast<std::size_t>(tok.end - q);
    if (digits > 20) return false;
    std::uint64_t mag = 0;
    const char* fast_end = digits > 19 ? q + 19 : tok.end;  // 19 digits never overflow
    for (; q < fast_end; ++q) mag = mag * 10 + static_cast<std::uint64_t>(*q - '0');
    if (q < tok.end) {
      const auto d = static_cast<std::uint64_t>(*q - '0');
      if (mag > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return false;
      mag = mag * 10 + d;
    }
    if constexpr (std::is_signed_v<I>) {
      constexpr auto max_pos = static_cast<std::uint64_t>(std::numeric_limits<I>::max());
      if (tok.negative) {
        if (mag > max_pos + 1) return false;
        out = mag == max_pos + 1 ? std::numeric_limits<I>::min() : static_cast<I>(-static_cast<std::int64_t>(mag));
      } else {
        if (mag > max_pos) return false;
        out = static_cast<I>(mag);
      }
    } else {
      if (tok.negative && mag != 0) return false;
      if (mag > static_cast<std::uint64_t>(std::numeric_limits<I>::max())) return false;
      out = static_cast<I>(mag);
    }
    return true;
  }
  double d = 0;
  const auto res = std::from_chars(tok.begin, tok.end, d);
  if (res.ec != std::errc() || !std::isfinite(d) || std::trunc(d) != d) return false;
  if (d < static_cast<double>(std::numeric_limits<I>::min()) || d >= static_cast<double>(std::numeric_limits<I>::max()) + 1.0)
    return false;
  out = static_cast<I>(d);
  return true;
}

// Coerce mode: a number written as a JSON string. Returns true when handled (read or reported).
template <class N>
bool number_from_string(json_reader& r, N& out, const schema::type& node, decode_context& ctx, const path_frame* at,
                        bool native = true) {
  const char* start = r.position();
  std::string scratch;
  std::string_view text;
  if (!r.read_string_view(text, scratch)) return true;
  const std::string_view raw = span_from(r, start);
  double v = 0;
  if (!number_from_text(text, std::is_floating_point_v<N>, v)) {
    type_mismatch(ctx, at, node, raw);
    return true;
  }
  if constexpr (std::is_floating_point_v<N>) {
    out = static_cast<N>(v);
  } else {
    if (std::trunc(v) != v || v < static_cast<double>(std::numeric_limits<N>::min()) ||
        v >= static_cast<double>(std::numeric_limits<N>::max()) + 1.0) {
      if (std::trunc(v) != v) type_mismatch(ctx, at, node, raw);
      else integer_out_of_range(ctx, at, node, raw);
      return true;
    }
    out = static_cast<N>(v);
  }
  ctx.note(at, note_kind::coerced, std::string(raw) + " read as a number");
  if (!node.constraints.empty()) number_constraints(out, node, raw, ctx, at, native);
  return true;
}

// The usual integer: at most 18 digits (no overflow in 64 bits) without a leading zero, not
// followed by a fraction or an exponent, within the range of I. Read in one pass; the reader is
// moved past it. Returns false without moving the reader otherwise (the general path decides).
template <class I>
COVENANT_ALWAYS_INLINE bool short_integer(json_reader& r, I& out) noexcept {
  const char* q = r.position();
  const char* const end = r.text_end();
  const bool negative = *q == '-';
  if (negative) ++q;
  const char* const digits = q;
  std::uint64_t mag = 0;
  while (q < end && static_cast<unsigned>(*q - '0') <= 9) {
    mag = mag * 10 + static_cast<std::uint64_t>(*q - '0');
    ++q;
  }
  const auto n = static_cast<std::size_t>(q - digits);
  if (n == 0 || n > 18 || (n > 1 && *digits == '0')) return false;
  if (q < end && (*q == '.' || *q == 'e' || *q == 'E')) return false;
  if constexpr (std::is_signed_v<I>) {
    constexpr auto max_pos = static_cast<std::uint64_t>(std::numeric_limits<I>::max());
    if (mag > max_pos + (negative ? 1 : 0)) return false;
    out = negative ? static_cast<I>(-static_cast<std::int64_t>(mag)) : static_cast<I>(mag);
  } else {
    if ((negative && mag != 0) || mag > static_cast<std::uint64_t>(std::numeric_limits<I>::max())) return false;
    out = static_cast<I>(mag);
  }
  r.rewind(q);
  return true;
}

// The scalar readers below serve both targets: the C++ value, and (native = false: the schema's
// C++ predicates never run) a runtime schema's JSON value, which the dynamic decoder reads through
// the C++ type of the node's width.
template <class I>
COVENANT_ALWAYS_INLINE void read_integer(json_reader& r, I& out, const schema::type& node, decode_context& ctx,
                                         const path_frame* at, bool native = true) {
  const char c = r.peek();
  if (c == '"' && ctx.opts.coerce && number_from_string(r, out, node, ctx, at, native)) return;
  if (c != '-' && (c < '0' || c > '9')) return other_shape(r, out, node, ctx, at, native);
  if constexpr (sizeof(I) <= sizeof(std::int64_t)) {
    const char* start = r.position();
    if (short_integer(r, out)) {
      if (!number_within_bounds(node.constraints, static_cast<double>(out)))
        number_constraints(out, node, span_from(r, start), ctx, at, native);
      return;
    }
  }
  number_token tok;
  if (!r.read_number(tok)) return;
  if (!integer_from_token(tok, out)) {
    if (tok.integral) {
      integer_out_of_range(ctx, at, node, tok.text());
    } else {
      double d = 0;
      const auto res = std::from_chars(tok.begin, tok.end, d);
      if (res.ec == std::errc() && std::isfinite(d) && std::trunc(d) == d) integer_out_of_range(ctx, at, node, tok.text());
      else type_mismatch(ctx, at, node, tok.text());
    }
    return;
  }
  if (!number_within_bounds(node.constraints, static_cast<double>(out)))
    number_constraints(out, node, tok.text(), ctx, at, native);
}

// Exact conversion of short decimals (at most 15 significant digits and a power of ten up to
// 22: both the digits and the power are exact doubles, so one division or multiplication rounds
// correctly). Returns false when the slow path (std::from_chars) is needed.
COVENANT_ALWAYS_INLINE bool fast_decimal(const number_token& tok, double& out) noexcept {
  static constexpr double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char* q = tok.begin + (tok.negative ? 1 : 0);
  std::uint64_t mantissa = 0;
  int digits = 0;
  int scale = 0;
  for (; q < tok.end && *q >= '0' && *q <= '9'; ++q) {
    mantissa = mantissa * 10 + static_cast<std::uint64_t>(*q - '0');
    digits += (mantissa != 0) ? 1 : 0;
  }
  if (q < tok.end && *q == '.') {
    for (++q; q < tok.end && *q >= '0' && *q <= '9'; ++q) {
      mantissa = mantissa * 10 + static_cast<std::uint64_t>(*q - '0');
      digits += (mantissa != 0) ? 1 : 0;
      --scale;
    }
  }
  if (q != tok.end || digits > 15) return false;  // exponent or too many digits
  const double m = static_cast<double>(mantissa);
  out = scale == 0 ? m : m / pow10[-scale > 22 ? 22 : -scale];
  if (-scale > 22) return false;
  if (tok.negative) out = -out;
  return true;
}

// fast_decimal in the same pass as the syntax check, for the usual number (no exponent, at
// most 15 significant digits, no leading zero, at least one digit after a point). Returns false
// without moving the reader otherwise (the general path decides).
COVENANT_ALWAYS_INLINE bool short_decimal(json_reader& r, double& out) noexcept {
  static constexpr double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                     1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  const char* q = r.position();
  const char* const end = r.text_end();
  const bool negative = *q == '-';
  if (negative) ++q;
  const char* const digits = q;
  std::uint64_t mantissa = 0;
  int significant = 0;
  while (q < end && static_cast<unsigned>(*q - '0') <= 9) {
    mantissa = mantissa * 10 + static_cast<std::uint64_t>(*q - '0');
    significant += (mantissa != 0) ? 1 : 0;
    ++q;
  }
  if (q == digits || (q - digits > 1 && *digits == '0')) return false;
  int scale = 0;
  if (q < end && *q == '.') {
    ++q;
    const char* const fraction = q;
    while (q < end && static_cast<unsigned>(*q - '0') <= 9) {
      mantissa = mantissa * 10 + static_cast<std::uint64_t>(*q - '0');
      significant += (mantissa != 0) ? 1 : 0;
      ++q;
    }
    if (q == fraction) return false;
    scale = static_cast<int>(q - fraction);
  }
  if (significant > 15 || scale > 22 || (q < end && (*q == 'e' || *q == 'E'))) return false;
  const double m = static_cast<double>(mantissa);
  out = scale == 0 ? m : m / pow10[scale];
  if (negative) out = -out;
  r.rewind(q);
  return true;
}

template <class F>
COVENANT_ALWAYS_INLINE void read_floating(json_reader& r, F& out, const schema::type& node, decode_context& ctx,
                                          const path_frame* at, bool native = true) {
  const char c = r.peek();
  if (c == '"' && ctx.opts.coerce && number_from_string(r, out, node, ctx, at, native)) return;
  if (c != '-' && (c < '0' || c > '9')) return other_shape(r, out, node, ctx, at, native);
  if constexpr (std::is_same_v<F, double>) {
    const char* start = r.position();
    if (short_decimal(r, out)) {
      if (!number_within_bounds(node.constraints, out))
        number_constraints(out, node, span_from(r, start), ctx, at, native);
      return;
    }
  }
  number_token tok;
  if (!r.read_number(tok)) return;
  if constexpr (std::is_same_v<F, double>) {
    if (fast_decimal(tok, out)) {
      if (!number_within_bounds(node.constraints, out)) number_constraints(out, node, tok.text(), ctx, at, native);
      return;
    }
  }
  const auto res = std::from_chars(tok.begin, tok.end, out);
  if (res.ec != std::errc() || !std::isfinite(out)) {
    ctx.add(at, issue_code::type_mismatch, "finite number", actual_of(tok.text()), "number is out of range");
    return;
  }
  if (!number_within_bounds(node.constraints, static_cast<double>(out)))
    number_constraints(out, node, tok.text(), ctx, at, native);
}

COVENANT_ALWAYS_INLINE void read_boolean(json_reader& r, bool& out, const schema::type& node, decode_context& ctx,
                                         const path_frame* at, bool native = true) {
  const char c = r.peek();
  const char* start = r.position();
  if (c == '"' && ctx.opts.coerce) {
    std::string scratch;
    std::string_view text;
    if (!r.read_string_view(text, scratch)) return;
    if (!bool_from_text(text, out)) return type_mismatch(ctx, at, node, span_from(r, start));
    ctx.note(at, note_kind::coerced, std::string(span_from(r, start)) + " read as a boolean");
  } else {
    if (c != 't' && c != 'f') return other_shape(r, out, node, ctx, at, native);
    if (!r.read_bool(out)) return;
  }
  if (native && !node.constraints.empty()) check_native(node.constraints, span_from(r, start), &out, ctx, at);
}

// A string expected and something else written: in coerce mode a number or boolean read as its
// text, an object or a list as the text it was written as; else a type mismatch.
COVENANT_API void read_text_other(json_reader& r, std::string& out, const schema::type& node, decode_context& ctx,
                                  const path_frame* at, bool native);

COVENANT_ALWAYS_INLINE void read_text(json_reader& r, std::string& out, const schema::type& node, decode_context& ctx,
                                      const path_frame* at, bool native = true) {
  if (r.peek() != '"') return read_text_other(r, out, node, ctx, at, native);
  const char* start = r.position();
  if (!r.read_string(out)) return;
  if (!string_within_bounds(node.constraints, out.size()))
    string_constraints(out, node, span_from(r, start), ctx, at, native);
}

/// A media field (covenant/types/media.hpp) read from its text: an http(s) URL, a data URL or a
/// reference to the call's media ("<image 1>"); anything else, a file path included, is an issue.
COVENANT_API void read_media(json_reader& r, media& out, media_kind kind, const schema::type& node,
                             decode_context& ctx, const path_frame* at);

template <class S>
const S& default_instance() {
  static const S instance{};
  return instance;
}

template <class S>
struct object_codec {
  static constexpr std::size_t N = field_count_v<S>;
  using reset_fn = void (*)(S&);

  template <std::size_t I>
  static void reset_field(S& s) {
    boost::pfr::get<I>(s) = boost::pfr::get<I>(default_instance<S>());
  }
  static constexpr std::array<reset_fn, N> resetters = []<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<reset_fn, N>{&reset_field<I>...};
  }(std::make_index_sequence<N>{});

  // Reads field j (a switch over the field indexes). Used for members that come out of
  // declaration order (the usual order is read by read_next, which inlines each field's reader):
  // each field's value is read by the out-of-line reader of its type.
  COVENANT_NOINLINE static void read_field(std::size_t j, json_reader& r, S& s, const schema::object_def& def,
                                           decode_context& ctx, const path_frame* f) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (void)((j == I ? (read_member<I, false>(r, s, def, ctx, f), true) : false) || ...);
    }(std::make_index_sequence<N>{});
  }

  // Field I (its reader inlined when `Inline`): on-fail action filter, a field that is not
  // required and fails such a check is dropped: it reads as absent (its default). A required one
  // leaves the issue to what holds it.
  template <std::size_t I, bool Inline = true>
  COVENANT_ALWAYS_INLINE static void read_member(json_reader& r, S& out, const schema::object_def& def,
                                                 decode_context& ctx, const path_frame* f) {
    const std::size_t before = ctx.issues.size();
    if constexpr (Inline) read_value(r, boost::pfr::get<I>(out), def.fields[I].type, ctx, f);
    else read_value_cold(r, boost::pfr::get<I>(out), def.fields[I].type, ctx, f);
    if (COVENANT_UNLIKELY(ctx.issues.size() != before) && !r.failed() && !def.fields[I].required &&
        take_filtered(ctx, before, f))
      reset_field<I>(out);
  }

  // The JSON keys of S (the same in every schema model S appears in), kept here for the hot
  // loop. Keys without '"' or '\\' can be matched against the text byte for byte (the expected
  // next field is tried first); `quoted` is such a key as written before its value: "key":
  struct key_table {
    std::array<std::string, N> keys;
    std::array<std::string, N> quoted;
    std::array<bool, N> plain{};
  };
  static const key_table& keys_of(const schema::object_def& def) {
    // Never destroyed, as schema_of's models (work on the runtimes' threads may outlive exit).
    static const key_table& table = *new key_table([&] {
      key_table t;
      for (std::size_t k = 0; k < N; ++k) {
        t.keys[k] = def.fields[k].key;
        t.plain[k] = t.keys[k].find_first_of("\"\\") == std::string::npos;
        t.quoted[k] = '"' + t.keys[k] + "\":";
      }
      return t;
    }());
    return table;
  }

  // Field I when it is the next member, with its key written as usual ("key": value): reads it
  // and returns true (false on a syntax error too, which the caller checks). Returns false
  // without moving the reader otherwise.
  template <std::size_t I>
  COVENANT_ALWAYS_INLINE static bool read_next(json_reader& r, S& out, const schema::object_def& def,
                                               const key_table& table, decode_context& ctx, path_frame& f) {
    if (!table.plain[I] || !r.expect_key(I == 0, table.quoted[I].data(), table.quoted[I].size())) return false;
    f.key = table.keys[I];
    read_member<I>(r, out, def, ctx, &f);
    return !r.failed();
  }

  // This type as the target of the reshaping rules (read_unwrapped, read_as_only_field).
  static reshape_target target(S& out) {
    reshape_target t;
    t.self = &out;
    t.read = [](void* self, json_reader& r, const schema::type& node, decode_context& ctx, const path_frame* at) {
      read(r, *static_cast<S*>(self), node, ctx, at);
    };
    t.read_field = [](void* self, json_reader& r, const schema::object_def& def, std::size_t, decode_context& ctx,
                      const path_frame* at) {
      if constexpr (N == 1) read_value_cold(r, boost::pfr::get<0>(*static_cast<S*>(self)), def.fields[0].type, ctx, at);
    };
    t.checks = [](void* self, const schema::type& node, const schema::object_def& def, std::string_view raw,
                  decode_context& ctx, const path_frame* at) {
      if (!def.invariants.empty()) check_invariants_native(def, self, ctx, at);
      if (!node.constraints.empty()) check_native(node.constraints, raw, self, ctx, at);
    };
    return t;
  }

  // Coerce mode, an object of one field: a value for that field alone (read_as_only_field).
  COVENANT_NOINLINE static bool read_only_field(json_reader& r, S& out, const schema::type& node, decode_context& ctx,
                                                const path_frame* at) {
    const schema::object_def& def = *std::get_if<schema::object_def>(&ctx.s.defs[node.def].body);
    return read_as_only_field(r, target(out), node, def, ctx, at) || r.failed();
  }

  // This type as the target of read_members.
  struct members {
    S& out;
    const schema::object_def& def;
    static void read(void* self, std::size_t j, json_reader& r, decode_context& ctx, const path_frame* f) {
      auto& m = *static_cast<members*>(self);
      read_field(j, r, m.out, m.def, ctx, f);
    }
    static void absent(void* self, std::size_t j) { resetters[j](static_cast<members*>(self)->out); }
  };

  static void read(json_reader& r, S& out, const schema::type& node, decode_context& ctx, const path_frame* at) {
    if constexpr (N == 1) {
      if (ctx.opts.coerce && read_only_field(r, out, node, ctx, at)) return;
    }
    if (r.peek() != '{') return not_a_container(r, out, node, ctx, at);
    const char* start = r.position();
    const schema::object_def& def = *std::get_if<schema::object_def>(&ctx.s.defs[node.def].body);
    const std::size_t issues_before = ctx.issues.size();
    if (!r.begin_object()) return;
    const key_table& table = keys_of(def);
    path_frame f{at, {}, 0, false};
    // The members in declaration order, each key matched as written: `in_order` of them.
    std::size_t in_order = 0;
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (void)((read_next<I>(r, out, def, table, ctx, f) && (in_order = I + 1, true)) && ...);
    }(std::make_index_sequence<N>{});
    if (r.failed()) return;
    // Whatever follows (the end of the object, members out of order, unknown or repeated keys,
    // keys written otherwise), then the fields not given: the rules both decoders share.
    if (in_order != N || !r.end_object()) {  // (every field in order, and the end: nothing more to settle)
      members m{out, def};
      std::array<std::uint64_t, field_words(N)> seen{};
      if (!read_members(r, members_target{&m, table.plain.data(), &members::read, &members::absent}, def,
                        seen.data(), in_order, ctx, f, at))
        return;
    }
    if (ctx.issues.size() == issues_before) {
      if (!def.invariants.empty()) check_invariants_native(def, &out, ctx, at);
      if (!node.constraints.empty()) check_native(node.constraints, span_from(r, start), &out, ctx, at);
    }
  }
};

template <class E>
void read_enum(json_reader& r, E& out, const schema::type& node, decode_context& ctx, const path_frame* at) {
  if (r.peek() != '"') return other_shape(r, out, node, ctx, at, true);
  const char* start = r.position();
  const schema::definition& def = ctx.s.defs[node.def];
  const std::size_t k = read_enum_value(r, node, def, ctx, at);
  if (k == no_match) return;
  out = static_cast<E>(std::get_if<schema::enum_def>(&def.body)->values[k].number);
  if (!node.constraints.empty()) check_native(node.constraints, span_from(r, start), &out, ctx, at);
}

// A std::variant: the alternative it reads as is chosen by read_union (the dynamic decoder's rule
// too), each read into a scratch variant and moved into `out` when it fits best so far.
template <class V>
struct variant_target {
  V& out;
  V scratch{};

  static void read(void* self, std::size_t k, json_reader& r, const schema::type& alt, decode_context& ctx,
                   const path_frame* at) {
    V& v = static_cast<variant_target*>(self)->scratch;
    [&]<std::size_t... K>(std::index_sequence<K...>) {
      (void)((k == K ? (read_value_cold(r, v.template emplace<K>(), alt, ctx, at), true) : false) || ...);
    }(std::make_index_sequence<std::variant_size_v<V>>{});
  }
  static void keep(void* self, std::size_t, bool miss) {
    auto& t = *static_cast<variant_target*>(self);
    if (!miss) t.out = std::move(t.scratch);
  }
};

template <class V>
COVENANT_NOINLINE void read_variant(json_reader& r, V& out, const schema::type& node, decode_context& ctx,
                                    const path_frame* at) {
  variant_target<V> v{out};
  union_target t;
  t.self = &v;
  t.read = &variant_target<V>::read;
  t.keep = &variant_target<V>::keep;
  read_union(r, t, node, ctx, at);
}

// A list: its items in one loop (out of line: a list is read in one call however often its type
// appears in the objects that hold it).
template <class V>
COVENANT_NOINLINE void read_list(json_reader& r, V& out, const schema::type& node, decode_context& ctx,
                                 const path_frame* at) {
  const char c = r.peek();
  if (c != '[' && c != 'n' && ctx.opts.coerce) return read_list_coerced(r, out, node, ctx, at);
  if (c != '[') return mismatch_and_skip(r, node, ctx, at);
  const char* start = r.position();
  struct items {
    V& out;
    const schema::type& item;
    COVENANT_ALWAYS_INLINE void read(std::size_t n, json_reader& r, decode_context& ctx, const path_frame* f) {
      if (n == out.size()) {
        if (out.capacity() == 0) out.reserve(4);
        out.emplace_back();
      }
      read_value(r, out[n], item, ctx, f);
    }
    static void drop(std::size_t) noexcept {}  // (its slot is read into again)
  } t{out, node.args[0]};
  std::size_t n = 0;
  if (!read_items(r, t, n, ctx, at)) return;
  if (n != out.size()) out.resize(n);
  if (!count_within_bounds(node.constraints, n))
    count_constraints(out, node, span_from(r, start), ctx, at);
}

// Inlined into the reader of the enclosing object (nesting goes through object_codec::read and
// read_variant, which are not inlined).
template <class T>
COVENANT_ALWAYS_INLINE void read_value(json_reader& r, T& out, const schema::type& node, decode_context& ctx,
                                       const path_frame* at) {
  if constexpr (is_optional<T>::value) {
    if (r.peek() == 'n') {
      if (r.read_null()) out.reset();
      return;
    }
    if (!out.has_value()) out.emplace();
    // (the on-fail action filter drops the list item or the field that holds it, not the value)
    read_value(r, *out, node, ctx, at);
  } else if constexpr (std::is_same_v<T, bool>) {
    read_boolean(r, out, node, ctx, at);
  } else if constexpr (is_integer_v<T>) {
    read_integer(r, out, node, ctx, at);
  } else if constexpr (std::is_floating_point_v<T>) {
    read_floating(r, out, node, ctx, at);
  } else if constexpr (std::is_same_v<T, std::string>) {
    read_text(r, out, node, ctx, at);
  } else if constexpr (std::is_same_v<T, std::monostate>) {
    if (r.peek() != 'n') return mismatch_and_skip(r, node, ctx, at);
    r.read_null();
  } else if constexpr (is_json_value_v<T>) {
    read_json_value(r, out, ctx, at);
  } else if constexpr (is_media_v<T>) {
    read_media(r, out, T::media_kind_v, node, ctx, at);
  } else if constexpr (is_vector<T>::value) {
    read_list(r, out, node, ctx, at);
  } else if constexpr (is_string_map<T>::value) {
    if (r.peek() != '{') return not_a_container(r, out, node, ctx, at);
    const char* start = r.position();
    if (!r.begin_object()) return;
    out.clear();
    std::string scratch;
    std::string_view key;
    bool first = true;
    while (r.next_key(first, key, scratch)) {
      first = false;
      std::string k(key);
      path_frame f{at, k, 0, false};
      auto& slot = out[k];
      read_value(r, slot, node.args[1], ctx, &f);
      if (r.failed()) return;
    }
    if (r.failed()) return;
    if (!node.constraints.empty()) count_constraints(out, node, span_from(r, start), ctx, at);
  } else if constexpr (is_variant<T>::value) {
    read_variant(r, out, node, ctx, at);
  } else if constexpr (std::is_enum_v<T>) {
    read_enum(r, out, node, ctx, at);
  } else {
    object_codec<T>::read(r, out, node, ctx, at);
  }
}

}  // namespace detail

/// Decodes `json` into `out`, reusing its storage (strings and vectors keep their capacity).
/// Returns every issue; `out` holds a best-effort value when there are issues. Coercions
/// (decode_options::coerce) are appended to `notes` when given.
template <class T>
issue_list try_decode_into(std::string_view json, T& out, const decode_options& options = {},
                           note_list* notes = nullptr) {
  const schema::model& s = schema_of<T>();
  issue_list issues;
  detail::decode_context ctx{s, options, issues, notes};
  if (json.size() > options.max_input_bytes) {
    detail::parse_failure(ctx, {}, 0, "input is larger than the configured maximum size");
    return issues;
  }
  const std::size_t notes_before = notes != nullptr ? notes->size() : 0;
  detail::json_reader r(json, options.max_depth);
  detail::read_value(r, out, s.root, ctx, nullptr);
  r.finish();
  if (r.failed()) {
    // A text that is not JSON is one issue: what was read before the error is not a reading.
    issues.clear();
    if (notes != nullptr) notes->erase(notes->begin() + static_cast<std::ptrdiff_t>(notes_before), notes->end());
    detail::parse_failure(ctx, json, r.error_offset(), r.error_message());
  }
  return issues;
}

/// Decodes `json` into `out` as try_decode_into does, or throws covenant::decode_error carrying
/// every issue (`out` then holds the best-effort value).
template <class T>
void decode_into(std::string_view json, T& out, const decode_options& options = {}, note_list* notes = nullptr) {
  issue_list issues = try_decode_into(json, out, options, notes);
  if (!issues.empty()) throw decode_error(std::move(issues));
}

/// Decodes `json` into a new T. The value is present only when there are no issues.
template <class T>
decoded<T> try_decode(std::string_view json, const decode_options& options = {}) {
  decoded<T> result;
  result.value.emplace();  // decoded in place: no copy or move of the value
  result.issues = try_decode_into(json, *result.value, options, &result.notes);
  if (!result.issues.empty()) result.value.reset();
  return result;
}

/// Decodes `json` into a new T, or throws covenant::decode_error carrying every issue.
template <class T>
T decode(std::string_view json, const decode_options& options = {}) {
  auto r = try_decode<T>(json, options);
  if (!r.ok()) throw decode_error(std::move(r.issues));
  return std::move(*r.value);
}

/// Decodes a boost::json::value into a new T (the inverse of covenant::to_value). The value is
/// present only when there are no issues.
template <class T>
decoded<T> try_from_value(const boost::json::value& json, const decode_options& options = {}) {
  return try_decode<T>(std::string_view(boost::json::serialize(json)), options);
}

/// Decodes a boost::json::value into a new T, or throws covenant::decode_error carrying every
/// issue.
template <class T>
T from_value(const boost::json::value& json, const decode_options& options = {}) {
  return decode<T>(std::string_view(boost::json::serialize(json)), options);
}

}  // namespace covenant
