// Media inputs (covenant/types/media.hpp): media values (files, bytes, URLs, text forms, references),
// their schema and JSON, validation against what each provider takes (OpenAI Chat Completions,
// Anthropic Messages), the exact request bodies a contract sends for them through a loopback
// server in both dialects, inputs refused before any request, and the input-repair phase, which
// sends the original media again for the references of a repaired input.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/testing/testing.hpp>
#include <covenant/types/encode.hpp>
#include <covenant/types/media.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "anthropic_replies.hpp"
#include "loopback_engine.hpp"
#include "loopback_server.hpp"
#include "qa_model.hpp"

// Input types of the tests (not in an unnamed namespace: reflection names their members).
namespace media_test {

struct Scan {
  covenant::image receipt;
  std::optional<covenant::pdf> invoice;
  std::vector<covenant::image> pages;
  std::string note;
};

struct OneImage {
  std::string note;
  covenant::image receipt;
};

struct TwoImages {
  covenant::image first;
  covenant::image second;
};

struct MaybeImage {
  std::string note;
  std::optional<covenant::image> photo;
};

struct Album {
  std::vector<covenant::image> images;
};

struct Doc {
  covenant::pdf doc;
};

struct NotedDoc {
  std::string note;
  covenant::pdf doc;
};

struct Clip {
  covenant::audio clip;
};

struct Bundle {
  std::vector<covenant::image> images;
  covenant::pdf doc;
  std::optional<covenant::pdf> appendix;
  std::vector<covenant::audio> clips;
};

// Looks at an input of type In and answers (the output type of the engine tests).
template <class In>
struct Look {
  static constexpr std::string_view prompt = "Read the attached media.";
  covenant_test::qa::Answer forward(const In&, const covenant::outcome<covenant_test::qa::Answer>& o) const {
    return o.result.value_or(covenant_test::qa::Answer{});
  }
};

// pre() refuses a note other than "fixed": with pre_remedy the model is asked for a corrected input.
template <class In>
struct Picky {
  static constexpr std::string_view prompt = "Read the attached media.";
  void pre(const In& in) const {
    if (in.note != "fixed") throw covenant::violation("note", "must be \"fixed\"");
  }
  covenant_test::qa::Answer forward(const In&, const covenant::outcome<covenant_test::qa::Answer>& o) const {
    return o.result.value_or(covenant_test::qa::Answer{});
  }
};

// pre() wants the first image to be a reference (the model's corrected input refers to the media).
struct Swapped {
  static constexpr std::string_view prompt = "Compare.";
  void pre(const TwoImages& in) const {
    if (in.first.reference() == 0) throw covenant::violation("first", "must be the second picture");
  }
  covenant_test::qa::Answer forward(const TwoImages&, const covenant::outcome<covenant_test::qa::Answer>& o) const {
    return o.result.value_or(covenant_test::qa::Answer{});
  }
};

}  // namespace media_test

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using covenant::media;
using covenant::media_kind;
using covenant::output_mode;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;
using covenant_test::qa::Answer;
using namespace media_test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::string answer_json = R"({"answer": "Paris", "confidence": 0.9})";

// ---------------------------------------------------------------------------------------------
// bytes of each format (enough for their magic numbers)

const std::string png_bytes = std::string("\x89PNG\r\n\x1a\n", 8) + std::string("\0\0\0\x0dIHDR\0\0\0\x01", 12);
const std::string jpeg_bytes = std::string("\xff\xd8\xff\xe0\0\x10", 6) + "JFIF" + std::string("\0\x01\x01", 3);
const std::string gif_bytes = "GIF89a" + std::string("\x01\0\x01\0", 4);
const std::string pdf_bytes = "%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n%%EOF\n";
const std::string pdf2_bytes = "%PDF-1.7\n%%EOF\n";
const std::string wav_bytes = "RIFF" + std::string("\x24\0\0\0", 4) + "WAVEfmt " + std::string("\x10\0\0\0", 4);
const std::string mp3_bytes = "ID3" + std::string("\x04\0\0\0\0\0\x21", 7);
const std::string flac_bytes = "fLaC" + std::string("\0\0\0\x22", 4);
const std::string bmp_bytes = "BM" + std::string("\x3a\0\0\0\0\0\0\0", 8);

// Base64 computed apart from the library (OpenSSL's EVP_EncodeBlock: padded, standard alphabet).
std::string b64(std::string_view bytes) {
  std::vector<unsigned char> buf((bytes.size() + 2) / 3 * 4 + 1);
  const int n = EVP_EncodeBlock(buf.data(), reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  return std::string(reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(n));
}

// A PNG of exactly `n` bytes (the signature, then filler).
std::string png_of_size(std::size_t n) {
  std::string s = png_bytes;
  s.resize(n, 'x');
  return s;
}

// What the contract does to the JSON of an input: '<' written as \u003c, inside <input>...</input>.
std::string input_block(std::string_view input_json) {
  std::string out = "<input>\n";
  for (const char c : input_json) {
    if (c == '<') out += "\\u003c";
    else out.push_back(c);
  }
  out += "\n</input>";
  return out;
}

// The JSON between "<input>\n" and "\n</input>" of a rendered input, parsed.
json::value input_json_of(std::string_view text) {
  const std::string_view head = "<input>\n";
  const std::string_view tail = "\n</input>";
  EXPECT_TRUE(text.starts_with(head)) << text;
  EXPECT_TRUE(text.ends_with(tail)) << text;
  if (!text.starts_with(head) || !text.ends_with(tail)) return nullptr;
  return json::parse(text.substr(head.size(), text.size() - head.size() - tail.size()));
}

// The URL of a media. (media_of<K>::url, the factory, hides media::url(), the accessor: on a
// covenant::image `m.url()` does not compile, so the tests ask through the base.)
const std::string& url_of(const media& m) { return m.url(); }

std::vector<std::string> shown(const covenant::issue_list& issues) {
  std::vector<std::string> out;
  for (const covenant::issue& i : issues) out.push_back(i.to_string());
  return out;
}

// ---------------------------------------------------------------------------------------------
// content parts as each API takes them

json::object text_part(std::string_view text) { return {{"type", "text"}, {"text", text}}; }

json::object openai_image_url(std::string_view url, std::string_view detail = "auto") {
  json::object image{{"url", url}};
  if (!detail.empty()) image["detail"] = detail;
  return {{"type", "image_url"}, {"image_url", std::move(image)}};
}
json::object openai_image(std::string_view type, std::string_view bytes, std::string_view detail = "auto") {
  return openai_image_url("data:" + std::string(type) + ";base64," + b64(bytes), detail);
}
json::object openai_file(std::string_view filename, std::string_view bytes) {
  return {{"type", "file"},
          {"file", {{"filename", filename}, {"file_data", "data:application/pdf;base64," + b64(bytes)}}}};
}
json::object openai_audio(std::string_view bytes, std::string_view format) {
  return {{"type", "input_audio"}, {"input_audio", {{"data", b64(bytes)}, {"format", format}}}};
}

json::object anthropic_source(std::string_view type, std::string_view bytes) {
  return {{"type", "base64"}, {"media_type", type}, {"data", b64(bytes)}};
}
json::object anthropic_image(std::string_view type, std::string_view bytes) {
  return {{"type", "image"}, {"source", anthropic_source(type, bytes)}};
}
json::object anthropic_image_url(std::string_view url) {
  return {{"type", "image"}, {"source", {{"type", "url"}, {"url", url}}}};
}
json::object anthropic_document(std::string_view bytes) {
  return {{"type", "document"}, {"source", anthropic_source("application/pdf", bytes)}};
}
json::object anthropic_document_url(std::string_view url) {
  return {{"type", "document"}, {"source", {{"type", "url"}, {"url", url}}}};
}

// ---------------------------------------------------------------------------------------------
// engines

response_plan whole(std::string body) { return covenant_test::whole_reply(std::move(body)); }

covenant::http_engine_options openai_options(const loopback_server& s) {
  return covenant_test::loopback_engine_options(s, covenant::provider::openai, "gpt-test");
}
covenant::http_engine_options anthropic_options(const loopback_server& s) {
  return covenant_test::loopback_engine_options(s, covenant::provider::anthropic, "claude-test");
}

// An engine that is never called: only its accepted_media() is asked for.
std::unique_ptr<covenant::http_engine> offline_engine(covenant::provider p) {
  covenant::http_engine_options o;
  o.provider = p;
  o.base_url = "http://127.0.0.1:1";
  o.api_key = "sk-test";
  o.model = "m";
  o.retry.tries = 0;
  return std::make_unique<covenant::http_engine>(o);
}

// The reply that ends a contract's output phase in each dialect (Anthropic: the forced tool).
response_plan openai_answer() { return whole(covenant_test::openai_completion(answer_json)); }
response_plan anthropic_answer() { return whole(covenant_test::anthropic_tool_message("Answer", answer_json)); }

covenant::contract_options no_retries() { return covenant::testing::instant({.tries = 0}); }

json::object body_of(const loopback_server& s, std::size_t i) { return json::parse(s.request(i).body).as_object(); }

// The OpenAI request's messages: the system prompt, then the user message with `content`.
json::array openai_messages(const std::string& system, json::value content) {
  return {json::object{{"role", "system"}, {"content", system}},
          json::object{{"role", "user"}, {"content", std::move(content)}}};
}
// The Anthropic request's messages (the system prompt goes apart): one user turn.
json::array anthropic_messages(json::value content) {
  return {json::object{{"role", "user"}, {"content", std::move(content)}}};
}

// The media parts of a request body (either dialect) that carry neither bytes nor a URL.
std::vector<std::string> parts_without_data(const json::object& body) {
  std::vector<std::string> out;
  for (const json::value& m : body.at("messages").as_array()) {
    const json::array* parts = m.at("content").if_array();
    if (parts == nullptr) continue;
    for (const json::value& part : *parts) {
      const json::object& o = part.as_object();
      const auto data_url_empty = [](std::string_view url) { return url.starts_with("data:") && url.ends_with("base64,"); };
      if (const json::value* image = o.if_contains("image_url")) {
        const std::string_view url = image->at("url").as_string();
        if (data_url_empty(url)) out.emplace_back(url);
      } else if (const json::value* file = o.if_contains("file")) {
        const std::string_view data = file->at("file_data").as_string();
        if (data_url_empty(data)) out.emplace_back(data);
      } else if (const json::value* audio = o.if_contains("input_audio")) {
        if (audio->at("data").as_string().empty()) out.emplace_back("input_audio of no data");
      } else if (const json::value* source = o.if_contains("source")) {
        if (source->at("type") == "base64" && source->at("data").as_string().empty())
          out.emplace_back("base64 source of no data");
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// a temporary directory for the media files of one test

class MediaFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("covenant_media_test_" + std::to_string(::getpid()) + "_" + t->test_suite_name() + "_" + t->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Writes `bytes` to `name` in the directory; returns the file's path.
  std::string write(const std::string& name, std::string_view bytes) const {
    const fs::path p = dir_ / name;
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p.string();
  }
  [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }
  [[nodiscard]] std::string dir() const { return dir_.string(); }

 private:
  fs::path dir_;
};

class MediaValue : public MediaFiles {};
class MediaSchema : public MediaFiles {};
class MediaLimits : public MediaFiles {};
class MediaRequest : public MediaFiles {};
class MediaContract : public MediaFiles {};
class MediaRepair : public MediaFiles {};

// =============================================================================================
// 1. media values

TEST_F(MediaValue, SniffsEachKnownFormatAndNothingElse) {
  EXPECT_EQ(covenant::sniff_media_type(png_bytes), "image/png");
  EXPECT_EQ(covenant::sniff_media_type(jpeg_bytes), "image/jpeg");
  EXPECT_EQ(covenant::sniff_media_type(gif_bytes), "image/gif");
  EXPECT_EQ(covenant::sniff_media_type(std::string("RIFF\x10\0\0\0WEBPVP8 ", 16)), "image/webp");
  EXPECT_EQ(covenant::sniff_media_type(pdf_bytes), "application/pdf");
  EXPECT_EQ(covenant::sniff_media_type(wav_bytes), "audio/wav");
  EXPECT_EQ(covenant::sniff_media_type(mp3_bytes), "audio/mpeg");
  EXPECT_EQ(covenant::sniff_media_type(std::string("\xff\xfb\x90\x64", 4)), "audio/mpeg");  // a bare MPEG frame
  EXPECT_EQ(covenant::sniff_media_type(flac_bytes), "audio/flac");
  EXPECT_EQ(covenant::sniff_media_type(std::string("OggS\0\x02", 6)), "audio/ogg");
  EXPECT_EQ(covenant::sniff_media_type(std::string("\0\0\0\x20" "ftypM4A ", 12)), "audio/mp4");
  EXPECT_EQ(covenant::sniff_media_type(bmp_bytes), "");
  EXPECT_EQ(covenant::sniff_media_type(""), "");
  EXPECT_EQ(covenant::sniff_media_type("\x89PNG"), "");  // a cut-off signature
  EXPECT_EQ(covenant::kind_of_media_type("image/bmp"), media_kind::image);
  EXPECT_EQ(covenant::kind_of_media_type("application/pdf"), media_kind::pdf);
  EXPECT_EQ(covenant::kind_of_media_type("audio/wav"), media_kind::audio);
  EXPECT_EQ(covenant::kind_of_media_type("text/plain"), std::nullopt);
  EXPECT_EQ(covenant::media_reference(media_kind::image, 2), "<image 2>");
  EXPECT_EQ(covenant::media_reference(media_kind::pdf, 1), "<pdf 1>");
  EXPECT_EQ(covenant::media_reference(media_kind::audio, 10), "<audio 10>");
  EXPECT_EQ(covenant::parse_media_kind("pdf"), media_kind::pdf);
  EXPECT_EQ(covenant::parse_media_kind("video"), std::nullopt);
}

TEST_F(MediaValue, AFileIsReadNowAndItsTypeSniffed) {
  const std::string p = write("receipt.png", png_bytes);
  const covenant::image m = covenant::image::file(p);
  EXPECT_EQ(m.error(), "");
  EXPECT_FALSE(m.empty());
  EXPECT_EQ(m.kind(), media_kind::image);
  EXPECT_EQ(m.media_type(), "image/png");
  EXPECT_EQ(m.data(), png_bytes);
  EXPECT_EQ(m.size(), png_bytes.size());
  EXPECT_EQ(m.path(), p);
  EXPECT_FALSE(m.is_url());
  EXPECT_EQ(url_of(m), "");
  EXPECT_EQ(m.reference(), 0u);
  // read now: removing the file afterwards changes nothing
  fs::remove(p);
  EXPECT_EQ(m.data(), png_bytes);
  // a copy shares the bytes
  const covenant::image copy = m;
  EXPECT_EQ(copy.data().data(), m.data().data());
  EXPECT_TRUE(copy == m);

  const covenant::pdf doc = covenant::pdf::file(write("invoice.pdf", pdf_bytes));
  EXPECT_EQ(doc.error(), "");
  EXPECT_EQ(doc.media_type(), "application/pdf");
  const covenant::audio clip = covenant::audio::file(write("clip.mp3", mp3_bytes));
  EXPECT_EQ(clip.error(), "");
  EXPECT_EQ(clip.media_type(), "audio/mpeg");
}

TEST_F(MediaValue, AMissingFileIsAnErrorNamingThePath) {
  const std::string p = path("nowhere.png");
  const covenant::image m = covenant::image::file(p);
  EXPECT_FALSE(m.empty());
  EXPECT_EQ(m.error(), "cannot read the file " + p + ": No such file or directory");
  EXPECT_EQ(m.path(), p);
  EXPECT_EQ(m.size(), 0u);
  const covenant::image empty = covenant::image::file(write("empty.png", ""));
  EXPECT_EQ(empty.error(), "the file " + path("empty.png") + " is empty");
}

TEST_F(MediaValue, BytesWithAGivenTypeAndTypesThatContradictTheBytes) {
  const covenant::image given = covenant::image::bytes(png_bytes, "IMAGE/PNG");
  EXPECT_EQ(given.error(), "");
  EXPECT_EQ(given.media_type(), "image/png");  // lower-cased
  EXPECT_EQ(given.data(), png_bytes);
  EXPECT_EQ(given.path(), "");

  // a type the bytes contradict
  const covenant::image wrong = covenant::image::bytes(png_bytes, "image/jpeg");
  EXPECT_EQ(wrong.error(), "is said to be image/jpeg but its bytes are image/png");
  // a type the bytes do not show (not sniffable) is taken as given
  const covenant::image bmp = covenant::image::bytes(bmp_bytes, "image/bmp");
  EXPECT_EQ(bmp.error(), "");
  EXPECT_EQ(bmp.media_type(), "image/bmp");
  // a type of another kind
  const covenant::image pdf_type = covenant::image::bytes(bmp_bytes, "application/pdf");
  EXPECT_EQ(pdf_type.error(), "has media type application/pdf, which is not an image type");
  // unknown bytes without a type
  const covenant::image unknown = covenant::image::bytes(bmp_bytes);
  EXPECT_EQ(unknown.error(),
            "is no image format covenant knows (the first bytes are not PNG, JPEG, GIF or WebP); give its media type");
  EXPECT_EQ(covenant::pdf::bytes("hello").error(),
            "is no pdf format covenant knows (the first bytes are not a PDF header); give its media type");
  EXPECT_EQ(covenant::audio::bytes("hello").error(),
            "is no audio format covenant knows (the first bytes are not WAV, MP3, FLAC, Ogg or MP4 audio); give its "
            "media type");
  EXPECT_EQ(covenant::image::bytes("").error(), "has no bytes");
}

TEST_F(MediaValue, BytesOfAnotherKindAreAnError) {
  const covenant::image m = covenant::image::bytes(pdf_bytes);
  EXPECT_EQ(m.kind(), media_kind::image);
  EXPECT_EQ(m.error(), "has media type application/pdf, which is not an image type");
  EXPECT_EQ(covenant::pdf::bytes(png_bytes).error(), "has media type image/png, which is not a pdf type");
  EXPECT_EQ(covenant::audio::bytes(png_bytes).error(), "has media type image/png, which is not an audio type");
  // a media of another kind made into an image
  const covenant::image from_pdf(media::bytes(media_kind::pdf, pdf_bytes));
  EXPECT_EQ(from_pdf.kind(), media_kind::image);
  EXPECT_EQ(from_pdf.error(), "is a pdf, not an image");
  const covenant::pdf from_image(media::bytes(media_kind::image, png_bytes));
  EXPECT_EQ(from_image.error(), "is an image, not a pdf");
  // an empty media stays empty
  EXPECT_TRUE(covenant::image(media()).empty());
  EXPECT_TRUE(covenant::image().empty());
  EXPECT_EQ(covenant::image().error(), "");
}

TEST_F(MediaValue, UrlsTakeTheirTypeFromAKnownExtension) {
  const covenant::image png = covenant::image::url("https://example.com/scans/r.PNG?size=large#top");
  EXPECT_EQ(png.error(), "");
  EXPECT_TRUE(png.is_url());
  EXPECT_EQ(url_of(png), "https://example.com/scans/r.PNG?size=large#top");
  EXPECT_EQ(png.media_type(), "image/png");
  EXPECT_EQ(png.size(), 0u);
  EXPECT_EQ(png.data(), "");

  const covenant::image bare = covenant::image::url("https://example.com/scans/r");
  EXPECT_EQ(bare.error(), "");
  EXPECT_EQ(bare.media_type(), "");
  const covenant::image dotted_dir = covenant::image::url("https://example.com/v1.2/scan");
  EXPECT_EQ(dotted_dir.media_type(), "");
  const covenant::image given = covenant::image::url("http://example.com/r", "image/JPEG");
  EXPECT_EQ(given.media_type(), "image/jpeg");
  EXPECT_EQ(covenant::pdf::url("https://example.com/a.pdf").media_type(), "application/pdf");

  EXPECT_EQ(covenant::image::url("https://example.com/a.pdf").error(),
            "has media type application/pdf, which is not an image type");
  EXPECT_EQ(covenant::image::url("ftp://example.com/a.png").error(), "is not an http(s) URL: ftp://example.com/a.png");
}

TEST_F(MediaValue, ParseReadsUrlsDataUrlsReferencesAndPaths) {
  const covenant::image url = covenant::image::parse("https://x.test/y.png");
  EXPECT_TRUE(url.is_url());
  EXPECT_EQ(url_of(url), "https://x.test/y.png");
  EXPECT_EQ(url.media_type(), "image/png");
  EXPECT_EQ(url.error(), "");

  const covenant::image data = covenant::image::parse("data:image/png;base64," + b64(png_bytes));
  EXPECT_EQ(data.error(), "");
  EXPECT_FALSE(data.is_url());
  EXPECT_EQ(data.data(), png_bytes);
  EXPECT_EQ(data.media_type(), "image/png");
  // the URL-safe alphabet without padding
  std::string url_safe = b64(jpeg_bytes + "\xfb\xff");
  for (char& c : url_safe) c = c == '+' ? '-' : c == '/' ? '_' : c;
  while (url_safe.back() == '=') url_safe.pop_back();
  EXPECT_EQ(covenant::image::parse("data:image/jpeg;base64," + url_safe).data(), jpeg_bytes + "\xfb\xff");
  // the type of a data URL is kept, and checked against the bytes
  EXPECT_EQ(covenant::image::parse("data:image/gif;base64," + b64(png_bytes)).error(),
            "is said to be image/gif but its bytes are image/png");
  EXPECT_EQ(covenant::image::parse("data:image/png," + png_bytes).error(),
            "is a data URL that is not base64 (data:<media type>;base64,<data>)");
  EXPECT_EQ(covenant::image::parse("data:image/png;base64,%%%").error(), "is a data URL whose data is not base64");

  const covenant::image ref = covenant::image::parse("<image 2>");
  EXPECT_EQ(ref.error(), "");
  EXPECT_EQ(ref.reference(), 2u);
  EXPECT_EQ(ref.kind(), media_kind::image);
  EXPECT_EQ(ref.size(), 0u);
  EXPECT_FALSE(ref.is_url());
  EXPECT_EQ(covenant::pdf::parse("<pdf 12>").reference(), 12u);
  EXPECT_EQ(covenant::image::parse("<image 0>", {}, false).reference(), 0u);  // not a reference: 1-based

  write("receipt.jpg", jpeg_bytes);
  const covenant::image relative = covenant::image::parse("receipt.jpg", dir());
  EXPECT_EQ(relative.error(), "");
  EXPECT_EQ(relative.path(), dir() + "/receipt.jpg");
  EXPECT_EQ(relative.media_type(), "image/jpeg");
  EXPECT_EQ(relative.data(), jpeg_bytes);
  const covenant::image with_slash = covenant::image::parse("receipt.jpg", dir() + "/");
  EXPECT_EQ(with_slash.path(), dir() + "/receipt.jpg");
  const covenant::image absolute = covenant::image::parse(path("receipt.jpg"), "/elsewhere");
  EXPECT_EQ(absolute.path(), path("receipt.jpg"));
  EXPECT_EQ(absolute.error(), "");

  const covenant::image missing = covenant::image::parse("gone.png", dir());
  EXPECT_EQ(missing.error(), "cannot read the file " + dir() + "/gone.png: No such file or directory");
}

TEST_F(MediaValue, ParseWithoutReadingFilesRefusesAPath) {
  write("receipt.jpg", jpeg_bytes);
  const covenant::image m = covenant::image::parse("receipt.jpg", dir(), false);
  EXPECT_EQ(m.error(), "is not an http(s) URL, a data URL or a reference such as \"<image 1>\"");
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.path(), "");
  EXPECT_EQ(covenant::pdf::parse("<image 1>", {}, false).error(),
            "is not an http(s) URL, a data URL or a reference such as \"<pdf 1>\"");
  // the forms that are no file are read as with files
  EXPECT_EQ(covenant::image::parse("<image 3>", {}, false).reference(), 3u);
  EXPECT_EQ(url_of(covenant::image::parse("https://x.test/y", {}, false)), "https://x.test/y");
}

TEST_F(MediaValue, Sha256OfTheBytesOrOfTheUrl) {
  const covenant::image m = covenant::image::bytes("abc", "image/png");
  EXPECT_EQ(m.sha256(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(m.sha256(), m.sha256());  // computed once
  EXPECT_EQ(covenant::image::url("abc").sha256(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(covenant::image().sha256(), "");
}

TEST_F(MediaValue, FileNames) {
  EXPECT_EQ(covenant::pdf::file(write("invoice 2024.pdf", pdf_bytes)).file_name(3), "invoice 2024.pdf");
  EXPECT_EQ(covenant::pdf::bytes(pdf_bytes).file_name(2), "pdf2.pdf");
  EXPECT_EQ(covenant::image::bytes(jpeg_bytes).file_name(1), "image1.jpg");
  EXPECT_EQ(covenant::image::bytes(png_bytes).file_name(4), "image4.png");
  EXPECT_EQ(covenant::audio::bytes(mp3_bytes).file_name(1), "audio1.mp3");
  EXPECT_EQ(covenant::audio::bytes(wav_bytes).file_name(2), "audio2.wav");
  EXPECT_EQ(covenant::image::url("https://x.test/scan").file_name(1), "image1.bin");
}

TEST_F(MediaValue, TheDigestNamesEachMediaWithoutItsBytes) {
  const covenant::image png = covenant::image::bytes(png_bytes);
  const covenant::pdf url = covenant::pdf::url("https://x.test/a.pdf");
  const std::string digest = covenant::media_digest({png, url});
  EXPECT_EQ(json::parse(digest),
            (json::array{json::object{{"kind", "image"}, {"type", "image/png"}, {"bytes", png_bytes.size()},
                                      {"sha256", png.sha256()}},
                         json::object{{"kind", "pdf"}, {"type", "application/pdf"}, {"url", "https://x.test/a.pdf"},
                                      {"sha256", url.sha256()}}}));
  EXPECT_EQ(digest.find(b64(png_bytes)), std::string::npos);
  EXPECT_EQ(covenant::media_digest({}), "[]");
}

TEST_F(MediaValue, EqualityComparesKindTypeUrlAndBytes) {
  EXPECT_TRUE(covenant::image::bytes(png_bytes) == covenant::image::bytes(std::string(png_bytes)));
  EXPECT_FALSE(covenant::image::bytes(png_bytes) == covenant::image::bytes(jpeg_bytes));
  EXPECT_TRUE(covenant::image::url("https://x.test/a.png") == covenant::image::url("https://x.test/a.png"));
  EXPECT_FALSE(covenant::image::url("https://x.test/a.png") == covenant::image::url("https://x.test/b.png"));
  EXPECT_FALSE(covenant::image::parse("<image 1>") == covenant::image::parse("<image 2>"));
  EXPECT_FALSE(covenant::image() == covenant::image::bytes(png_bytes));
  EXPECT_TRUE(covenant::image() == covenant::image());
}

// =============================================================================================
// 2. schema and JSON

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

// =============================================================================================
// 3. validate(input, limits)

TEST_F(MediaLimits, EachUnreadableFieldIsOneIssueAtItsPath) {
  Scan scan;
  scan.receipt = covenant::image::file(path("missing.png"));
  scan.pages = {covenant::image::file(write("p1.png", png_bytes)), covenant::image::file(path("missing2.png")),
                covenant::image::bytes(bmp_bytes)};
  scan.invoice = covenant::pdf::bytes(png_bytes);
  const covenant::issue_list issues = covenant::validate(scan);
  ASSERT_EQ(issues.size(), 4u);
  EXPECT_EQ(issues[0].path.to_string(), "receipt");
  EXPECT_EQ(issues[0].code, covenant::issue_code::constraint_violation);
  EXPECT_EQ(issues[0].expected, "image");
  EXPECT_EQ(issues[0].actual, path("missing.png"));
  EXPECT_EQ(issues[0].message, "cannot read the file " + path("missing.png") + ": No such file or directory");
  EXPECT_EQ(issues[1].path.to_string(), "invoice");
  EXPECT_EQ(issues[1].expected, "pdf");
  EXPECT_EQ(issues[1].actual, "image/png, " + std::to_string(png_bytes.size()) + " bytes");
  EXPECT_EQ(issues[1].message, "has media type image/png, which is not a pdf type");
  EXPECT_EQ(issues[2].path.to_string(), "pages[1]");
  EXPECT_EQ(issues[2].message, "cannot read the file " + path("missing2.png") + ": No such file or directory");
  EXPECT_EQ(issues[3].path.to_string(), "pages[2]");
  EXPECT_EQ(issues[3].actual, "bytes, " + std::to_string(bmp_bytes.size()) + " bytes");

  // an empty media is an issue too; an absent optional is none
  const covenant::issue_list none = covenant::validate(OneImage{"n", {}});
  EXPECT_THAT(shown(none), ElementsAre("receipt: has no media (no file, bytes or URL) (got nothing)"));
  EXPECT_THAT(covenant::validate(MaybeImage{"n", std::nullopt}), IsEmpty());
  // a reference names no media in the caller's own input
  EXPECT_THAT(shown(covenant::validate(OneImage{"n", covenant::image::parse("<image 4>")})),
              ElementsAre("receipt: is a reference (<image 4>) but names no media here: give a file, bytes or a URL "
                          "(got <image 4>)"));
}

TEST_F(MediaLimits, TheEnginesSayWhatTheirProvidersTake) {
  const auto openai = offline_engine(covenant::provider::openai);
  const covenant::media_limits* o = openai->accepted_media();
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->provider, "OpenAI Chat Completions");
  EXPECT_THAT(o->image_types, ElementsAre("image/png", "image/jpeg", "image/webp", "image/gif"));
  EXPECT_THAT(o->audio_types, ElementsAre("audio/wav", "audio/mpeg"));
  EXPECT_TRUE(o->pdf);
  EXPECT_TRUE(o->image_urls);
  EXPECT_FALSE(o->pdf_urls);
  EXPECT_EQ(o->max_images, 500u);
  EXPECT_EQ(o->max_pdf_bytes, 32u * 1024 * 1024);
  EXPECT_EQ(o->max_total_bytes, 50u * 1024 * 1024);

  const auto anthropic = offline_engine(covenant::provider::anthropic);
  const covenant::media_limits* a = anthropic->accepted_media();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->provider, "Anthropic Messages");
  EXPECT_THAT(a->image_types, ElementsAre("image/jpeg", "image/png", "image/gif", "image/webp"));
  EXPECT_THAT(a->audio_types, IsEmpty());
  EXPECT_TRUE(a->pdf);
  EXPECT_TRUE(a->image_urls);
  EXPECT_TRUE(a->pdf_urls);
  EXPECT_EQ(a->max_image_bytes, 5u * 1024 * 1024);
  EXPECT_EQ(a->max_images, 100u);
  EXPECT_EQ(a->max_total_bytes, 32u * 1024 * 1024);

  // an engine that does not say: only what holds for every provider is checked
  EXPECT_EQ(covenant::testing::scripted_engine().accepted_media(), nullptr);
}

TEST_F(MediaLimits, AudioIsRefusedByAnthropicAndTakenByOpenAiAsWavOrMp3) {
  const auto openai = offline_engine(covenant::provider::openai);
  const auto anthropic = offline_engine(covenant::provider::anthropic);
  const Clip wav{covenant::audio::bytes(wav_bytes)};
  EXPECT_THAT(shown(covenant::validate(wav, anthropic->accepted_media())),
              ElementsAre("clip: Anthropic Messages takes no audio (got audio/wav, " +
                          std::to_string(wav_bytes.size()) + " bytes)"));
  EXPECT_THAT(covenant::validate(wav, openai->accepted_media()), IsEmpty());
  EXPECT_THAT(covenant::validate(Clip{covenant::audio::bytes(mp3_bytes)}, openai->accepted_media()), IsEmpty());
  EXPECT_THAT(shown(covenant::validate(Clip{covenant::audio::bytes(flac_bytes)}, openai->accepted_media())),
              ElementsAre("clip: audio/flac is not an audio type OpenAI Chat Completions takes (audio/wav, audio/mpeg) "
                          "(got audio/flac, " + std::to_string(flac_bytes.size()) + " bytes)"));
  EXPECT_THAT(shown(covenant::validate(Clip{covenant::audio::url("https://x.test/a.wav")}, openai->accepted_media())),
              ElementsAre("clip: OpenAI Chat Completions takes audio as bytes only, not as URLs (got "
                          "https://x.test/a.wav)"));
  // without limits: any readable audio
  EXPECT_THAT(covenant::validate(Clip{covenant::audio::bytes(flac_bytes)}), IsEmpty());
}

TEST_F(MediaLimits, AnImageTypeTheProviderDoesNotTakeIsRefused) {
  const auto openai = offline_engine(covenant::provider::openai);
  const auto anthropic = offline_engine(covenant::provider::anthropic);
  const OneImage bmp{"n", covenant::image::bytes(bmp_bytes, "image/bmp")};
  const std::string got = " (got image/bmp, " + std::to_string(bmp_bytes.size()) + " bytes)";
  EXPECT_THAT(shown(covenant::validate(bmp, openai->accepted_media())),
              ElementsAre("receipt: image/bmp is not an image type OpenAI Chat Completions takes (image/png, "
                          "image/jpeg, image/webp, image/gif)" + got));
  EXPECT_THAT(shown(covenant::validate(bmp, anthropic->accepted_media())),
              ElementsAre("receipt: image/bmp is not an image type Anthropic Messages takes (image/jpeg, image/png, "
                          "image/gif, image/webp)" + got));
  EXPECT_THAT(covenant::validate(bmp), IsEmpty());
  // an image URL of a known type is checked too; one of no known type is left to the provider
  EXPECT_THAT(shown(covenant::validate(OneImage{"n", covenant::image::url("https://x.test/a.tiff", "image/tiff")},
                                       anthropic->accepted_media())),
              ElementsAre("receipt: image/tiff is not an image type Anthropic Messages takes (image/jpeg, image/png, "
                          "image/gif, image/webp) (got https://x.test/a.tiff)"));
  EXPECT_THAT(covenant::validate(OneImage{"n", covenant::image::url("https://x.test/a")}, anthropic->accepted_media()),
              IsEmpty());
  // GIF and WebP are taken by both
  for (const auto* e : {openai.get(), anthropic.get()})
    EXPECT_THAT(covenant::validate(OneImage{"n", covenant::image::bytes(gif_bytes)}, e->accepted_media()), IsEmpty());
}

TEST_F(MediaLimits, APdfUrlIsRefusedByOpenAiAndTakenByAnthropic) {
  const auto openai = offline_engine(covenant::provider::openai);
  const auto anthropic = offline_engine(covenant::provider::anthropic);
  const Doc doc{covenant::pdf::url("https://x.test/report.pdf")};
  EXPECT_THAT(shown(covenant::validate(doc, openai->accepted_media())),
              ElementsAre("doc: OpenAI Chat Completions takes PDFs as bytes only, not as URLs (read the file: "
                          "covenant::pdf::file) (got https://x.test/report.pdf)"));
  EXPECT_THAT(covenant::validate(doc, anthropic->accepted_media()), IsEmpty());
  const Doc bytes{covenant::pdf::bytes(pdf_bytes)};
  EXPECT_THAT(covenant::validate(bytes, openai->accepted_media()), IsEmpty());
  EXPECT_THAT(covenant::validate(bytes, anthropic->accepted_media()), IsEmpty());
}

TEST_F(MediaLimits, AnthropicTakesImagesOfAtMost5MbAsSent) {
  const auto anthropic = offline_engine(covenant::provider::anthropic);
  const auto openai = offline_engine(covenant::provider::openai);
  const std::size_t five_mb = 5u * 1024 * 1024;  // base64 of 3 MiB + 768 KiB
  const std::size_t largest = five_mb / 4 * 3;
  const OneImage at_limit{"n", covenant::image::bytes(png_of_size(largest))};
  EXPECT_EQ(b64(at_limit.receipt.data()).size(), five_mb);
  EXPECT_THAT(covenant::validate(at_limit, anthropic->accepted_media()), IsEmpty());
  const OneImage over{"n", covenant::image::bytes(png_of_size(largest + 1))};
  EXPECT_THAT(shown(covenant::validate(over, anthropic->accepted_media())),
              ElementsAre("receipt: is 5.0 MB (5242884 bytes) as sent (base64); Anthropic Messages takes at most 5.0 MB (5242880 bytes) per image "
                          "(got image/png, " + std::to_string(largest + 1) + " bytes)"));
  EXPECT_THAT(covenant::validate(over, openai->accepted_media()), IsEmpty());  // no per-image limit of its own
  EXPECT_THAT(covenant::validate(over), IsEmpty());
}

TEST_F(MediaLimits, AnthropicTakesAtMost100ImagesAndOpenAi500) {
  const auto anthropic = offline_engine(covenant::provider::anthropic);
  const auto openai = offline_engine(covenant::provider::openai);
  const covenant::image one = covenant::image::bytes(png_bytes);
  Album album{std::vector<covenant::image>(100, one)};
  EXPECT_THAT(covenant::validate(album, anthropic->accepted_media()), IsEmpty());
  album.images.push_back(one);
  const std::string got = " (got image/png, " + std::to_string(png_bytes.size()) + " bytes)";
  EXPECT_THAT(shown(covenant::validate(album, anthropic->accepted_media())),
              ElementsAre("images[100]: is image 101 of the request; Anthropic Messages takes at most 100 images in one "
                          "request" + got));
  album.images.push_back(one);  // every image over the limit is reported
  EXPECT_THAT(shown(covenant::validate(album, anthropic->accepted_media())),
              ElementsAre(HasSubstr("images[100]: is image 101 of the request"),
                          HasSubstr("images[101]: is image 102 of the request")));
  EXPECT_THAT(covenant::validate(album, openai->accepted_media()), IsEmpty());

  Album many{std::vector<covenant::image>(500, one)};
  EXPECT_THAT(covenant::validate(many, openai->accepted_media()), IsEmpty());
  many.images.push_back(one);
  EXPECT_THAT(shown(covenant::validate(many, openai->accepted_media())),
              ElementsAre("images[500]: is image 501 of the request; OpenAI Chat Completions takes at most 500 images "
                          "in one request" + got));
  // image URLs count too
  Album urls{std::vector<covenant::image>(101, covenant::image::url("https://x.test/a.png"))};
  EXPECT_THAT(shown(covenant::validate(urls, anthropic->accepted_media())),
              ElementsAre("images[100]: is image 101 of the request; Anthropic Messages takes at most 100 images in one "
                          "request (got https://x.test/a.png)"));
}

TEST_F(MediaLimits, AnthropicTakesAtMost32MbOfMediaInOneRequest) {
  const auto anthropic = offline_engine(covenant::provider::anthropic);
  const covenant::image big = covenant::image::bytes(png_of_size(5u * 1024 * 1024 / 4 * 3));  // 5 MB as sent
  Album album{std::vector<covenant::image>(6, big)};  // 30 MB
  EXPECT_THAT(covenant::validate(album, anthropic->accepted_media()), IsEmpty());
  album.images.push_back(big);  // 35 MB
  EXPECT_THAT(shown(covenant::validate(album, anthropic->accepted_media())),
              ElementsAre("images[6]: brings the request's media to 35.0 MB (36700160 bytes) as sent (base64); Anthropic Messages takes "
                          "at most 32.0 MB (33554432 bytes) in one request (got image/png, 3932160 bytes)"));
}

TEST_F(MediaLimits, CheckMediaCountsWhatItAccepts) {
  const auto anthropic = offline_engine(covenant::provider::anthropic);
  covenant::media_tally tally{anthropic->accepted_media()};
  EXPECT_EQ(covenant::check_media(covenant::image::bytes(png_bytes), tally), "");
  EXPECT_EQ(covenant::check_media(covenant::pdf::bytes(pdf_bytes), tally), "");
  EXPECT_EQ(covenant::check_media(covenant::image::url("https://x.test/a.png"), tally), "");
  EXPECT_EQ(covenant::check_media(covenant::image::parse("<image 1>"), tally),
            "is a reference (<image 1>) but names no media here: give a file, bytes or a URL");
  // a repaired input's references name the input's own media, counted per kind
  const std::vector<covenant::media> originals{covenant::pdf::bytes(pdf_bytes), covenant::image::bytes(png_bytes)};
  covenant::media_tally repaired{anthropic->accepted_media(), &originals};
  EXPECT_EQ(covenant::check_media(covenant::image::parse("<image 1>"), repaired), "");
  EXPECT_EQ(covenant::check_media(covenant::pdf::parse("<pdf 1>"), repaired), "");
  EXPECT_EQ(covenant::check_media(covenant::image::parse("<image 2>"), repaired),
            "refers to <image 2>, which the input does not have");
  EXPECT_EQ(covenant::image::parse("<image 1>").resolve(originals), &originals[1]);
  EXPECT_EQ(covenant::pdf::parse("<pdf 2>").resolve(originals), nullptr);
  EXPECT_EQ(covenant::check_media(covenant::audio::bytes(wav_bytes), tally), "Anthropic Messages takes no audio");
  EXPECT_EQ(tally.images, 2u);
  EXPECT_EQ(tally.total_bytes, b64(png_bytes).size() + b64(pdf_bytes).size());

  covenant::media_tally none;
  EXPECT_EQ(covenant::check_media(covenant::audio::bytes(wav_bytes), none), "");
  EXPECT_EQ(covenant::check_media(media(), none), "has no media (no file, bytes or URL)");
}

// =============================================================================================
// 4. exact request bodies through a contract

TEST_F(MediaRequest, OneImageAsBytesOpenAi) {
  loopback_server server([](const received_request&, std::size_t) { return openai_answer(); });
  covenant::http_engine engine(openai_options(server));
  const covenant::contract<Look<OneImage>> c{engine, no_retries()};
  const covenant::image receipt = covenant::image::file(write("receipt.png", png_bytes));
  const auto [value, outcome] = c.run(OneImage{"lunch", receipt});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(value.answer, "Paris");
  ASSERT_EQ(outcome.attempts.size(), 1u);
  EXPECT_TRUE(outcome.attempts[0].media == std::vector<media>{receipt});  // the attempt keeps the media it sent
  ASSERT_EQ(server.requests(), 1u);
  const json::object body = body_of(server, 0);
  const std::string text = "<input>\n{\"note\":\"lunch\",\"receipt\":\"\\u003cimage 1>\"}\n</input>";
  EXPECT_EQ(body.at("messages"),
            openai_messages(c.system_prompt(), json::array{text_part(text), text_part("<image 1>"),
                                                           openai_image("image/png", png_bytes)}));
  const json::value input = input_json_of(text);
  EXPECT_EQ(input, (json::object{{"note", "lunch"}, {"receipt", "<image 1>"}}));
}

TEST_F(MediaRequest, OneImageAsBytesAnthropic) {
  loopback_server server([](const received_request&, std::size_t) { return anthropic_answer(); });
  covenant::http_engine engine(anthropic_options(server));
  const covenant::contract<Look<OneImage>> c{engine, no_retries()};
  const auto [value, outcome] = c.run(OneImage{"lunch", covenant::image::bytes(png_bytes)});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(value.answer, "Paris");
  ASSERT_EQ(server.requests(), 1u);
  const json::object body = body_of(server, 0);
  EXPECT_EQ(body.at("system"), json::value(c.system_prompt()));
  const std::string text = "<input>\n{\"note\":\"lunch\",\"receipt\":\"\\u003cimage 1>\"}\n</input>";
  EXPECT_EQ(body.at("messages"), anthropic_messages(json::array{text_part(text), text_part("<image 1>"),
                                                                anthropic_image("image/png", png_bytes)}));
  EXPECT_EQ(input_json_of(text), (json::object{{"note", "lunch"}, {"receipt", "<image 1>"}}));
  EXPECT_EQ(body.at("tool_choice"), (json::object{{"type", "tool"}, {"name", "Answer"}}));
}

TEST_F(MediaRequest, SeveralImagesPdfsAndAudioOpenAi) {
  loopback_server server([](const received_request&, std::size_t) { return openai_answer(); });
  covenant::http_engine engine(openai_options(server));
  const covenant::contract<Look<Bundle>> c{engine, no_retries()};
  Bundle in;
  in.images = {covenant::image::bytes(png_bytes), covenant::image::file(write("photo.jpg", jpeg_bytes))};
  in.doc = covenant::pdf::file(write("invoice.pdf", pdf_bytes));
  in.appendix = covenant::pdf::bytes(pdf2_bytes);
  in.clips = {covenant::audio::bytes(wav_bytes), covenant::audio::file(write("voice.mp3", mp3_bytes))};
  const auto [value, outcome] = c.run(in);
  ASSERT_TRUE(outcome.success) << outcome.summary();
  ASSERT_EQ(server.requests(), 1u);
  const std::string input_json =
      R"({"images":["<image 1>","<image 2>"],"doc":"<pdf 1>","appendix":"<pdf 2>","clips":["<audio 1>","<audio 2>"]})";
  const std::string text = input_block(input_json);
  EXPECT_EQ(body_of(server, 0).at("messages"),
            openai_messages(c.system_prompt(),
                            json::array{text_part(text),
                                        text_part("<image 1>"), openai_image("image/png", png_bytes),
                                        text_part("<image 2>"), openai_image("image/jpeg", jpeg_bytes),
                                        text_part("<pdf 1>"), openai_file("invoice.pdf", pdf_bytes),
                                        text_part("<pdf 2>"), openai_file("pdf2.pdf", pdf2_bytes),
                                        text_part("<audio 1>"), openai_audio(wav_bytes, "wav"),
                                        text_part("<audio 2>"), openai_audio(mp3_bytes, "mp3")}));
  EXPECT_EQ(input_json_of(text), json::parse(input_json));
  // the body the engine builds as a value is the one it sent as text
  covenant::chat_request r;
  r.messages = {{covenant::role::system, c.system_prompt()}, {covenant::role::user, ""}};
  covenant::detail::render_input_message(r.messages.back(), in);
  r.mode = output_mode::json_schema;
  r.response_schema = std::make_shared<const json::value>(covenant::openai_strict_schema_of<Answer>());
  r.schema_name = "Answer";
  EXPECT_EQ(engine.request_body(r).at("messages"), body_of(server, 0).at("messages"));
}

TEST_F(MediaRequest, SeveralImagesAndPdfsAnthropic) {
  loopback_server server([](const received_request&, std::size_t) { return anthropic_answer(); });
  covenant::http_engine engine(anthropic_options(server));
  const covenant::contract<Look<Bundle>> c{engine, no_retries()};
  Bundle in;
  in.images = {covenant::image::bytes(png_bytes), covenant::image::file(write("photo.jpg", jpeg_bytes))};
  in.doc = covenant::pdf::file(write("invoice.pdf", pdf_bytes));
  in.appendix = covenant::pdf::url("https://x.test/appendix.pdf");
  const auto [value, outcome] = c.run(in);
  ASSERT_TRUE(outcome.success) << outcome.summary();
  ASSERT_EQ(server.requests(), 1u);
  const std::string input_json = R"({"images":["<image 1>","<image 2>"],"doc":"<pdf 1>","appendix":"<pdf 2>","clips":[]})";
  const std::string text = input_block(input_json);
  EXPECT_EQ(body_of(server, 0).at("messages"),
            anthropic_messages(json::array{text_part(text),
                                           text_part("<image 1>"), anthropic_image("image/png", png_bytes),
                                           text_part("<image 2>"), anthropic_image("image/jpeg", jpeg_bytes),
                                           text_part("<pdf 1>"), anthropic_document(pdf_bytes),
                                           text_part("<pdf 2>"), anthropic_document_url("https://x.test/appendix.pdf")}));
  EXPECT_EQ(input_json_of(text), json::parse(input_json));
}

TEST_F(MediaRequest, AnImageUrlIsSentAsTheUrlInBothDialects) {
  const OneImage in{"web", covenant::image::url("https://example.com/r.png?v=2")};
  const std::string text = "<input>\n{\"note\":\"web\",\"receipt\":\"\\u003cimage 1>\"}\n</input>";
  {
    loopback_server server([](const received_request&, std::size_t) { return openai_answer(); });
    covenant::http_engine engine(openai_options(server));
    const covenant::contract<Look<OneImage>> c{engine, no_retries()};
    const auto outcome = c.run(in).outcome;
    ASSERT_TRUE(outcome.success) << outcome.summary();
    EXPECT_EQ(body_of(server, 0).at("messages"),
              openai_messages(c.system_prompt(), json::array{text_part(text), text_part("<image 1>"),
                                                             openai_image_url("https://example.com/r.png?v=2")}));
  }
  {
    loopback_server server([](const received_request&, std::size_t) { return anthropic_answer(); });
    covenant::http_engine engine(anthropic_options(server));
    const covenant::contract<Look<OneImage>> c{engine, no_retries()};
    const auto outcome = c.run(in).outcome;
    ASSERT_TRUE(outcome.success) << outcome.summary();
    EXPECT_EQ(body_of(server, 0).at("messages"),
              anthropic_messages(json::array{text_part(text), text_part("<image 1>"),
                                             anthropic_image_url("https://example.com/r.png?v=2")}));
  }
}

TEST_F(MediaRequest, AnAbsentOptionalMediaSendsNoPartsAndAPlainString) {
  const MaybeImage in{"none", std::nullopt};
  const std::string text = "<input>\n{\"note\":\"none\"}\n</input>";  // an absent optional is left out
  {
    loopback_server server([](const received_request&, std::size_t) { return openai_answer(); });
    covenant::http_engine engine(openai_options(server));
    const covenant::contract<Look<MaybeImage>> c{engine, no_retries()};
    ASSERT_TRUE(c.run(in).outcome.success);
    EXPECT_EQ(body_of(server, 0).at("messages"), openai_messages(c.system_prompt(), json::string(text)));
  }
  {
    loopback_server server([](const received_request&, std::size_t) { return anthropic_answer(); });
    covenant::http_engine engine(anthropic_options(server));
    const covenant::contract<Look<MaybeImage>> c{engine, no_retries()};
    ASSERT_TRUE(c.run(in).outcome.success);
    EXPECT_EQ(body_of(server, 0).at("messages"), anthropic_messages(json::string(text)));
  }
  // present: the parts are there
  {
    loopback_server server([](const received_request&, std::size_t) { return openai_answer(); });
    covenant::http_engine engine(openai_options(server));
    const covenant::contract<Look<MaybeImage>> c{engine, no_retries()};
    ASSERT_TRUE(c.run(MaybeImage{"one", covenant::image::bytes(gif_bytes)}).outcome.success);
    EXPECT_EQ(body_of(server, 0).at("messages"),
              openai_messages(c.system_prompt(),
                              json::array{text_part("<input>\n{\"note\":\"one\",\"photo\":\"\\u003cimage 1>\"}\n</input>"),
                                          text_part("<image 1>"), openai_image("image/gif", gif_bytes)}));
  }
}

TEST_F(MediaRequest, OpenAiImageDetailHighOrNone) {
  const OneImage in{"d", covenant::image::bytes(png_bytes)};
  const std::string text = "<input>\n{\"note\":\"d\",\"receipt\":\"\\u003cimage 1>\"}\n</input>";
  for (const std::string detail : {"high", "low", ""}) {
    SCOPED_TRACE("detail \"" + detail + "\"");
    loopback_server server([](const received_request&, std::size_t) { return openai_answer(); });
    covenant::http_engine_options o = openai_options(server);
    o.image_detail = detail;
    covenant::http_engine engine(o);
    const covenant::contract<Look<OneImage>> c{engine, no_retries()};
    ASSERT_TRUE(c.run(in).outcome.success);
    const json::value messages = body_of(server, 0).at("messages");
    EXPECT_EQ(messages, openai_messages(c.system_prompt(), json::array{text_part(text), text_part("<image 1>"),
                                                                       openai_image("image/png", png_bytes, detail)}));
    if (detail.empty()) {
      EXPECT_FALSE(messages.at(1).at("content").at(2).at("image_url").as_object().contains("detail"));
    }
  }
  // Anthropic has no such setting: the block is the same whatever the option says
  loopback_server server([](const received_request&, std::size_t) { return anthropic_answer(); });
  covenant::http_engine_options o = anthropic_options(server);
  o.image_detail = "high";
  covenant::http_engine engine(o);
  const covenant::contract<Look<OneImage>> c{engine, no_retries()};
  ASSERT_TRUE(c.run(in).outcome.success);
  EXPECT_EQ(body_of(server, 0).at("messages"), anthropic_messages(json::array{text_part(text), text_part("<image 1>"),
                                                                              anthropic_image("image/png", png_bytes)}));
}

TEST_F(MediaRequest, ARetrySendsTheMediaAgainInBothDialects) {
  const OneImage in{"again", covenant::image::bytes(jpeg_bytes)};
  const std::string text = "<input>\n{\"note\":\"again\",\"receipt\":\"\\u003cimage 1>\"}\n</input>";
  const std::string bad = R"({"answer": "", "confidence": 0.5})";
  {
    loopback_server server([&](const received_request&, std::size_t i) {
      return i == 0 ? whole(covenant_test::openai_completion(bad)) : openai_answer();
    });
    covenant::http_engine engine(openai_options(server));
    const covenant::contract<Look<OneImage>> c{engine, covenant::testing::instant({.tries = 1})};
    const auto outcome = c.run(in).outcome;
    ASSERT_TRUE(outcome.success) << outcome.summary();
    ASSERT_EQ(server.requests(), 2u);
    const json::array first = body_of(server, 0).at("messages").as_array();
    const json::array second = body_of(server, 1).at("messages").as_array();
    ASSERT_EQ(second.size(), 4u);
    EXPECT_EQ(second[0], first[0]);
    EXPECT_EQ(second[1], first[1]);
    EXPECT_EQ(second[1].at("content"),
              (json::array{text_part(text), text_part("<image 1>"), openai_image("image/jpeg", jpeg_bytes)}));
    EXPECT_EQ(second[2], (json::object{{"role", "assistant"}, {"content", bad}}));
    EXPECT_TRUE(second[3].at("content").is_string());  // the corrective message: text only
  }
  {
    loopback_server server([&](const received_request&, std::size_t i) {
      return i == 0 ? whole(covenant_test::anthropic_tool_message("Answer", bad)) : anthropic_answer();
    });
    covenant::http_engine engine(anthropic_options(server));
    const covenant::contract<Look<OneImage>> c{engine, covenant::testing::instant({.tries = 1})};
    const auto outcome = c.run(in).outcome;
    ASSERT_TRUE(outcome.success) << outcome.summary();
    ASSERT_EQ(server.requests(), 2u);
    const json::array second = body_of(server, 1).at("messages").as_array();
    ASSERT_EQ(second.size(), 3u);
    EXPECT_EQ(second[0], anthropic_messages(json::array{text_part(text), text_part("<image 1>"),
                                                        anthropic_image("image/jpeg", jpeg_bytes)})[0]);
    EXPECT_EQ(second[1].at("role"), "assistant");
    EXPECT_EQ(second[2].at("role"), "user");
    EXPECT_TRUE(second[2].at("content").is_string());
  }
}

// =============================================================================================
// 5. inputs refused before any request

TEST_F(MediaContract, AnUnreadableFileFailsInputValidationWithoutARequest) {
  for (const covenant::provider p : {covenant::provider::openai, covenant::provider::anthropic}) {
    SCOPED_TRACE(p == covenant::provider::openai ? "openai" : "anthropic");
    loopback_server server([&](const received_request&, std::size_t) {
      return p == covenant::provider::openai ? openai_answer() : anthropic_answer();
    });
    covenant::http_engine engine(p == covenant::provider::openai ? openai_options(server) : anthropic_options(server));
    const covenant::contract<Look<Scan>> c{engine, no_retries()};
    Scan in;
    in.receipt = covenant::image::file(path("missing.png"));
    in.pages = {covenant::image::bytes(png_bytes), covenant::image::file(path("gone.jpg"))};
    in.note = "n";
    const auto [value, outcome] = c.run(in);
    EXPECT_FALSE(outcome.success);
    EXPECT_EQ(outcome.failed_stage, covenant::stage::input_validation);
    EXPECT_THAT(shown(outcome.issues),
                ElementsAre("receipt: cannot read the file " + path("missing.png") + ": No such file or directory (got " +
                                path("missing.png") + ")",
                            "pages[1]: cannot read the file " + path("gone.jpg") + ": No such file or directory (got " +
                                path("gone.jpg") + ")"));
    EXPECT_EQ(outcome.issues, outcome.input_issues);
    EXPECT_THAT(outcome.attempts, IsEmpty());
    EXPECT_EQ(server.requests(), 0u);
  }
}

TEST_F(MediaContract, AnImageOverAnthropicsLimitFailsWithoutARequest) {
  loopback_server server([](const received_request&, std::size_t) { return anthropic_answer(); });
  covenant::http_engine engine(anthropic_options(server));
  const covenant::contract<Look<OneImage>> c{engine, no_retries()};
  const std::size_t size = 5u * 1024 * 1024 / 4 * 3 + 1;
  const auto [value, outcome] = c.run(OneImage{"big", covenant::image::bytes(png_of_size(size))});
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.failed_stage, covenant::stage::input_validation);
  ASSERT_EQ(outcome.issues.size(), 1u);
  EXPECT_EQ(outcome.issues[0].path.to_string(), "receipt");
  EXPECT_EQ(outcome.issues[0].code, covenant::issue_code::constraint_violation);
  EXPECT_EQ(outcome.issues[0].message,
            "is 5.0 MB (5242884 bytes) as sent (base64); Anthropic Messages takes at most 5.0 MB (5242880 bytes) per image");
  EXPECT_EQ(server.requests(), 0u);

  // audio: the same
  const covenant::contract<Look<Clip>> clips{engine, no_retries()};
  const auto audio = clips.run(Clip{covenant::audio::bytes(wav_bytes)}).outcome;
  EXPECT_EQ(audio.failed_stage, covenant::stage::input_validation);
  EXPECT_THAT(shown(audio.issues), ElementsAre(HasSubstr("clip: Anthropic Messages takes no audio")));
  EXPECT_EQ(server.requests(), 0u);

  // the same image goes to OpenAI
  loopback_server other([](const received_request&, std::size_t) { return openai_answer(); });
  covenant::http_engine openai(openai_options(other));
  const covenant::contract<Look<OneImage>> d{openai, no_retries()};
  EXPECT_TRUE(d.run(OneImage{"big", covenant::image::bytes(png_of_size(size))}).outcome.success);
  EXPECT_EQ(other.requests(), 1u);
}

TEST_F(MediaContract, AnEngineThatSaysNothingChecksOnlyWhatHoldsEverywhere) {
  covenant::testing::scripted_engine engine({answer_json, answer_json});
  const covenant::contract<Look<OneImage>> c{engine, no_retries()};
  // a BMP goes through (no limits known) ...
  const auto ok = c.run(OneImage{"n", covenant::image::bytes(bmp_bytes, "image/bmp")}).outcome;
  EXPECT_TRUE(ok.success) << ok.summary();
  ASSERT_EQ(engine.calls(), 1u);
  ASSERT_EQ(engine.request(0).messages.size(), 2u);
  EXPECT_EQ(engine.request(0).messages[1].media.size(), 1u);
  EXPECT_EQ(engine.request(0).messages[1].media[0].media_type(), "image/bmp");
  // ... an unreadable file does not
  const auto bad = c.run(OneImage{"n", covenant::image::file(path("missing.png"))}).outcome;
  EXPECT_EQ(bad.failed_stage, covenant::stage::input_validation);
  EXPECT_EQ(engine.calls(), 1u);
}

// =============================================================================================
// 6. the input-repair phase

TEST_F(MediaRepair, TheRepairedInputSendsTheOriginalMediaAgainOpenAi) {
  const std::string repaired = R"({"note": "fixed", "receipt": "<image 1>"})";
  loopback_server server([&](const received_request&, std::size_t i) {
    return i == 0 ? whole(covenant_test::openai_completion(repaired)) : openai_answer();
  });
  covenant::http_engine engine(openai_options(server));
  covenant::contract_options o = no_retries();
  o.pre_remedy = true;
  const covenant::contract<Picky<OneImage>> c{engine, o};
  const auto [value, outcome] = c.run(OneImage{"broken", covenant::image::bytes(png_bytes)});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(value.answer, "Paris");
  ASSERT_EQ(server.requests(), 2u);
  ASSERT_EQ(outcome.input_issues.size(), 1u);
  EXPECT_EQ(outcome.input_issues[0].path.to_string(), "note");

  // the repair request: the bad input with its image, and its problems
  const std::string bad_text = covenant::detail::input_repair_message(
      "<input>\n{\"note\":\"broken\",\"receipt\":\"\\u003cimage 1>\"}\n</input>", outcome.input_issues);
  EXPECT_THAT(bad_text, HasSubstr("Problems with this input:\n- note: must be \"fixed\""));
  const json::array first = body_of(server, 0).at("messages").as_array();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].at("role"), "system");
  EXPECT_EQ(first[1], (json::object{{"role", "user"},
                                    {"content", json::array{text_part(bad_text), text_part("<image 1>"),
                                                            openai_image("image/png", png_bytes)}}}));
  // the output request: the repaired input, whose reference stands for the original image
  const std::string text = "<input>\n{\"note\":\"fixed\",\"receipt\":\"\\u003cimage 1>\"}\n</input>";
  EXPECT_EQ(body_of(server, 1).at("messages"),
            openai_messages(c.system_prompt(), json::array{text_part(text), text_part("<image 1>"),
                                                           openai_image("image/png", png_bytes)}));
}

TEST_F(MediaRepair, TheRepairedInputSendsTheOriginalMediaAgainAnthropic) {
  const std::string repaired = R"({"note": "fixed", "receipt": "<image 1>"})";
  loopback_server server([&](const received_request&, std::size_t i) {
    return i == 0 ? whole(covenant_test::anthropic_message(repaired)) : anthropic_answer();
  });
  covenant::http_engine engine(anthropic_options(server));
  covenant::contract_options o = no_retries();
  o.pre_remedy = true;
  const covenant::contract<Picky<OneImage>> c{engine, o};
  const auto [value, outcome] = c.run(OneImage{"broken", covenant::image::bytes(jpeg_bytes)});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  ASSERT_EQ(server.requests(), 2u);
  const std::string bad_text = covenant::detail::input_repair_message(
      "<input>\n{\"note\":\"broken\",\"receipt\":\"\\u003cimage 1>\"}\n</input>", outcome.input_issues);
  EXPECT_EQ(body_of(server, 0).at("messages"),
            anthropic_messages(json::array{text_part(bad_text), text_part("<image 1>"),
                                           anthropic_image("image/jpeg", jpeg_bytes)}));
  const std::string text = "<input>\n{\"note\":\"fixed\",\"receipt\":\"\\u003cimage 1>\"}\n</input>";
  EXPECT_EQ(body_of(server, 1).at("messages"),
            anthropic_messages(json::array{text_part(text), text_part("<image 1>"),
                                           anthropic_image("image/jpeg", jpeg_bytes)}));
  EXPECT_EQ(body_of(server, 1).at("system"), json::value(c.system_prompt()));
}

TEST_F(MediaRepair, ReferencesOfTheRepairedInputAreRenumberedInItsOrder) {
  // the model swaps the two images: each reference stands for the original it names, and the
  // media are sent (and numbered) in the order the repaired input names them
  const std::string repaired = R"({"first": "<image 2>", "second": "<image 1>"})";
  loopback_server server([&](const received_request&, std::size_t i) {
    return i == 0 ? whole(covenant_test::openai_completion(repaired)) : openai_answer();
  });
  covenant::http_engine engine(openai_options(server));
  covenant::contract_options o = no_retries();
  o.pre_remedy = true;
  const covenant::contract<Swapped> c{engine, o};
  const auto outcome = c.run(TwoImages{covenant::image::bytes(png_bytes), covenant::image::bytes(jpeg_bytes)}).outcome;
  ASSERT_TRUE(outcome.success) << outcome.summary();
  ASSERT_EQ(server.requests(), 2u);
  EXPECT_EQ(body_of(server, 0).at("messages").at(1).at("content").as_array().size(), 5u);
  const std::string text = input_block(R"({"first":"<image 1>","second":"<image 2>"})");
  EXPECT_EQ(body_of(server, 1).at("messages"),
            openai_messages(c.system_prompt(), json::array{text_part(text),
                                                           text_part("<image 1>"), openai_image("image/jpeg", jpeg_bytes),
                                                           text_part("<image 2>"), openai_image("image/png", png_bytes)}));
}

// A repaired input that refers to a media the input does not have is rejected like any bad
// repair, the issue at the field's path: without tries left the call fails in the repair phase and
// the output is never asked for; with one, the model's corrected reference is accepted.
TEST_F(MediaRepair, AReferenceToMediaTheInputDoesNotHaveIsAnIssueOfTheRepairAtItsPath) {
  for (const covenant::provider p : {covenant::provider::openai, covenant::provider::anthropic}) {
    SCOPED_TRACE(p == covenant::provider::openai ? "openai" : "anthropic");
    const std::string repaired = R"({"note": "fixed", "receipt": "<image 3>"})";
    loopback_server server([&](const received_request&, std::size_t i) {
      if (p == covenant::provider::openai) return i == 0 ? whole(covenant_test::openai_completion(repaired)) : openai_answer();
      return i == 0 ? whole(covenant_test::anthropic_message(repaired)) : anthropic_answer();
    });
    covenant::http_engine engine(p == covenant::provider::openai ? openai_options(server) : anthropic_options(server));
    covenant::contract_options o = no_retries();
    o.pre_remedy = true;
    const covenant::contract<Picky<OneImage>> c{engine, o};
    const auto [value, outcome] = c.run(OneImage{"broken", covenant::image::bytes(png_bytes)});
    EXPECT_FALSE(outcome.success);
    EXPECT_EQ(outcome.failed_stage, covenant::stage::pre_remedy);
    ASSERT_EQ(outcome.issues.size(), 1u);
    EXPECT_EQ(outcome.issues[0].path.to_string(), "receipt");
    EXPECT_EQ(outcome.issues[0].code, covenant::issue_code::constraint_violation);
    EXPECT_EQ(outcome.issues[0].expected, "image");
    EXPECT_EQ(outcome.issues[0].actual, "<image 3>");
    EXPECT_EQ(outcome.issues[0].message, "refers to <image 3>, which the input does not have");
    EXPECT_EQ(server.requests(), 1u);  // the repair request only
    EXPECT_EQ(value.answer, "");       // forward saw the failure
  }
  // one more try: the issue goes back to the model, whose next repair names the image it has
  loopback_server server([&](const received_request&, std::size_t i) {
    if (i == 0) return whole(covenant_test::openai_completion(R"({"note": "fixed", "receipt": "<image 3>"})"));
    if (i == 1) return whole(covenant_test::openai_completion(R"({"note": "fixed", "receipt": "<image 1>"})"));
    return openai_answer();
  });
  covenant::http_engine engine(openai_options(server));
  covenant::contract_options o = covenant::testing::instant({.tries = 1});
  o.pre_remedy = true;
  const covenant::contract<Picky<OneImage>> c{engine, o};
  const auto outcome = c.run(OneImage{"broken", covenant::image::bytes(png_bytes)}).outcome;
  ASSERT_TRUE(outcome.success) << outcome.summary();
  ASSERT_EQ(server.requests(), 3u);
  EXPECT_THAT(server.request(1).body, HasSubstr("refers to <image 3>, which the input does not have"));
  // the output request sends the input's own image again
  const json::value output_content = body_of(server, 2).at("messages").at(1).at("content");
  EXPECT_EQ(output_content.as_array().at(2), openai_image("image/png", png_bytes));
}

// ---------------------------------------------------------------------------------------------
// No request carries a media part that has neither bytes nor a URL (OpenAI "data:;base64,", an
// empty file_data; Anthropic a base64 source with no data).

// With pre_remedy, an input whose file cannot be read is not sent for repair: no model can fix a
// file, and the broken media must never go out as an empty part.
TEST_F(MediaRepair, AnUnreadableFileIsNeverSentEvenWithPreRemedy) {
  const std::string repaired = R"({"note": "fixed", "receipt": "<image 1>"})";
  loopback_server server([&](const received_request&, std::size_t i) {
    return i == 0 ? whole(covenant_test::openai_completion(repaired)) : openai_answer();
  });
  covenant::http_engine engine(openai_options(server));
  covenant::contract_options o = no_retries();
  o.pre_remedy = true;
  const covenant::contract<Picky<OneImage>> c{engine, o};
  const auto outcome = c.run(OneImage{"broken", covenant::image::file(path("missing.png"))}).outcome;
  EXPECT_FALSE(outcome.success);
  for (std::size_t i = 0; i < server.requests(); ++i) EXPECT_THAT(parts_without_data(body_of(server, i)), IsEmpty());
}

// A repaired input is checked against the provider's limits too: a PDF URL the model writes for
// OpenAI (which takes PDF data only) fails the repair instead of going out as an empty file part.
TEST_F(MediaRepair, ARepairedInputIsCheckedAgainstTheProvidersLimits) {
  const std::string repaired = R"({"note": "fixed", "doc": "https://x.test/a.pdf"})";
  loopback_server server([&](const received_request&, std::size_t i) {
    return i == 0 ? whole(covenant_test::openai_completion(repaired)) : openai_answer();
  });
  covenant::http_engine engine(openai_options(server));
  covenant::contract_options o = no_retries();
  o.pre_remedy = true;
  const covenant::contract<Picky<NotedDoc>> c{engine, o};
  const auto outcome = c.run(NotedDoc{"broken", covenant::pdf::bytes(pdf_bytes)}).outcome;
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(server.requests(), 1u);  // the repair request only
  for (std::size_t i = 0; i < server.requests(); ++i) EXPECT_THAT(parts_without_data(body_of(server, i)), IsEmpty());
}

// An input that holds a reference itself (covenant::image::parse("<image 1>")) names no media: it
// is an input-validation issue, and nothing is sent.
TEST_F(MediaContract, AReferenceInTheCallersInputIsRefusedBeforeAnyRequest) {
  for (const covenant::provider p : {covenant::provider::openai, covenant::provider::anthropic}) {
    SCOPED_TRACE(p == covenant::provider::openai ? "openai" : "anthropic");
    loopback_server server([&](const received_request&, std::size_t) {
      return p == covenant::provider::openai ? openai_answer() : anthropic_answer();
    });
    covenant::http_engine engine(p == covenant::provider::openai ? openai_options(server) : anthropic_options(server));
    const covenant::contract<Look<OneImage>> c{engine, no_retries()};
    const auto outcome = c.run(OneImage{"ref", covenant::image::parse("<image 1>")}).outcome;
    EXPECT_FALSE(outcome.success);
    EXPECT_EQ(server.requests(), 0u);
  }
}

TEST_F(MediaContract, PartsWithoutDataAreFound) {  // the helper of the tests above
  const json::object openai{{"messages", openai_messages("s", json::array{text_part("t"), openai_image_url("data:;base64,"),
                                                                         openai_image("image/png", png_bytes)})}};
  EXPECT_THAT(parts_without_data(openai), ElementsAre("data:;base64,"));
  json::object file = openai_file("a.pdf", "");
  const json::object openai_pdf{{"messages", openai_messages("s", json::array{text_part("t"), file})}};
  EXPECT_THAT(parts_without_data(openai_pdf), ElementsAre("data:application/pdf;base64,"));
  const json::object anthropic{{"messages", anthropic_messages(json::array{anthropic_image("", ""),
                                                                           anthropic_image_url("https://x.test/a.png")})}};
  EXPECT_THAT(parts_without_data(anthropic), ElementsAre("base64 source of no data"));
  const json::object audio{{"messages", openai_messages("s", json::array{openai_audio("", "wav")})}};
  EXPECT_THAT(parts_without_data(audio), ElementsAre("input_audio of no data"));
}

}  // namespace
