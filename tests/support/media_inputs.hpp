// What the tests of media inputs of typed contracts share (tests/types/media_*_test.cpp,
// tests/engine/media_request_test.cpp, tests/contract/media_*_test.cpp): input types with media
// fields and contracts that look at them, bytes of each format, what a contract makes of an input,
// engines against the loopback server, and the fixture of each family (a scratch directory for
// media files per test).
#pragma once

#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/testing/testing.hpp>
#include <covenant/types/encode.hpp>
#include <covenant/types/media.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "anthropic_replies.hpp"
#include "loopback_engine.hpp"
#include "loopback_server.hpp"
#include "media_fixture.hpp"
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

// ---------------------------------------------------------------------------------------------
// names, bytes and helpers

namespace fs = std::filesystem;
namespace json = boost::json;
using covenant::media;
using covenant::media_kind;
using covenant::output_mode;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;
using covenant_test::qa::Answer;
using namespace covenant_test::media_parts;

inline const std::string answer_json = R"({"answer": "Paris", "confidence": 0.9})";

// ---------------------------------------------------------------------------------------------
// bytes of each format (enough for their magic numbers)

inline const std::string png_bytes = std::string("\x89PNG\r\n\x1a\n", 8) + std::string("\0\0\0\x0dIHDR\0\0\0\x01", 12);
inline const std::string jpeg_bytes = std::string("\xff\xd8\xff\xe0\0\x10", 6) + "JFIF" + std::string("\0\x01\x01", 3);
inline const std::string gif_bytes = "GIF89a" + std::string("\x01\0\x01\0", 4);
inline const std::string pdf_bytes = "%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n%%EOF\n";
inline const std::string pdf2_bytes = "%PDF-1.7\n%%EOF\n";
inline const std::string wav_bytes = "RIFF" + std::string("\x24\0\0\0", 4) + "WAVEfmt " + std::string("\x10\0\0\0", 4);
inline const std::string mp3_bytes = "ID3" + std::string("\x04\0\0\0\0\0\x21", 7);
inline const std::string flac_bytes = "fLaC" + std::string("\0\0\0\x22", 4);
inline const std::string bmp_bytes = "BM" + std::string("\x3a\0\0\0\0\0\0\0", 8);

// A PNG of exactly `n` bytes (the signature, then filler).
inline std::string png_of_size(std::size_t n) {
  std::string s = png_bytes;
  s.resize(n, 'x');
  return s;
}

// What the contract does to the JSON of an input: '<' written as \u003c, inside <input>...</input>.
inline std::string input_block(std::string_view input_json) {
  std::string out = "<input>\n";
  for (const char c : input_json) {
    if (c == '<') out += "\\u003c";
    else out.push_back(c);
  }
  out += "\n</input>";
  return out;
}

// The JSON between "<input>\n" and "\n</input>" of a rendered input, parsed.
inline json::value input_json_of(std::string_view text) {
  const std::string_view head = "<input>\n";
  const std::string_view tail = "\n</input>";
  EXPECT_TRUE(text.starts_with(head)) << text;
  EXPECT_TRUE(text.ends_with(tail)) << text;
  if (!text.starts_with(head) || !text.ends_with(tail)) return nullptr;
  return json::parse(text.substr(head.size(), text.size() - head.size() - tail.size()));
}

// The URL of a media. (media_of<K>::url, the factory, hides media::url(), the accessor: on a
// covenant::image `m.url()` does not compile, so the tests ask through the base.)
inline const std::string& url_of(const media& m) { return m.url(); }

inline std::vector<std::string> shown(const covenant::issue_list& issues) {
  std::vector<std::string> out;
  for (const covenant::issue& i : issues) out.push_back(i.to_string());
  return out;
}

// ---------------------------------------------------------------------------------------------
// engines

inline response_plan whole(std::string body) { return covenant_test::whole_reply(std::move(body)); }

inline covenant::http_engine_options openai_options(const loopback_server& s) {
  return covenant_test::loopback_engine_options(s, covenant::provider::openai, "gpt-test");
}
inline covenant::http_engine_options anthropic_options(const loopback_server& s) {
  return covenant_test::loopback_engine_options(s, covenant::provider::anthropic, "claude-test");
}

// An engine that is never called: only its accepted_media() is asked for.
inline std::unique_ptr<covenant::http_engine> offline_engine(covenant::provider p) {
  covenant::http_engine_options o;
  o.provider = p;
  o.base_url = "http://127.0.0.1:1";
  o.api_key = "sk-test";
  o.model = "m";
  o.retry.tries = 0;
  return std::make_unique<covenant::http_engine>(o);
}

// The reply that ends a contract's output phase in each dialect (Anthropic: the forced tool).
inline response_plan openai_answer() { return whole(covenant_test::openai_completion(answer_json)); }
inline response_plan anthropic_answer() { return whole(covenant_test::anthropic_tool_message("Answer", answer_json)); }

inline covenant::contract_options no_retries() { return covenant::testing::instant({.tries = 0}); }

inline json::object body_of(const loopback_server& s, std::size_t i) { return json::parse(s.request(i).body).as_object(); }

// The OpenAI request's messages: the system prompt, then the user message with `content`.
inline json::array openai_messages(const std::string& system, json::value content) {
  return {json::object{{"role", "system"}, {"content", system}},
          json::object{{"role", "user"}, {"content", std::move(content)}}};
}
// The Anthropic request's messages (the system prompt goes apart): one user turn.
inline json::array anthropic_messages(json::value content) {
  return {json::object{{"role", "user"}, {"content", std::move(content)}}};
}

// The media parts of a request body (either dialect) that carry neither bytes nor a URL.
inline std::vector<std::string> parts_without_data(const json::object& body) {
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
// a temporary directory for the media files of one test, one fixture per family

class MediaFiles : public covenant_test::media_files {
 protected:
  MediaFiles() : media_files("covenant_media_test_") {}
};

class MediaValue : public MediaFiles {};
class MediaSchema : public MediaFiles {};
class MediaLimits : public MediaFiles {};
class MediaRequest : public MediaFiles {};
class MediaContract : public MediaFiles {};
class MediaRepair : public MediaFiles {};

}  // namespace media_test
