// Cassettes: recording an engine's replies as JSON Lines and replaying them in tests.
#include <covenant/engine/cassette.hpp>
#include <covenant/testing/cassette_gtest.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/testing/gtest.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "loopback_server.hpp"
#include "qa_model.hpp"
#include "reply_collector.hpp"

namespace cassette_test {

using covenant_test::confidence_first::Answer;
using covenant_test::confidence_first::Question;

struct QA {
  static constexpr std::string_view prompt = "Answer the question, confidence first.";
  void post(const Answer& a) const {
    if (a.confidence < 0.5) throw covenant::violation("confidence", "must be at least 0.5 for a final answer");
  }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const {
    return o.success ? *o.result : Answer{0, "I don't know.", ""};
  }
};

}  // namespace cassette_test

namespace {

using namespace std::chrono_literals;
using namespace cassette_test;
using covenant::cassette_engine;
using covenant::cassette_mode;
using covenant::cassette_options;
using covenant::chat_request;
using covenant::chat_response;
using covenant::engine_error;
using covenant::role;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using covenant::testing::step;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

namespace json = boost::json;

/// This process's temporary directory, removed at exit.
const std::filesystem::path& temp_dir() {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("covenant_cassette_test_" + std::to_string(::getpid()));
  return dir;
}

struct remove_temp_dir {
  remove_temp_dir() { (void)temp_dir(); }  // constructed first, so destroyed after this
  ~remove_temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(temp_dir(), ec);
  }
} const at_exit;

/// A fresh path in the temporary directory, named after the running test.
std::string temp_path(const std::string& name = "cassette.jsonl") {
  const auto& dir = temp_dir();
  std::filesystem::create_directories(dir);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto p = dir / (std::string(info->test_suite_name()) + "." + info->name() + "." + name);
  std::filesystem::remove(p);
  return p.string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::vector<json::object> read_lines(const std::string& path) {
  std::vector<json::object> out;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line).as_object());
  return out;
}

chat_request ask(const std::string& user, const std::string& system = "Answer briefly.") {
  chat_request r;
  r.messages = {{role::system, system}, {role::user, user}};
  r.schema_name = "Answer";
  return r;
}

chat_request user_only(const std::string& user) {
  chat_request r;
  r.messages = {{role::user, user}};
  return r;
}

chat_request streamed(chat_request r) {
  r.stream = true;
  return r;
}

cassette_options record_to(const std::string& path) { return {.path = path, .mode = cassette_mode::record}; }
cassette_options replay_from(const std::string& path) { return {.path = path, .mode = cassette_mode::replay}; }

using collector = covenant_test::reply_collector;
using piece = collector::piece;

/// Runs one asynchronous call to its end.
std::shared_ptr<collector> run(covenant::engine& e, const chat_request& r, std::stop_token stop = {}) {
  auto c = std::make_shared<collector>();
  e.start(r, c, std::move(stop));
  EXPECT_TRUE(c->wait());
  return c;
}

std::string engine_error_of(cassette_engine& e, const chat_request& r) {
  try {
    (void)e.complete(r);
  } catch (const engine_error& err) {
    return err.what();
  }
  ADD_FAILURE() << "no engine_error";
  return {};
}

std::string runtime_error_of(const cassette_options& o) {
  try {
    cassette_engine e{o};
  } catch (const std::runtime_error& err) {
    return err.what();
  }
  ADD_FAILURE() << "no std::runtime_error";
  return {};
}

/// Sets an environment variable for one scope.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~scoped_env() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

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

TEST(Cassette, TheStreamFlagIsNotPartOfTheMatch) {
  const std::string path = temp_path();
  {
    scripted_engine model{"streamed reply", "whole reply"};
    model.stream_in_chunks(4);
    cassette_engine tape{record_to(path), model};
    ASSERT_TRUE(run(tape, streamed(ask("a")))->ok());
    ASSERT_TRUE(run(tape, ask("b"))->ok());
  }
  cassette_engine replay{replay_from(path)};
  // A whole call answered by a streamed recording gets the whole text.
  auto a = run(replay, ask("a"));
  ASSERT_TRUE(a->ok());
  EXPECT_TRUE(a->texts().empty());
  EXPECT_EQ(a->reply().text, "streamed reply");
  // A streamed call answered by a whole recording gets the text as one chunk.
  auto b = run(replay, streamed(ask("b")));
  ASSERT_TRUE(b->ok());
  EXPECT_THAT(b->texts(), ElementsAre("whole reply"));
  EXPECT_EQ(b->reply().text, "whole reply");
}

TEST(Cassette, MatchingIgnoresTheKeyOrderOfTheSchemaButNotItsContent) {
  const std::string path = temp_path();
  auto with_schema = [](const char* schema) {
    chat_request r = ask("q");
    r.response_schema = std::make_shared<const json::value>(json::parse(schema));
    return r;
  };
  {
    scripted_engine model{"ok"};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(with_schema(R"({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "number"}}})"));
  }
  // Written canonically: keys sorted.
  EXPECT_EQ(json::serialize(read_lines(path)[1].at("request").at("schema")),
            R"({"properties":{"a":{"type":"number"},"b":{"type":"string"}},"type":"object"})");
  {
    cassette_engine replay{replay_from(path)};
    EXPECT_EQ(replay.complete(with_schema(R"({"properties": {"a": {"type": "number"}, "b": {"type": "string"}}, "type": "object"})")).text,
              "ok");
  }
  cassette_engine replay{replay_from(path)};
  const std::string err = engine_error_of(replay, with_schema(R"({"type": "object", "properties": {"b": {"type": "string"}}})"));
  EXPECT_THAT(err, HasSubstr("no recorded interaction matches"));
  EXPECT_THAT(err, HasSubstr("schema differ at byte"));
}

TEST(Cassette, MatchingComparesModeTemperatureAndMaxTokensButNotTheLimiter) {
  const std::string path = temp_path();
  chat_request r = ask("q");
  r.mode = covenant::output_mode::tools;
  r.temperature = 0.2;
  r.max_tokens = 64;
  {
    scripted_engine model{"ok"};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(r);
  }
  const json::object req = read_lines(path)[1].at("request").as_object();
  EXPECT_EQ(req.at("mode"), "tools");
  EXPECT_EQ(req.at("temperature").as_double(), 0.2);
  EXPECT_EQ(req.at("max_tokens").to_number<int>(), 64);

  for (auto change : std::vector<std::function<void(chat_request&)>>{
           [](chat_request& x) { x.mode = covenant::output_mode::json_object; },
           [](chat_request& x) { x.temperature = 0.3; }, [](chat_request& x) { x.max_tokens.reset(); },
           [](chat_request& x) { x.schema_name = "Other"; }}) {
    chat_request other = r;
    change(other);
    cassette_engine replay{replay_from(path)};
    EXPECT_THAT(engine_error_of(replay, other), HasSubstr("no recorded interaction matches"));
  }
  {
    chat_request warmer = r;
    warmer.temperature = 0.3;
    cassette_engine replay{replay_from(path)};
    EXPECT_THAT(engine_error_of(replay, warmer), HasSubstr("): temperature: recorded 0.2, requested 0.3"));
  }
  cassette_engine replay{replay_from(path)};
  EXPECT_EQ(cassette_engine::normalized(r), cassette_engine::normalized(streamed(r)));
  EXPECT_EQ(replay.complete(streamed(r)).text, "ok");
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
// Requests that were not recorded
// ------------------------------------------------------------------------------------------------

TEST(Cassette, AnUnrecordedRequestFailsNamingTheClosestRecording) {
  const std::string path = temp_path();
  {
    scripted_engine model{"Paris", "Berlin", "Rome"};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(ask("What is the capital of France?"));
    (void)tape.complete(ask("What is the capital of Germany?"));
    (void)tape.complete(ask("Name a river.", "Be creative."));
  }
  cassette_engine replay{replay_from(path)};
  const std::string err = engine_error_of(replay, ask("What is the capital of Germany? Be precise."));
  EXPECT_THAT(err, HasSubstr("cassette_engine: " + path + ": no recorded interaction matches this request"));
  EXPECT_THAT(err, HasSubstr("closest recording: line 3"));
  EXPECT_THAT(err, HasSubstr("messages[1] (user) content differ at byte 31"));
  EXPECT_THAT(err, HasSubstr("recorded \"...s the capital of Germany?\""));
  EXPECT_THAT(err, HasSubstr("requested \"...s the capital of Germany? Be precise.\""));
  EXPECT_TRUE(replay.unused().size() == 3u);  // a failed lookup uses nothing

  // Through start(), the same error arrives at on_error.
  auto c = run(replay, ask("Something else entirely"));
  ASSERT_FALSE(c->ok());
  EXPECT_THAT(c->error().what(), HasSubstr("no recorded interaction matches"));
  EXPECT_FALSE(c->error().cancelled());

  // A different number of messages is described as such.
  chat_request longer = ask("Name a river.", "Be creative.");
  longer.messages.push_back({role::assistant, "The Nile."});
  EXPECT_THAT(engine_error_of(replay, longer),
              HasSubstr("closest recording: line 4 (Answer, 2 messages, last (user) \"Name a river.\"): recorded 2 "
                        "messages, requested 3 (requested messages[2] (assistant) \"The Nile.\")"));
}

TEST(Cassette, ARequestAskedMoreOftenThanRecordedFailsClearly) {
  const std::string path = temp_path();
  {
    scripted_engine model{"first", "second"};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(ask("again"));
    (void)tape.complete(ask("again"));
  }
  cassette_engine replay{replay_from(path)};
  EXPECT_EQ(replay.complete(ask("again")).text, "first");  // in recorded order
  EXPECT_EQ(replay.complete(ask("again")).text, "second");
  const std::string err = engine_error_of(replay, ask("again"));
  EXPECT_THAT(err, HasSubstr("this request was recorded 2 times (lines 2, 3) and asked 3 times"));
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
// Unused interactions and the GoogleTest helpers
// ------------------------------------------------------------------------------------------------

TEST(Cassette, UnusedInteractionsAreListedByTheHelpers) {
  const std::string path = temp_path();
  {
    scripted_engine model{"Paris", "Berlin", step::failure("HTTP 500: oops", 500)};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(ask("France?"));
    (void)tape.complete(ask("Germany?"));
    EXPECT_THROW((void)tape.complete(ask("Spain?")), engine_error);
  }
  auto model = covenant::testing::replay_cassette(path);
  (void)model->complete(ask("Germany?"));
  EXPECT_THAT(model->unused(),
              ElementsAre("line 2: Answer, 2 messages, last (user) \"France?\" -> reply \"Paris\"",
                          "line 4: Answer, 2 messages, last (user) \"Spain?\" -> error \"HTTP 500: oops\" (status 500)"));
  EXPECT_THAT(*model, Not(covenant::testing::AllInteractionsUsed()));
  EXPECT_THAT(model, Not(covenant::testing::AllInteractionsUsed()));  // the unique_ptr itself
  EXPECT_FALSE(covenant::testing::all_interactions_used(*model));
  EXPECT_NONFATAL_FAILURE(covenant::testing::expect_all_used(*model), "2 of 3 recorded interactions were not used");
  EXPECT_NONFATAL_FAILURE(covenant::testing::expect_all_used(*model), "line 4: Answer, 2 messages");
  (void)model->complete(ask("France?"));
  EXPECT_THROW((void)model->complete(ask("Spain?")), engine_error);
  EXPECT_THAT(*model, covenant::testing::AllInteractionsUsed());
  EXPECT_TRUE(covenant::testing::all_interactions_used(*model));
}

TEST(Cassette, TheEnvironmentChoosesTheModeOfTheTestHelper) {
  const std::string path = temp_path();
  {
    scoped_env mode("COVENANT_CASSETTE_MODE", "record");
    scripted_engine real{"recorded reply"};
    auto tape = covenant::testing::cassette(path, &real);
    EXPECT_EQ(tape->mode(), cassette_mode::record);
    EXPECT_EQ(tape->complete(ask("q")).text, "recorded reply");
    EXPECT_THROW(covenant::testing::cassette(path), std::invalid_argument);  // recording needs a real engine
  }
  {
    scoped_env mode("COVENANT_CASSETTE_MODE", nullptr);  // default: replay; the factory is not called
    bool made = false;
    auto tape = covenant::testing::cassette(path, [&]() -> std::shared_ptr<covenant::engine> {
      made = true;
      return std::make_shared<scripted_engine>();
    });
    EXPECT_EQ(tape->mode(), cassette_mode::replay);
    EXPECT_FALSE(made);
    EXPECT_EQ(tape->complete(ask("q")).text, "recorded reply");
  }
  {
    scoped_env mode("COVENANT_CASSETTE_MODE", "new_episodes");
    auto tape = covenant::testing::cassette(path, []() -> std::shared_ptr<covenant::engine> {
      return std::make_shared<scripted_engine>(std::vector<step>{"fresh"});
    });
    EXPECT_EQ(tape->mode(), cassette_mode::new_episodes);
    EXPECT_EQ(tape->complete(ask("q")).text, "recorded reply");
    EXPECT_EQ(tape->complete(ask("new")).text, "fresh");
  }
  {
    scoped_env mode("COVENANT_CASSETTE_MODE", "fast-forward");
    EXPECT_THROW(covenant::testing::cassette(path), std::invalid_argument);
  }
  {
    scoped_env mode("COVENANT_CASSETTE_MODE", nullptr);
    scoped_env dir("COVENANT_CASSETTE_DIR", std::filesystem::path(path).parent_path().c_str());
    auto tape = covenant::testing::cassette(std::filesystem::path(path).filename().string());
    EXPECT_EQ(tape->path(), path);
    EXPECT_EQ(tape->interactions(), 2u);
  }
}

TEST(Cassette, ACassetteScopeReportsUnusedInteractionsWhenItEnds) {
  const std::string path = temp_path();
  {
    scripted_engine model{"a", "b"};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(ask("1"));
    (void)tape.complete(ask("2"));
  }
  scoped_env mode("COVENANT_CASSETTE_MODE", nullptr);
  EXPECT_NONFATAL_FAILURE(
      {
        covenant::testing::cassette_scope tape{path};
        (void)tape.model().complete(ask("1"));
      },
      "line 3: Answer, 2 messages, last (user) \"2\" -> reply \"b\"");
  {
    covenant::testing::cassette_scope tape{path};
    covenant::engine& e = tape;
    (void)e.complete(ask("2"));
    tape.allow_unused();
  }
  {
    covenant::testing::cassette_scope tape{path};
    (void)tape.model().complete(ask("1"));
    (void)tape.model().complete(ask("2"));
  }  // all used: no failure
}

// ------------------------------------------------------------------------------------------------
// Secrets
// ------------------------------------------------------------------------------------------------

TEST(Cassette, RedactedStringsNeverReachTheFile) {
  const std::string path = temp_path();
  const std::string secret = "sk-live-5ecr3t";
  const std::vector<std::string> redact{secret, "Alice Example"};
  {
    scripted_engine model{[&](const chat_request&, std::size_t i) -> chat_response {
      if (i == 1) throw engine_error("HTTP 401: invalid key " + secret, 401, false);
      chat_response r;
      r.text = "your key is " + secret + " and your name is Alice Example";
      r.model = "m";
      return r;
    }};
    model.stream_in_chunks(5);  // the secret is split over several chunks
    cassette_engine tape{{.path = path, .mode = cassette_mode::record, .redact = redact}, model};
    chat_request r = streamed(ask("My key is " + secret + ". I am Alice Example."));
    r.response_schema = std::make_shared<const json::value>(json::parse(R"({"description": "for Alice Example"})"));
    auto c = run(tape, r);
    ASSERT_TRUE(c->ok());
    EXPECT_THAT(c->reply().text, HasSubstr(secret));  // the live call is untouched
    EXPECT_THROW((void)tape.complete(ask(secret)), engine_error);
  }
  const std::string file = read_file(path);
  EXPECT_THAT(file, Not(HasSubstr(secret)));
  EXPECT_THAT(file, Not(HasSubstr("5ecr3t")));
  EXPECT_THAT(file, Not(HasSubstr("Alice")));
  EXPECT_THAT(file, HasSubstr("My key is [redacted]. I am [redacted]."));
  const auto lines = read_lines(path);
  std::string joined;
  for (const auto& c : lines[1].at("chunks").as_array()) joined += c.at("text").as_string();
  EXPECT_EQ(joined, "your key is [redacted] and your name is [redacted]");
  EXPECT_EQ(lines[1].at("response").at("text"), "your key is [redacted] and your name is [redacted]");
  EXPECT_EQ(lines[2].at("error").at("message"), "HTTP 401: invalid key [redacted]");

  // Replayed with the same redact list, the requests holding the secret match.
  cassette_engine replay{{.path = path, .redact = redact}};
  chat_request r = ask("My key is " + secret + ". I am Alice Example.");
  r.response_schema = std::make_shared<const json::value>(json::parse(R"({"description": "for Alice Example"})"));
  EXPECT_EQ(replay.complete(r).text, "your key is [redacted] and your name is [redacted]");
  EXPECT_THROW((void)replay.complete(ask(secret)), engine_error);
  EXPECT_TRUE(replay.unused().empty());
}

TEST(Cassette, TheApiKeyAndHeadersOfAnHttpEngineAreNeverWritten) {
  const std::string path = temp_path();
  const std::string key = "sk-test-NEVER-WRITTEN-123";
  covenant_test::loopback_server server([](const covenant_test::received_request&, std::size_t) {
    covenant_test::response_plan p;
    p.body = covenant_test::openai_completion(R"({"confidence": 0.9, "answer": "Paris", "reasoning": "atlas"})");
    return p;
  });
  {
    covenant::http_engine_options o;
    o.base_url = server.base_url();
    o.api_key = key;
    o.model = "loopback";
    o.headers = {{"OpenAI-Organization", "org-hidden-456"}};
    o.retry.tries = 0;
    covenant::http_engine http{o};
    cassette_engine tape{{.path = path, .mode = cassette_mode::record, .redact = {key}}, http};
    covenant::contract<QA> qa{tape, instant()};
    auto [answer, outcome] = qa.run(Question{"capital of France?"});
    ASSERT_THAT(outcome, covenant::testing::Succeeded());
  }
  ASSERT_EQ(server.requests(), 1u);
  EXPECT_EQ(server.request(0).headers.at("authorization"), "Bearer " + key);  // it was sent
  const std::string file = read_file(path);
  EXPECT_THAT(file, Not(HasSubstr(key)));
  EXPECT_THAT(file, Not(HasSubstr("org-hidden")));
  EXPECT_THAT(file, Not(HasSubstr("Bearer")));
  EXPECT_THAT(file, HasSubstr("\"model\":\"loopback\""));

  auto model = covenant::testing::replay_cassette(path, {key});
  covenant::contract<QA> qa{*model, instant()};
  auto [answer, outcome] = qa.run(Question{"capital of France?"});
  EXPECT_THAT(outcome, covenant::testing::Succeeded());
  EXPECT_EQ(answer.answer, "Paris");
  EXPECT_EQ(server.requests(), 1u);
}

// ------------------------------------------------------------------------------------------------
// Malformed cassettes
// ------------------------------------------------------------------------------------------------

TEST(Cassette, MalformedFilesGiveClearErrorsWithLineNumbers) {
  const std::string path = temp_path();
  const std::string header = R"({"covenant_cassette": 1, "created": "2025-01-31T12:00:00Z"})";
  const std::string ok_line =
      R"({"request": {"messages": [{"role": "user", "content": "q"}]}, "response": {"text": "a"}})";

  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ": cannot open the cassette for replay: No such file"));

  write_file(path, "");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr("the cassette is empty"));

  write_file(path, header + "\n" + ok_line + "\n{\"request\": oops}\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":3: not valid JSON"));

  write_file(path, R"({"covenant_cassette": 2, "created": "2030-01-01T00:00:00Z"})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":1: unknown cassette version 2 (this covenant reads version 1)"));

  write_file(path, ok_line + "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":1: not a cassette header"));

  write_file(path, header + "\n" + R"({"request": {"messages": [{"role": "robot", "content": "q"}]}, "response": {"text": "a"}})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.messages[0].role: unknown role \"robot\""));

  write_file(path, header + "\n" + R"({"request": {"messages": []}})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: an interaction needs exactly one of \"response\" and \"error\""));

  write_file(path, header + "\n" + R"({"request": {"messages": []}, "response": {"text": 7}})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: response.text must be a string"));

  write_file(path, header + "\n" + R"({"request": {"messages": [], "max_tokens": -3}, "response": {"text": ""}})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.max_tokens must be an integer"));

  write_file(path, header + "\n" + R"({"request": {"messages": [], "mode": "telepathy"}, "response": {"text": ""}})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.mode: unknown output mode \"telepathy\""));

  write_file(path, header + "\n" + ok_line + "\n" + R"({"request": {"messages": [], "chunks": 3}, "response": {"text": ""}, "chunks": 3})" "\n");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":3: \"chunks\" must be an array"));

  // An interrupted recording: the last line is cut off.
  write_file(path, header + "\n" + ok_line + "\n" + ok_line.substr(0, 30));
  const std::string cut = runtime_error_of(replay_from(path));
  EXPECT_THAT(cut, HasSubstr(path + ":3: not valid JSON"));
  EXPECT_THAT(cut, HasSubstr("the last line is incomplete"));

  // new_episodes reads the file too.
  scripted_engine model;
  EXPECT_THROW(cassette_engine({.path = path, .mode = cassette_mode::new_episodes}, model), std::runtime_error);

  // Hand-written files: any key order, optional fields, blank lines, CRLF.
  write_file(path, header + "\r\n\r\n" +
                       R"({"response": {"text": "a", "usage": {"output_tokens": 2}}, "request": {"max_tokens": null, "messages": [{"content": "q", "role": "user"}]}})" "\r\n");
  cassette_engine replay{replay_from(path)};
  chat_request r;
  r.messages = {{role::user, "q"}};
  const chat_response reply = replay.complete(r);
  EXPECT_EQ(reply.text, "a");
  EXPECT_EQ(reply.usage.output_tokens, 2u);
  EXPECT_EQ(reply.mode, covenant::output_mode::json_schema);
}

TEST(Cassette, NewEpisodesAppendsAfterAFileWithoutAFinalNewline) {
  const std::string path = temp_path();
  write_file(path, R"({"covenant_cassette": 1, "created": "2025-01-31T12:00:00Z"})" "\n" +
                       std::string(R"({"request": {"messages": [{"role": "user", "content": "old"}]}, "response": {"text": "a"}})"));
  {
    scripted_engine model{"b"};
    cassette_engine tape{{.path = path, .mode = cassette_mode::new_episodes}, model};
    EXPECT_EQ(tape.complete(user_only("old")).text, "a");
    EXPECT_EQ(tape.complete(user_only("new")).text, "b");
  }
  ASSERT_EQ(read_lines(path).size(), 3u);
  cassette_engine replay{replay_from(path)};
  EXPECT_EQ(replay.complete(user_only("new")).text, "b");
}

// ------------------------------------------------------------------------------------------------
// Tools and tool calls
// ------------------------------------------------------------------------------------------------

/// The tools of a weather agent: get_weather (described by `description`) and get_time.
std::shared_ptr<const std::vector<covenant::tool_spec>> weather_tools(
    const std::string& description = "The weather in a city.") {
  auto city = std::make_shared<const json::value>(
      json::parse(R"({"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}})"));
  return std::make_shared<const std::vector<covenant::tool_spec>>(std::vector<covenant::tool_spec>{
      {"get_weather", description, city}, {"get_time", "The time in a city.", city}});
}

/// The agent's first request.
chat_request agent_request(std::shared_ptr<const std::vector<covenant::tool_spec>> tools = weather_tools()) {
  chat_request r = ask("Weather in Oslo, time in Lima?");
  r.tools = std::move(tools);
  return r;
}

/// The agent's second request: the first, the model's calls, and the tools' results.
chat_request agent_results(const std::vector<covenant::tool_call>& calls, const std::string& weather = "rain, 4 C",
                           bool time_failed = true) {
  chat_request r = agent_request();
  r.messages.push_back({.role = role::assistant, .content = "Let me look.", .tool_calls = calls});
  r.messages.push_back({.role = role::tool, .content = weather, .tool_call_id = calls.at(0).id});
  r.messages.push_back(
      {.role = role::tool, .content = "unknown city", .tool_call_id = calls.at(1).id, .is_error = time_failed});
  return r;
}

const std::string oslo = R"({"city": "Oslo"})";
const std::string lima = R"({"city": "Lima"})";

/// A scripted agent's replies: two tool calls with a few words, then the answer.
std::vector<step> weather_agent() {
  step calls = step::calls(
      {{.id = "", .name = "get_weather", .arguments = oslo}, {.id = "", .name = "get_time", .arguments = lima}}, {40, 12});
  calls.text = "Let me look.";
  return {calls, step{R"({"confidence": 0.8, "answer": "Rain in Oslo."})", {90, 9}}};
}

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

TEST(Cassette, ARequestDifferingOnlyInAToolResultDoesNotMatch) {
  const std::string path = temp_path();
  std::vector<covenant::tool_call> calls;
  {
    scripted_engine model(weather_agent());
    cassette_engine tape{record_to(path), model};
    calls = tape.complete(agent_request()).tool_calls;
    (void)tape.complete(agent_results(calls));
  }
  cassette_engine replay{replay_from(path)};
  (void)replay.complete(agent_request());

  const std::string other_result = engine_error_of(replay, agent_results(calls, "sunny, 20 C"));
  EXPECT_THAT(other_result, HasSubstr("no recorded interaction matches this request"));
  EXPECT_THAT(other_result, HasSubstr("messages[3] (tool) content differ at byte 0"));
  EXPECT_THAT(other_result, HasSubstr(R"(recorded "rain, 4 C", requested "sunny, 20 C")"));

  const std::string not_an_error = engine_error_of(replay, agent_results(calls, "rain, 4 C", false));
  EXPECT_THAT(not_an_error, HasSubstr("messages[4] (tool) is_error: recorded true, requested false"));

  std::vector<covenant::tool_call> other_ids = calls;
  other_ids[0].id = "call_xyz";
  const std::string other_id = engine_error_of(replay, agent_results(other_ids));
  EXPECT_THAT(other_id, HasSubstr("messages[2] (assistant) tool_calls differ"));

  std::vector<covenant::tool_call> other_arguments = calls;
  other_arguments[0].arguments = R"({"city": "Bergen"})";
  EXPECT_THAT(engine_error_of(replay, agent_results(other_arguments)), HasSubstr("tool_calls differ"));

  // the recorded one still answers
  EXPECT_EQ(replay.complete(agent_results(calls)).text, R"({"confidence": 0.8, "answer": "Rain in Oslo."})");
}

TEST(Cassette, RequestsDifferingOnlyInTheirToolsDoNotMatch) {
  const std::string path = temp_path();
  {
    scripted_engine model(weather_agent());
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(agent_request());
  }
  cassette_engine replay{replay_from(path)};
  const std::string described = engine_error_of(replay, agent_request(weather_tools("Today's weather.")));
  EXPECT_THAT(described, HasSubstr("tools differ at byte"));
  EXPECT_THAT(described, HasSubstr("The weather in a city."));
  EXPECT_THAT(engine_error_of(replay, ask("Weather in Oslo, time in Lima?")), HasSubstr("tools differ"));  // none
  // a list built anew with the same tools matches, whatever the key order of their schemas
  auto city = std::make_shared<const json::value>(
      json::parse(R"({"properties": {"city": {"type": "string"}}, "type": "object", "required": ["city"]})"));
  auto same = std::make_shared<const std::vector<covenant::tool_spec>>(std::vector<covenant::tool_spec>{
      {"get_weather", "The weather in a city.", city}, {"get_time", "The time in a city.", city}});
  EXPECT_EQ(replay.complete(agent_request(same)).tool_calls.size(), 2u);
}

TEST(Cassette, RequestsWithoutToolsKeepTheNormalisedFormOfOlderCassettes) {
  const std::string expected =
      R"({"messages":[{"role":"system","content":"Answer briefly."},{"role":"user","content":"q"}],)"
      R"("schema_name":"Answer","mode":"json_schema","schema":null,"temperature":null,"max_tokens":null})";
  EXPECT_EQ(cassette_engine::normalized(ask("q")), expected);
  chat_request empty_list = ask("q");
  empty_list.tools = std::make_shared<const std::vector<covenant::tool_spec>>();
  EXPECT_EQ(cassette_engine::normalized(empty_list), expected);  // an empty list is no tools

  // An old recording (no tool fields) replays; a request with tools does not match it.
  const std::string path = temp_path();
  write_file(path, R"({"covenant_cassette": 1, "created": "2025-01-31T12:00:00Z"})" "\n" +
                       std::string(R"({"request": {"messages": [{"role": "user", "content": "q"}]}, "response": {"text": "a"}})") +
                       "\n");
  cassette_engine replay{replay_from(path)};
  chat_request with_tools = user_only("q");
  with_tools.tools = weather_tools();
  EXPECT_THAT(engine_error_of(replay, with_tools), HasSubstr("no recorded interaction matches"));
  const chat_response old = replay.complete(user_only("q"));
  EXPECT_EQ(old.text, "a");
  EXPECT_THAT(old.tool_calls, ::testing::IsEmpty());
}

TEST(Cassette, HandWrittenToolFieldsAreReadAndMalformedOnesGiveClearErrors) {
  const std::string path = temp_path();
  const std::string header = R"({"covenant_cassette": 1, "created": "2025-01-31T12:00:00Z"})" "\n";
  auto line = [&](const std::string& request, const std::string& response = R"({"text": ""})",
                  const std::string& rest = "") {
    write_file(path, header + R"({"request": )" + request + R"(, "response": )" + response + rest + "}\n");
  };

  line(R"({"messages": [{"role": "tool", "content": "r", "tool_calls": 3}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: request.messages[0].tool_calls must be an array of tool calls"));
  line(R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"id": "c", "arguments": "{}"}]}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: request.messages[0].tool_calls[0] has no \"name\""));
  line(R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"name": "f", "arguments": {}}]}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: request.messages[0].tool_calls[0].arguments must be a string"));
  line(R"({"messages": [{"role": "tool", "content": "r", "tool_call_id": 5}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.messages[0].tool_call_id must be a string"));
  line(R"({"messages": [{"role": "tool", "content": "r", "is_error": "yes"}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: request.messages[0].is_error must be true or false"));
  line(R"({"messages": [], "tools": {"name": "f"}})");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.tools must be an array of tools"));
  line(R"({"messages": [], "tools": [{"description": "d"}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: request.tools[0] has no \"name\""));
  line(R"({"messages": [], "tools": [{"name": "f", "parameters": "object"}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)),
              HasSubstr(path + ":2: request.tools[0].parameters must be a JSON Schema (an object) or null"));
  line(R"({"messages": []})", R"({"text": "", "tool_calls": [{"name": 7}]})");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: response.tool_calls[0].name must be a string"));
  line(R"({"messages": []})", R"({"text": "", "tool_calls": {}})");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: response.tool_calls must be an array"));
  line(R"({"messages": []})", R"({"text": ""})", R"(, "chunks": [{"tool": -1, "text": ""}])");
  EXPECT_THAT(runtime_error_of(replay_from(path)), HasSubstr(path + ":2: chunks[0].tool must be an integer in range"));

  // Well-formed, in any key order, with optional fields left out.
  line(R"({"tools": [{"parameters": null, "name": "get_weather"}], "messages": [)"
       R"({"role": "user", "content": "q"},)"
       R"({"role": "assistant", "content": "", "tool_calls": [{"name": "get_weather", "id": "c1"}]},)"
       R"({"tool_call_id": "c1", "content": "rain", "role": "tool", "is_error": false}]})",
       R"({"text": "", "tool_calls": [{"arguments": "{}", "name": "get_weather"}]})",
       R"(, "chunks": [{"text": "{", "tool": 0, "name": "get_weather"}, {"tool": 0, "text": "}"}])");
  cassette_engine replay{replay_from(path)};
  chat_request r;
  r.messages = {{role::user, "q"},
                {.role = role::assistant, .content = "", .tool_calls = {{"c1", "get_weather", ""}}},
                {.role = role::tool, .content = "rain", .tool_call_id = "c1"}};
  r.tools = std::make_shared<const std::vector<covenant::tool_spec>>(
      std::vector<covenant::tool_spec>{{.name = "get_weather", .description = "", .parameters = nullptr}});
  auto c = run(replay, streamed(r));
  ASSERT_TRUE(c->ok()) << c->error().what();
  EXPECT_THAT(c->reply().tool_calls, ElementsAre(covenant::tool_call{"", "get_weather", "{}"}));
  EXPECT_THAT(c->pieces(), ElementsAre(piece{0, "get_weather", "{"}, piece{0, "", "}"}));
}

TEST(Cassette, RedactedStringsInToolFieldsNeverReachTheFile) {
  const std::string path = temp_path();
  const std::string secret = "s3cr3t-token";
  auto secret_tools = [&] {
    auto params = std::make_shared<const json::value>(json::parse(R"({"type": "object", "description": "s3cr3t-token"})"));
    return std::make_shared<const std::vector<covenant::tool_spec>>(
        std::vector<covenant::tool_spec>{{"lookup", "Uses s3cr3t-token.", params}});
  };
  auto request = [&](const std::vector<covenant::tool_call>& calls) {
    chat_request r = ask("Look it up.");
    r.tools = secret_tools();
    if (!calls.empty()) {
      r.messages.push_back({.role = role::assistant, .content = "", .tool_calls = calls});
      r.messages.push_back({.role = role::tool, .content = "found s3cr3t-token", .tool_call_id = calls[0].id});
    }
    return r;
  };
  std::vector<covenant::tool_call> calls;
  {
    scripted_engine model{step::calls({{.id = "id-s3cr3t-token", .name = "lookup", .arguments = R"({"key": "s3cr3t-token"})"}}),
                          "done"};
    model.stream_in_chunks(3);
    cassette_engine tape{{.path = path, .mode = cassette_mode::record, .redact = {secret}}, model};
    auto c = run(tape, streamed(request({})));
    ASSERT_TRUE(c->ok()) << c->error().what();
    calls = c->reply().tool_calls;
    EXPECT_EQ(calls[0].arguments, R"({"key": "s3cr3t-token"})");  // the caller gets the real reply
    EXPECT_EQ(tape.complete(request(calls)).text, "done");
  }
  const std::string file = read_file(path);
  EXPECT_EQ(file.find(secret), std::string::npos) << file;
  EXPECT_NE(file.find(R"({\"key\": \"[redacted]\"})"), std::string::npos) << file;  // also across pieces
  // Replaying with the same redact list matches the redacted request.
  cassette_engine replay{{.path = path, .mode = cassette_mode::replay, .redact = {secret}}};
  const chat_response first = replay.complete(request({}));
  EXPECT_EQ(first.tool_calls[0].arguments, R"({"key": "[redacted]"})");
  EXPECT_EQ(replay.complete(request(calls)).text, "done");
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
