// What the tests of media inputs of runtime schemas share (tests/runtime/media_run_*_test.cpp,
// tests/cli/cli_run_media_test.cpp, tests/engine/media_run_cassette_test.cpp,
// tests/telemetry/media_run_audit_test.cpp): media bytes made at test time, what the requests
// carry, the Scan task of a dynamic contract against the loopback server, the fixture of each
// family (a scratch directory per test) and the Scan input's files.
#pragma once

#include <covenant/engine/http_engine.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/testing/testing.hpp>
#include <covenant/types/media.hpp>
#include <covenant/types/schema.hpp>
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <boost/json.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "anthropic_replies.hpp"
#include "loopback_engine.hpp"
#include "loopback_server.hpp"
#include "media_fixture.hpp"

namespace media_run_test {

namespace fs = std::filesystem;
namespace json = boost::json;
namespace schema = covenant::schema;
using covenant::media_kind;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;
using namespace covenant_test::media_parts;

// ---------------------------------------------------------------------------------------------
// media bytes, made at test time (enough of each format for its magic number)

inline const std::string png_signature("\x89PNG\r\n\x1a\n", 8);

// A PNG whose bytes after the signature are `n` bytes that depend on `seed` (so that two seeds
// give two images of the same size and other bytes), with bytes that are not ASCII.
inline std::string png(int seed, std::size_t n = 48) {
  std::string s = png_signature + std::string("\0\0\0\x0dIHDR", 8);
  for (std::size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(0x80 + ((static_cast<std::size_t>(seed) * 37 + i * 11) % 127)));
  return s;
}
inline std::string jpeg(int seed) {
  std::string s("\xff\xd8\xff\xe0\0\x10JFIF\0", 11);
  for (int i = 0; i < 40; ++i) s.push_back(static_cast<char>(0x90 + (seed * 13 + i * 5) % 100));
  return s;
}
inline std::string pdf(const std::string& text) { return "%PDF-1.4\n1 0 obj\n<< /Title (" + text + ") >>\nendobj\n%%EOF\n"; }
inline const std::string wav_bytes = "RIFF" + std::string("\x24\0\0\0", 4) + "WAVEfmt " + std::string("\x10\0\0\0\x01\0\x01\0", 8);

// Lower-case hex SHA-256 computed apart from the library (OpenSSL's EVP_Digest).
inline std::string sha256_hex(std::string_view bytes) {
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

inline std::string read_all(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// ---------------------------------------------------------------------------------------------
// what the requests carry (the content parts of each API: media_fixture.hpp)

// The content of the user message of a request body (OpenAI: after the system message; Anthropic:
// the first turn, the system prompt going apart).
inline json::value user_content(const std::string& body, bool anthropic) {
  const json::value v = json::parse(body);
  const json::array& messages = v.at("messages").as_array();
  const json::value& m = messages.at(anthropic ? 0 : 1);
  EXPECT_EQ(m.at("role"), "user");
  return m.at("content");
}

// The record shown to the model: the JSON between "<input>\n" and "\n</input>" of the first text part.
inline json::value shown_record(const json::value& content) {
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
inline std::string shown_text(const json::value& content) {
  return std::string(content.as_array().at(0).at("text").as_string());
}

inline std::vector<std::string> issue_paths(const covenant::issue_list& issues) {
  std::vector<std::string> out;
  for (const covenant::issue& i : issues) out.push_back(i.path.to_string());
  return out;
}

// ---------------------------------------------------------------------------------------------
// the task of the contract tests

inline const char* const scan_schema = R"(
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

inline const std::string summary_json = R"({"text": "ok"})";

inline covenant::dynamic_task task_for(const std::string& input_class, const std::string& media_root) {
  const covenant::schema_set types = covenant::schema_set::parse(scan_schema);
  covenant::dynamic_task task;
  task.name = "scan";
  task.prompt = "Summarise the attached media.";
  task.output = types.model("Summary");
  task.input = types.model(input_class);
  task.media_root = media_root;
  return task;
}

inline covenant::contract_options no_retries() { return covenant::testing::instant({.tries = 0}); }

inline response_plan openai_reply() { return covenant_test::whole_reply(covenant_test::openai_completion(summary_json)); }
inline response_plan anthropic_reply() {
  return covenant_test::whole_reply(covenant_test::anthropic_tool_message("Summary", summary_json));
}

inline covenant::http_engine_options options_for(const loopback_server& s, bool anthropic) {
  return anthropic ? covenant_test::loopback_engine_options(s, covenant::provider::anthropic, "claude-test")
                   : covenant_test::loopback_engine_options(s, covenant::provider::openai, "gpt-test");
}

// A scratch directory per test.
class MediaRunFiles : public covenant_test::media_files {
 protected:
  MediaRunFiles() : media_files("covenant_media_run_") {}
};

class MediaRunContract : public MediaRunFiles {};
class MediaRunCassette : public MediaRunFiles {};
class MediaRunAudit : public MediaRunFiles {};

// The field `name` of the class `cls` of a model.
inline const schema::field& field_of(const schema::model& m, std::string_view cls, std::string_view name) {
  const schema::definition* d = m.find(cls);
  if (d == nullptr || d->object() == nullptr) throw std::runtime_error("no class " + std::string(cls));
  for (const schema::field& f : d->object()->fields)
    if (f.name == name) return f;
  throw std::runtime_error("no field " + std::string(name));
}

// The Scan input: a photo and two pages, relative to the media root.
struct scan_files {
  std::string photo = png(1);
  std::string first = pdf("first page");
  std::string second = pdf("second page, longer");
};

}  // namespace media_run_test
