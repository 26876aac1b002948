#include "covenant/read/detail/coerce.hpp"
#include "covenant/read/decode.hpp"
#include "covenant/read/validate.hpp"

#include <boost/json/parse.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "covenant/read/lenient.hpp"

namespace covenant::detail {

namespace {

std::string_view trim(std::string_view s) noexcept {
  const char* ws = " \t\r\n";
  const std::size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  const std::size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

bool digit(char c) noexcept { return c >= '0' && c <= '9'; }

// A plain decimal number (optional sign, digits with optional thousands separators, optional
// fraction, optional exponent), the whole of `s`.
bool plain_number(std::string_view s, double& out) noexcept {
  if (s.empty()) return false;
  char buf[64];
  std::size_t n = 0;
  std::size_t i = 0;
  if (s[i] == '-' || s[i] == '+') {
    if (s[i] == '-') buf[n++] = '-';
    ++i;
  }
  // integer part, with commas only in groups of three
  const std::size_t int_start = i;
  std::size_t group = 0;
  bool commas = false;
  while (i < s.size() && (digit(s[i]) || s[i] == ',')) {
    if (s[i] == ',') {
      if (i == int_start || (commas && group != 3) || (!commas && group > 3)) return false;
      commas = true;
      group = 0;
    } else {
      if (n >= sizeof buf - 1) return false;
      buf[n++] = s[i];
      ++group;
    }
    ++i;
  }
  if (commas && group != 3) return false;
  const bool int_digits = i > int_start;
  if (i < s.size() && s[i] == '.') {
    buf[n++] = '.';
    ++i;
    const std::size_t f = i;
    while (i < s.size() && digit(s[i]) && n < sizeof buf - 1) buf[n++] = s[i++];
    if (i == f && !int_digits) return false;
  } else if (!int_digits) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    buf[n++] = 'e';
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) buf[n++] = s[i++];
    const std::size_t e = i;
    while (i < s.size() && digit(s[i]) && n < sizeof buf - 1) buf[n++] = s[i++];
    if (i == e) return false;
  }
  if (i != s.size()) return false;
  const auto r = std::from_chars(buf, buf + n, out);
  return r.ec == std::errc() && r.ptr == buf + n && std::isfinite(out);
}

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool ascii_alnum(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || digit(c); }

// Base letters (lower case) of U+00C0..U+00FF and U+0100..U+017F; '#' marks the letters written
// with two (æ, þ, ß, ĳ, œ), '.' the two signs of the Latin-1 block (× and ÷), kept as written.
constexpr std::string_view latin1_base = "aaaaaa#ceeeeiiiidnooooo.ouuuuy##aaaaaa#ceeeeiiiidnooooo.ouuuuy#y";
constexpr std::string_view latin_ext_a_base =
    "aaaaaaccccccccddddeeeeeeeeeegggggggghhhhiiiiiiiiii##jjkkkllllllllllnnnnnnnnnoooooo##rrrrrrssssssss"
    "ttttttuuuuuuuuuuuuwwyyyzzzzzzs";
static_assert(latin1_base.size() == 64 && latin_ext_a_base.size() == 128);

// Lower case, with the accented Latin letters written as their base letters (é -> e, Ñ -> n,
// ß -> ss, Æ -> ae); everything else kept as written.
std::string plain_letters(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80 || i + 1 >= s.size()) {
      out.push_back(lower(s[i]));
      continue;
    }
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    const unsigned cp = ((b0 & 0x1Fu) << 6) | (b1 & 0x3Fu);
    if ((b0 & 0xE0u) != 0xC0u || (b1 & 0xC0u) != 0x80u || cp < 0xC0 || cp > 0x17F) {
      out.push_back(s[i]);
      continue;
    }
    const char base = cp < 0x100 ? latin1_base[cp - 0xC0] : latin_ext_a_base[cp - 0x100];
    if (base == '.') {
      out.push_back(s[i]);
      out.push_back(s[i + 1]);
    } else if (base != '#') {
      out.push_back(base);
    } else if (cp == 0xC6 || cp == 0xE6) {
      out += "ae";
    } else if (cp == 0xDE || cp == 0xFE) {
      out += "th";
    } else if (cp == 0xDF) {
      out += "ss";
    } else if (cp == 0x132 || cp == 0x133) {
      out += "ij";
    } else {
      out += "oe";
    }
    ++i;
  }
  return out;
}

// Lower case without ASCII punctuation, separators or spaces; accented Latin letters as their
// base letters when `accents` is false.
std::string folded(std::string_view s, bool accents = true) {
  std::string out;
  out.reserve(s.size());
  if (!accents) {
    for (char c : plain_letters(s))
      if (ascii_alnum(c) || static_cast<unsigned char>(c) >= 0x80) out.push_back(c);
    return out;
  }
  for (char c : s)
    if (ascii_alnum(c) || static_cast<unsigned char>(c) >= 0x80) out.push_back(lower(c));
  return out;
}

bool word_char(char c) noexcept { return ascii_alnum(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80; }

// Whether `name` occurs in `text` as a whole word (letter case as written when `exact_case`).
bool contains_word(std::string_view text, std::string_view name, bool exact_case) noexcept {
  if (name.empty() || name.size() > text.size()) return false;
  for (std::size_t i = 0; i + name.size() <= text.size(); ++i) {
    bool same = true;
    for (std::size_t k = 0; k < name.size() && same; ++k)
      same = exact_case ? text[i + k] == name[k] : lower(text[i + k]) == lower(name[k]);
    if (!same) continue;
    const bool left = i == 0 || !word_char(text[i - 1]) || !word_char(name.front());
    const bool right =
        i + name.size() == text.size() || !word_char(text[i + name.size()]) || !word_char(name.back());
    if (left && right) return true;
  }
  return false;
}

// A number standing alone in `s` at [b, e): not part of a word or of a longer token ("gpt-4o",
// "v1.2.3", "3x"). Returns the end of the token (after a '%' sign when `percent` is set).
struct number_in_text {
  std::string_view digits;
  bool percent = false;
};

// Every number standing alone in the text, at most `limit` + 1 of them.
std::size_t numbers_in_text(std::string_view s, number_in_text* found, std::size_t limit) noexcept {
  std::size_t n = 0;
  std::size_t i = 0;
  while (i < s.size()) {
    const bool starts = digit(s[i]) || ((s[i] == '-' || s[i] == '+' || s[i] == '.') && i + 1 < s.size() && digit(s[i + 1]));
    if (!starts || (i > 0 && (word_char(s[i - 1]) || s[i - 1] == '.' || s[i - 1] == ',' || s[i - 1] == '-' ||
                              s[i - 1] == '/'))) {
      while (i < s.size() && (word_char(s[i]) || s[i] == '.' || s[i] == ',')) ++i;  // rest of the word
      if (i < s.size() && !word_char(s[i])) ++i;
      continue;
    }
    std::size_t e = i + 1;
    while (e < s.size() && (digit(s[e]) || s[e] == '.' || s[e] == ',')) ++e;
    std::size_t end = e;
    while (end > i && (s[end - 1] == '.' || s[end - 1] == ',')) --end;  // sentence punctuation
    number_in_text t{s.substr(i, end - i), false};
    if (e < s.size() && s[e] == '%') {
      t.percent = true;
      ++e;
    } else if (e < s.size() && (word_char(s[e]) || s[e] == '/' || s[e] == '-')) {
      // part of a longer token: 3x, 4o, 1/2 (fractions are read as a whole text only), 2024-01
      ++n;  // counted, so that the text is ambiguous
      if (n <= limit) found[n - 1] = {{}, false};
      while (e < s.size() && (word_char(s[e]) || s[e] == '/' || s[e] == '-' || s[e] == '.')) ++e;
      i = e;
      continue;
    }
    ++n;
    if (n <= limit) found[n - 1] = t;
    if (n > limit) return n;
    i = e;
  }
  return n;
}

// The JSON object or list `text` holds as a whole (apart from surrounding whitespace), as strict
// JSON in `json`, and what was done for the note in `detail`.
bool json_in_string(std::string_view text, std::size_t max_depth, std::string& json, std::string& detail) {
  const std::string_view t = trim(text);
  if (t.size() < 2 || (t.front() != '{' && t.front() != '[')) return false;
  lenient_options o;
  o.level = strictness::repair;
  o.max_depth = max_depth;
  o.max_candidates = 1;
  extraction x = extract(t, o);
  if (x.candidates.empty()) return false;
  candidate& c = x.candidates.front();
  // The whole text, read to its end: nothing cut off, no text after the value.
  if (c.kind != candidate_kind::whole_text || c.truncated || c.source_offset != 0 || c.source_length != t.size())
    return false;
  if (c.json.empty() || (c.json.front() != '{' && c.json.front() != '[')) return false;
  detail = t.front() == '{' ? "a string holding a JSON object read as the object"
                            : "a string holding a JSON list read as the list";
  std::size_t repairs = 0;
  for (const note& n : c.notes) {
    if (n.kind != note_kind::repaired) continue;
    if (repairs++ == 0) {
      detail += " (";
      detail += n.to_string();
    }
  }
  if (repairs > 1) detail += " and " + std::to_string(repairs - 1) + (repairs == 2 ? " more repair" : " more repairs");
  if (repairs > 0) detail += ")";
  json = std::move(c.json);
  return true;
}

}  // namespace

std::size_t match_name(const std::vector<named_value>& names, std::string_view text, std::string& how) {
  // exact
  for (const auto& n : names)
    if (n.name == text) {
      how = "exact";
      return n.index;
    }
  // One value (whatever the number of its names) that `same` picks; no_match when none or several.
  auto unique = [&](auto&& same) {
    std::size_t found = no_match;
    for (const auto& n : names) {
      if (!same(n.name)) continue;
      if (found != no_match && found != n.index) return no_match;
      found = n.index;
    }
    return found;
  };
  // letter case, separators, punctuation
  if (const std::string key = folded(text); !key.empty()) {
    if (std::size_t i = unique([&](std::string_view n) { return folded(n) == key; }); i != no_match) {
      how = "ignoring case and punctuation";
      return i;
    }
  }
  if (const std::string key = folded(text, false); !key.empty()) {
    if (std::size_t i = unique([&](std::string_view n) { return folded(n, false) == key; }); i != no_match) {
      how = "ignoring case, punctuation and accents";
      return i;
    }
  }
  // the only value named as a whole word in a longer text: as written, then in any letter case,
  // then without accents
  if (std::size_t i = unique([&](std::string_view n) { return contains_word(text, n, true); }); i != no_match) {
    how = "named in the text";
    return i;
  }
  if (std::size_t i = unique([&](std::string_view n) { return contains_word(text, n, false); }); i != no_match) {
    how = "named in the text";
    return i;
  }
  const std::string plain = plain_letters(text);
  if (std::size_t i = unique([&](std::string_view n) { return contains_word(plain, plain_letters(n), true); });
      i != no_match) {
    how = "named in the text, ignoring accents";
    return i;
  }
  return no_match;
}

namespace {

// A number, a percentage or a fraction that is the whole of `s`.
bool whole_number(std::string_view s, bool percent_is_fraction, double& out) noexcept {
  if (s.empty()) return false;
  if (s.back() == '%') {
    if (!percent_is_fraction) return false;
    double v = 0;
    if (!plain_number(trim(s.substr(0, s.size() - 1)), v)) return false;
    out = v / 100.0;
    return true;
  }
  if (const std::size_t slash = s.find('/'); slash != std::string_view::npos) {
    double num = 0;
    double den = 0;
    if (!plain_number(trim(s.substr(0, slash)), num) || !plain_number(trim(s.substr(slash + 1)), den) || den == 0)
      return false;
    out = num / den;
    return true;
  }
  return plain_number(s, out);
}

}  // namespace

bool number_from_text(std::string_view text, bool percent_is_fraction, double& out) noexcept {
  const std::string_view s = trim(text);
  if (whole_number(s, percent_is_fraction, out)) return true;
  // The only number written in a sentence ("1 cup of flour", "12.11.", "Score: 0.9").
  number_in_text found[1];
  if (numbers_in_text(s, found, 1) != 1 || found[0].digits.empty()) return false;
  double v = 0;
  if (!plain_number(found[0].digits, v)) return false;
  if (found[0].percent) {
    if (!percent_is_fraction) return false;
    v /= 100.0;
  }
  out = v;
  return true;
}

bool bool_from_text(std::string_view text, bool& out) noexcept {
  const std::string_view s = trim(text);
  auto is = [&](std::string_view word) {
    if (s.size() != word.size()) return false;
    for (std::size_t i = 0; i < s.size(); ++i)
      if (lower(s[i]) != word[i]) return false;
    return true;
  };
  if (is("true")) {
    out = true;
    return true;
  }
  if (is("false")) {
    out = false;
    return true;
  }
  // The only one of the two words in a sentence ("The answer is **True**").
  const bool t = contains_word(s, "true", false);
  const bool f = contains_word(s, "false", false);
  if (t == f) return false;
  out = t;
  return true;
}

std::size_t match_enum_value(const schema::enum_def& e, std::string_view text, std::string& how) {
  std::vector<named_value> names;
  for (std::size_t i = 0; i < e.values.size(); ++i) {
    if (e.values[i].skip) continue;
    names.push_back({e.values[i].name, i});
    for (const auto& a : e.values[i].aliases) names.push_back({a, i});
  }
  return match_name(names, text, how);
}

std::size_t match_field_key(const schema::object_def& o, std::string_view key) {
  // Ignoring letter case and punctuation, then accents too; exactly one field must match.
  for (const bool accents : {true, false}) {
    const std::string k = folded(key, accents);
    if (k.empty()) return no_match;
    std::size_t found = no_match;
    bool ambiguous = false;
    for (std::size_t i = 0; i < o.fields.size(); ++i) {
      if (o.fields[i].skip) continue;
      // The key only: a field with an alias is not read under its declared name.
      if (folded(o.fields[i].key, accents) == k) {
        ambiguous = ambiguous || found != no_match;
        found = i;
      }
    }
    if (ambiguous) return no_match;
    if (found != no_match) return found;
  }
  return no_match;
}

std::size_t read_enum_value(json_reader& r, const schema::type& node, const schema::definition& def,
                            decode_context& ctx, const path_frame* at) {
  if (r.peek() != '"') {
    std::string_view raw;
    if (r.skip_value(raw)) type_mismatch(ctx, at, node, raw);
    return no_match;
  }
  const char* start = r.position();
  std::string scratch;
  std::string_view v;
  if (!r.read_string_view(v, scratch)) return no_match;
  const auto& values = def.enumeration()->values;
  for (std::size_t k = 0; k < values.size(); ++k) {
    const schema::enum_value& ev = values[k];
    if (!ev.skip && ev.name == v) return k;
    for (const auto& a : ev.aliases)
      if (a == v) return k;
  }
  const std::string_view raw(start, static_cast<std::size_t>(r.position() - start));
  if (ctx.opts.coerce) {
    std::string how;
    const std::size_t k = match_enum_value(*def.enumeration(), v, how);
    if (k != no_match) {
      ctx.note(at, note_kind::coerced, std::string(raw) + " read as \"" + values[k].name + "\" (" + how + ")");
      return k;
    }
  }
  enum_mismatch(ctx, at, def, raw);
  return no_match;
}

bool number_value(std::string_view text, boost::json::value& out) noexcept {
  const char* b = text.data();
  const char* e = b + text.size();
  std::int64_t i = 0;
  if (auto [q, ec] = std::from_chars(b, e, i); ec == std::errc() && q == e) {
    out = i;
    return true;
  }
  std::uint64_t u = 0;
  if (auto [q, ec] = std::from_chars(b, e, u); ec == std::errc() && q == e) {
    out = u;
    return true;
  }
  double d = 0;
  if (auto [q, ec] = std::from_chars(b, e, d); ec != std::errc() || q != e || !std::isfinite(d)) return false;
  out = d;
  return true;
}

void read_json_value(json_reader& r, boost::json::value& out, decode_context& ctx, const path_frame* at) {
  std::string_view raw;
  if (!r.skip_value(raw)) return;
  boost::json::parse_options po;
  po.max_depth = ctx.opts.max_depth;
  boost::system::error_code ec;
  out = boost::json::parse(raw, ec, {}, po);
  if (ec) ctx.add(at, issue_code::type_mismatch, "JSON value", actual_of(raw), ec.message());
}

void read_text_other(json_reader& r, std::string& out, const schema::type& node, decode_context& ctx,
                     const path_frame* at, bool native) {
  const char c = r.peek();
  if (ctx.opts.coerce && (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f')) {
    std::string_view raw;
    if (!r.skip_value(raw)) return;
    out.assign(raw.data(), raw.size());
    ctx.note(at, note_kind::coerced, std::string(raw) + " read as the string \"" + out + "\"");
    if (!node.constraints.empty()) string_constraints(out, node, raw, ctx, at, native);
    return;
  }
  if ((c == '{' || c == '[') && ctx.opts.coerce) return read_written_text(r, out, node, ctx, at, native);
  mismatch_and_skip(r, node, ctx, at);
}

bool read_json_in_string(json_reader& r, const reshape_target& t, const schema::type& node, decode_context& ctx,
                         const path_frame* at) {
  const char* start = r.position();
  std::string scratch;
  std::string_view text;
  if (!r.read_string_view(text, scratch)) return true;  // (failed)
  std::string json;
  std::string detail;
  if (!json_in_string(text, ctx.opts.max_depth, json, detail)) {
    r.rewind(start);
    return false;
  }
  ctx.note(at, note_kind::coerced, std::move(detail));
  json_reader inner(json, ctx.opts.max_depth);
  t.read(t.self, inner, node, ctx, at);
  if (inner.failed()) type_mismatch(ctx, at, node, json);  // strict JSON within the depth: not expected
  return true;
}

bool written_text(const decode_context& ctx, std::string_view raw, std::string_view& text) noexcept {
  text = raw;
  const source_map* m = ctx.opts.source;
  if (m == nullptr || m->spans == nullptr || m->spans->empty()) return true;
  // Only a value of the text the map describes (not one of a JSON text read from inside a string).
  const auto at = reinterpret_cast<std::uintptr_t>(raw.data());
  const auto begin = reinterpret_cast<std::uintptr_t>(m->json.data());
  if (at < begin || at >= begin + m->json.size()) return true;
  const std::size_t offset = static_cast<std::size_t>(at - begin);
  const std::vector<source_span>& spans = *m->spans;
  const auto it = std::lower_bound(spans.begin(), spans.end(), offset,
                                   [](const source_span& s, std::size_t o) { return s.json_offset < o; });
  if (it == spans.end() || it->json_offset != offset) return true;  // (the array of all objects)
  if (!it->closed && !m->partial) return false;
  if (it->source_offset > m->input.size() || it->source_length > m->input.size() - it->source_offset) return true;
  const std::string_view written = m->input.substr(it->source_offset, it->source_length);
  // Text that is not well-formed UTF-8 is never a string's value: then its repaired JSON text.
  if (valid_utf8(written)) text = written;
  return true;
}

bool missing_list_reads_as_empty(const decode_context& ctx, const schema::type& t) noexcept {
  if (!ctx.opts.coerce || t.kind != schema::kind::array || !t.constraints.empty()) return false;
  const source_map* m = ctx.opts.source;
  return m == nullptr || (!m->partial && !m->cut);
}

std::size_t written_text_readings(const note_list& notes) noexcept {
  return static_cast<std::size_t>(std::count_if(notes.begin(), notes.end(), is_written_text_note));
}

}  // namespace covenant::detail
