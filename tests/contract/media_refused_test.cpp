// Media inputs a contract refuses before any request: unreadable files (every one an issue at its
// path), an image over the provider's limit, what holds everywhere when the engine states no
// limits, and a reference in the caller's own input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "media_inputs.hpp"

namespace {

using namespace media_test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

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

}  // namespace
