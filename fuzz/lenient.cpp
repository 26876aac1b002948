// libFuzzer target for the lenient reader: extract_candidates() in final and partial mode (and
// with a small depth limit) on arbitrary bytes must not crash, hang or leak, must respect
// max_candidates, and must only ever offer strict JSON (checked with Boost.JSON). A text that is
// valid JSON must pass looks_like_strict_json() and be read as itself (same value, no notes),
// unless it has an exponent of five or more digits (rewritten as the same value, noted). The
// source spans of a candidate are in order, each at an object or array of its JSON, and each
// within the input, starting at a bracket.
#include <covenant/read/lenient.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

bool parse_strict(std::string_view text, boost::json::value& out, std::size_t max_depth) {
  boost::json::parse_options po;
  po.max_depth = max_depth;
  boost::system::error_code ec;
  out = boost::json::parse(text, ec, {}, po);
  return !ec;
}

// A number with an exponent of five or more digits: valid JSON that the reader rewrites (as the
// same value with a small exponent, and a note), so it is not "read as itself".
bool has_huge_exponent(std::string_view t) {
  for (std::size_t i = 1; i < t.size(); ++i) {
    if ((t[i] != 'e' && t[i] != 'E') || t[i - 1] < '0' || t[i - 1] > '9') continue;
    std::size_t j = i + 1;
    if (j < t.size() && (t[j] == '+' || t[j] == '-')) ++j;
    while (j < t.size() && t[j] == '0') ++j;
    std::size_t digits = 0;
    while (j < t.size() && t[j] >= '0' && t[j] <= '9') ++j, ++digits;
    if (digits >= 5) return true;
  }
  return false;
}

[[noreturn]] void fail(const char* what, std::string_view json) {
  std::fprintf(stderr, "%s:\n%.*s\n", what, static_cast<int>(json.size() > 2000 ? 2000 : json.size()), json.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  boost::json::value whole;
  const bool valid = parse_strict(text, whole, 64);
  if (valid && !covenant::looks_like_strict_json(text)) fail("valid JSON not recognised by looks_like_strict_json", text);

  for (int round = 0; round < 3; ++round) {
    covenant::lenient_options o;
    o.partial = round == 1;
    if (round == 2) {
      o.max_depth = 4;
      o.max_candidates = 3;
      o.level = covenant::strictness::repair;
    }
    const covenant::extraction x = covenant::extract(text, o);
    if (x.candidates.size() > o.max_candidates) fail("more candidates than max_candidates", text);
    for (const covenant::candidate& c : x.candidates) {
      boost::json::value v;
      if (!parse_strict(c.json, v, 4096)) fail("candidate is not strict JSON", c.json);
      for (std::size_t i = 0; i < c.spans.size(); ++i) {
        const covenant::source_span& s = c.spans[i];
        if (i > 0 && s.json_offset <= c.spans[i - 1].json_offset) fail("source spans out of order", c.json);
        if (s.json_offset >= c.json.size() || (c.json[s.json_offset] != '{' && c.json[s.json_offset] != '['))
          fail("source span not at an object or array", c.json);
        if (s.source_offset >= text.size() || s.source_length > text.size() - s.source_offset || s.source_length == 0)
          fail("source span outside the input", c.json);
        if (text[s.source_offset] != '{' && text[s.source_offset] != '[') fail("source span not at a bracket", text);
      }
    }
    if (valid && round < 2 && !has_huge_exponent(text)) {
      if (x.candidates.empty()) fail("valid JSON gave no candidate", text);
      const covenant::candidate& c = x.candidates.front();
      boost::json::value v;
      parse_strict(c.json, v, 4096);
      if (c.kind != covenant::candidate_kind::whole_text || !c.notes.empty() || c.truncated || v != whole)
        fail("valid JSON not read as itself", c.json);
    }
  }
  return 0;
}
