// The input-repair phase of a dynamic contract with media inputs: the repaired input names the
// original media by reference, a reference to media the input does not have is an issue of the
// repair, a local file the repaired input names is not read, and a missing file is not sent for
// repair.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "media_run_tasks.hpp"

namespace {

using namespace media_run_test;
using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(MediaRunContract, ARepairedInputNamesTheOriginalMediaByReference) {
  const std::string photo = png(8);
  write("photo.png", photo);
  for (const bool anthropic : {false, true}) {
    SCOPED_TRACE(anthropic ? "anthropic" : "openai");
    // first the corrected input (it refers to the photo), then the answer
    const std::string repaired = R"({"photo": "<image 1>", "pages": [], "note": "fixed"})";
    loopback_server server([&](const received_request&, std::size_t i) {
      const std::string& text = i == 0 ? repaired : summary_json;
      return anthropic ? covenant_test::whole_reply(covenant_test::anthropic_message(text))
                       : covenant_test::whole_reply(covenant_test::openai_completion(text));
    });
    covenant::http_engine engine(options_for(server, anthropic));
    covenant::dynamic_task task = task_for("Scan", dir());
    task.pre = [](const json::value& in) {
      const json::value* note = in.as_object().if_contains("note");
      if (note == nullptr || !note->is_string() || note->as_string() != "fixed")
        throw covenant::violation("note", "must be \"fixed\"");
    };
    covenant::contract_options options = no_retries();
    options.pre_remedy = true;
    options.mode = covenant::output_mode::prompt;  // both phases answer in text
    const covenant::dynamic_contract c{engine, task, options};
    const auto [value, o] = c.run(json::value{{"photo", "photo.png"}, {"pages", json::array{}}, {"note", "draft"}});
    ASSERT_TRUE(o.success) << o.summary();
    EXPECT_EQ(value, json::parse(summary_json));
    ASSERT_EQ(server.requests(), 2u);
    const json::object image = anthropic ? anthropic_image("image/png", photo) : openai_image("image/png", photo);
    // the repair request shows the input with its reference and sends the photo
    const json::value repair_body = json::parse(server.request(0).body);
    const json::value& asked = repair_body.at("messages").as_array().back().at("content");
    ASSERT_TRUE(asked.is_array()) << asked;
    EXPECT_THAT(std::string(asked.at(0).at("text").as_string()), HasSubstr(R"("photo":"\u003cimage 1>")"));
    EXPECT_EQ(asked.at(1), text_part("<image 1>"));
    EXPECT_EQ(asked.at(2), image);
    // the output request shows the repaired input and sends the original photo again
    const json::value content = user_content(server.request(1).body, anthropic);
    EXPECT_EQ(shown_record(content), json::parse(R"({"photo": "<image 1>", "pages": [], "note": "fixed"})"));
    EXPECT_EQ(content, (json::array{content.at(0), text_part("<image 1>"), image}));
  }
}

TEST_F(MediaRunContract, ARepairedInputReferringToMediaTheInputDoesNotHaveIsAnIssueOfTheRepair) {
  write("photo.png", png(9));
  loopback_server server([](const received_request&, std::size_t i) {
    return covenant_test::whole_reply(covenant_test::openai_completion(
        i == 0 ? R"({"photo": "<image 2>", "pages": [], "note": "fixed"})" : summary_json));
  });
  covenant::http_engine engine(options_for(server, false));
  covenant::dynamic_task task = task_for("Scan", dir());
  task.pre = [](const json::value& in) {
    if (in.at("note") != "fixed") throw covenant::violation("note", "must be \"fixed\"");
  };
  covenant::contract_options options = no_retries();
  options.pre_remedy = true;
  options.mode = covenant::output_mode::prompt;
  const covenant::dynamic_contract c{engine, task, options};
  const auto o = c.run(json::value{{"photo", "photo.png"}, {"pages", json::array{}}, {"note", "draft"}}).outcome;
  EXPECT_FALSE(o.success);
  EXPECT_EQ(o.failed_stage, covenant::stage::pre_remedy);  // the repair was rejected: no tries left
  ASSERT_EQ(o.issues.size(), 1u) << o.summary();
  EXPECT_EQ(o.issues[0].path.to_string(), "photo");
  EXPECT_EQ(o.issues[0].message, "refers to <image 2>, which the input does not have");
  EXPECT_EQ(server.requests(), 1u);  // the repair only: the output was never asked for
}

// The Scan task whose pre() asks for the note "fixed", with the input repaired by the model; both
// phases answer in text.
covenant::dynamic_task repair_task(const std::string& media_root, int* pre_calls = nullptr) {
  covenant::dynamic_task task = task_for("Scan", media_root);
  task.pre = [pre_calls](const json::value& in) {
    if (pre_calls != nullptr) ++*pre_calls;
    const json::value* note = in.as_object().if_contains("note");
    if (note == nullptr || !note->is_string() || note->as_string() != "fixed")
      throw covenant::violation("note", "must be \"fixed\"");
  };
  return task;
}

covenant::contract_options repair_options() {
  covenant::contract_options options = no_retries();
  options.pre_remedy = true;
  options.mode = covenant::output_mode::prompt;
  return options;
}

response_plan text_reply(const std::string& text, bool anthropic) {
  return anthropic ? covenant_test::whole_reply(covenant_test::anthropic_message(text))
                   : covenant_test::whole_reply(covenant_test::openai_completion(text));
}

TEST_F(MediaRunContract, ARepairedInputThatNamesALocalFileIsNotRead) {
  const std::string photo = png(13);
  const std::string other = png(14);  // same size, other bytes
  ASSERT_EQ(other.size(), photo.size());
  write("photo.png", photo);
  const std::string other_path = write("elsewhere/other.png", other);
  ASSERT_TRUE(fs::path(other_path).is_absolute()) << other_path;
  ASSERT_TRUE(fs::exists(other_path));
  ASSERT_NE(b64(photo), b64(other));
  for (const bool anthropic : {false, true}) {
    SCOPED_TRACE(anthropic ? "anthropic" : "openai");
    // the model's repair names the other file by its absolute path; then (never asked) the answer
    const std::string repaired =
        json::serialize(json::object{{"photo", other_path}, {"pages", json::array{}}, {"note", "fixed"}});
    loopback_server server([&](const received_request&, std::size_t i) {
      return text_reply(i == 0 ? repaired : summary_json, anthropic);
    });
    covenant::http_engine engine(options_for(server, anthropic));
    const covenant::dynamic_contract c{engine, repair_task(dir()), repair_options()};
    const auto [value, o] = c.run(json::value{{"photo", "photo.png"}, {"pages", json::array{}}, {"note", "draft"}});
    EXPECT_FALSE(o.success);
    EXPECT_TRUE(value.is_null());
    EXPECT_EQ(o.failed_stage, covenant::stage::pre_remedy);  // the repair was rejected: no tries left
    ASSERT_EQ(o.issues.size(), 1u) << o.summary();
    EXPECT_EQ(o.issues[0].path.to_string(), "photo");
    EXPECT_EQ(o.issues[0].code, covenant::issue_code::constraint_violation);
    EXPECT_THAT(o.issues[0].message, HasSubstr("is not an http(s) URL, a data URL or a reference such as \"<image 1>\""));
    // the repair only: the output was never asked for
    ASSERT_EQ(server.requests(), 1u);
    // the repair request sent the input's own photo; no request carries the other file, whole or in part
    EXPECT_THAT(server.request(0).body, HasSubstr(b64(photo)));
    for (std::size_t i = 0; i < server.requests(); ++i) {
      EXPECT_THAT(server.request(i).body, Not(HasSubstr(b64(other)))) << i;
      EXPECT_THAT(server.request(i).body, Not(HasSubstr(b64(other).substr(8, 24)))) << i;
    }
    // nor does the outcome: its attempts hold the input's photo only
    for (const auto& a : o.attempts)
      for (const covenant::media& m : a.media) EXPECT_NE(m.data(), other);
  }
}

TEST_F(MediaRunContract, AMissingFileIsNotSentForRepair) {
  write("photo.png", png(15));
  for (const bool anthropic : {false, true}) {
    SCOPED_TRACE(anthropic ? "anthropic" : "openai");
    // were the model asked, it would repair the input (to another missing file, then answer)
    loopback_server server([&](const received_request&, std::size_t i) {
      return text_reply(i == 0 ? R"({"photo": "<image 1>", "pages": [], "note": "fixed"})" : summary_json, anthropic);
    });
    covenant::http_engine engine(options_for(server, anthropic));
    int pre_calls = 0;
    const covenant::dynamic_contract c{engine, repair_task(dir(), &pre_calls), repair_options()};
    // the note would fail pre(), which the model could repair; the missing file it could not
    const auto [value, o] = c.run(json::value{{"photo", "missing.png"}, {"pages", json::array{}}, {"note", "draft"}});
    EXPECT_FALSE(o.success);
    EXPECT_TRUE(value.is_null());
    EXPECT_EQ(o.failed_stage, covenant::stage::input_validation);
    ASSERT_EQ(o.issues.size(), 1u) << o.summary();
    EXPECT_EQ(o.issues[0].path.to_string(), "photo");
    EXPECT_THAT(o.issues[0].message, HasSubstr("cannot read the file " + path("missing.png")));
    EXPECT_EQ(o.input_issues, o.issues);
    EXPECT_TRUE(o.attempts.empty());
    EXPECT_EQ(pre_calls, 0);  // pre() runs on an input whose media were read
    EXPECT_EQ(server.requests(), 0u);

    // a file that is read but is no image (a PDF named .png) is no repair either
    write("not_a_picture.png", pdf("not a picture"));
    const auto wrong = c.run(json::value{{"photo", "not_a_picture.png"}, {"pages", json::array{}}, {"note", "draft"}});
    EXPECT_EQ(wrong.outcome.failed_stage, covenant::stage::input_validation);
    EXPECT_EQ(issue_paths(wrong.outcome.issues), (std::vector<std::string>{"photo"})) << wrong.outcome.summary();
    EXPECT_TRUE(wrong.outcome.attempts.empty());
    EXPECT_EQ(pre_calls, 0);
    EXPECT_EQ(server.requests(), 0u);

    // with the photo there, the same note is repaired by the model (the control)
    const auto repaired = c.run(json::value{{"photo", "photo.png"}, {"pages", json::array{}}, {"note", "draft"}});
    EXPECT_TRUE(repaired.outcome.success) << repaired.outcome.summary();
    EXPECT_EQ(server.requests(), 2u);
  }
}

}  // namespace
