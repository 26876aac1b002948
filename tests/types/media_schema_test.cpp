// Media fields in the schema model and in JSON (covenant/types/media.hpp): strings of a media
// format, to_json (URLs, paths, a description of bytes), the input JSON with references collected
// in order, and what decode reads (URLs, data URLs and references, not paths).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "media_inputs.hpp"

namespace {

using namespace media_test;

TEST_F(MediaSchema, MediaFieldsAreStringsOfAMediaFormat) {
  const covenant::schema::model& s = covenant::schema_of<Scan>();
  const covenant::schema::definition* d = s.resolve(s.root);
  ASSERT_NE(d, nullptr);
  ASSERT_NE(d->object(), nullptr);
  const std::vector<covenant::schema::field>& fields = d->object()->fields;
  ASSERT_EQ(fields.size(), 4u);

  EXPECT_EQ(fields[0].key, "receipt");
  EXPECT_EQ(fields[0].type.kind, covenant::schema::kind::string);
  EXPECT_FALSE(fields[0].type.nullable);
  EXPECT_TRUE(fields[0].required);
  ASSERT_EQ(fields[0].type.constraints.size(), 1u);
  EXPECT_EQ(fields[0].type.constraints[0].kind, covenant::schema::constraint_kind::format);
  EXPECT_EQ(fields[0].type.constraints[0].text, "image");
  EXPECT_EQ(covenant::schema::media_kind_of(fields[0].type), media_kind::image);

  EXPECT_EQ(fields[1].key, "invoice");
  EXPECT_EQ(fields[1].type.kind, covenant::schema::kind::string);
  EXPECT_TRUE(fields[1].type.nullable);
  EXPECT_FALSE(fields[1].required);
  ASSERT_EQ(fields[1].type.constraints.size(), 1u);
  EXPECT_EQ(fields[1].type.constraints[0].kind, covenant::schema::constraint_kind::format);
  EXPECT_EQ(fields[1].type.constraints[0].text, "pdf");
  EXPECT_EQ(covenant::schema::media_kind_of(fields[1].type), media_kind::pdf);

  EXPECT_EQ(fields[2].key, "pages");
  EXPECT_EQ(fields[2].type.kind, covenant::schema::kind::array);
  EXPECT_EQ(covenant::schema::media_kind_of(fields[2].type), std::nullopt);
  ASSERT_EQ(fields[2].type.args.size(), 1u);
  EXPECT_EQ(fields[2].type.args[0].kind, covenant::schema::kind::string);
  EXPECT_EQ(covenant::schema::media_kind_of(fields[2].type.args[0]), media_kind::image);

  EXPECT_EQ(covenant::schema::media_kind_of(fields[3].type), std::nullopt);  // a plain string

  EXPECT_EQ(covenant::schema::media_kind_of(covenant::schema::make_primitive(covenant::schema::kind::string)),
            std::nullopt);
  covenant::schema::type audio_type = covenant::schema::make_primitive(covenant::schema::kind::string);
  audio_type.constraints.push_back(covenant::schema::media_format(media_kind::audio));
  EXPECT_EQ(covenant::schema::media_kind_of(audio_type), media_kind::audio);
  EXPECT_EQ(covenant::schema::type_expression(audio_type), "audio");
  EXPECT_EQ(covenant::schema::type_expression(fields[2].type), "image[]");
  EXPECT_EQ(covenant::schema::describe(covenant::schema::media_format(media_kind::image)),
            "the reference of an image attached to this message, such as \"<image 1>\"");
}

TEST_F(MediaSchema, ToJsonWritesUrlsPathsAndADescriptionOfBytes) {
  const std::string p = write("receipt.jpg", jpeg_bytes);
  Scan scan;
  scan.receipt = covenant::image::file(p);
  scan.invoice = covenant::pdf::url("https://x.test/inv.pdf");
  scan.pages = {covenant::image::bytes(png_bytes), covenant::image::parse("<image 2>")};
  scan.note = "lunch";
  const covenant::image& page = scan.pages[0];
  const std::string description =
      "<image image/png " + std::to_string(png_bytes.size()) + " bytes sha256:" + page.sha256() + ">";
  EXPECT_EQ(json::parse(covenant::to_json(scan)),
            (json::object{{"receipt", p},
                          {"invoice", "https://x.test/inv.pdf"},
                          {"pages", json::array{json::string(description), "<image 2>"}},
                          {"note", "lunch"}}));
  EXPECT_EQ(covenant::to_json(scan).find(png_bytes.substr(0, 4)), std::string::npos);  // never the bytes

  scan.invoice.reset();  // an absent optional is left out
  scan.pages.clear();
  EXPECT_EQ(covenant::to_json(scan), "{\"receipt\":\"" + p + "\",\"pages\":[],\"note\":\"lunch\"}");
}

TEST_F(MediaSchema, InputJsonWritesReferencesAndCollectsTheMediaInOrder) {
  Scan scan;
  scan.receipt = covenant::image::bytes(jpeg_bytes);
  scan.invoice = covenant::pdf::bytes(pdf_bytes);
  scan.pages = {covenant::image::bytes(png_bytes), covenant::image::url("https://x.test/p.gif")};
  scan.note = "n";
  std::vector<media> parts;
  covenant::detail::media_sink sink{&parts, nullptr};
  std::string out;
  covenant::detail::write_input_json(scan, out, sink);
  EXPECT_EQ(out, R"({"receipt":"<image 1>","invoice":"<pdf 1>","pages":["<image 2>","<image 3>"],"note":"n"})");
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_TRUE(parts[0] == scan.receipt);
  EXPECT_TRUE(parts[1] == *scan.invoice);
  EXPECT_TRUE(parts[2] == scan.pages[0]);
  EXPECT_TRUE(parts[3] == scan.pages[1]);

  covenant::message m{covenant::role::user, ""};
  covenant::detail::render_input_message(m, scan);
  EXPECT_EQ(m.role, covenant::role::user);
  EXPECT_EQ(m.content, input_block(out));
  EXPECT_EQ(m.media, parts);
}

TEST_F(MediaSchema, DecodeReadsUrlsDataUrlsAndReferencesButNotPaths) {
  const auto r = covenant::try_decode<Scan>(R"({"receipt": "https://x/y.png", "invoice": "<pdf 1>",
      "pages": ["data:image/png;base64,)" + b64(png_bytes) + R"("], "note": "n"})");
  ASSERT_TRUE(r.ok()) << shown(r.issues).front();
  EXPECT_TRUE(r.value->receipt.is_url());
  EXPECT_EQ(url_of(r.value->receipt), "https://x/y.png");
  EXPECT_EQ(r.value->receipt.media_type(), "image/png");
  ASSERT_TRUE(r.value->invoice.has_value());
  EXPECT_EQ(r.value->invoice->reference(), 1u);
  EXPECT_EQ(r.value->invoice->kind(), media_kind::pdf);
  ASSERT_EQ(r.value->pages.size(), 1u);
  EXPECT_EQ(r.value->pages[0].data(), png_bytes);
  EXPECT_EQ(r.value->pages[0].media_type(), "image/png");

  const std::string local = "scans/receipt.png";  // a path is refused, never read
  const auto bad = covenant::try_decode<Scan>(R"({"receipt": ")" + local + R"(", "invoice": null,
      "pages": ["<image 1>", "<pdf 1>"], "note": "n"})");
  EXPECT_FALSE(bad.ok());
  ASSERT_EQ(bad.issues.size(), 2u);
  EXPECT_EQ(bad.issues[0].path.to_string(), "receipt");
  EXPECT_EQ(bad.issues[0].code, covenant::issue_code::type_mismatch);
  EXPECT_EQ(bad.issues[0].expected, "image");
  EXPECT_EQ(bad.issues[0].actual, "\"" + local + "\"");
  EXPECT_EQ(bad.issues[0].message, "is not an http(s) URL, a data URL or a reference such as \"<image 1>\"");
  EXPECT_EQ(bad.issues[1].path.to_string(), "pages[1]");
  EXPECT_EQ(bad.issues[1].expected, "image");
  EXPECT_EQ(bad.issues[1].actual, "\"<pdf 1>\"");

  const auto not_a_string = covenant::try_decode<OneImage>(R"({"note": "n", "receipt": 7})");
  ASSERT_EQ(not_a_string.issues.size(), 1u);
  EXPECT_EQ(not_a_string.issues[0].path.to_string(), "receipt");
  EXPECT_EQ(not_a_string.issues[0].code, covenant::issue_code::type_mismatch);
}

}  // namespace
