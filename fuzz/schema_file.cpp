// libFuzzer target for the runtime-schema loaders: arbitrary bytes as a schema file and as a JSON
// Schema document must never crash, hang or leak. When a schema file loads, every type's model
// must pass check_model, export to a prompt and a JSON Schema, and import back from that JSON
// Schema into a model that exports the same document; decoding a few documents against it must
// not crash.
#include <covenant/read/dynamic.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/runtime/json_schema_import.hpp>
#include <covenant/types/prompt_format.hpp>
#include <covenant/runtime/schema_file.hpp>

#include <boost/json/serialize.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

[[noreturn]] void fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "%s:\n%.*s\n", what, static_cast<int>(detail.size() > 2000 ? 2000 : detail.size()), detail.data());
  std::abort();
}

void exercise(const covenant::schema::model& m) {
  if (!covenant::check_model(m).empty()) fail("a loaded model fails check_model", covenant::render_diagnostics(covenant::check_model(m)));
  (void)covenant::prompt_text(m);
  const boost::json::value exported = covenant::to_json_schema(m);
  auto back = covenant::try_import_json_schema(exported);
  if (!back.ok()) fail("an exported schema does not import", covenant::render_diagnostics(back.issues));
  const boost::json::value again = covenant::to_json_schema(*back.model);
  if (again != exported) fail("export -> import -> export changed the document", boost::json::serialize(exported));
  for (const char* doc : {"{}", "[]", "null", "1", "\"a\"", R"({"a": [1, "b", {"c": null}]})"}) {
    (void)covenant::try_decode_dynamic(doc, m);
    (void)covenant::try_decode_dynamic(doc, *back.model);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  covenant::schema_load_options o;
  o.limits.max_types = 200;
  o.limits.max_fields = 2000;
  const covenant::schema_load_result r = covenant::schema_set::try_parse(text, o);
  if (r.ok()) {
    for (const auto& name : r.set.names()) exercise(r.set.model(name));
    if (auto m = r.set.try_model_for(text.substr(0, 64)); m.ok()) exercise(*m.model);
  }
  covenant::json_schema_import_options jo;
  jo.limits = o.limits;
  auto j = covenant::try_import_json_schema_text(text, jo);
  if (j.ok()) {
    (void)covenant::to_json_schema(*j.model);
    (void)covenant::prompt_text(*j.model);
    (void)covenant::try_decode_dynamic(R"({"a": 1})", *j.model);
  }
  return 0;
}
