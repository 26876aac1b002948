// Media inputs of a dynamic contract refused before any request: a missing file, a file that is no
// media of its kind, audio for Anthropic, an image over Anthropic's size limit and a PDF URL for
// OpenAI, each an issue at its field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "media_run_tasks.hpp"

namespace {

using namespace media_run_test;
using ::testing::HasSubstr;

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

}  // namespace
