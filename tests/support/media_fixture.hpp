// What the media tests share (typed inputs and runtime schemas alike): a scratch directory per
// test for media files, base64 computed apart from the library, and the content parts each API
// takes for a media (OpenAI Chat Completions, Anthropic Messages), to compare request bodies with.
#pragma once

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace covenant_test {

/// A scratch directory for the media files of one test, named after `name`, the process, the
/// test suite and the test; removed after the test.
class media_files : public ::testing::Test {
 protected:
  explicit media_files(std::string name) : name_(std::move(name)) {}

  void SetUp() override {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (name_ + std::to_string(::getpid()) + "_" + t->test_suite_name() + "_" + t->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  // Writes `bytes` to `name` (folders made as needed); returns the file's path.
  std::string write(const std::string& name, std::string_view bytes) const {
    const std::filesystem::path p = dir_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p.string();
  }
  [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }
  [[nodiscard]] std::string dir() const { return dir_.string(); }

  std::filesystem::path dir_;

 private:
  std::string name_;
};

namespace media_parts {

// Base64 computed apart from the library (OpenSSL's EVP_EncodeBlock: standard alphabet, padded).
inline std::string b64(std::string_view bytes) {
  std::vector<unsigned char> buf((bytes.size() + 2) / 3 * 4 + 1);
  const int n = EVP_EncodeBlock(buf.data(), reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  return std::string(reinterpret_cast<const char*>(buf.data()), static_cast<std::size_t>(n));
}

// ---------------------------------------------------------------------------------------------
// content parts as each API takes them

inline boost::json::object text_part(std::string_view text) { return {{"type", "text"}, {"text", text}}; }

inline boost::json::object openai_image_url(std::string_view url, std::string_view detail = "auto") {
  boost::json::object image{{"url", url}};
  if (!detail.empty()) image["detail"] = detail;
  return {{"type", "image_url"}, {"image_url", std::move(image)}};
}
inline boost::json::object openai_image(std::string_view type, std::string_view bytes, std::string_view detail = "auto") {
  return openai_image_url("data:" + std::string(type) + ";base64," + b64(bytes), detail);
}
inline boost::json::object openai_file(std::string_view filename, std::string_view bytes) {
  return {{"type", "file"},
          {"file", {{"filename", filename}, {"file_data", "data:application/pdf;base64," + b64(bytes)}}}};
}
inline boost::json::object openai_audio(std::string_view bytes, std::string_view format) {
  return {{"type", "input_audio"}, {"input_audio", {{"data", b64(bytes)}, {"format", format}}}};
}

inline boost::json::object anthropic_source(std::string_view type, std::string_view bytes) {
  return {{"type", "base64"}, {"media_type", type}, {"data", b64(bytes)}};
}
inline boost::json::object anthropic_image(std::string_view type, std::string_view bytes) {
  return {{"type", "image"}, {"source", anthropic_source(type, bytes)}};
}
inline boost::json::object anthropic_image_url(std::string_view url) {
  return {{"type", "image"}, {"source", {{"type", "url"}, {"url", url}}}};
}
inline boost::json::object anthropic_document(std::string_view bytes) {
  return {{"type", "document"}, {"source", anthropic_source("application/pdf", bytes)}};
}
inline boost::json::object anthropic_document_url(std::string_view url) {
  return {{"type", "document"}, {"source", {{"type", "url"}, {"url", url}}}};
}

}  // namespace media_parts

}  // namespace covenant_test
