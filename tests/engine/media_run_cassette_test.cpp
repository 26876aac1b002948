// Cassettes of calls with media inputs: a recording keeps each media's digest and never its bytes,
// and a replay matches on the digest.
#include <covenant/engine/cassette.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "media_run_tasks.hpp"

namespace {

using namespace media_run_test;
using ::testing::HasSubstr;
using ::testing::Not;

TEST_F(MediaRunCassette, ARecordingKeepsTheMediaDigestAndReplayMatchesOnIt) {
  const std::string photo = png(60);
  std::string other = photo;
  other[other.size() - 1] = static_cast<char>(other.back() ^ 0x01);  // same size, other bytes
  ASSERT_EQ(other.size(), photo.size());
  write("photo.png", photo);
  loopback_server server([](const received_request&, std::size_t) { return openai_reply(); });
  covenant::http_engine http(options_for(server, false));
  const std::string tape = path("tape.jsonl");
  const covenant::dynamic_task task = task_for("Shot", dir());
  const json::value input = {{"photo", "photo.png"}};
  {
    covenant::cassette_engine recorder{{.path = tape, .mode = covenant::cassette_mode::record}, http};
    const covenant::dynamic_contract c{recorder, task, no_retries()};
    const auto o = c.run(input).outcome;
    ASSERT_TRUE(o.success) << o.summary();
  }
  ASSERT_EQ(server.requests(), 1u);
  EXPECT_THAT(server.request(0).body, HasSubstr(b64(photo)));  // the bytes went to the server
  const std::string file = read_all(tape);
  EXPECT_THAT(file, Not(HasSubstr(b64(photo))));
  EXPECT_THAT(file, Not(HasSubstr(b64(photo).substr(4, 20))));
  EXPECT_THAT(file, Not(HasSubstr("base64")));
  EXPECT_EQ(file.find(photo.substr(png_signature.size())), std::string::npos);
  const std::string digest = R"([{"kind":"image","type":"image/png","bytes":)" + std::to_string(photo.size()) +
                             R"(,"sha256":")" + sha256_hex(photo) + R"("}])";
  EXPECT_THAT(file, HasSubstr(R"("media":)" + digest));
  std::vector<json::value> lines;
  std::istringstream in(file);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), 2u);  // the header and the one call
  const json::array& messages = lines[1].at("request").at("messages").as_array();
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_FALSE(messages[0].as_object().contains("media"));  // the system prompt has none
  EXPECT_EQ(messages[1].at("media"), json::parse(digest));
  EXPECT_EQ(shown_record(messages[1].at("content")), (json::object{{"photo", "<image 1>"}}));

  // replayed: the same call hits
  {
    covenant::cassette_engine replay{{.path = tape}};
    const covenant::dynamic_contract c{replay, task, no_retries()};
    const auto [value, o] = c.run(input);
    ASSERT_TRUE(o.success) << o.summary();
    EXPECT_EQ(value, json::parse(summary_json));
    EXPECT_EQ(replay.used(), 1u);
  }
  // the same call with another image (same name, same size) misses, and the error names the media
  write("photo.png", other);
  {
    covenant::cassette_engine replay{{.path = tape}};
    const covenant::dynamic_contract c{replay, task, no_retries()};
    const auto o = c.run(input).outcome;
    EXPECT_FALSE(o.success);
    EXPECT_EQ(o.failed_stage, covenant::stage::engine);
    ASSERT_EQ(o.attempts.size(), 1u);
    EXPECT_TRUE(o.attempts[0].engine_failed);
    ASSERT_FALSE(o.issues.empty());
    const std::string message = o.issues[0].message;
    EXPECT_THAT(message, HasSubstr("no recorded interaction matches"));
    EXPECT_THAT(message, HasSubstr("media: recorded"));
    EXPECT_THAT(message, HasSubstr(sha256_hex(photo)));
    EXPECT_THAT(message, HasSubstr(sha256_hex(other)));
    EXPECT_EQ(replay.used(), 0u);
  }
  EXPECT_EQ(server.requests(), 1u);  // replay never asked the server
}

}  // namespace
