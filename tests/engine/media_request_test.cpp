// The exact request bodies a contract sends for media inputs through a loopback server, in both
// dialects (OpenAI Chat Completions, Anthropic Messages): images as bytes and URLs, several images,
// PDFs and audio, an absent optional media, OpenAI's image detail, and a retry that sends the
// media again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "media_inputs.hpp"

namespace {

using namespace media_test;

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

}  // namespace
