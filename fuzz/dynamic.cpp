// libFuzzer target for decoding model text into runtime schemas: arbitrary bytes read against a
// few schemas (classes with aliases and checks, enums, literal unions, maps, unions, a recursive
// type, a list root) by try_decode_dynamic and by try_read_dynamic at every strictness level, final and
// partial, must never crash, hang or leak, and:
//   - a value try_decode_dynamic accepts validates again, and its compact text decodes to the same
//     value (round trip), and try_read_dynamic at the strict level accepts the text with that value;
//   - a value try_read_dynamic accepts in final mode validates against the schema;
//   - a result of try_read_dynamic with issues has no value;
//   - a runtime schema's stream with streaming attributes (dynamic_stream_reader), fed the bytes in
//     pieces, never shows a @stream.done field that is not finished, and, unless it fell back to
//     the lenient reader, ends with the same view and violations however the bytes were cut.
#include <covenant/read/detail/stream_reader.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/schema_file.hpp>

#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <optional>
#include <string_view>
#include <vector>

namespace {

constexpr std::string_view schema_text = R"(
enum Priority {
  LOW @alias("low")
  MEDIUM
  HIGH @description("urgent")
}

class Source {
  id string @assert({{ this|length > 0 }})
  score float? @check(plausible, {{ this >= 0 and this <= 1 }})
}

class Answer {
  answer string @alias("text")
  confidence float @assert({{ this >= 0.0 and this <= 1.0 }})
  sources Source[] @assert({{ this|length >= 1 and this|length <= 5 }})
  priority Priority
  mood "calm" | "tense" | 3 | true
  tags map<string, int>
  extra (int | string[] | Source)?
  ignored string @skip
}

class Tree {
  label string
  children Tree[]
  parent Tree?
}
)";

[[noreturn]] void fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "%s:\n%.*s\n", what, static_cast<int>(detail.size() > 2000 ? 2000 : detail.size()),
               detail.data());
  std::abort();
}

const std::vector<covenant::schema::model>& models() {
  static const std::vector<covenant::schema::model> all = [] {
    const covenant::schema_set set = covenant::schema_set::parse(schema_text);
    std::vector<covenant::schema::model> m;
    for (const char* target : {"Answer", "Tree", "Priority[]", "int | float | bool | string", "map<string, Source>"})
      m.push_back(set.model_for(target));
    return m;
  }();
  return all;
}

// A class with streaming attributes, for the stream property.
constexpr std::string_view streamed_text = R"(
enum Mood {
  CALM
  TENSE
}
class Step {
  name string @stream.not_null
  done bool
}
class Shown {
  title string @stream.done
  steps Step[] @stream.done
  mood Mood @stream.not_null
  items Step[]
  note string
}
)";

// `text` cut in pieces of 1 to `most` bytes, chosen from `seed`.
std::vector<std::string_view> pieces(std::string_view text, std::uint64_t seed, std::size_t most) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0; at < text.size();) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    const std::size_t n = std::min<std::size_t>(1 + (seed >> 33) % most, text.size() - at);
    out.push_back(text.substr(at, n));
    at += n;
  }
  return out;
}

void stream_checks(std::string_view text) {
  static const covenant::schema::model m = covenant::schema_set::parse(streamed_text).model("Shown");
  for (covenant::strictness level : {covenant::strictness::strict, covenant::strictness::coerce}) {
    std::optional<std::string> first;
    for (std::size_t most : {std::size_t{1}, std::size_t{7}, std::size_t{64}}) {
      covenant::detail::dynamic_stream_reader r(m, {}, level);
      for (std::string_view piece : pieces(text, text.size() * 31 + most, most)) {
        r.feed(piece);
        const boost::json::value& v = r.view().value();
        for (const char* key : {"title", "steps"})
          if (v.is_object() && v.as_object().contains(key) && r.view().state(key) != covenant::value_state::complete)
            fail("the stream shows a @stream.done value that is not finished", text);
      }
      if (r.lenient()) continue;  // re-read at points that depend on the pieces
      std::string seen = covenant::json_text(r.view().value());
      for (const covenant::issue& i : r.violations()) seen += "\n" + i.to_string();
      if (!first) first = std::move(seen);
      else if (*first != seen) fail("two cuts of the same text end with different stream views", text);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const covenant::schema::model& m : models()) {
    const covenant::dynamic_result d = covenant::try_decode_dynamic(text, m);
    if (d.ok()) {
      const covenant::dynamic_result again = covenant::try_validate_value(d.value, m);
      if (!again.ok()) fail("a decoded value does not validate again", covenant::json_text(d.value));
      const std::string compact = covenant::json_text(d.value);
      const covenant::dynamic_result round = covenant::try_decode_dynamic(compact, m);
      if (!round.ok() || round.value != d.value) fail("compact text of a decoded value reads differently", compact);
      const covenant::read_result strict =
          covenant::try_read_dynamic(text, m, {.level = covenant::strictness::strict, .partial = false});
      if (!strict.ok() || strict.value != d.value) fail("strict reading disagrees with try_decode_dynamic", text);
    }

    for (covenant::strictness level :
         {covenant::strictness::strict, covenant::strictness::repair, covenant::strictness::coerce}) {
      for (bool partial : {false, true}) {
        const covenant::read_result r = covenant::try_read_dynamic(text, m, {.level = level, .partial = partial});
        if (!r.ok() && !r.value.is_null()) fail("try_read_dynamic returned a value with issues", text);
        if (r.ok() && !partial) {
          const covenant::dynamic_result v = covenant::try_validate_value(r.value, m);
          if (!v.ok()) fail("a value read in final mode does not validate", covenant::json_text(r.value));
        }
      }
    }
  }
  stream_checks(text);
  return 0;
}
