// The response cache (covenant/engine/response_cache.hpp): hits and misses, whole and streamed, a
// remedy conversation replayed, tools and tool calls, scopes, maximum age and size, and a cache
// that is corrupted or locked by another connection degrading to a miss without failing the call. Many processes at
// once: tests/cli/cli_run_test.cpp (two `covenant run --cache` at the same time).
#include <covenant/contract/contract.hpp>
#include <covenant/engine/cassette.hpp>
#include <covenant/engine/prices.hpp>
#include <covenant/engine/response_cache.hpp>
#include <covenant/telemetry/metrics.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sqlite3.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "qa_model.hpp"

namespace {

namespace fs = std::filesystem;
using namespace covenant_test::qa;
using covenant::cached_engine;
using covenant::chat_request;
using covenant::testing::scripted_engine;
using covenant::testing::step;
using covenant::tool_call;
using covenant::tool_spec;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::string answer_json = R"({"answer": "Paris", "confidence": 0.9})";

/// A tools list with one tool: `name`, described by `description`, taking a city.
std::shared_ptr<const std::vector<tool_spec>> tools(const std::string& name = "get_weather",
                                                     const std::string& description = "The weather in a city.") {
  auto city = std::make_shared<const boost::json::value>(
      boost::json::parse(R"({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})"));
  return std::make_shared<const std::vector<tool_spec>>(std::vector<tool_spec>{{name, description, city}});
}

class ResponseCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("covenant_cache_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  covenant::response_cache_options options(std::string scope = "test-model") const {
    return {.path = dir_ / "sub" / "responses.sqlite", .scope = std::move(scope)};
  }
  static chat_request request(const std::string& question, bool stream = false) {
    chat_request r;
    r.messages = {{covenant::role::system, "Answer."}, {covenant::role::user, question}};
    r.stream = stream;
    return r;
  }
  /// request(question, stream) offering `list`.
  static chat_request with_tools(const std::string& question,
                                 std::shared_ptr<const std::vector<tool_spec>> list = tools(), bool stream = false) {
    chat_request r = request(question, stream);
    r.tools = std::move(list);
    return r;
  }
  fs::path dir_;
};

/// An engine that answers every request with `answer_json` and counts its calls.
scripted_engine counting() {
  return scripted_engine([](const chat_request&, std::size_t) {
    covenant::chat_response r;
    r.text = answer_json;
    r.usage = {100, 10};
    r.model = "m";
    r.reasoning = "thinking";
    return r;
  });
}

TEST_F(ResponseCache, ARequestSeenBeforeIsAnsweredFromTheCacheAndCostsNothing) {
  scripted_engine inner = counting();
  cached_engine model(options(), inner);
  const covenant::chat_response first = model.complete(request("Capital of France?"));
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(first.usage.input_tokens, 100u);
  const covenant::chat_response again = model.complete(request("Capital of France?"));
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.text, answer_json);
  EXPECT_EQ(again.reasoning, "thinking");
  EXPECT_EQ(again.model, "m");
  EXPECT_EQ(again.usage, covenant::usage{});  // it cost nothing
  EXPECT_FALSE(model.complete(request("Capital of Spain?")).from_cache);
  EXPECT_EQ(inner.calls(), 2u);
  EXPECT_EQ(model.stats().hits, 1u);
  EXPECT_EQ(model.stats().misses, 2u);
  EXPECT_EQ(model.stats().stored, 2u);
  EXPECT_EQ(model.stats().errors, 0u);
  // another engine on the same file sees it; another scope does not
  cached_engine same(options(), inner);
  EXPECT_TRUE(same.complete(request("Capital of France?")).from_cache);
  cached_engine other(options("another-model"), inner);
  EXPECT_FALSE(other.complete(request("Capital of France?")).from_cache);
  EXPECT_EQ(inner.calls(), 3u);
}

TEST_F(ResponseCache, AScopeAndAPathAreRequired) {
  scripted_engine inner = counting();
  EXPECT_THROW(cached_engine({.path = dir_ / "r.sqlite"}, inner), std::invalid_argument);
  EXPECT_THROW(cached_engine({.scope = "m"}, inner), std::invalid_argument);
}

TEST_F(ResponseCache, AStreamedCallGetsTheCachedTextAsOnePieceThenTheReply) {
  scripted_engine inner = counting();
  cached_engine model(options(), inner);
  (void)model.complete(request("q"));
  struct collect final : covenant::reply_receiver {
    std::string text;
    std::optional<covenant::chat_response> reply;
    void on_text(std::string_view d) noexcept override { text += d; }
    void on_reply(covenant::chat_response r) noexcept override { reply = std::move(r); }
    void on_error(const covenant::engine_error&) noexcept override {}
  };
  auto r = std::make_shared<collect>();
  model.start(request("q", true), r, {});
  ASSERT_TRUE(r->reply.has_value());  // delivered at once, from inside start()
  EXPECT_TRUE(r->reply->from_cache);
  EXPECT_EQ(r->text, answer_json);
  EXPECT_EQ(inner.calls(), 1u);
}

TEST_F(ResponseCache, ARemedyConversationIsReplayedWholeAndItsCostIsZero) {
  scripted_engine inner{step(R"({"answer": "", "confidence": 0.9})", {100, 10}), step(answer_json, {120, 10})};
  cached_engine model(options(), inner);
  auto prices = std::make_shared<covenant::price_table>();
  prices->set("scripted", covenant::token_price{1, 2});
  auto m = std::make_shared<covenant::metrics>();
  covenant::contract_options o = covenant::testing::instant({.tries = 2});
  o.prices = prices;
  o.observers.push_back(m);
  const covenant::contract<QA> qa{model, o};
  const auto first = qa.run(Question{"Capital?"}).outcome;
  ASSERT_TRUE(first.success);
  ASSERT_EQ(first.attempts.size(), 2u);
  EXPECT_GT(*first.cost_usd, 0.0);
  const auto again = qa.run(Question{"Capital?"}).outcome;  // the inner engine has no step left
  ASSERT_TRUE(again.success) << again.summary();
  ASSERT_EQ(again.attempts.size(), 2u);
  EXPECT_TRUE(again.attempts[0].from_cache);
  EXPECT_TRUE(again.attempts[1].from_cache);
  EXPECT_EQ(again.cost_usd, 0.0);
  EXPECT_EQ(inner.calls(), 2u);
  EXPECT_THAT(m->render(), HasSubstr("covenant_response_cache_hits_total{contract=\"QA\"} 2"));
}

// ------------------------------------------------------------------------------------------------
// Tools and tool calls
// ------------------------------------------------------------------------------------------------

TEST_F(ResponseCache, RequestsDifferingOnlyInTheirToolsMissEachOther) {
  scripted_engine inner = counting();
  cached_engine model(options(), inner);
  EXPECT_FALSE(model.complete(request("Weather in Oslo?")).from_cache);
  EXPECT_FALSE(model.complete(with_tools("Weather in Oslo?")).from_cache);  // tools, none before
  EXPECT_FALSE(model.complete(with_tools("Weather in Oslo?", tools("get_forecast"))).from_cache);
  EXPECT_FALSE(model.complete(with_tools("Weather in Oslo?", tools("get_weather", "Today's weather."))).from_cache);
  auto kelvin = std::make_shared<const boost::json::value>(boost::json::parse(R"({"type": "object", "properties": {}})"));
  EXPECT_FALSE(
      model.complete(with_tools("Weather in Oslo?", std::make_shared<const std::vector<tool_spec>>(std::vector<tool_spec>{
                                                        {"get_weather", "The weather in a city.", kelvin}})))
          .from_cache);  // other parameters
  EXPECT_EQ(inner.calls(), 5u);
  // each of them is a hit now, an equal list built anew too; an empty list is no tools
  EXPECT_TRUE(model.complete(request("Weather in Oslo?")).from_cache);
  EXPECT_TRUE(model.complete(with_tools("Weather in Oslo?")).from_cache);
  EXPECT_TRUE(model.complete(with_tools("Weather in Oslo?", tools("get_forecast"))).from_cache);
  EXPECT_TRUE(model.complete(with_tools("Weather in Oslo?", std::make_shared<const std::vector<tool_spec>>())).from_cache);
  EXPECT_EQ(inner.calls(), 5u);
}

TEST_F(ResponseCache, RequestsDifferingOnlyInAToolCallOrResultMissEachOther) {
  scripted_engine inner = counting();
  cached_engine model(options(), inner);
  auto conversation = [](const std::string& arguments, const std::string& result, bool is_error) {
    chat_request r = with_tools("Weather in Oslo?");
    r.messages.push_back({.role = covenant::role::assistant, .content = "",
                          .tool_calls = {{"call_1", "get_weather", arguments}}});
    r.messages.push_back(
        {.role = covenant::role::tool, .content = result, .tool_call_id = "call_1", .is_error = is_error});
    return r;
  };
  EXPECT_FALSE(model.complete(conversation(R"({"city": "Oslo"})", "rain", false)).from_cache);
  EXPECT_FALSE(model.complete(conversation(R"({"city": "Oslo"})", "snow", false)).from_cache);
  EXPECT_FALSE(model.complete(conversation(R"({"city": "Oslo"})", "rain", true)).from_cache);
  EXPECT_FALSE(model.complete(conversation(R"({"city": "Bergen"})", "rain", false)).from_cache);
  EXPECT_TRUE(model.complete(conversation(R"({"city": "Oslo"})", "rain", false)).from_cache);
  EXPECT_EQ(inner.calls(), 4u);
}

TEST_F(ResponseCache, ACachedReplyGivesItsToolCallsBack) {
  scripted_engine inner{step::calls({{.id = "call_abc", .name = "get_weather", .arguments = R"({"city": "Oslo"})"},
                                     {.id = "", .name = "get_weather", .arguments = R"({"city": "Bergen"})"}},
                                    {80, 9})};
  cached_engine model(options(), inner);
  const covenant::chat_response first = model.complete(with_tools("Weather in Oslo and Bergen?"));
  ASSERT_EQ(first.tool_calls.size(), 2u);
  const covenant::chat_response again = model.complete(with_tools("Weather in Oslo and Bergen?"));
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.tool_calls, first.tool_calls);
  EXPECT_EQ(again.tool_calls[0].id, "call_abc");
  EXPECT_EQ(again.tool_calls[1].id, "call_0_1");
  EXPECT_EQ(again.finish_reason, "tool_calls");
  EXPECT_EQ(again.text, "");
  EXPECT_EQ(again.usage, covenant::usage{});

  // A streamed call gets each call's arguments as one piece, then the reply.
  struct collect final : covenant::reply_receiver {
    std::vector<std::string> pieces;
    std::optional<covenant::chat_response> reply;
    void on_text(std::string_view d) noexcept override { pieces.push_back("text " + std::string(d)); }
    void on_tool_text(std::size_t k, std::string_view name, std::string_view d) noexcept override {
      pieces.push_back(std::to_string(k) + " " + std::string(name) + " " + std::string(d));
    }
    void on_reply(covenant::chat_response r) noexcept override { reply = std::move(r); }
    void on_error(const covenant::engine_error&) noexcept override {}
  };
  auto r = std::make_shared<collect>();
  model.start(with_tools("Weather in Oslo and Bergen?", tools(), true), r, {});
  ASSERT_TRUE(r->reply.has_value());
  EXPECT_TRUE(r->reply->from_cache);
  EXPECT_EQ(r->reply->tool_calls, first.tool_calls);
  EXPECT_THAT(r->pieces, ElementsAre(R"(0 get_weather {"city": "Oslo"})", R"(1 get_weather {"city": "Bergen"})"));
  EXPECT_EQ(inner.calls(), 1u);
}

TEST_F(ResponseCache, AStreamedReplyWithToolCallsIsForwardedInPiecesAndStored) {
  scripted_engine inner{step::calls({{.id = "", .name = "get_weather", .arguments = R"({"city": "Oslo"})"}})};
  inner.stream_in_chunks(5);
  cached_engine model(options(), inner);
  struct collect final : covenant::reply_receiver {
    std::mutex mutex;
    std::condition_variable cv;
    std::string arguments;
    std::optional<covenant::chat_response> reply;
    void on_tool_text(std::size_t, std::string_view, std::string_view d) noexcept override {
      std::lock_guard lock(mutex);
      arguments += d;
    }
    void on_reply(covenant::chat_response r) noexcept override {
      {
        std::lock_guard lock(mutex);
        reply = std::move(r);
      }
      cv.notify_all();
    }
    void on_error(const covenant::engine_error&) noexcept override {}
  };
  auto r = std::make_shared<collect>();
  model.start(with_tools("Weather?", tools(), true), r, {});
  {
    std::unique_lock lock(r->mutex);
    ASSERT_TRUE(r->cv.wait_for(lock, std::chrono::seconds(10), [&] { return r->reply.has_value(); }));
  }
  EXPECT_EQ(r->arguments, R"({"city": "Oslo"})");
  EXPECT_FALSE(r->reply->from_cache);
  const covenant::chat_response again = model.complete(with_tools("Weather?"));
  EXPECT_TRUE(again.from_cache);
  EXPECT_THAT(again.tool_calls, ElementsAre(tool_call{"call_0_0", "get_weather", R"({"city": "Oslo"})"}));
}

TEST_F(ResponseCache, AnEntryStoredBeforeToolCallsReadsAsAReplyWithout) {
  const covenant::response_cache_options o = options();
  {
    scripted_engine unused = counting();
    cached_engine create(o, unused);  // makes the file and its table
  }
  const std::string key = o.scope + "\n" + covenant::cassette_engine::normalized(request("q"));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(o.path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "INSERT INTO responses(key, created, response) VALUES (?1, strftime('%s','now'), ?2)",
                               -1, &s, nullptr),
            SQLITE_OK);
  const std::string old_value = R"({"text":"old","model":"m","finish_reason":"stop","mode":"json_schema"})";
  sqlite3_bind_text(s, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
  sqlite3_bind_text(s, 2, old_value.data(), static_cast<int>(old_value.size()), SQLITE_STATIC);
  ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
  // and one whose tool calls are malformed: unreadable, so a miss
  const std::string bad_key = o.scope + "\n" + covenant::cassette_engine::normalized(request("bad"));
  const std::string bad_value = R"({"text":"","tool_calls":[{"id":"x","name":7,"arguments":"{}"}]})";
  ASSERT_EQ(sqlite3_prepare_v2(db, "INSERT INTO responses(key, created, response) VALUES (?1, strftime('%s','now'), ?2)",
                               -1, &s, nullptr),
            SQLITE_OK);
  sqlite3_bind_text(s, 1, bad_key.data(), static_cast<int>(bad_key.size()), SQLITE_STATIC);
  sqlite3_bind_text(s, 2, bad_value.data(), static_cast<int>(bad_value.size()), SQLITE_STATIC);
  ASSERT_EQ(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
  sqlite3_close(db);

  scripted_engine inner = counting();
  cached_engine model(o, inner);
  const covenant::chat_response old = model.complete(request("q"));
  EXPECT_TRUE(old.from_cache);
  EXPECT_EQ(old.text, "old");
  EXPECT_THAT(old.tool_calls, IsEmpty());
  EXPECT_FALSE(model.complete(request("bad")).from_cache);
  EXPECT_EQ(inner.calls(), 1u);
}

TEST_F(ResponseCache, AnOldEntryIsAMissAndIsReplaced) {
  scripted_engine inner = counting();
  covenant::response_cache_options o = options();
  o.max_age = std::chrono::hours(1);
  {
    cached_engine model(o, inner);
    (void)model.complete(request("q"));
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(o.path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE responses SET created = created - 7200", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  cached_engine model(o, inner);
  EXPECT_FALSE(model.complete(request("q")).from_cache);  // two hours old
  EXPECT_TRUE(model.complete(request("q")).from_cache);   // stored afresh
  EXPECT_EQ(inner.calls(), 2u);
}

TEST_F(ResponseCache, PastItsSizeTheOldestEntriesGo) {
  scripted_engine inner([](const chat_request& r, std::size_t) {
    covenant::chat_response out;
    out.text = std::string(20'000, 'x') + r.messages.back().content;  // 20 KB a reply
    return out;
  });
  covenant::response_cache_options o = options();
  o.max_bytes = 512 * 1024;
  cached_engine model(o, inner);
  for (int i = 0; i < 200; ++i) (void)model.complete(request("q" + std::to_string(i)));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(o.path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*), sum(length(response)) FROM responses", -1, &s, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  const std::int64_t entries = sqlite3_column_int64(s, 0);
  const std::int64_t bytes = sqlite3_column_int64(s, 1);
  sqlite3_finalize(s);
  sqlite3_close(db);
  EXPECT_LT(entries, 200);
  EXPECT_GT(entries, 0);
  // trimmed every 32 writes: at most 32 replies past the limit
  EXPECT_LT(bytes, 512 * 1024 + 33 * 20'100);
  EXPECT_FALSE(model.complete(request("q0")).from_cache);   // the oldest went
  EXPECT_TRUE(model.complete(request("q199")).from_cache);  // the newest stayed
}

TEST_F(ResponseCache, ACorruptedFileNeverFailsACall) {
  fs::create_directories(options().path.parent_path());
  {
    std::ofstream out(options().path, std::ios::binary);
    out << std::string(8192, '\x5a');  // not a database
  }
  scripted_engine inner = counting();
  cached_engine model(options(), inner);
  EXPECT_EQ(model.complete(request("q")).text, answer_json);
  EXPECT_EQ(model.complete(request("q")).text, answer_json);
  EXPECT_EQ(inner.calls(), 2u);  // every call a miss
  EXPECT_GE(model.stats().errors, 1u);
  EXPECT_EQ(model.stats().hits, 0u);
  // a contract over it works as over the engine itself
  const covenant::contract<QA> qa{model, covenant::testing::instant()};
  EXPECT_TRUE(qa.run(Question{"q"}).outcome.success);
}

TEST_F(ResponseCache, ACacheLockedByAnotherWriterNeverFailsACall) {
  scripted_engine inner = counting();
  covenant::response_cache_options o = options();
  o.busy_timeout = std::chrono::milliseconds(20);
  cached_engine model(o, inner);
  (void)model.complete(request("stored before the lock"));
  // Another process holds the write lock (a long transaction).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(o.path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_TRUE(model.complete(request("stored before the lock")).from_cache);  // readers are not blocked (WAL)
  const covenant::chat_response r = model.complete(request("asked during the lock"));
  EXPECT_EQ(r.text, answer_json);  // answered by the engine; not stored
  EXPECT_FALSE(r.from_cache);
  EXPECT_EQ(model.stats().errors, 1u);
  EXPECT_FALSE(model.complete(request("asked during the lock")).from_cache);
  ASSERT_EQ(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  (void)model.complete(request("asked during the lock"));  // stored now
  EXPECT_TRUE(model.complete(request("asked during the lock")).from_cache);
  EXPECT_EQ(inner.calls(), 4u);
}

// A new cache file that another process holds locked (it is creating it) while the cache opens:
// switching to WAL waits for the lock, with real time, and the cache works once it is released.
// One call, nothing else in flight.
TEST_F(ResponseCache, OpeningWaitsForAnotherWritersLockUntilItIsReleased) {
  covenant::response_cache_options o = options();
  o.busy_timeout = std::chrono::milliseconds(5000);
  fs::create_directories(o.path.parent_path());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(o.path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE other(a INTEGER); BEGIN EXCLUSIVE; INSERT INTO other VALUES (1)", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  const auto held = std::chrono::milliseconds(150);
  std::thread releaser([&] {
    std::this_thread::sleep_for(held);
    sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  });
  scripted_engine inner = counting();
  const auto t0 = std::chrono::steady_clock::now();
  cached_engine model(o, inner);
  const auto waited = std::chrono::steady_clock::now() - t0;
  releaser.join();
  sqlite3_close(db);
  EXPECT_GE(waited, held / 2);  // it waited for the lock rather than giving up at once
  EXPECT_EQ(model.stats().errors, 0u);
  EXPECT_FALSE(model.complete(request("q")).from_cache);
  EXPECT_TRUE(model.complete(request("q")).from_cache);
  EXPECT_EQ(inner.calls(), 1u);
}

// The same lock held past the busy timeout: the cache gives up opening (an error, a warning) and
// every call goes to the engine, none fails.
TEST_F(ResponseCache, ALockHeldPastTheBusyTimeoutLeavesTheCacheOffAndCallsGoOn) {
  covenant::response_cache_options o = options();
  o.busy_timeout = std::chrono::milliseconds(50);
  fs::create_directories(o.path.parent_path());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(o.path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE other(a INTEGER); BEGIN EXCLUSIVE; INSERT INTO other VALUES (1)", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  scripted_engine inner = counting();
  const auto t0 = std::chrono::steady_clock::now();
  cached_engine model(o, inner);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, o.busy_timeout);  // it tried until the timeout
  EXPECT_EQ(model.stats().errors, 1u);
  for (int i = 0; i < 2; ++i) {
    const covenant::chat_response r = model.complete(request("q"));
    EXPECT_EQ(r.text, answer_json);
    EXPECT_FALSE(r.from_cache);
  }
  EXPECT_EQ(inner.calls(), 2u);
  ASSERT_EQ(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

}  // namespace
