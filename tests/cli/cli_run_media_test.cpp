// `covenant run` with media inputs (--input-type, --media-root) against a loopback server: each
// record's request carries its own image and the results never its bytes, a record whose file does
// not exist fails at input validation while the others succeed, and the usage errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "cli_fixture.hpp"
#include "media_run_tasks.hpp"

namespace {

using namespace media_run_test;
using ::testing::HasSubstr;
using ::testing::Not;

const char* const run_schema = R"(class Input {
  id string
  photo image
}
class Output {
  label string
}
)";

// The record a request is about (its first text part) and the media parts after it.
struct seen_request {
  json::value record;
  json::array media;  // the parts after the record's text
};

seen_request seen(const std::string& body) {
  seen_request s;
  const json::value content = user_content(body, false);
  if (!content.is_array()) {
    ADD_FAILURE() << "the user message has no media parts: " << content;
    return s;
  }
  s.record = shown_record(content);
  const json::array& parts = content.as_array();
  for (std::size_t i = 1; i < parts.size(); ++i) s.media.push_back(parts[i]);
  return s;
}

// Answers {"label": "<the record's id>"}.
response_plan label_by_id(const received_request& r) {
  const json::value content = json::parse(r.body).at("messages").at(1).at("content");
  const json::value& text = content.is_array() ? content.at(0).at("text") : content;
  const std::string user(text.as_string());
  const auto b = user.find('\n');
  const auto e = user.rfind("\n</input>");
  const json::value rec = json::parse(user.substr(b + 1, e - b - 1));
  return covenant_test::whole_reply(
      covenant_test::openai_completion(json::serialize(json::object{{"label", rec.at("id")}})));
}

class MediaRunCli : public covenant_test::cli_fixture {
 protected:
  MediaRunCli() : cli_fixture("covenant_media_run_test") {}
  void SetUp() override {
    cli_fixture::SetUp();
    write("media.baml", run_schema);
  }

  // Writes `content` to `name`, making its folder.
  std::string put(const std::string& name, const std::string& content) const {
    std::filesystem::create_directories((dir_ / name).parent_path());
    return write(name, content);
  }

  covenant_test::run_result run(const loopback_server& server, std::vector<std::string> args) const {
    return run_tool(std::move(args), {"COVENANT_BASE_URL=" + server.base_url()});
  }

  // Each request's record id -> the request (fails on a record asked for twice).
  static std::map<std::string, seen_request> by_id(const loopback_server& server) {
    std::map<std::string, seen_request> out;
    for (std::size_t i = 0; i < server.requests(); ++i) {
      seen_request s = seen(server.request(i).body);
      const std::string id(s.record.at("id").as_string());
      EXPECT_TRUE(out.emplace(id, std::move(s)).second) << id << " asked twice";
    }
    return out;
  }

  // The output never holds an image's base64 nor its bytes.
  static void expect_no_media_in(const std::string& out, const std::map<std::string, std::string>& images) {
    EXPECT_FALSE(out.empty());
    for (const auto& [id, bytes] : images) {
      EXPECT_EQ(out.find(b64(bytes)), std::string::npos) << id;
      EXPECT_EQ(out.find(b64(bytes).substr(8, 24)), std::string::npos) << id;  // nor part of it
      EXPECT_EQ(out.find(bytes), std::string::npos) << id;
      EXPECT_EQ(out.find(bytes.substr(png_signature.size() + 8)), std::string::npos) << id;
    }
    EXPECT_THAT(out, Not(HasSubstr("base64")));
    EXPECT_THAT(out, Not(HasSubstr("\x89PNG")));
  }
};

TEST_F(MediaRunCli, EachRecordsRequestCarriesItsOwnImageAndTheResultsNeverItsBytes) {
  loopback_server server([](const received_request& r, std::size_t) { return label_by_id(r); });
  const std::map<std::string, std::string> images = {{"r0", png(10)}, {"r1", png(11)}, {"r2", png(12)}};
  for (const auto& [id, bytes] : images) put("img/" + id + ".png", bytes);
  const std::string input = put("in.jsonl", R"({"id": "r0", "photo": "img/r0.png"})" "\n"
                                            R"({"id": "r1", "photo": "img/r1.png"})" "\n"
                                            R"({"id": "r2", "photo": "img/r2.png"})" "\n");
  const std::string output = path("out.jsonl");
  const auto r = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--input-type", "Input",
                              "--prompt", "Label the photo.", "--output", output, "--quiet", input});
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(server.requests(), 3u);
  const auto asked = by_id(server);
  ASSERT_EQ(asked.size(), 3u);
  for (const auto& [id, bytes] : images) {
    SCOPED_TRACE(id);
    const auto it = asked.find(id);
    ASSERT_NE(it, asked.end());
    EXPECT_EQ(it->second.record, (json::object{{"id", id}, {"photo", "<image 1>"}}));
    EXPECT_EQ(it->second.media, (json::array{text_part("<image 1>"), openai_image("image/png", bytes)}));
  }
  const std::string out = read(output);
  const auto lines = json_lines(out);
  ASSERT_EQ(lines.size(), 3u);
  std::set<std::string> ids;
  for (const auto& line : lines) {
    EXPECT_EQ(line.at("ok"), true) << line;
    ids.insert(std::string(line.at("id").as_string()));
    EXPECT_EQ(line.at("value").at("label"), line.at("id"));
  }
  EXPECT_EQ(ids, (std::set<std::string>{"r0", "r1", "r2"}));
  expect_no_media_in(out, images);
  EXPECT_EQ(r.out, "");  // everything went to the file
}

TEST_F(MediaRunCli, ARecordWhoseFileDoesNotExistFailsAtInputValidationAndTheOthersSucceed) {
  loopback_server server([](const received_request& r, std::size_t) { return label_by_id(r); });
  const std::map<std::string, std::string> images = {{"r0", png(20)}, {"r2", png(22)}};
  for (const auto& [id, bytes] : images) put("img/" + id + ".png", bytes);
  const std::string input = put("in.jsonl", R"({"id": "r0", "photo": "img/r0.png"})" "\n"
                                            R"({"id": "r1", "photo": "img/missing.png"})" "\n"
                                            R"({"id": "r2", "photo": "img/r2.png"})" "\n");
  const std::string output = path("out.jsonl");
  const auto r = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--input-type", "Input",
                              "--prompt", "Label the photo.", "--output", output, input});
  EXPECT_EQ(r.status, 1) << r.err;  // a record failed
  EXPECT_THAT(r.err, HasSubstr("3 records (2 ok, 1 failed)"));
  EXPECT_EQ(server.requests(), 2u);  // none for the missing file
  const auto asked = by_id(server);
  EXPECT_EQ(asked.count("r1"), 0u);
  for (const auto& [id, bytes] : images) {
    ASSERT_EQ(asked.count(id), 1u) << id;
    EXPECT_EQ(asked.at(id).media, (json::array{text_part("<image 1>"), openai_image("image/png", bytes)})) << id;
  }
  const std::string out = read(output);
  const auto lines = json_lines(out);
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& line : lines) {
    const std::string id(line.at("id").as_string());
    SCOPED_TRACE(id);
    if (id != "r1") {
      EXPECT_EQ(line.at("ok"), true);
      EXPECT_EQ(line.at("value").at("label"), json::value(id));
      continue;
    }
    EXPECT_EQ(line.at("ok"), false);
    EXPECT_EQ(line.at("failed_stage"), "input_validation");
    EXPECT_EQ(line.at("attempts"), 0);
    EXPECT_TRUE(line.at("value").is_null());
    ASSERT_EQ(line.at("issues").as_array().size(), 1u);
    const json::value& issue = line.at("issues").at(0);
    EXPECT_EQ(issue.at("path"), "photo");
    EXPECT_THAT(std::string(issue.at("message").as_string()), HasSubstr("cannot read the file " + path("img/missing.png")));
  }
  expect_no_media_in(out, images);
}

TEST_F(MediaRunCli, MediaRootNamesTheFolderRelativePathsAreReadFrom) {
  loopback_server server([](const received_request& r, std::size_t) { return label_by_id(r); });
  const std::map<std::string, std::string> images = {{"r0", png(30)}, {"r1", png(31)}, {"r2", png(32)}};
  for (const auto& [id, bytes] : images) {
    put("media/" + id + ".png", bytes);
    put("data/" + id + ".png", png(40 + static_cast<int>(id[1] - '0')));  // beside the input: not read
  }
  const std::string input = put("data/in.jsonl", R"({"id": "r0", "photo": "r0.png"})" "\n"
                                                 R"({"id": "r1", "photo": "r1.png"})" "\n"
                                                 R"({"id": "r2", "photo": "r2.png"})" "\n");
  const std::string output = path("out.jsonl");
  const auto r = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--input-type", "Input",
                              "--media-root", path("media"), "--prompt", "Label the photo.", "--output", output,
                              "--quiet", input});
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(server.requests(), 3u);
  const auto asked = by_id(server);
  for (const auto& [id, bytes] : images) {
    ASSERT_EQ(asked.count(id), 1u) << id;
    EXPECT_EQ(asked.at(id).media, (json::array{text_part("<image 1>"), openai_image("image/png", bytes)})) << id;
  }
  const std::string out = read(output);
  EXPECT_EQ(json_lines(out).size(), 3u);
  expect_no_media_in(out, images);

  // without --media-root the same records are read beside the input file
  const auto beside = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--input-type", "Input",
                                   "--prompt", "Label the photo.", "--quiet", input});
  EXPECT_EQ(beside.status, 0) << beside.err;
  ASSERT_EQ(server.requests(), 6u);
  for (std::size_t i = 3; i < 6; ++i) {
    const seen_request s = seen(server.request(i).body);
    const std::string id(s.record.at("id").as_string());
    EXPECT_EQ(s.media, (json::array{text_part("<image 1>"), openai_image("image/png", png(40 + (id[1] - '0')))})) << id;
  }
}

TEST_F(MediaRunCli, MediaRootWithoutInputTypeIsAUsageError) {
  loopback_server server([](const received_request& r, std::size_t) { return label_by_id(r); });
  put("media/r0.png", png(50));
  const std::string input = put("in.jsonl", R"({"id": "r0", "photo": "r0.png"})" "\n");
  const auto r = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--media-root", path("media"),
                              "--prompt", "Label the photo.", input});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("--media-root needs --input-type"));
  EXPECT_EQ(r.out, "");
  // an --input-type that names no type of the file is refused too
  const auto unknown = run(server, {"run", "--schema", path("media.baml"), "--type", "Output", "--input-type", "Nope",
                                    "--prompt", "Label the photo.", input});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.err, HasSubstr("Nope"));
  EXPECT_EQ(server.requests(), 0u);
}

}  // namespace
