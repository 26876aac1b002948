// Media inputs of runtime schemas (docs/media.md): `image`, `pdf` and `audio` fields in schema files
// and JSON Schema documents; a dynamic contract reading them from files (relative to
// dynamic_task::media_root), URLs and data URLs and sending them through a loopback server in both
// dialects; inputs refused before any request; `covenant run` with --input-type and --media-root;
// cassettes and audit lines that keep a digest of each media and never its bytes.
#include <covenant/engine/cassette.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/runtime/json_schema_import.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/telemetry/audit_log.hpp>
#include <covenant/testing/testing.hpp>
#include <covenant/types/media.hpp>
#include <covenant/types/schema.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "anthropic_replies.hpp"
#include "cli_fixture.hpp"
#include "loopback_engine.hpp"
#include "loopback_server.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace schema = covenant::schema;
using covenant::media_kind;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;
using ::testing::HasSubstr;
using ::testing::Not;

// ---------------------------------------------------------------------------------------------
// media bytes, made at test time (enough of each format for its magic number)

const std::string png_signature("\x89PNG\r\n\x1a\n", 8);

// A PNG whose bytes after the signature are `n` bytes that depend on `seed` (so that two seeds
// give two images of the same size and other bytes), with bytes that are not ASCII.
std::string png(int seed, std::size_t n = 48) {
  std::string s = png_signature + std::string("\0\0\0\x0dIHDR", 8);
  for (std::size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(0x80 + ((static_cast<std::size_t>(seed) * 37 + i * 11) % 127)));
  return s;
}
std::string jpeg(int seed) {
  std::string s("\xff\xd8\xff\xe0\0\x10JFIF\0", 11);
  for (int i = 0; i < 40; ++i) s.push_back(static_cast<char>(0x90 + (seed * 13 + i * 5) % 100));
  return s;
}
std::string pdf(const std::string& text) { return "%PDF-1.4\n1 0 obj\n<< /Title (" + text + ") >>\nendobj\n%%EOF\n"; }
const std::string wav_bytes = "RIFF" + std::string("\x24\0\0\0", 4) + "WAVEfmt " + std::string("\x10\0\0\0\x01\0\x01\0", 8);

// Base64 computed apart from the library (OpenSSL's EVP_EncodeBlock: standard alphabet, padded).
std::string b64(std::string_view bytes) {
  std::vector<unsigned char> buf((bytes.size() + 2) / 3 * 4 + 1);
  const int n = EVP_EncodeBlock(buf.data(), reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  return std::string(reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(n));
}

// Lower-case hex SHA-256 computed apart from the library (OpenSSL's EVP_Digest).
std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EXPECT_EQ(EVP_Digest(bytes.data(), bytes.size(), digest, &n, EVP_sha256(), nullptr), 1);
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// ---------------------------------------------------------------------------------------------
// what the requests carry

json::object text_part(std::string_view text) { return {{"type", "text"}, {"text", text}}; }
json::object openai_image(std::string_view type, std::string_view bytes) {
  return {{"type", "image_url"},
          {"image_url", {{"url", "data:" + std::string(type) + ";base64," + b64(bytes)}, {"detail", "auto"}}}};
}
json::object openai_image_url(std::string_view url) {
  return {{"type", "image_url"}, {"image_url", {{"url", url}, {"detail", "auto"}}}};
}
json::object openai_file(std::string_view filename, std::string_view bytes) {
  return {{"type", "file"},
          {"file", {{"filename", filename}, {"file_data", "data:application/pdf;base64," + b64(bytes)}}}};
}
json::object anthropic_image(std::string_view type, std::string_view bytes) {
  return {{"type", "image"}, {"source", {{"type", "base64"}, {"media_type", type}, {"data", b64(bytes)}}}};
}
json::object anthropic_image_url(std::string_view url) {
  return {{"type", "image"}, {"source", {{"type", "url"}, {"url", url}}}};
}
json::object anthropic_document(std::string_view bytes) {
  return {{"type", "document"},
          {"source", {{"type", "base64"}, {"media_type", "application/pdf"}, {"data", b64(bytes)}}}};
}
json::object anthropic_document_url(std::string_view url) {
  return {{"type", "document"}, {"source", {{"type", "url"}, {"url", url}}}};
}

// The content of the user message of a request body (OpenAI: after the system message; Anthropic:
// the first turn, the system prompt going apart).
json::value user_content(const std::string& body, bool anthropic) {
  const json::value v = json::parse(body);
  const json::array& messages = v.at("messages").as_array();
  const json::value& m = messages.at(anthropic ? 0 : 1);
  EXPECT_EQ(m.at("role"), "user");
  return m.at("content");
}

// The record shown to the model: the JSON between "<input>\n" and "\n</input>" of the first text part.
json::value shown_record(const json::value& content) {
  const json::value& first = content.is_array() ? content.as_array().at(0).at("text") : content;
  const std::string text(first.as_string());
  const std::string head = "<input>\n";
  const std::string tail = "\n</input>";
  EXPECT_TRUE(text.starts_with(head)) << text;
  EXPECT_TRUE(text.ends_with(tail)) << text;
  if (!text.starts_with(head) || !text.ends_with(tail)) return nullptr;
  return json::parse(text.substr(head.size(), text.size() - head.size() - tail.size()));
}

// The raw text of the first text part (the record as the model reads it, '<' written \u003c).
std::string shown_text(const json::value& content) {
  return std::string(content.as_array().at(0).at("text").as_string());
}

std::vector<std::string> issue_paths(const covenant::issue_list& issues) {
  std::vector<std::string> out;
  for (const covenant::issue& i : issues) out.push_back(i.path.to_string());
  return out;
}

// ---------------------------------------------------------------------------------------------
// the task of the contract tests

const char* const scan_schema = R"(
class Scan {
  photo image
  pages pdf[]
  note string?
}
class Voice {
  clip audio
}
class Shot {
  photo image
}
class Summary {
  text string
}
)";

const std::string summary_json = R"({"text": "ok"})";

covenant::dynamic_task task_for(const std::string& input_class, const std::string& media_root) {
  const covenant::schema_set types = covenant::schema_set::parse(scan_schema);
  covenant::dynamic_task task;
  task.name = "scan";
  task.prompt = "Summarise the attached media.";
  task.output = types.model("Summary");
  task.input = types.model(input_class);
  task.media_root = media_root;
  return task;
}

covenant::contract_options no_retries() { return covenant::testing::instant({.tries = 0}); }

response_plan openai_reply() { return covenant_test::whole_reply(covenant_test::openai_completion(summary_json)); }
response_plan anthropic_reply() {
  return covenant_test::whole_reply(covenant_test::anthropic_tool_message("Summary", summary_json));
}

covenant::http_engine_options options_for(const loopback_server& s, bool anthropic) {
  return anthropic ? covenant_test::loopback_engine_options(s, covenant::provider::anthropic, "claude-test")
                   : covenant_test::loopback_engine_options(s, covenant::provider::openai, "gpt-test");
}

// A scratch directory per test.
class MediaRunFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("covenant_media_run_" + std::to_string(::getpid()) + "_" + t->test_suite_name() + "_" + t->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Writes `bytes` to `name` (folders made as needed); returns the file's path.
  std::string write(const std::string& name, std::string_view bytes) const {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p.string();
  }
  [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }
  [[nodiscard]] std::string dir() const { return dir_.string(); }

  fs::path dir_;
};

class MediaRunContract : public MediaRunFiles {};
class MediaRunCassette : public MediaRunFiles {};
class MediaRunAudit : public MediaRunFiles {};

// =============================================================================================
// 1. schema files and JSON Schema documents

const schema::field& field_of(const schema::model& m, std::string_view cls, std::string_view name) {
  const schema::definition* d = m.find(cls);
  if (d == nullptr || d->object() == nullptr) throw std::runtime_error("no class " + std::string(cls));
  for (const schema::field& f : d->object()->fields)
    if (f.name == name) return f;
  throw std::runtime_error("no field " + std::string(name));
}

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

// =============================================================================================
// 2. a dynamic contract against the loopback server

// The Scan input: a photo and two pages, relative to the media root.
struct scan_files {
  std::string photo = png(1);
  std::string first = pdf("first page");
  std::string second = pdf("second page, longer");
};

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

TEST_F(MediaRunContract, AMissingFileFailsInputValidationAtItsFieldWithoutARequest) {
  const scan_files f;
  write("photo.png", f.photo);
  write("docs/a.pdf", f.first);
  for (const bool anthropic : {false, true}) {
    SCOPED_TRACE(anthropic ? "anthropic" : "openai");
    loopback_server server([&](const received_request&, std::size_t) {
      return anthropic ? anthropic_reply() : openai_reply();
    });
    covenant::http_engine engine(options_for(server, anthropic));
    const covenant::dynamic_contract c{engine, task_for("Scan", dir()), no_retries()};
    const json::value input = {{"photo", "photo.png"}, {"pages", json::array{"docs/a.pdf", "docs/missing.pdf"}}};
    const auto [value, o] = c.run(input);
    EXPECT_FALSE(o.success);
    EXPECT_TRUE(value.is_null());
    EXPECT_EQ(o.failed_stage, covenant::stage::input_validation);
    ASSERT_EQ(o.issues.size(), 1u) << o.summary();
    EXPECT_EQ(o.issues[0].path.to_string(), "pages[1]");
    EXPECT_EQ(o.issues[0].code, covenant::issue_code::constraint_violation);
    EXPECT_THAT(o.issues[0].message, HasSubstr("cannot read the file " + path("docs/missing.pdf")));
    EXPECT_THAT(o.issues[0].message, HasSubstr("No such file or directory"));
    EXPECT_EQ(o.issues[0].actual, path("docs/missing.pdf"));
    EXPECT_EQ(o.input_issues, o.issues);
    EXPECT_TRUE(o.attempts.empty());
    EXPECT_EQ(server.requests(), 0u);

    // every unreadable field is an issue at its own path
    const json::value both = {{"photo", "nope.png"}, {"pages", json::array{"docs/missing.pdf", "docs/a.pdf"}}};
    const auto two = c.run(both).outcome;
    EXPECT_EQ(two.failed_stage, covenant::stage::input_validation);
    EXPECT_EQ(issue_paths(two.issues), (std::vector<std::string>{"photo", "pages[0]"}));
    EXPECT_EQ(server.requests(), 0u);
  }
}

TEST_F(MediaRunContract, AFileThatIsNoMediaOfItsKindIsRefusedTheSameWay) {
  write("photo.png", pdf("not a picture"));  // a PDF named .png, given for an image
  write("notes.txt", "just text");
  loopback_server server([](const received_request&, std::size_t) { return openai_reply(); });
  covenant::http_engine engine(options_for(server, false));
  const covenant::dynamic_contract c{engine, task_for("Scan", dir()), no_retries()};
  const auto o = c.run(json::value{{"photo", "photo.png"}, {"pages", json::array{"notes.txt"}}}).outcome;
  EXPECT_EQ(o.failed_stage, covenant::stage::input_validation);
  ASSERT_EQ(issue_paths(o.issues), (std::vector<std::string>{"photo", "pages[0]"})) << o.summary();
  EXPECT_THAT(o.issues[0].message, HasSubstr("application/pdf"));
  EXPECT_THAT(o.issues[1].message, HasSubstr("is no pdf format"));
  EXPECT_EQ(server.requests(), 0u);
}

TEST_F(MediaRunContract, AudioIsRefusedForAnthropicBeforeAnyRequestAndSentToOpenAi) {
  write("clip.wav", wav_bytes);
  {
    loopback_server server([](const received_request&, std::size_t) { return anthropic_reply(); });
    covenant::http_engine engine(options_for(server, true));
    const covenant::dynamic_contract c{engine, task_for("Voice", dir()), no_retries()};
    const auto [value, o] = c.run(json::value{{"clip", "clip.wav"}});
    EXPECT_FALSE(o.success);
    EXPECT_EQ(o.failed_stage, covenant::stage::input_validation);
    ASSERT_EQ(o.issues.size(), 1u) << o.summary();
    EXPECT_EQ(o.issues[0].path.to_string(), "clip");
    EXPECT_THAT(o.issues[0].message, HasSubstr("Anthropic Messages takes no audio"));
    EXPECT_TRUE(o.attempts.empty());
    EXPECT_EQ(server.requests(), 0u);
  }
  {
    loopback_server server([](const received_request&, std::size_t) { return openai_reply(); });
    covenant::http_engine engine(options_for(server, false));
    const covenant::dynamic_contract c{engine, task_for("Voice", dir()), no_retries()};
    const auto o = c.run(json::value{{"clip", "clip.wav"}}).outcome;
    ASSERT_TRUE(o.success) << o.summary();
    const json::value content = user_content(server.request(0).body, false);
    EXPECT_EQ(shown_record(content), (json::object{{"clip", "<audio 1>"}}));
    EXPECT_EQ(content, (json::array{content.at(0), text_part("<audio 1>"),
                                    json::object{{"type", "input_audio"},
                                                 {"input_audio", {{"data", b64(wav_bytes)}, {"format", "wav"}}}}}));
  }
}

TEST_F(MediaRunContract, AnImageOverAnthropicsSizeLimitAndAPdfUrlForOpenAiAreRefusedBeforeAnyRequest) {
  // 5 MB as sent (base64) is Anthropic's limit for one image: one byte more than fits
  std::string big = png(4);
  big.resize(5u * 1024 * 1024 / 4 * 3 + 1, 'x');
  write("big.png", big);
  {
    loopback_server server([](const received_request&, std::size_t) { return anthropic_reply(); });
    covenant::http_engine engine(options_for(server, true));
    const covenant::dynamic_contract c{engine, task_for("Shot", dir()), no_retries()};
    const auto o = c.run(json::value{{"photo", "big.png"}}).outcome;
    EXPECT_EQ(o.failed_stage, covenant::stage::input_validation);
    ASSERT_EQ(o.issues.size(), 1u) << o.summary();
    EXPECT_EQ(o.issues[0].path.to_string(), "photo");
    EXPECT_EQ(o.issues[0].message, "is 5.0 MB (5242884 bytes) as sent (base64); Anthropic Messages takes at most 5.0 MB (5242880 bytes) per image");
    EXPECT_EQ(server.requests(), 0u);
  }
  {
    loopback_server server([](const received_request&, std::size_t) { return openai_reply(); });
    covenant::http_engine engine(options_for(server, false));
    const covenant::dynamic_contract c{engine, task_for("Shot", dir()), no_retries()};
    EXPECT_TRUE(c.run(json::value{{"photo", "big.png"}}).outcome.success);  // OpenAI takes it
    EXPECT_EQ(server.requests(), 1u);
    const covenant::dynamic_contract scan{engine, task_for("Scan", dir()), no_retries()};
    write("photo.png", png(5));
    const auto o = scan.run(json::value{{"photo", "photo.png"}, {"pages", json::array{"https://example.com/a.pdf"}}}).outcome;
    EXPECT_EQ(o.failed_stage, covenant::stage::input_validation);
    EXPECT_EQ(issue_paths(o.issues), (std::vector<std::string>{"pages[0]"}));
    ASSERT_FALSE(o.issues.empty());
    EXPECT_THAT(o.issues[0].message, HasSubstr("OpenAI Chat Completions takes PDFs as bytes only"));
    EXPECT_EQ(server.requests(), 1u);
  }
}

TEST_F(MediaRunContract, ARepairedInputNamesTheOriginalMediaByReference) {
  const std::string photo = png(8);
  write("photo.png", photo);
  for (const bool anthropic : {false, true}) {
    SCOPED_TRACE(anthropic ? "anthropic" : "openai");
    // first the corrected input (it refers to the photo), then the answer
    const std::string repaired = R"({"photo": "<image 1>", "pages": [], "note": "fixed"})";
    loopback_server server([&](const received_request&, std::size_t i) {
      const std::string& text = i == 0 ? repaired : summary_json;
      return anthropic ? covenant_test::whole_reply(covenant_test::anthropic_message(text))
                       : covenant_test::whole_reply(covenant_test::openai_completion(text));
    });
    covenant::http_engine engine(options_for(server, anthropic));
    covenant::dynamic_task task = task_for("Scan", dir());
    task.pre = [](const json::value& in) {
      const json::value* note = in.as_object().if_contains("note");
      if (note == nullptr || !note->is_string() || note->as_string() != "fixed")
        throw covenant::violation("note", "must be \"fixed\"");
    };
    covenant::contract_options options = no_retries();
    options.pre_remedy = true;
    options.mode = covenant::output_mode::prompt;  // both phases answer in text
    const covenant::dynamic_contract c{engine, task, options};
    const auto [value, o] = c.run(json::value{{"photo", "photo.png"}, {"pages", json::array{}}, {"note", "draft"}});
    ASSERT_TRUE(o.success) << o.summary();
    EXPECT_EQ(value, json::parse(summary_json));
    ASSERT_EQ(server.requests(), 2u);
    const json::object image = anthropic ? anthropic_image("image/png", photo) : openai_image("image/png", photo);
    // the repair request shows the input with its reference and sends the photo
    const json::value repair_body = json::parse(server.request(0).body);
    const json::value& asked = repair_body.at("messages").as_array().back().at("content");
    ASSERT_TRUE(asked.is_array()) << asked;
    EXPECT_THAT(std::string(asked.at(0).at("text").as_string()), HasSubstr(R"("photo":"\u003cimage 1>")"));
    EXPECT_EQ(asked.at(1), text_part("<image 1>"));
    EXPECT_EQ(asked.at(2), image);
    // the output request shows the repaired input and sends the original photo again
    const json::value content = user_content(server.request(1).body, anthropic);
    EXPECT_EQ(shown_record(content), json::parse(R"({"photo": "<image 1>", "pages": [], "note": "fixed"})"));
    EXPECT_EQ(content, (json::array{content.at(0), text_part("<image 1>"), image}));
  }
}

TEST_F(MediaRunContract, ARepairedInputReferringToMediaTheInputDoesNotHaveIsAnIssueOfTheRepair) {
  write("photo.png", png(9));
  loopback_server server([](const received_request&, std::size_t i) {
    return covenant_test::whole_reply(covenant_test::openai_completion(
        i == 0 ? R"({"photo": "<image 2>", "pages": [], "note": "fixed"})" : summary_json));
  });
  covenant::http_engine engine(options_for(server, false));
  covenant::dynamic_task task = task_for("Scan", dir());
  task.pre = [](const json::value& in) {
    if (in.at("note") != "fixed") throw covenant::violation("note", "must be \"fixed\"");
  };
  covenant::contract_options options = no_retries();
  options.pre_remedy = true;
  options.mode = covenant::output_mode::prompt;
  const covenant::dynamic_contract c{engine, task, options};
  const auto o = c.run(json::value{{"photo", "photo.png"}, {"pages", json::array{}}, {"note", "draft"}}).outcome;
  EXPECT_FALSE(o.success);
  EXPECT_EQ(o.failed_stage, covenant::stage::pre_remedy);  // the repair was rejected: no tries left
  ASSERT_EQ(o.issues.size(), 1u) << o.summary();
  EXPECT_EQ(o.issues[0].path.to_string(), "photo");
  EXPECT_EQ(o.issues[0].message, "refers to <image 2>, which the input does not have");
  EXPECT_EQ(server.requests(), 1u);  // the repair only: the output was never asked for
}

// The Scan task whose pre() asks for the note "fixed", with the input repaired by the model; both
// phases answer in text.
covenant::dynamic_task repair_task(const std::string& media_root, int* pre_calls = nullptr) {
  covenant::dynamic_task task = task_for("Scan", media_root);
  task.pre = [pre_calls](const json::value& in) {
    if (pre_calls != nullptr) ++*pre_calls;
    const json::value* note = in.as_object().if_contains("note");
    if (note == nullptr || !note->is_string() || note->as_string() != "fixed")
      throw covenant::violation("note", "must be \"fixed\"");
  };
  return task;
}

covenant::contract_options repair_options() {
  covenant::contract_options options = no_retries();
  options.pre_remedy = true;
  options.mode = covenant::output_mode::prompt;
  return options;
}

response_plan text_reply(const std::string& text, bool anthropic) {
  return anthropic ? covenant_test::whole_reply(covenant_test::anthropic_message(text))
                   : covenant_test::whole_reply(covenant_test::openai_completion(text));
}

TEST_F(MediaRunContract, ARepairedInputThatNamesALocalFileIsNotRead) {
  const std::string photo = png(13);
  const std::string other = png(14);  // same size, other bytes
  ASSERT_EQ(other.size(), photo.size());
  write("photo.png", photo);
  const std::string other_path = write("elsewhere/other.png", other);
  ASSERT_TRUE(fs::path(other_path).is_absolute()) << other_path;
  ASSERT_TRUE(fs::exists(other_path));
  ASSERT_NE(b64(photo), b64(other));
  for (const bool anthropic : {false, true}) {
    SCOPED_TRACE(anthropic ? "anthropic" : "openai");
    // the model's repair names the other file by its absolute path; then (never asked) the answer
    const std::string repaired =
        json::serialize(json::object{{"photo", other_path}, {"pages", json::array{}}, {"note", "fixed"}});
    loopback_server server([&](const received_request&, std::size_t i) {
      return text_reply(i == 0 ? repaired : summary_json, anthropic);
    });
    covenant::http_engine engine(options_for(server, anthropic));
    const covenant::dynamic_contract c{engine, repair_task(dir()), repair_options()};
    const auto [value, o] = c.run(json::value{{"photo", "photo.png"}, {"pages", json::array{}}, {"note", "draft"}});
    EXPECT_FALSE(o.success);
    EXPECT_TRUE(value.is_null());
    EXPECT_EQ(o.failed_stage, covenant::stage::pre_remedy);  // the repair was rejected: no tries left
    ASSERT_EQ(o.issues.size(), 1u) << o.summary();
    EXPECT_EQ(o.issues[0].path.to_string(), "photo");
    EXPECT_EQ(o.issues[0].code, covenant::issue_code::constraint_violation);
    EXPECT_THAT(o.issues[0].message, HasSubstr("is not an http(s) URL, a data URL or a reference such as \"<image 1>\""));
    // the repair only: the output was never asked for
    ASSERT_EQ(server.requests(), 1u);
    // the repair request sent the input's own photo; no request carries the other file, whole or in part
    EXPECT_THAT(server.request(0).body, HasSubstr(b64(photo)));
    for (std::size_t i = 0; i < server.requests(); ++i) {
      EXPECT_THAT(server.request(i).body, Not(HasSubstr(b64(other)))) << i;
      EXPECT_THAT(server.request(i).body, Not(HasSubstr(b64(other).substr(8, 24)))) << i;
    }
    // nor does the outcome: its attempts hold the input's photo only
    for (const auto& a : o.attempts)
      for (const covenant::media& m : a.media) EXPECT_NE(m.data(), other);
  }
}

TEST_F(MediaRunContract, AMissingFileIsNotSentForRepair) {
  write("photo.png", png(15));
  for (const bool anthropic : {false, true}) {
    SCOPED_TRACE(anthropic ? "anthropic" : "openai");
    // were the model asked, it would repair the input (to another missing file, then answer)
    loopback_server server([&](const received_request&, std::size_t i) {
      return text_reply(i == 0 ? R"({"photo": "<image 1>", "pages": [], "note": "fixed"})" : summary_json, anthropic);
    });
    covenant::http_engine engine(options_for(server, anthropic));
    int pre_calls = 0;
    const covenant::dynamic_contract c{engine, repair_task(dir(), &pre_calls), repair_options()};
    // the note would fail pre(), which the model could repair; the missing file it could not
    const auto [value, o] = c.run(json::value{{"photo", "missing.png"}, {"pages", json::array{}}, {"note", "draft"}});
    EXPECT_FALSE(o.success);
    EXPECT_TRUE(value.is_null());
    EXPECT_EQ(o.failed_stage, covenant::stage::input_validation);
    ASSERT_EQ(o.issues.size(), 1u) << o.summary();
    EXPECT_EQ(o.issues[0].path.to_string(), "photo");
    EXPECT_THAT(o.issues[0].message, HasSubstr("cannot read the file " + path("missing.png")));
    EXPECT_EQ(o.input_issues, o.issues);
    EXPECT_TRUE(o.attempts.empty());
    EXPECT_EQ(pre_calls, 0);  // pre() runs on an input whose media were read
    EXPECT_EQ(server.requests(), 0u);

    // a file that is read but is no image (a PDF named .png) is no repair either
    write("not_a_picture.png", pdf("not a picture"));
    const auto wrong = c.run(json::value{{"photo", "not_a_picture.png"}, {"pages", json::array{}}, {"note", "draft"}});
    EXPECT_EQ(wrong.outcome.failed_stage, covenant::stage::input_validation);
    EXPECT_EQ(issue_paths(wrong.outcome.issues), (std::vector<std::string>{"photo"})) << wrong.outcome.summary();
    EXPECT_TRUE(wrong.outcome.attempts.empty());
    EXPECT_EQ(pre_calls, 0);
    EXPECT_EQ(server.requests(), 0u);

    // with the photo there, the same note is repaired by the model (the control)
    const auto repaired = c.run(json::value{{"photo", "photo.png"}, {"pages", json::array{}}, {"note", "draft"}});
    EXPECT_TRUE(repaired.outcome.success) << repaired.outcome.summary();
    EXPECT_EQ(server.requests(), 2u);
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

// =============================================================================================
// 3. covenant run

const char* const run_schema = R"(class Input {
  id string
  photo image
}
class Output {
  label string
}
)";

// The record a request is about (its first text part) and the media parts after it.
struct seen_request {
  json::value record;
  json::array media;  // the parts after the record's text
};

seen_request seen(const std::string& body) {
  seen_request s;
  const json::value content = user_content(body, false);
  if (!content.is_array()) {
    ADD_FAILURE() << "the user message has no media parts: " << content;
    return s;
  }
  s.record = shown_record(content);
  const json::array& parts = content.as_array();
  for (std::size_t i = 1; i < parts.size(); ++i) s.media.push_back(parts[i]);
  return s;
}

// Answers {"label": "<the record's id>"}.
response_plan label_by_id(const received_request& r) {
  const json::value content = json::parse(r.body).at("messages").at(1).at("content");
  const json::value& text = content.is_array() ? content.at(0).at("text") : content;
  const std::string user(text.as_string());
  const auto b = user.find('\n');
  const auto e = user.rfind("\n</input>");
  const json::value rec = json::parse(user.substr(b + 1, e - b - 1));
  return covenant_test::whole_reply(
      covenant_test::openai_completion(json::serialize(json::object{{"label", rec.at("id")}})));
}

class MediaRunCli : public covenant_test::cli_fixture {
 protected:
  MediaRunCli() : cli_fixture("covenant_media_run_test") {}
  void SetUp() override {
    cli_fixture::SetUp();
    write("media.baml", run_schema);
  }

  // Writes `content` to `name`, making its folder.
  std::string put(const std::string& name, const std::string& content) const {
    std::filesystem::create_directories((dir_ / name).parent_path());
    return write(name, content);
  }

  covenant_test::run_result run(const loopback_server& server, std::vector<std::string> args) const {
    return run_tool(std::move(args), {"COVENANT_BASE_URL=" + server.base_url()});
  }

  // Each request's record id -> the request (fails on a record asked for twice).
  static std::map<std::string, seen_request> by_id(const loopback_server& server) {
    std::map<std::string, seen_request> out;
    for (std::size_t i = 0; i < server.requests(); ++i) {
      seen_request s = seen(server.request(i).body);
      const std::string id(s.record.at("id").as_string());
      EXPECT_TRUE(out.emplace(id, std::move(s)).second) << id << " asked twice";
    }
    return out;
  }

  // The output never holds an image's base64 nor its bytes.
  static void expect_no_media_in(const std::string& out, const std::map<std::string, std::string>& images) {
    EXPECT_FALSE(out.empty());
    for (const auto& [id, bytes] : images) {
      EXPECT_EQ(out.find(b64(bytes)), std::string::npos) << id;
      EXPECT_EQ(out.find(b64(bytes).substr(8, 24)), std::string::npos) << id;  // nor part of it
      EXPECT_EQ(out.find(bytes), std::string::npos) << id;
      EXPECT_EQ(out.find(bytes.substr(png_signature.size() + 8)), std::string::npos) << id;
    }
    EXPECT_THAT(out, Not(HasSubstr("base64")));
    EXPECT_THAT(out, Not(HasSubstr("\x89PNG")));
  }
};

TEST_F(MediaRunCli, EachRecordsRequestCarriesItsOwnImageAndTheResultsNeverItsBytes) {
  loopback_server server([](const received_request& r, std::size_t) { return label_by_id(r); });
  const std::map<std::string, std::string> images = {{"r0", png(10)}, {"r1", png(11)}, {"r2", png(12)}};
  for (const auto& [id, bytes] : images) put("img/" + id + ".png", bytes);
  const std::string input = put("in.jsonl", R"({"id": "r0", "photo": "img/r0.png"})" "\n"
                                            R"({"id": "r1", "photo": "img/r1.png"})" "\n"
                                            R"({"id": "r2", "photo": "img/r2.png"})" "\n");
  const std::string output = path("out.jsonl");
  const auto r = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--input-type", "Input",
                              "--prompt", "Label the photo.", "--output", output, "--quiet", input});
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(server.requests(), 3u);
  const auto asked = by_id(server);
  ASSERT_EQ(asked.size(), 3u);
  for (const auto& [id, bytes] : images) {
    SCOPED_TRACE(id);
    const auto it = asked.find(id);
    ASSERT_NE(it, asked.end());
    EXPECT_EQ(it->second.record, (json::object{{"id", id}, {"photo", "<image 1>"}}));
    EXPECT_EQ(it->second.media, (json::array{text_part("<image 1>"), openai_image("image/png", bytes)}));
  }
  const std::string out = read(output);
  const auto lines = json_lines(out);
  ASSERT_EQ(lines.size(), 3u);
  std::set<std::string> ids;
  for (const auto& line : lines) {
    EXPECT_EQ(line.at("ok"), true) << line;
    ids.insert(std::string(line.at("id").as_string()));
    EXPECT_EQ(line.at("value").at("label"), line.at("id"));
  }
  EXPECT_EQ(ids, (std::set<std::string>{"r0", "r1", "r2"}));
  expect_no_media_in(out, images);
  EXPECT_EQ(r.out, "");  // everything went to the file
}

TEST_F(MediaRunCli, ARecordWhoseFileDoesNotExistFailsAtInputValidationAndTheOthersSucceed) {
  loopback_server server([](const received_request& r, std::size_t) { return label_by_id(r); });
  const std::map<std::string, std::string> images = {{"r0", png(20)}, {"r2", png(22)}};
  for (const auto& [id, bytes] : images) put("img/" + id + ".png", bytes);
  const std::string input = put("in.jsonl", R"({"id": "r0", "photo": "img/r0.png"})" "\n"
                                            R"({"id": "r1", "photo": "img/missing.png"})" "\n"
                                            R"({"id": "r2", "photo": "img/r2.png"})" "\n");
  const std::string output = path("out.jsonl");
  const auto r = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--input-type", "Input",
                              "--prompt", "Label the photo.", "--output", output, input});
  EXPECT_EQ(r.status, 1) << r.err;  // a record failed
  EXPECT_THAT(r.err, HasSubstr("3 records (2 ok, 1 failed)"));
  EXPECT_EQ(server.requests(), 2u);  // none for the missing file
  const auto asked = by_id(server);
  EXPECT_EQ(asked.count("r1"), 0u);
  for (const auto& [id, bytes] : images) {
    ASSERT_EQ(asked.count(id), 1u) << id;
    EXPECT_EQ(asked.at(id).media, (json::array{text_part("<image 1>"), openai_image("image/png", bytes)})) << id;
  }
  const std::string out = read(output);
  const auto lines = json_lines(out);
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& line : lines) {
    const std::string id(line.at("id").as_string());
    SCOPED_TRACE(id);
    if (id != "r1") {
      EXPECT_EQ(line.at("ok"), true);
      EXPECT_EQ(line.at("value").at("label"), json::value(id));
      continue;
    }
    EXPECT_EQ(line.at("ok"), false);
    EXPECT_EQ(line.at("failed_stage"), "input_validation");
    EXPECT_EQ(line.at("attempts"), 0);
    EXPECT_TRUE(line.at("value").is_null());
    ASSERT_EQ(line.at("issues").as_array().size(), 1u);
    const json::value& issue = line.at("issues").at(0);
    EXPECT_EQ(issue.at("path"), "photo");
    EXPECT_THAT(std::string(issue.at("message").as_string()), HasSubstr("cannot read the file " + path("img/missing.png")));
  }
  expect_no_media_in(out, images);
}

TEST_F(MediaRunCli, MediaRootNamesTheFolderRelativePathsAreReadFrom) {
  loopback_server server([](const received_request& r, std::size_t) { return label_by_id(r); });
  const std::map<std::string, std::string> images = {{"r0", png(30)}, {"r1", png(31)}, {"r2", png(32)}};
  for (const auto& [id, bytes] : images) {
    put("media/" + id + ".png", bytes);
    put("data/" + id + ".png", png(40 + static_cast<int>(id[1] - '0')));  // beside the input: not read
  }
  const std::string input = put("data/in.jsonl", R"({"id": "r0", "photo": "r0.png"})" "\n"
                                                 R"({"id": "r1", "photo": "r1.png"})" "\n"
                                                 R"({"id": "r2", "photo": "r2.png"})" "\n");
  const std::string output = path("out.jsonl");
  const auto r = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--input-type", "Input",
                              "--media-root", path("media"), "--prompt", "Label the photo.", "--output", output,
                              "--quiet", input});
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(server.requests(), 3u);
  const auto asked = by_id(server);
  for (const auto& [id, bytes] : images) {
    ASSERT_EQ(asked.count(id), 1u) << id;
    EXPECT_EQ(asked.at(id).media, (json::array{text_part("<image 1>"), openai_image("image/png", bytes)})) << id;
  }
  const std::string out = read(output);
  EXPECT_EQ(json_lines(out).size(), 3u);
  expect_no_media_in(out, images);

  // without --media-root the same records are read beside the input file
  const auto beside = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--input-type", "Input",
                                   "--prompt", "Label the photo.", "--quiet", input});
  EXPECT_EQ(beside.status, 0) << beside.err;
  ASSERT_EQ(server.requests(), 6u);
  for (std::size_t i = 3; i < 6; ++i) {
    const seen_request s = seen(server.request(i).body);
    const std::string id(s.record.at("id").as_string());
    EXPECT_EQ(s.media, (json::array{text_part("<image 1>"), openai_image("image/png", png(40 + (id[1] - '0')))})) << id;
  }
}

TEST_F(MediaRunCli, MediaRootWithoutInputTypeIsAUsageError) {
  loopback_server server([](const received_request& r, std::size_t) { return label_by_id(r); });
  put("media/r0.png", png(50));
  const std::string input = put("in.jsonl", R"({"id": "r0", "photo": "r0.png"})" "\n");
  const auto r = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--media-root", path("media"),
                              "--prompt", "Label the photo.", input});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--media-root needs --input-type"));
  EXPECT_EQ(r.out, "");
  // an --input-type that names no type of the file is refused too
  const auto unknown = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--input-type", "Nope",
                                    "--prompt", "Label the photo.", input});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.err, HasSubstr("Nope"));
  EXPECT_EQ(server.requests(), 0u);
}

// =============================================================================================
// 4. cassettes

TEST_F(MediaRunCassette, ARecordingKeepsTheMediaDigestAndReplayMatchesOnIt) {
  const std::string photo = png(60);
  std::string other = photo;
  other[other.size() - 1] = static_cast<char>(other.back() ^ 0x01);  // same size, other bytes
  ASSERT_EQ(other.size(), photo.size());
  write("photo.png", photo);
  loopback_server server([](const received_request&, std::size_t) { return openai_reply(); });
  covenant::http_engine http(options_for(server, false));
  const std::string tape = path("tape.jsonl");
  const covenant::dynamic_task task = task_for("Shot", dir());
  const json::value input = {{"photo", "photo.png"}};
  {
    covenant::cassette_engine recorder{{.path = tape, .mode = covenant::cassette_mode::record}, http};
    const covenant::dynamic_contract c{recorder, task, no_retries()};
    const auto o = c.run(input).outcome;
    ASSERT_TRUE(o.success) << o.summary();
  }
  ASSERT_EQ(server.requests(), 1u);
  EXPECT_THAT(server.request(0).body, HasSubstr(b64(photo)));  // the bytes went to the server
  const std::string file = read_all(tape);
  EXPECT_THAT(file, Not(HasSubstr(b64(photo))));
  EXPECT_THAT(file, Not(HasSubstr(b64(photo).substr(4, 20))));
  EXPECT_THAT(file, Not(HasSubstr("base64")));
  EXPECT_EQ(file.find(photo.substr(png_signature.size())), std::string::npos);
  const std::string digest = R"([{"kind":"image","type":"image/png","bytes":)" + std::to_string(photo.size()) +
                             R"(,"sha256":")" + sha256_hex(photo) + R"("}])";
  EXPECT_THAT(file, HasSubstr(R"("media":)" + digest));
  std::vector<json::value> lines;
  std::istringstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), 2u);  // the header and the one call
  const json::array& messages = lines[1].at("request").at("messages").as_array();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_FALSE(messages[0].as_object().contains("media"));  // the system prompt has none
  EXPECT_EQ(messages[1].at("media"), json::parse(digest));
  EXPECT_EQ(shown_record(messages[1].at("content")), (json::object{{"photo", "<image 1>"}}));

  // replayed: the same call hits
  {
    covenant::cassette_engine replay{{.path = tape}};
    const covenant::dynamic_contract c{replay, task, no_retries()};
    const auto [value, o] = c.run(input);
    ASSERT_TRUE(o.success) << o.summary();
    EXPECT_EQ(value, json::parse(summary_json));
    EXPECT_EQ(replay.used(), 1u);
  }
  // the same call with another image (same name, same size) misses, and the error names the media
  write("photo.png", other);
  {
    covenant::cassette_engine replay{{.path = tape}};
    const covenant::dynamic_contract c{replay, task, no_retries()};
    const auto o = c.run(input).outcome;
    EXPECT_FALSE(o.success);
    EXPECT_EQ(o.failed_stage, covenant::stage::engine);
    ASSERT_EQ(o.attempts.size(), 1u);
    EXPECT_TRUE(o.attempts[0].engine_failed);
    ASSERT_FALSE(o.issues.empty());
    const std::string message = o.issues[0].message;
    EXPECT_THAT(message, HasSubstr("no recorded interaction matches"));
    EXPECT_THAT(message, HasSubstr("media: recorded"));
    EXPECT_THAT(message, HasSubstr(sha256_hex(photo)));
    EXPECT_THAT(message, HasSubstr(sha256_hex(other)));
    EXPECT_EQ(replay.used(), 0u);
  }
  EXPECT_EQ(server.requests(), 1u);  // replay never asked the server
}

// =============================================================================================
// 5. the audit log

TEST_F(MediaRunAudit, TheAttemptLineHasTheMediaDigestAndNeverTheBytes) {
  const std::string photo = png(70, 200);
  write("photo.png", photo);
  for (const bool include_reply : {false, true}) {
    SCOPED_TRACE(include_reply ? "include_reply" : "no reply");
    const fs::path logs = dir_ / (include_reply ? "with_reply" : "without_reply");
    loopback_server server([](const received_request&, std::size_t) { return openai_reply(); });
    covenant::http_engine engine(options_for(server, false));
    auto audit = std::make_shared<covenant::audit_log>(
        covenant::audit_log_options{.directory = logs, .include_reply = include_reply});
    covenant::contract_options options = no_retries();
    options.observers.push_back(audit);
    const covenant::dynamic_contract c{engine, task_for("Scan", dir()), options};
    const auto o = c.run(json::value{{"photo", "photo.png"}, {"pages", json::array{"https://example.com/a.pdf"}}}).outcome;
    // OpenAI takes no PDF URL: refused before the model; nothing to audit
    EXPECT_EQ(o.failed_stage, covenant::stage::input_validation);
    const auto ok = c.run(json::value{{"photo", "photo.png"}, {"pages", json::array{}}}).outcome;
    ASSERT_TRUE(ok.success) << ok.summary();
    audit->flush();
    ASSERT_EQ(server.requests(), 1u);
    EXPECT_THAT(server.request(0).body, HasSubstr(b64(photo)));
    const std::string text = read_all(audit->current_file().string());
    EXPECT_THAT(text, Not(HasSubstr(b64(photo))));
    EXPECT_THAT(text, Not(HasSubstr(b64(photo).substr(8, 24))));
    EXPECT_THAT(text, Not(HasSubstr("base64")));
    EXPECT_EQ(text.find(photo.substr(png_signature.size())), std::string::npos);
    std::vector<json::value> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) lines.push_back(json::parse(line));
    ASSERT_EQ(lines.size(), 1u) << text;  // the one attempt
    const json::object& line = lines[0].as_object();
    EXPECT_EQ(line.at("media"), (json::array{json::object{{"kind", "image"},
                                                          {"type", "image/png"},
                                                          {"bytes", static_cast<std::int64_t>(photo.size())},
                                                          {"sha256", sha256_hex(photo)}}}));
    EXPECT_THAT(text, HasSubstr(R"("media":[{"kind":"image","type":"image/png","bytes":)" + std::to_string(photo.size()) +
                                R"(,"sha256":")" + sha256_hex(photo) + R"("}])"));
    EXPECT_EQ(line.contains("reply"), include_reply);
    if (include_reply) {
      EXPECT_EQ(json::parse(line.at("reply").as_string()), json::parse(summary_json));
    }
  }
}

TEST_F(MediaRunAudit, AUrlIsKeptAsItsUrlAndTheHashOfItsText) {
  loopback_server server([](const received_request&, std::size_t) { return anthropic_reply(); });
  covenant::http_engine engine(options_for(server, true));
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir_ / "logs"});
  covenant::contract_options options = no_retries();
  options.observers.push_back(audit);
  const std::string pdf_bytes = pdf("appendix");
  write("a.pdf", pdf_bytes);
  const covenant::dynamic_contract c{engine, task_for("Scan", dir()), options};
  const std::string url = "https://example.com/p.jpg";
  const auto o = c.run(json::value{{"photo", url}, {"pages", json::array{"a.pdf"}}}).outcome;
  ASSERT_TRUE(o.success) << o.summary();
  audit->flush();
  const std::string text = read_all(audit->current_file().string());
  EXPECT_THAT(text, Not(HasSubstr(b64(pdf_bytes))));
  std::istringstream in(text);
  std::string first;
  ASSERT_TRUE(std::getline(in, first));
  EXPECT_EQ(json::parse(first).at("media"),
            (json::array{json::object{{"kind", "image"}, {"type", "image/jpeg"}, {"url", url}, {"sha256", sha256_hex(url)}},
                         json::object{{"kind", "pdf"},
                                      {"type", "application/pdf"},
                                      {"bytes", static_cast<std::int64_t>(pdf_bytes.size())},
                                      {"sha256", sha256_hex(pdf_bytes)}}}));
}

}  // namespace
