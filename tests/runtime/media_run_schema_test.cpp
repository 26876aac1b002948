// Media fields of runtime schemas (docs/media.md): `image`, `pdf` and `audio` in schema files (and
// `video` refused), JSON Schema's format and contentMediaType, and an imported JSON Schema input
// sending its media.
#include <covenant/runtime/json_schema_import.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "media_run_tasks.hpp"

namespace {

using namespace media_run_test;
using ::testing::HasSubstr;

TEST(MediaRunSchema, ASchemaFileTakesImagePdfAndAudioAsStringsOfAMediaFormat) {
  const auto r = covenant::schema_set::try_parse("class Scan {\n  photo image\n  pages pdf[]\n  note string?\n}\n"
                                                 "class Voice {\n  clip audio\n}\n",
                                                 {.file = "scan.baml"});
  ASSERT_TRUE(r.ok()) << covenant::render_diagnostics(r.issues);
  const schema::model m = r.set.model("Scan");
  const schema::field& photo = field_of(m, "Scan", "photo");
  EXPECT_EQ(photo.type.kind, schema::kind::string);
  EXPECT_EQ(schema::media_kind_of(photo.type), media_kind::image);
  EXPECT_TRUE(photo.required);
  const schema::field& pages = field_of(m, "Scan", "pages");
  ASSERT_EQ(pages.type.kind, schema::kind::array);
  ASSERT_EQ(pages.type.args.size(), 1u);
  EXPECT_EQ(pages.type.args[0].kind, schema::kind::string);
  EXPECT_EQ(schema::media_kind_of(pages.type.args[0]), media_kind::pdf);
  EXPECT_EQ(schema::media_kind_of(pages.type), std::nullopt);  // the list itself is no media
  const schema::field& note = field_of(m, "Scan", "note");
  EXPECT_EQ(note.type.kind, schema::kind::string);
  EXPECT_EQ(schema::media_kind_of(note.type), std::nullopt);
  EXPECT_EQ(schema::type_expression(photo.type), "image");
  EXPECT_EQ(schema::type_expression(pages.type), "pdf[]");
  const schema::model voice = r.set.model("Voice");
  EXPECT_EQ(schema::media_kind_of(field_of(voice, "Voice", "clip").type), media_kind::audio);
}

TEST(MediaRunSchema, VideoIsRefusedWithAMessageNamingIt) {
  const auto r = covenant::schema_set::try_parse("class X { v video }", {.file = "x.baml"});
  ASSERT_FALSE(r.ok());
  ASSERT_EQ(r.issues.size(), 1u) << covenant::render_diagnostics(r.issues);
  EXPECT_EQ(r.issues[0].code, covenant::schema_error_code::unsupported);
  EXPECT_THAT(r.issues[0].message, HasSubstr("video"));
  EXPECT_EQ(r.issues[0].line, 1u);
  EXPECT_EQ(r.issues[0].column, 13u);  // at `video`
  EXPECT_THROW((void)covenant::schema_set::parse("class X { v video }"), covenant::schema_error);
}

TEST(MediaRunSchema, JsonSchemaFormatAndContentMediaTypeMarkMediaFields) {
  const schema::model m = covenant::import_json_schema(json::parse(R"({
    "type": "object",
    "properties": {
      "photo": {"type": "string", "format": "image"},
      "doc": {"type": "string", "contentMediaType": "application/pdf"}
    },
    "required": ["photo"]
  })"));
  const schema::definition* root = m.resolve(m.root);
  ASSERT_NE(root, nullptr);
  ASSERT_NE(root->object(), nullptr);
  const schema::field& photo = field_of(m, root->name, "photo");
  const schema::field& doc = field_of(m, root->name, "doc");
  EXPECT_EQ(schema::media_kind_of(photo.type), media_kind::image);
  EXPECT_TRUE(photo.required);
  EXPECT_EQ(schema::media_kind_of(doc.type), media_kind::pdf);
  EXPECT_FALSE(doc.required);

  // other media types: image/png, audio/* give their kind; a string of another type or format is none
  const schema::model other = covenant::import_json_schema(json::parse(R"({
    "type": "object",
    "properties": {
      "png": {"type": "string", "contentMediaType": "image/png"},
      "voice": {"type": "string", "contentMediaType": "audio/*"},
      "text": {"type": "string", "contentMediaType": "text/plain"},
      "when": {"type": "string", "format": "date"}
    }
  })"));
  const std::string name = other.resolve(other.root)->name;
  EXPECT_EQ(schema::media_kind_of(field_of(other, name, "png").type), media_kind::image);
  EXPECT_EQ(schema::media_kind_of(field_of(other, name, "voice").type), media_kind::audio);
  EXPECT_EQ(schema::media_kind_of(field_of(other, name, "text").type), std::nullopt);
  EXPECT_EQ(schema::media_kind_of(field_of(other, name, "when").type), std::nullopt);
}

TEST_F(MediaRunContract, AnImportedJsonSchemaInputSendsItsMedia) {
  const std::string photo = png(7);
  write("p.png", photo);
  loopback_server server([](const received_request&, std::size_t) { return openai_reply(); });
  covenant::http_engine engine(options_for(server, false));
  covenant::dynamic_task task = task_for("Scan", dir());
  task.input = covenant::import_json_schema(json::parse(
      R"({"type":"object","properties":{"photo":{"type":"string","format":"image"},)"
      R"("doc":{"type":"string","contentMediaType":"application/pdf"}},"required":["photo"]})"));
  const covenant::dynamic_contract c{engine, task, no_retries()};
  const auto [value, o] = c.run(json::value{{"photo", "p.png"}});
  ASSERT_TRUE(o.success) << o.summary();
  ASSERT_EQ(server.requests(), 1u);
  const json::value content = user_content(server.request(0).body, false);
  EXPECT_EQ(shown_record(content).at("photo"), "<image 1>");
  EXPECT_EQ(content, (json::array{content.at(0), text_part("<image 1>"), openai_image("image/png", photo)}));
}

}  // namespace
