// Audit lines of calls with media inputs: the attempt line has each media's digest and never its
// bytes; a URL is kept as its URL and the hash of its text.
#include <covenant/telemetry/audit_log.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "media_run_tasks.hpp"

namespace {

using namespace media_run_test;
using ::testing::HasSubstr;
using ::testing::Not;

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
