// Cassettes (covenant/engine/cassette.hpp), recording and replay: an engine's replies recorded as
// JSON Lines through the inner engine and replayed without it, blocking, asynchronous and streamed;
// contracts replaying their remedy loop and an early-stopped stream; engine errors and stop
// requests; new_episodes and the modes that need an inner engine; conversations with tool calls;
// many threads at once.
#include <covenant/engine/cassette.hpp>
#include <covenant/testing/cassette_gtest.hpp>
#include <covenant/testing/gtest.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cassette_fixture.hpp"

namespace {

using namespace cassette_test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ------------------------------------------------------------------------------------------------
// Record, then replay
// ------------------------------------------------------------------------------------------------

TEST(Cassette, RecordsThroughTheInnerEngineThenReplaysWithoutIt) {
  const std::string path = temp_path();
  {
    scripted_engine model{step{"Paris", {30, 2}}, step{"Berlin", {31, 3}, "length"}};
    cassette_engine tape{record_to(path), model};
    EXPECT_EQ(tape.complete(ask("Capital of France?")).text, "Paris");
    EXPECT_EQ(tape.complete(ask("Capital of Germany?")).text, "Berlin");
    EXPECT_EQ(model.calls(), 2u);
    EXPECT_EQ(tape.interactions(), 2u);
    EXPECT_TRUE(tape.unused().empty());
    EXPECT_EQ(tape.path(), path);
  }
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].at("covenant_cassette"), 1);
  const std::string created(lines[0].at("created").as_string());
  EXPECT_EQ(created.size(), 20u) << created;  // 2025-01-31T12:00:00Z
  EXPECT_EQ(created.back(), 'Z');
  const json::object& req = lines[1].at("request").as_object();
  EXPECT_EQ(req.at("messages").as_array().size(), 2u);
  EXPECT_EQ(req.at("messages").as_array()[1].at("content"), "Capital of France?");
  EXPECT_EQ(req.at("messages").as_array()[1].at("role"), "user");
  EXPECT_EQ(req.at("schema_name"), "Answer");
  EXPECT_EQ(req.at("mode"), "json_schema");
  EXPECT_TRUE(req.at("schema").is_null());
  EXPECT_TRUE(req.at("temperature").is_null());
  EXPECT_FALSE(lines[1].contains("chunks"));
  EXPECT_EQ(lines[2].at("response").at("finish_reason"), "length");
  EXPECT_FALSE(lines[2].at("response").as_object().contains("ms"));  // no timing unless asked

  // Replay: no inner engine at all, answers in any order.
  cassette_engine replay{replay_from(path)};
  EXPECT_EQ(replay.interactions(), 2u);
  EXPECT_EQ(replay.unused().size(), 2u);
  const chat_response berlin = replay.complete(ask("Capital of Germany?"));
  EXPECT_EQ(berlin.text, "Berlin");
  EXPECT_EQ(berlin.usage, (covenant::usage{31, 3}));
  EXPECT_EQ(berlin.finish_reason, "length");
  EXPECT_EQ(berlin.model, "scripted");
  EXPECT_EQ(replay.complete(ask("Capital of France?")).text, "Paris");
  EXPECT_TRUE(replay.unused().empty());
  EXPECT_EQ(replay.used(), 2u);
  EXPECT_TRUE(replay.capabilities().asynchronous);
  EXPECT_TRUE(replay.capabilities().streaming);
}

TEST(Cassette, AsynchronousCallsAreRecordedAndReplayedFromStart) {
  const std::string path = temp_path();
  {
    scripted_engine model{"one", "two"};
    cassette_engine tape{record_to(path), model};
    auto a = run(tape, ask("1"));
    auto b = run(tape, ask("2"));
    ASSERT_TRUE(a->ok() && b->ok());
    EXPECT_EQ(a->reply().text, "one");
    EXPECT_TRUE(a->texts().empty());
  }
  cassette_engine replay{replay_from(path)};
  auto b = run(replay, ask("2"));
  auto a = run(replay, ask("1"));
  ASSERT_TRUE(a->ok() && b->ok());
  EXPECT_EQ(a->reply().text, "one");
  EXPECT_EQ(b->reply().text, "two");
}

TEST(Cassette, StreamedCallsRecordTheirChunksAndReplayThemInOrder) {
  const std::string path = temp_path();
  const std::string text = R"({"confidence": 0.9, "answer": "Paris"})";
  std::vector<std::string> recorded;
  {
    scripted_engine model{text};
    model.stream_in_chunks(7, 1ms);
    cassette_engine tape{{.path = path, .mode = cassette_mode::record, .record_timing = true}, model};
    auto c = run(tape, streamed(ask("Capital of France?")));
    ASSERT_TRUE(c->ok()) << c->error().what();
    recorded = c->texts();
    EXPECT_EQ(c->reply().text, text);
  }
  ASSERT_GT(recorded.size(), 3u);
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  const json::array& chunks = lines[1].at("chunks").as_array();
  ASSERT_EQ(chunks.size(), recorded.size());
  std::int64_t last_ms = 0;
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    EXPECT_EQ(chunks[i].at("text"), recorded[i].c_str());
    const std::int64_t ms = chunks[i].at("ms").as_int64();  // record_timing
    EXPECT_GE(ms, last_ms);
    last_ms = ms;
  }
  EXPECT_TRUE(lines[1].at("response").as_object().contains("ms"));

  cassette_engine replay{replay_from(path)};
  auto c = run(replay, streamed(ask("Capital of France?")));
  ASSERT_TRUE(c->ok());
  EXPECT_EQ(c->texts(), recorded);
  EXPECT_EQ(c->reply().text, text);
}

// ------------------------------------------------------------------------------------------------
// Contracts end to end
// ------------------------------------------------------------------------------------------------

const std::string unsure = R"({"confidence": 0.2, "answer": "Paris", "reasoning": "a guess"})";
const std::string good = R"({"confidence": 0.9, "answer": "Paris", "reasoning": "atlas"})";

TEST(Cassette, AContractReplaysItsRemedyLoopFromACassette) {
  const std::string path = temp_path();
  const Question q{"What is the capital of France?"};
  {
    scripted_engine model{unsure, good};
    cassette_engine tape{record_to(path), model};
    covenant::contract<QA> qa{tape, instant({.tries = 2})};
    auto [answer, outcome] = qa.run(q);
    ASSERT_THAT(outcome, covenant::testing::Succeeded());
    EXPECT_EQ(outcome.attempts.size(), 2u);
  }
  auto model = covenant::testing::replay_cassette(path);
  covenant::contract<QA> qa{*model, instant({.tries = 2})};
  auto [answer, outcome] = qa.run(q);
  EXPECT_THAT(outcome, covenant::testing::Succeeded());
  EXPECT_EQ(answer.answer, "Paris");
  EXPECT_EQ(answer.confidence, 0.9);
  ASSERT_EQ(outcome.attempts.size(), 2u);
  EXPECT_EQ(outcome.attempts[0].text, unsure);
  EXPECT_THAT(*model, covenant::testing::AllInteractionsUsed());

  // The same contract asked something else fails at the engine stage, naming the cassette.
  auto other = qa.run(Question{"What is the capital of Spain?"});
  EXPECT_THAT(other.outcome, covenant::testing::FailedAt(covenant::stage::engine));
  EXPECT_THAT(other.outcome.summary(), HasSubstr("no recorded interaction matches"));
}

/// The cassette at `path` with the streamed text of its line `line` (1-based) cut anew into pieces
/// of `bytes` (0: the whole text as one piece), or, with `whole`, that line as a reply that
/// arrived whole before the stop (`text`, no cancellation): how a slower or faster recording of
/// the same reply would look.
std::string rechunked(const std::string& path, std::size_t line, std::size_t bytes, const std::string& whole = {}) {
  std::vector<json::object> lines = read_lines(path);
  json::object& it = lines.at(line - 1);
  std::string text;
  for (const auto& c : it.at("chunks").as_array()) text += json::value_to<std::string>(c.at("text"));
  if (!whole.empty()) {
    text = whole;
    it.erase("error");
    it["response"] = json::object{{"text", whole}, {"finish_reason", "stop"}};
  }
  json::array chunks;
  for (std::size_t at = 0; at < text.size(); at += bytes == 0 ? text.size() : bytes)
    chunks.push_back(json::object{{"text", text.substr(at, bytes == 0 ? std::string::npos : bytes)}});
  it["chunks"] = std::move(chunks);
  std::string out;
  for (const auto& l : lines) out += json::serialize(l) + "\n";
  const std::string to = path + ".rechunked";
  write_file(to, out);
  return to;
}

// A stream stopped early on a violation keeps the reply up to and including the byte that decided
// the stop (here the comma after 1.7), whatever else had arrived when the stop took effect: the
// rejected reply, the corrective request and the recording are the same however the reply was cut
// and timed, and a replay of it stops on the same byte whatever the replay's pieces.
TEST(Cassette, AStreamedContractWithAnEarlyStopReplaysTheSameAttempts) {
  const std::string bad = R"({"confidence": 1.7, "answer": "Paris", "reasoning": ")" + std::string(4000, 'x') + R"("})";
  const std::string decided = R"({"confidence": 1.7,)";
  const Question q{"capital of France?"};
  struct pace {
    std::size_t bytes;
    std::chrono::milliseconds delay;
  };
  std::string corrective;  // the second request, as recorded
  std::string first;       // the first recording (a stream the stop ended)
  for (const pace p : {pace{8, 1ms}, pace{1, 0ms}, pace{3, 1ms}, pace{64, 0ms}, pace{5000, 0ms}}) {
    SCOPED_TRACE("recorded in pieces of " + std::to_string(p.bytes) + " bytes, " + std::to_string(p.delay.count()) +
                 " ms apart");
    const std::string path = temp_path("recorded." + std::to_string(p.bytes) + ".jsonl");
    if (first.empty()) first = path;
    {
      scripted_engine model{bad, good};
      model.stream_in_chunks(p.bytes, p.delay);
      cassette_engine tape{record_to(path), model};
      covenant::contract<QA> qa{tape, instant({.tries = 1})};
      auto r = qa.stream(q, [](const covenant::stream_update<Answer>&) {}).get();
      ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
      ASSERT_EQ(r.outcome.attempts.size(), 2u);
      EXPECT_EQ(r.outcome.attempts[0].text, decided);  // the rejected reply, as the next request shows it
    }
    const auto lines = read_lines(path);
    ASSERT_EQ(lines.size(), 3u);
    // A stream the stop ended is recorded up to the deciding byte; one that had arrived whole
    // before the stop took effect is recorded whole (its replay stops on the same byte).
    if (lines[1].contains("error")) {
      EXPECT_EQ(lines[1].at("error").at("cancelled"), true);
      std::string recorded;
      for (const auto& c : lines[1].at("chunks").as_array()) recorded += json::value_to<std::string>(c.at("text"));
      EXPECT_EQ(recorded, decided);
    }
    if (p.delay >= 1ms) {
      EXPECT_TRUE(lines[1].contains("error"));  // (4 s of stream: stopped long before its end)
    }
    const std::string second = json::serialize(lines[2].at("request"));
    EXPECT_THAT(second, HasSubstr(json::serialize(json::value(decided)).substr(1, decided.size())));
    if (corrective.empty()) corrective = second;
    EXPECT_EQ(second, corrective);  // the same corrective request from every recording
  }

  // The first recording replayed as recorded, in other pieces, and as a reply that arrived whole.
  const std::string& as_recorded = first;
  for (int round = 0; round < 3; ++round) {
    for (const std::string& tape : {as_recorded, rechunked(as_recorded, 2, 1), rechunked(as_recorded, 2, 0),
                                    rechunked(as_recorded, 2, 7), rechunked(as_recorded, 2, 0, bad),
                                    rechunked(as_recorded, 2, 16, bad)}) {
      SCOPED_TRACE(read_file(tape).substr(0, 600));
      auto model = covenant::testing::replay_cassette(tape);
      covenant::contract<QA> qa{*model, instant({.tries = 1})};
      std::vector<std::string> starts;
      auto r = qa.stream(q, [&](const covenant::stream_update<Answer>& u) {
                   if (u.what == covenant::stream_update<Answer>::kind::attempt_started)
                     starts.push_back("start " + std::to_string(u.attempt));
                 }).get();
      ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
      EXPECT_THAT(starts, ElementsAre("start 1", "start 2"));
      ASSERT_EQ(r.outcome.attempts.size(), 2u);
      EXPECT_EQ(r.outcome.attempts[0].issues.at(0).to_string(), "confidence: must be <= 1 (got 1.7)");
      EXPECT_EQ(r.outcome.attempts[0].text, decided);
      EXPECT_EQ(r.value.confidence, 0.9);
      covenant::testing::expect_all_used(*model);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------------

TEST(Cassette, EngineErrorsAreRecordedAndReplayed) {
  const std::string path = temp_path();
  {
    scripted_engine model{step::failure("HTTP 503: overloaded", 503), step::failure("HTTP 400: bad request", 400)};
    cassette_engine tape{record_to(path), model};
    EXPECT_THROW((void)tape.complete(ask("a")), engine_error);
    auto c = run(tape, ask("b"));
    ASSERT_FALSE(c->ok());
    EXPECT_EQ(c->error().status(), 400);
  }
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1].at("error").at("message"), "HTTP 503: overloaded");
  EXPECT_EQ(lines[1].at("error").at("status"), 503);
  EXPECT_EQ(lines[1].at("error").at("retryable"), true);
  EXPECT_FALSE(lines[1].contains("response"));

  cassette_engine replay{replay_from(path)};
  try {
    (void)replay.complete(ask("a"));
    ADD_FAILURE() << "no error";
  } catch (const engine_error& e) {
    EXPECT_STREQ(e.what(), "HTTP 503: overloaded");
    EXPECT_EQ(e.status(), 503);
    EXPECT_TRUE(e.retryable());
    EXPECT_FALSE(e.cancelled());
  }
  auto c = run(replay, streamed(ask("b")));
  ASSERT_FALSE(c->ok());
  EXPECT_STREQ(c->error().what(), "HTTP 400: bad request");
  EXPECT_EQ(c->error().status(), 400);
  EXPECT_FALSE(c->error().retryable());
  EXPECT_TRUE(c->texts().empty());
}

TEST(Cassette, AContractReplayingARecordedEngineFailureRunsForwardWithTheFailure) {
  const std::string path = temp_path();
  const Question q{"capital?"};
  {
    scripted_engine model{step::failure("HTTP 503: overloaded", 503)};
    cassette_engine tape{record_to(path), model};
    covenant::contract<QA> qa{tape, instant()};
    (void)qa.run(q);
  }
  auto model = covenant::testing::replay_cassette(path);
  covenant::contract<QA> qa{*model, instant()};
  auto [answer, outcome] = qa.run(q);
  EXPECT_THAT(outcome, covenant::testing::FailedAt(covenant::stage::engine));
  EXPECT_THAT(outcome.summary(), HasSubstr("HTTP 503: overloaded"));
  EXPECT_EQ(answer.answer, "I don't know.");
}

TEST(Cassette, AStopRequestEndsAReplayedStreamBetweenChunks) {
  const std::string path = temp_path();
  {
    scripted_engine model{"abcdefghijkl"};
    model.stream_in_chunks(3);
    cassette_engine tape{record_to(path), model};
    ASSERT_TRUE(run(tape, streamed(ask("q")))->ok());
  }
  // A receiver that asks to stop after the first chunk.
  struct stopper final : covenant::reply_receiver {
    std::stop_source source;
    std::vector<std::string> deltas;
    std::optional<engine_error> error;
    bool replied = false;
    void on_text(std::string_view d) noexcept override {
      deltas.emplace_back(d);
      source.request_stop();
    }
    void on_reply(chat_response) noexcept override { replied = true; }
    void on_error(const engine_error& e) noexcept override { error = e; }
  };
  cassette_engine replay{replay_from(path)};
  auto s = std::make_shared<stopper>();
  replay.start(streamed(ask("q")), s, s->source.get_token());  // delivered before start() returns
  EXPECT_THAT(s->deltas, ElementsAre("abc"));
  ASSERT_TRUE(s->error.has_value());
  EXPECT_TRUE(s->error->cancelled());
  EXPECT_FALSE(s->replied);
}

// ------------------------------------------------------------------------------------------------
// new_episodes
// ------------------------------------------------------------------------------------------------

TEST(Cassette, NewEpisodesReplaysWhatMatchesAndAppendsOnlyNewCalls) {
  const std::string path = temp_path();
  {
    scripted_engine model{"Paris"};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(ask("France?"));
  }
  const std::string before = read_file(path);
  {
    scripted_engine model{"Berlin", "Paris again"};
    cassette_engine tape{{.path = path, .mode = cassette_mode::new_episodes}, model};
    EXPECT_EQ(tape.complete(ask("France?")).text, "Paris");  // replayed
    EXPECT_EQ(model.calls(), 0u);
    EXPECT_EQ(tape.complete(ask("Germany?")).text, "Berlin");  // new: recorded
    EXPECT_EQ(tape.complete(ask("France?")).text, "Paris again");  // asked once more than recorded: new
    EXPECT_EQ(model.calls(), 2u);
    EXPECT_EQ(tape.interactions(), 3u);
    EXPECT_TRUE(tape.unused().empty());
  }
  const std::string after = read_file(path);
  ASSERT_EQ(after.substr(0, before.size()), before);  // appended, the old lines untouched
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[2].at("response").at("text"), "Berlin");
  EXPECT_EQ(lines[3].at("response").at("text"), "Paris again");

  cassette_engine replay{replay_from(path)};
  EXPECT_EQ(replay.complete(ask("Germany?")).text, "Berlin");
  EXPECT_EQ(replay.complete(ask("France?")).text, "Paris");
  EXPECT_EQ(replay.complete(ask("France?")).text, "Paris again");
}

TEST(Cassette, NewEpisodesStartsAMissingCassetteAndRecordModeTruncates) {
  const std::string path = temp_path("sub/dir/tape.jsonl");
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
  {
    scripted_engine model{"one", "two"};
    cassette_engine tape{{.path = path, .mode = cassette_mode::new_episodes}, model};
    EXPECT_EQ(tape.interactions(), 0u);
    (void)tape.complete(ask("1"));
    auto c = run(tape, ask("2"));  // asynchronous calls are appended too
    ASSERT_TRUE(c->ok());
  }
  EXPECT_EQ(read_lines(path).size(), 3u);
  {
    scripted_engine model{"three"};
    cassette_engine tape{record_to(path), model};
    EXPECT_EQ(tape.interactions(), 0u);  // record starts afresh
    (void)tape.complete(ask("3"));
  }
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].at("response").at("text"), "three");
}

TEST(Cassette, ModesThatCallTheModelNeedAnInnerEngine) {
  const std::string path = temp_path();
  EXPECT_THROW(cassette_engine({.path = path, .mode = cassette_mode::record}), std::invalid_argument);
  EXPECT_THROW(cassette_engine({.path = path, .mode = cassette_mode::new_episodes}), std::invalid_argument);
  EXPECT_THROW(cassette_engine({.path = "", .mode = cassette_mode::replay}), std::invalid_argument);
  EXPECT_EQ(covenant::to_string(cassette_mode::new_episodes), "new_episodes");
  EXPECT_EQ(covenant::parse_cassette_mode("record"), cassette_mode::record);
  EXPECT_EQ(covenant::parse_cassette_mode("new-episodes"), cassette_mode::new_episodes);
  EXPECT_FALSE(covenant::parse_cassette_mode("rewind").has_value());
}

// ------------------------------------------------------------------------------------------------
// Tool calls
// ------------------------------------------------------------------------------------------------

TEST(Cassette, AConversationWithToolCallsAndResultsIsRecordedAndReplayed) {
  const std::string path = temp_path();
  std::vector<piece> recorded_tool_deltas;
  std::vector<std::string> recorded_deltas;
  std::vector<covenant::tool_call> calls;
  {
    scripted_engine model(weather_agent());
    model.stream_in_chunks(4);
    cassette_engine tape{record_to(path), model};
    auto first = run(tape, streamed(agent_request()));
    ASSERT_TRUE(first->ok()) << first->error().what();
    calls = first->reply().tool_calls;
    recorded_tool_deltas = first->pieces();  // forwarded while recording
    recorded_deltas = first->texts();
    EXPECT_EQ(tape.complete(agent_results(calls)).text, R"({"confidence": 0.8, "answer": "Rain in Oslo."})");
  }
  ASSERT_THAT(calls, ElementsAre(covenant::tool_call{"call_0_0", "get_weather", oslo},
                                 covenant::tool_call{"call_0_1", "get_time", lima}));
  EXPECT_EQ(recorded_tool_deltas.front(), (piece{0, "get_weather", R"({"ci)"}));
  EXPECT_EQ(recorded_tool_deltas.size(), 8u);
  EXPECT_THAT(recorded_deltas, ElementsAre("Let ", "me l", "ook."));

  // The file: the request's tools, the reply's calls, their pieces, the results sent back.
  const auto lines = read_lines(path);
  ASSERT_EQ(lines.size(), 3u);
  const json::array& tools = lines[1].at("request").at("tools").as_array();
  ASSERT_EQ(tools.size(), 2u);
  EXPECT_EQ(tools[0].at("name"), "get_weather");
  EXPECT_EQ(tools[0].at("description"), "The weather in a city.");
  EXPECT_EQ(json::serialize(tools[0].at("parameters")),
            R"({"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"})");  // keys sorted
  EXPECT_EQ(tools[1].at("name"), "get_time");
  const json::array& reply_calls = lines[1].at("response").at("tool_calls").as_array();
  ASSERT_EQ(reply_calls.size(), 2u);
  EXPECT_EQ(reply_calls[0].at("id"), "call_0_0");
  EXPECT_EQ(reply_calls[0].at("name"), "get_weather");
  EXPECT_EQ(reply_calls[0].at("arguments"), oslo.c_str());
  EXPECT_EQ(lines[1].at("response").at("finish_reason"), "tool_calls");
  const json::array& chunks = lines[1].at("chunks").as_array();
  ASSERT_EQ(chunks.size(), 11u);  // 4 + 4 pieces of arguments, 3 of text
  EXPECT_EQ(json::serialize(chunks[0]), R"({"tool":0,"name":"get_weather","text":"{\"ci"})");
  EXPECT_EQ(json::serialize(chunks[1]), R"({"tool":0,"text":"ty\":"})");
  EXPECT_EQ(json::serialize(chunks[4]), R"({"tool":1,"name":"get_time","text":"{\"ci"})");
  EXPECT_EQ(json::serialize(chunks[8]), R"({"text":"Let "})");
  const json::array& messages = lines[2].at("request").at("messages").as_array();
  ASSERT_EQ(messages.size(), 5u);
  EXPECT_FALSE(messages[1].as_object().contains("tool_calls"));  // only written when set
  EXPECT_FALSE(messages[1].as_object().contains("is_error"));
  EXPECT_EQ(messages[2].at("role"), "assistant");
  EXPECT_EQ(messages[2].at("content"), "Let me look.");
  EXPECT_EQ(messages[2].at("tool_calls").as_array()[1].at("id"), "call_0_1");
  EXPECT_EQ(messages[3].at("role"), "tool");
  EXPECT_EQ(messages[3].at("tool_call_id"), "call_0_0");
  EXPECT_FALSE(messages[3].as_object().contains("is_error"));
  EXPECT_EQ(messages[4].at("tool_call_id"), "call_0_1");
  EXPECT_EQ(messages[4].at("is_error"), true);

  // Replay: the calls come back with their ids, streamed in the recorded pieces, and the
  // conversation built on them matches its recording.
  cassette_engine replay{replay_from(path)};
  auto first = run(replay, streamed(agent_request()));
  ASSERT_TRUE(first->ok()) << first->error().what();
  EXPECT_EQ(first->reply().tool_calls, calls);
  EXPECT_EQ(first->reply().text, "Let me look.");
  EXPECT_EQ(first->pieces(), recorded_tool_deltas);
  EXPECT_EQ(first->texts(), recorded_deltas);
  EXPECT_EQ(replay.complete(agent_results(first->reply().tool_calls)).text,
            R"({"confidence": 0.8, "answer": "Rain in Oslo."})");
  EXPECT_TRUE(replay.unused().empty());

  // A whole call from the streamed recording gets the calls in its reply.
  cassette_engine again{replay_from(path)};
  EXPECT_EQ(again.complete(agent_request()).tool_calls, calls);
}

TEST(Cassette, AStreamedCallReplayingAWholeRecordingGetsEachToolCallAsOnePiece) {
  const std::string path = temp_path();
  {
    scripted_engine model(weather_agent());
    cassette_engine tape{record_to(path), model};
    ASSERT_EQ(tape.complete(agent_request()).tool_calls.size(), 2u);
  }
  EXPECT_FALSE(read_lines(path)[1].contains("chunks"));
  cassette_engine replay{replay_from(path)};
  auto c = run(replay, streamed(agent_request()));
  ASSERT_TRUE(c->ok()) << c->error().what();
  EXPECT_THAT(c->pieces(), ElementsAre(piece{0, "get_weather", oslo}, piece{1, "get_time", lima}));
  EXPECT_THAT(c->texts(), ElementsAre("Let me look."));
}

// ------------------------------------------------------------------------------------------------
// Threads
// ------------------------------------------------------------------------------------------------

TEST(Cassette, ConcurrentRecordingAndReplayFromManyThreads) {
  const std::string path = temp_path();
  constexpr int threads = 8;
  constexpr int per_thread = 20;
  {
    scripted_engine model{[](const chat_request& r, std::size_t) {
      chat_response out;
      out.text = "reply to " + r.messages.back().content;
      return out;
    }};
    cassette_engine tape{record_to(path), model};
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        for (int i = 0; i < per_thread; ++i) {
          const std::string q = std::to_string(t) + "/" + std::to_string(i);
          if (i % 2 == 0) EXPECT_EQ(tape.complete(ask(q)).text, "reply to " + q);
          else EXPECT_EQ(run(tape, streamed(ask(q)))->reply().text, "reply to " + q);
          (void)tape.complete(ask("same question"));  // recorded many times
        }
      });
    for (auto& th : pool) th.join();
    EXPECT_EQ(tape.interactions(), static_cast<std::size_t>(2 * threads * per_thread));
  }
  EXPECT_EQ(read_lines(path).size(), static_cast<std::size_t>(1 + 2 * threads * per_thread));

  cassette_engine replay{replay_from(path)};
  std::atomic<int> same{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int i = per_thread - 1; i >= 0; --i) {
        const std::string q = std::to_string(t) + "/" + std::to_string(i);
        if (i % 3 == 0) EXPECT_EQ(replay.complete(streamed(ask(q))).text, "reply to " + q);
        else EXPECT_EQ(run(replay, ask(q))->reply().text, "reply to " + q);
        if (replay.complete(ask("same question")).text == "reply to same question") ++same;
      }
    });
  for (auto& th : pool) th.join();
  EXPECT_EQ(same.load(), threads * per_thread);
  EXPECT_TRUE(replay.unused().empty());
  EXPECT_THAT(engine_error_of(replay, ask("same question")),
              HasSubstr("recorded 160 times (lines "));
}

}  // namespace
