// What a dynamic contract sends for media inputs through a loopback server, in both dialects: the
// record with references and each media as a part, files relative to dynamic_task::media_root
// and absolute paths, URLs as URLs and data URLs as bytes, and a string beside an image in a union.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "media_run_tasks.hpp"

namespace {

using namespace media_run_test;
using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(MediaRunContract, OpenAiGetsTheRecordWithReferencesAndEachMediaAsAPart) {
  const scan_files f;
  write("photo.png", f.photo);
  write("docs/a.pdf", f.first);
  write("docs/b.pdf", f.second);
  loopback_server server([](const received_request&, std::size_t) { return openai_reply(); });
  covenant::http_engine engine(options_for(server, false));
  const covenant::dynamic_contract c{engine, task_for("Scan", dir()), no_retries()};
  const json::value input = {{"photo", "photo.png"}, {"pages", json::array{"docs/a.pdf", "docs/b.pdf"}}, {"note", "lunch"}};
  const auto [value, o] = c.run(input);
  ASSERT_TRUE(o.success) << o.summary();
  EXPECT_EQ(value, json::parse(summary_json));
  ASSERT_EQ(server.requests(), 1u);
  const received_request& r = server.request(0);
  EXPECT_EQ(r.target, "/v1/chat/completions");
  const json::value content = user_content(r.body, false);
  ASSERT_TRUE(content.is_array()) << content;
  EXPECT_EQ(shown_record(content), (json::object{{"photo", "<image 1>"},
                                                 {"pages", json::array{"<pdf 1>", "<pdf 2>"}},
                                                 {"note", "lunch"}}));
  const std::string text = shown_text(content);
  EXPECT_THAT(text, HasSubstr(R"("photo":"\u003cimage 1>")"));
  EXPECT_THAT(text, Not(HasSubstr("photo.png")));
  EXPECT_THAT(text, Not(HasSubstr("a.pdf")));
  EXPECT_EQ(content, (json::array{text_part(text), text_part("<image 1>"), openai_image("image/png", f.photo),
                                  text_part("<pdf 1>"), openai_file("a.pdf", f.first), text_part("<pdf 2>"),
                                  openai_file("b.pdf", f.second)}));
  // the outcome's attempt says what was sent
  ASSERT_EQ(o.attempts.size(), 1u);
  ASSERT_EQ(o.attempts[0].media.size(), 3u);
  EXPECT_EQ(o.attempts[0].media[0].data(), f.photo);
  EXPECT_EQ(o.attempts[0].media[2].data(), f.second);
}

TEST_F(MediaRunContract, AnthropicGetsTheRecordWithReferencesAndImageAndDocumentBlocks) {
  const scan_files f;
  write("photo.png", f.photo);
  write("docs/a.pdf", f.first);
  write("docs/b.pdf", f.second);
  loopback_server server([](const received_request&, std::size_t) { return anthropic_reply(); });
  covenant::http_engine engine(options_for(server, true));
  const covenant::dynamic_contract c{engine, task_for("Scan", dir()), no_retries()};
  const json::value input = {{"photo", "photo.png"}, {"pages", json::array{"docs/a.pdf", "docs/b.pdf"}}, {"note", "lunch"}};
  const auto [value, o] = c.run(input);
  ASSERT_TRUE(o.success) << o.summary();
  EXPECT_EQ(value, json::parse(summary_json));
  ASSERT_EQ(server.requests(), 1u);
  EXPECT_EQ(server.request(0).target, "/v1/messages");
  const json::value content = user_content(server.request(0).body, true);
  ASSERT_TRUE(content.is_array()) << content;
  EXPECT_EQ(shown_record(content), (json::object{{"photo", "<image 1>"},
                                                 {"pages", json::array{"<pdf 1>", "<pdf 2>"}},
                                                 {"note", "lunch"}}));
  const std::string text = shown_text(content);
  EXPECT_THAT(text, Not(HasSubstr("photo.png")));
  EXPECT_EQ(content, (json::array{text_part(text), text_part("<image 1>"), anthropic_image("image/png", f.photo),
                                  text_part("<pdf 1>"), anthropic_document(f.first), text_part("<pdf 2>"),
                                  anthropic_document(f.second)}));
}

TEST_F(MediaRunContract, RelativePathsAreReadFromTheMediaRootAndAbsolutePathsAsThey) {
  const std::string in_one = jpeg(1);
  const std::string in_two = jpeg(2);  // same size, other bytes
  ASSERT_EQ(in_one.size(), in_two.size());
  write("one/photo.jpg", in_one);
  write("two/photo.jpg", in_two);
  loopback_server server([](const received_request&, std::size_t) { return openai_reply(); });
  covenant::http_engine engine(options_for(server, false));
  for (const std::string root : {"one", "two"}) {
    SCOPED_TRACE(root);
    const std::size_t before = server.requests();
    const covenant::dynamic_contract c{engine, task_for("Shot", path(root)), no_retries()};
    ASSERT_TRUE(c.run(json::value{{"photo", "photo.jpg"}}).outcome.success);
    ASSERT_EQ(server.requests(), before + 1);
    const json::value content = user_content(server.request(before).body, false);
    EXPECT_EQ(content.at(2), openai_image("image/jpeg", root == "one" ? in_one : in_two));
  }
  // a root with a trailing slash, and an absolute path, which no root changes
  const covenant::dynamic_contract slash{engine, task_for("Shot", path("two") + "/"), no_retries()};
  ASSERT_TRUE(slash.run(json::value{{"photo", "photo.jpg"}}).outcome.success);
  EXPECT_EQ(user_content(server.request(2).body, false).at(2), openai_image("image/jpeg", in_two));
  const covenant::dynamic_contract absolute{engine, task_for("Shot", path("two")), no_retries()};
  ASSERT_TRUE(absolute.run(json::value{{"photo", path("one/photo.jpg")}}).outcome.success);
  EXPECT_EQ(user_content(server.request(3).body, false).at(2), openai_image("image/jpeg", in_one));
  EXPECT_EQ(server.requests(), 4u);
}

TEST_F(MediaRunContract, UrlsGoAsUrlsAndDataUrlsAsBytes) {
  const std::string photo = png(3);
  {
    loopback_server server([](const received_request&, std::size_t) { return openai_reply(); });
    covenant::http_engine engine(options_for(server, false));
    const covenant::dynamic_contract c{engine, task_for("Scan", dir()), no_retries()};
    const json::value input = {{"photo", "https://example.com/scan/photo.png?v=2"}, {"pages", json::array{}}};
    const auto o = c.run(input).outcome;
    ASSERT_TRUE(o.success) << o.summary();
    const json::value content = user_content(server.request(0).body, false);
    EXPECT_EQ(shown_record(content).at("photo"), "<image 1>");
    EXPECT_THAT(shown_text(content), Not(HasSubstr("example.com")));
    EXPECT_EQ(content, (json::array{content.at(0), text_part("<image 1>"),
                                    openai_image_url("https://example.com/scan/photo.png?v=2")}));
    // a data URL: its bytes, sent as OpenAI takes bytes
    const json::value data = {{"photo", "data:image/png;base64," + b64(photo)}, {"pages", json::array{}}};
    ASSERT_TRUE(c.run(data).outcome.success);
    const json::value second = user_content(server.request(1).body, false);
    EXPECT_EQ(shown_record(second).at("photo"), "<image 1>");
    EXPECT_EQ(second, (json::array{second.at(0), text_part("<image 1>"), openai_image("image/png", photo)}));
  }
  {
    loopback_server server([](const received_request&, std::size_t) { return anthropic_reply(); });
    covenant::http_engine engine(options_for(server, true));
    const covenant::dynamic_contract c{engine, task_for("Scan", dir()), no_retries()};
    const json::value input = {{"photo", "https://example.com/scan/photo.png"},
                               {"pages", json::array{"https://example.com/scan/a.pdf"}}};
    const auto o = c.run(input).outcome;
    ASSERT_TRUE(o.success) << o.summary();
    const json::value content = user_content(server.request(0).body, true);
    EXPECT_EQ(shown_record(content), (json::object{{"photo", "<image 1>"}, {"pages", json::array{"<pdf 1>"}}}));
    EXPECT_EQ(content, (json::array{content.at(0), text_part("<image 1>"),
                                    anthropic_image_url("https://example.com/scan/photo.png"), text_part("<pdf 1>"),
                                    anthropic_document_url("https://example.com/scan/a.pdf")}));
    const json::value data = {{"photo", "data:image/png;base64," + b64(photo)}, {"pages", json::array{}}};
    ASSERT_TRUE(c.run(data).outcome.success);
    const json::value second = user_content(server.request(1).body, true);
    EXPECT_EQ(second, (json::array{second.at(0), text_part("<image 1>"), anthropic_image("image/png", photo)}));
  }
}

// A task whose input is `class U { v string | image }`.
covenant::dynamic_task union_task(const std::string& media_root) {
  const covenant::schema_set types = covenant::schema_set::parse("class U {\n  v string | image\n}\n"
                                                                 "class Summary {\n  text string\n}\n");
  covenant::dynamic_task task;
  task.name = "union";
  task.prompt = "Summarise the value.";
  task.output = types.model("Summary");
  task.input = types.model("U");
  task.media_root = media_root;
  return task;
}

TEST_F(MediaRunContract, AStringBesideAnImageInAUnionIsText) {
  // a file named as the text is, beside the media root: still not read
  write("hello", png(16));
  const covenant::dynamic_task task = union_task(dir());
  ASSERT_TRUE(task.input);
  {
    const schema::field& v = field_of(*task.input, "U", "v");
    ASSERT_EQ(v.type.kind, schema::kind::union_);
    ASSERT_EQ(v.type.args.size(), 2u);
    EXPECT_EQ(schema::media_kind_of(v.type.args[0]), std::nullopt);
    EXPECT_EQ(schema::media_kind_of(v.type.args[1]), media_kind::image);
  }
  for (const bool anthropic : {false, true}) {
    SCOPED_TRACE(anthropic ? "anthropic" : "openai");
    loopback_server server([&](const received_request&, std::size_t) {
      return anthropic ? anthropic_reply() : openai_reply();
    });
    covenant::http_engine engine(options_for(server, anthropic));
    const covenant::dynamic_contract c{engine, task, no_retries()};

    // a plain string: text, shown as it is, with no media part
    const auto [value, o] = c.run(json::value{{"v", "hello"}});
    ASSERT_TRUE(o.success) << o.summary();
    EXPECT_EQ(value, json::parse(summary_json));
    ASSERT_EQ(server.requests(), 1u);
    const json::value text = user_content(server.request(0).body, anthropic);
    EXPECT_EQ(shown_record(text), (json::object{{"v", "hello"}}));
    if (text.is_array()) {  // a content of parts has the record's text only
      ASSERT_EQ(text.as_array().size(), 1u) << text;
      EXPECT_EQ(text.at(0).at("type"), "text");
    } else {
      EXPECT_TRUE(text.is_string()) << text;
    }
    EXPECT_THAT(server.request(0).body, Not(HasSubstr(b64(png(16)))));
    ASSERT_EQ(o.attempts.size(), 1u);
    EXPECT_TRUE(o.attempts[0].media.empty());

    // an http(s) URL: an image, sent as its URL and shown as its reference
    const std::string url = "https://x.test/a.png";
    const auto image = c.run(json::value{{"v", url}}).outcome;
    ASSERT_TRUE(image.success) << image.summary();
    ASSERT_EQ(server.requests(), 2u);
    const json::value content = user_content(server.request(1).body, anthropic);
    ASSERT_TRUE(content.is_array()) << content;
    EXPECT_EQ(shown_record(content), (json::object{{"v", "<image 1>"}}));
    EXPECT_THAT(shown_text(content), Not(HasSubstr("x.test")));
    EXPECT_EQ(content, (json::array{content.at(0), text_part("<image 1>"),
                                    anthropic ? anthropic_image_url(url) : openai_image_url(url)}));
    ASSERT_EQ(image.attempts.size(), 1u);
    ASSERT_EQ(image.attempts[0].media.size(), 1u);
    EXPECT_EQ(image.attempts[0].media[0].url(), url);
  }
}

}  // namespace
