// Differential libFuzzer target for the three readers of one schema: the typed decoder (try_decode<T>,
// the typed reply reader), the dynamic decoder on schema_of<T>() (try_decode_dynamic, try_read_dynamic) and
// the stream readers (stream_reader<T>, dynamic_stream_reader) fed the text in random pieces. For a
// fixed family of C++ types covering the features of the schema model, on arbitrary text:
//   1. try_decode<T> and try_decode_dynamic(schema_of<T>()) report the same issues and notes, in order,
//      and, when the text reads, the same value (numbers by value, an absent member equal to null);
//   2. the reply readers (strict JSON, coercions, lenient candidates) agree the same way;
//   3. the stream readers never crash; on strict JSON each violation they stop a stream on is an
//      issue the final reader reports for the whole text (soundness of early stop); the typed and
//      the dynamic stream report the same violations; every chunking gives the same violations,
//      and the same view unless the stream fell back to the lenient reader.
// Inputs over 4096 bytes are skipped. A property that does not hold yet for a root (the readers
// disagree there: D1-D20 of the reading-core design, issue 24) is switched off in `roots()` with
// the disagreement it waits for; each step that resolves one switches it on. By hand,
// FUZZ_READING_ALL_PROPERTIES=1 checks every property of every root and FUZZ_READING_KEEP_GOING=1
// reports every failing property instead of stopping at the first.
#include <covenant/read/decode.hpp>
#include <covenant/types/describe.hpp>
#include <covenant/read/detail/read_reply.hpp>
#include <covenant/read/detail/stream_reader.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/types/encode.hpp>
#include <covenant/types/json_equal.hpp>
#include <covenant/types/schema_of.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "../examples/models/final_answer.hpp"

namespace fz {

enum class Tone { calm, tense, urgent };

struct Leaf {
  std::string id;
  std::optional<int> score;
};

// The features all three readers agree on today.
struct Core {
  std::string text;
  double ratio = 0;
  std::uint32_t count = 0;
  bool flag = false;
  Tone tone = Tone::calm;
  std::optional<Tone> maybe_tone;
  std::string code;
  std::vector<std::string> tags;
  std::vector<Leaf> leaves;
  std::map<std::string, int> counts;
  std::optional<Leaf> leaf;
  boost::json::value extra;
};

// One disagreement each (the step that resolves it switches its root's properties on).
struct Sparse {  // the filter of an optional list item (D2a, agreed)
  std::vector<std::optional<int>> sparse;
};
struct Step {
  int minutes = 5;
};
struct Steps {  // the filter of a defaulted field inside a list item (D2b, agreed)
  std::vector<Step> steps;
};
struct A {
  int id = 0;
  std::string name;
};
struct B {
  int id = 0;
  std::string name;
  std::optional<std::string> metadata;
};
struct Choice {  // D6: which alternative of a union
  std::variant<int, std::string, Leaf> choice;
};
struct Narrow {  // D8: fixes of narrow integers (D19, their stream checks, agree)
  std::int8_t small = 0;
  std::int8_t tiny = 0;
};
struct Floaty {  // D9: float width
  float f = 0;
};
struct Uniq {  // D11: uniqueness and counts in declared order, with fixes
  std::vector<int> xs;
};
struct Keyed {  // uniqueness by a member that an item lacks: "" for the typed decoder, null for the dynamic one
  std::vector<Leaf> leaves;
};
struct Single {
  int value = 0;
};
struct Wrap {
  Leaf selected;
};
struct Shapes {  // D7: shape coercions
  int n = 0;
  std::optional<Single> single;
  std::optional<Wrap> wrapped;
};

}  // namespace fz

template <>
struct covenant::describe<fz::Tone> {
  static constexpr auto values = covenant::values<fz::Tone>(
      covenant::value<fz::Tone::urgent>("Urgent.", covenant::alias{"URGENT"}, covenant::also_accept("alarm")));
};

template <>
struct covenant::describe<fz::Leaf> {
  static constexpr auto fields = covenant::fields<fz::Leaf>(
      covenant::field<&fz::Leaf::id>("Id.", covenant::non_empty{}),
      covenant::field<&fz::Leaf::score>("Score.", covenant::range{0, 10}));
};

template <>
struct covenant::describe<fz::Core> {
  static constexpr auto fields = covenant::fields<fz::Core>(
      covenant::field<&fz::Core::text>("Text.", covenant::max_length{12}, covenant::on_fail::fix(covenant::pattern{"^[a-z ]+$"})),
      covenant::field<&fz::Core::ratio>("Ratio.", covenant::range{0.0, 1.0}),
      covenant::field<&fz::Core::code>("Code.", covenant::one_of{"USD", "EUR"}),
      covenant::field<&fz::Core::tags>("Tags.", covenant::each{covenant::min_length{2}}, covenant::max_items{3}),
      covenant::field<&fz::Core::counts>("Counts.", covenant::max_items{3}));
};

template <>
struct covenant::describe<fz::Sparse> {
  static constexpr auto fields = covenant::fields<fz::Sparse>(
      covenant::field<&fz::Sparse::sparse>("Sparse.", covenant::each{covenant::on_fail::filter(covenant::range{0, 9})}));
};

template <>
struct covenant::describe<fz::Step> {
  static constexpr auto fields = covenant::fields<fz::Step>(covenant::field<&fz::Step::minutes>(
      "Minutes.", covenant::defaulted{}, covenant::on_fail::filter(covenant::range{1, 120})));
};

template <>
struct covenant::describe<fz::Narrow> {
  static constexpr auto fields = covenant::fields<fz::Narrow>(
      covenant::field<&fz::Narrow::small>("Small.", covenant::on_fail::fix(covenant::multiple_of{50})),
      covenant::field<&fz::Narrow::tiny>("Tiny.", covenant::range{0, 100}));
};

template <>
struct covenant::describe<fz::Uniq> {
  static constexpr auto fields = covenant::fields<fz::Uniq>(covenant::field<&fz::Uniq::xs>(
      "Xs.", covenant::on_fail::fix(covenant::unique_items{}), covenant::on_fail::fix(covenant::max_items{2})));
};

template <>
struct covenant::describe<fz::Keyed> {
  static constexpr auto fields =
      covenant::fields<fz::Keyed>(covenant::field<&fz::Keyed::leaves>("Leaves.", covenant::unique_by<&fz::Leaf::id>{}));
};

namespace {

namespace json = boost::json;
using covenant::strictness;

// FUZZ_READING_KEEP_GOING=1 (running inputs by hand): report every property that fails, root by
// root, instead of stopping at the first.
struct finding {};
const bool keep_going = std::getenv("FUZZ_READING_KEEP_GOING") != nullptr;

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s:\n%.*s\n", what, static_cast<int>(detail.size() > 4000 ? 4000 : detail.size()),
               detail.data());
  if (keep_going) throw finding{};
  std::abort();
}

template <class F>
void property(F&& f) {
  try {
    f();
  } catch (const finding&) {
  }
}

std::string shown(const covenant::issue_list& issues) {
  std::string s;
  for (const auto& i : issues)
    s += "  " + i.to_string() + " [" + std::string(covenant::to_string(i.code)) + ", expected " + i.expected + "]\n";
  return s;
}

std::string shown(const covenant::note_list& notes) {
  std::string s;
  for (const auto& n : notes) s += "  " + n.to_string() + "\n";
  return s;
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

struct xorshift {
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
};

// The text cut into pieces of 1 to `most` bytes.
std::vector<std::string_view> pieces(std::string_view text, std::uint64_t seed, std::size_t most) {
  xorshift rng{seed == 0 ? 0x9E3779B97F4A7C15ULL : seed};
  std::vector<std::string_view> out;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t n = most == 1 ? 1 : 1 + static_cast<std::size_t>(rng.next() % most);
    out.push_back(text.substr(at, n));
    at += n;
  }
  return out;
}

// What one root checks (a property switched off waits for the step that makes the readers agree).
struct checks {
  bool decode_exact = true;    // property 1 without coercions (reject_unknown_fields off and on)
  bool decode_coerce = false;  // property 1 with coercions (D7: shape coercions only in the dynamic decoder)
  bool reply[3] = {true, true, false};  // property 2 at strict, repair, coerce (D1, D7)
  bool stream = true;          // property 3
};

template <class T>
void decode_parity(std::string_view text, const covenant::decode_options& o, const char* root) {
  const covenant::decoded<T> typed = covenant::try_decode<T>(text, o);
  const covenant::dynamic_result dyn = covenant::try_decode_dynamic(text, covenant::schema_of<T>(), o);
  const std::string where = std::string(root) + (o.coerce ? " (coerce" : " (exact") +
                            (o.reject_unknown_fields ? ", reject unknown)" : ")") + "\ntext: " + std::string(text);
  if (typed.issues != dyn.issues)
    fail("try_decode<T> and try_decode_dynamic report different issues",
         where + "\ntyped:\n" + shown(typed.issues) + "dynamic:\n" + shown(dyn.issues));
  if (typed.notes != dyn.notes)
    fail("try_decode<T> and try_decode_dynamic note different things",
         where + "\ntyped:\n" + shown(typed.notes) + "dynamic:\n" + shown(dyn.notes));
  if (typed.ok() && !covenant::json_equal(dyn.value, covenant::to_value(*typed.value)))
    fail("try_decode<T> and try_decode_dynamic read different values",
         where + "\ntyped:   " + covenant::to_json(*typed.value) + "\ndynamic: " + covenant::json_text(dyn.value));
}

template <class T>
covenant::decoded<T> read_typed(std::string_view text, strictness level) {
  covenant::note_list notes;
  std::chrono::nanoseconds parse{0};
  std::chrono::nanoseconds validate{0};
  covenant::decoded<T> r = covenant::detail::read_reply<T>(text, {}, level, notes, parse, validate, {});
  r.notes = std::move(notes);
  return r;
}

template <class T>
void reply_parity(std::string_view text, strictness level, const char* root) {
  const covenant::decoded<T> typed = read_typed<T>(text, level);
  const covenant::read_result dyn = covenant::try_read_dynamic(text, covenant::schema_of<T>(), {.level = level});
  const std::string where =
      std::string(root) + " at " + std::string(covenant::to_string(level)) + "\ntext: " + std::string(text);
  if (typed.issues != dyn.issues)
    fail("the typed and the dynamic reply readers report different issues",
         where + "\ntyped:\n" + shown(typed.issues) + "dynamic:\n" + shown(dyn.issues));
  if (typed.notes != dyn.notes)
    fail("the typed and the dynamic reply readers note different things",
         where + "\ntyped:\n" + shown(typed.notes) + "dynamic:\n" + shown(dyn.notes));
  if (typed.ok() && !covenant::json_equal(dyn.value, covenant::to_value(*typed.value)))
    fail("the typed and the dynamic reply readers read different values",
         where + "\ntyped:   " + covenant::to_json(*typed.value) + "\ndynamic: " + covenant::json_text(dyn.value));
}

// Violations compared without `actual` where a check judged a value still growing (a string or a
// list already over its maximum: how far over depends on where the pieces ended).
bool same_violation(const covenant::issue& a, const covenant::issue& b) {
  if (a.path != b.path || a.code != b.code || a.expected != b.expected || a.message != b.message) return false;
  const bool growing = a.message.starts_with("must have at most") || a.message.starts_with("must have exactly");
  return growing || a.actual == b.actual;
}

bool same_violations(const covenant::issue_list& a, const covenant::issue_list& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same_violation(a[i], b[i])) return false;
  return true;
}

struct streamed {
  covenant::issue_list violations;
  std::string view;  // the partial value at the end, as compact JSON
  bool lenient = false;
};

template <class Reader, class View>
streamed feed_all(Reader& r, const std::vector<std::string_view>& parts, View&& view) {
  for (std::string_view p : parts) r.feed(p);
  return {r.violations(), view(r), r.lenient()};
}

template <class T>
void stream_checks(std::string_view text, strictness level, std::size_t root_index, const char* root,
                   const covenant::decoded<T>& final_reading) {
  const covenant::issue_list& final_issues = final_reading.issues;
  // Soundness of early stop is checked where the final readers read exactly the text the stream
  // reads: strict JSON. (Elsewhere the final reader may read another candidate of the text, or read
  // it otherwise: repairs, invalid UTF-8 (D14); the stream's own final reading, B11, settles that.)
  json::error_code ec;
  json::parse(text, ec);
  const bool final_whole = !ec;
  const std::uint64_t seed = fnv1a(text) ^ (root_index * 0x9E3779B97F4A7C15ULL);
  std::vector<std::vector<std::string_view>> chunkings{pieces(text, seed, 8), pieces(text, seed + 1, 200)};
  if (text.size() < 256) chunkings.push_back(pieces(text, seed, 1));
  const std::string where =
      std::string(root) + " at " + std::string(covenant::to_string(level)) + "\ntext: " + std::string(text);
  std::optional<streamed> first_typed;
  std::optional<streamed> first_dynamic;
  for (const auto& parts : chunkings) {
    covenant::detail::stream_reader<T> typed({}, level);
    const streamed t = feed_all(typed, parts, [](auto& r) { return covenant::to_json(r.view().value()); });
    covenant::detail::dynamic_stream_reader dynamic(covenant::schema_of<T>(), {}, level);
    const streamed d = feed_all(dynamic, parts, [](auto& r) { return covenant::json_text(r.view().value()); });
    // (d) every violation is an issue of the final reading (of a text that reads as a whole: a
    // reply cut short is judged without its unfinished end).
    for (const streamed* s : {&t, &d}) {
      if (!final_whole) break;
      for (const covenant::issue& v : s->violations) {
        bool found = false;
        for (const covenant::issue& i : final_issues) found = found || same_violation(v, i);
        if (!found)
          fail(s == &t ? "the typed stream stopped on a violation the final reader does not report"
                       : "the dynamic stream stopped on a violation the final reader does not report",
               where + "\nviolations:\n" + shown(s->violations) + "final issues:\n" + shown(final_issues));
      }
    }
    // (e) the typed and the dynamic stream stop on the same violations.
    if (!same_violations(t.violations, d.violations))
      fail("the typed and the dynamic streams report different violations",
           where + "\ntyped:\n" + shown(t.violations) + "dynamic:\n" + shown(d.violations));
    // (f) every chunking gives the same violations and the same view.
    if (!first_typed) {
      first_typed = t;
      first_dynamic = d;
      continue;
    }
    if (!same_violations(first_typed->violations, t.violations))
      fail("two chunkings give different violations",
           where + "\nfirst:\n" + shown(first_typed->violations) + "then:\n" + shown(t.violations));
    // The lenient fallback re-reads the text each time it has grown by half: where it last did
    // depends on the pieces.
    if (!t.lenient && !d.lenient && (first_typed->view != t.view || first_dynamic->view != d.view))
      fail("two chunkings give different views", where + "\ntyped: " + first_typed->view + "\n   vs " + t.view +
                                                        "\ndynamic: " + first_dynamic->view + "\n   vs " + d.view);
  }
}

template <class T>
void check_root(std::string_view text, std::size_t root_index, const char* root, const checks& c) {
  for (bool reject : {false, true}) {
    covenant::decode_options o;
    o.reject_unknown_fields = reject;
    if (c.decode_exact) property([&] { decode_parity<T>(text, o, root); });
    o.coerce = true;
    if (c.decode_coerce) property([&] { decode_parity<T>(text, o, root); });
  }
  const strictness levels[] = {strictness::strict, strictness::repair, strictness::coerce};
  for (int k = 0; k < 3; ++k) {
    if (c.reply[k]) property([&] { reply_parity<T>(text, levels[k], root); });
    if (c.stream) property([&] { stream_checks<T>(text, levels[k], root_index, root, read_typed<T>(text, levels[k])); });
  }
}

struct root {
  const char* name;
  void (*run)(std::string_view, std::size_t, const char*, const checks&);
  checks enabled;
};

constexpr checks stream_only{false, false, {false, false, false}, true};

const std::vector<root>& roots() {
  static const std::vector<root> all{
      {"FinalAnswer", &check_root<models::FinalAnswer>, {}},
      {"Core", &check_root<fz::Core>, {}},
      {"vector<Leaf>", &check_root<std::vector<fz::Leaf>>, {}},
      {"string", &check_root<std::string>, {}},
      {"Tone", &check_root<fz::Tone>, {}},
      {"map<string, Leaf>", &check_root<std::map<std::string, fz::Leaf>>, {}},
      {"Sparse", &check_root<fz::Sparse>, {}},
      {"Steps", &check_root<fz::Steps>, {}},
      {"variant<A, B>", &check_root<std::variant<fz::A, fz::B>>, stream_only},  // D6
      {"Choice", &check_root<fz::Choice>, stream_only},                       // D6
      {"Narrow", &check_root<fz::Narrow>, stream_only},                       // D8
      {"Floaty", &check_root<fz::Floaty>, stream_only},                       // D9
      {"Uniq", &check_root<fz::Uniq>, stream_only},                           // D11
      {"Keyed", &check_root<fz::Keyed>, stream_only},                         // unique_by message
      {"Shapes", &check_root<fz::Shapes>, {}},                                // D7 (coerce level)
  };
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (text.find('\0') != std::string_view::npos) return 0;
  static const bool all = std::getenv("FUZZ_READING_ALL_PROPERTIES") != nullptr;
  static const checks every{true, true, {true, true, true}, true};
  for (std::size_t i = 0; i < roots().size(); ++i) {
    const root& r = roots()[i];
    r.run(text, i, r.name, all ? every : r.enabled);
  }
  return 0;
}
