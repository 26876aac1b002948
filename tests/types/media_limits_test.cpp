// validate(input, limits) (covenant/types/media.hpp): a media input against what each provider
// takes as its engine states it (OpenAI Chat Completions, Anthropic Messages): one issue per
// unreadable field, audio, image types, PDF URLs, sizes as sent, counts, and check_media's counts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "media_inputs.hpp"

namespace {

using namespace media_test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

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

}  // namespace
