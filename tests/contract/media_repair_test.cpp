// The input-repair phase with media inputs: the repaired input sends the original media again for
// its references, renumbered in its order; a reference to media the input does not have is an
// issue of the repair at its path; and no request carries a media part without data.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "media_inputs.hpp"

namespace {

using namespace media_test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

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
