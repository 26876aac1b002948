// What calls cost: the usage each dialect reports (cached input, cache writes, reasoning) read
// from a loopback server, whole and streamed; price tables (files, patterns, the arithmetic); and
// the cost a contract puts in each attempt and in the outcome.
#include <covenant/contract/batch.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/engine/cassette.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/engine/prices.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <mutex>
#include <set>
#include <fstream>
#include <string>
#include <vector>

#include "anthropic_replies.hpp"
#include "loopback_engine.hpp"
#include "loopback_server.hpp"
#include "qa_model.hpp"

namespace {

using namespace std::chrono_literals;
using namespace covenant_test::qa;
using covenant::price_table;
using covenant::token_price;
using covenant::usage;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;
using ::testing::HasSubstr;
namespace json = boost::json;

const std::string answer_json = R"({"answer": "Paris", "confidence": 0.9})";

response_plan whole(std::string body) { return covenant_test::whole_reply(std::move(body)); }
response_plan streamed(std::vector<std::string> events) { return covenant_test::streamed_reply(std::move(events)); }

covenant::http_engine_options openai_options(const loopback_server& s) {
  return covenant_test::loopback_engine_options(s, covenant::provider::openai, "gpt-test");
}
covenant::http_engine_options anthropic_options(const loopback_server& s) {
  return covenant_test::loopback_engine_options(s, covenant::provider::anthropic, "claude-test");
}

covenant::chat_request request(bool stream) {
  covenant::chat_request r;
  r.messages = {{covenant::role::user, "Capital of France?"}};
  r.mode = covenant::output_mode::prompt;
  r.stream = stream;
  return r;
}

// The usage object of an OpenAI reply that used the prompt cache and a reasoning model.
const char* const openai_usage =
    R"({"prompt_tokens":1000,"completion_tokens":300,"total_tokens":1300,
        "prompt_tokens_details":{"cached_tokens":800,"audio_tokens":0},
        "completion_tokens_details":{"reasoning_tokens":200,"audio_tokens":0}})";

std::string openai_body() {
  json::object o;
  o["id"] = "chatcmpl-1";
  o["object"] = "chat.completion";
  o["model"] = "o3-mini-2025-01-31";
  o["choices"] = json::array{json::object{{"index", 0},
                                          {"message", json::object{{"role", "assistant"}, {"content", answer_json}}},
                                          {"finish_reason", "stop"}}};
  o["usage"] = json::parse(openai_usage);
  return json::serialize(o);
}

std::vector<std::string> openai_events() {
  auto chunk = [](const std::string& delta, const std::string& rest) {
    return "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"o3-mini-2025-01-31\",\"choices\":[" +
           delta + "]" + rest + "}\n\n";
  };
  return {chunk(R"({"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null})", ""),
          chunk(R"({"index":0,"delta":{"content":)" + json::serialize(json::string(answer_json)) +
                    R"(},"finish_reason":null})",
                ""),
          chunk(R"({"index":0,"delta":{},"finish_reason":"stop"})", ""),
          chunk("", ",\"usage\":" + json::serialize(json::parse(openai_usage))),  // (one line: SSE data)
          "data: [DONE]\n\n"};
}

TEST(ReportedUsage, OpenAiCachedAndReasoningTokensAreKeptApartWholeAndStreamed) {
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "whole");
    loopback_server server([&](const received_request&, std::size_t) {
      return stream ? streamed(openai_events()) : whole(openai_body());
    });
    covenant::http_engine engine(openai_options(server));
    const covenant::chat_response r = engine.complete(request(stream));
    EXPECT_EQ(r.text, answer_json);
    EXPECT_EQ(r.model, "o3-mini-2025-01-31");
    EXPECT_EQ(r.usage, (usage{1000, 300, 800, 0, 200}));
  }
}

TEST(ReportedUsage, OpenAiResponsesSpellingIsReadToo) {
  loopback_server server([](const received_request&, std::size_t) {
    json::value body = json::parse(openai_body());
    body.as_object()["usage"] = json::parse(
        R"({"input_tokens":50,"output_tokens":9,"input_tokens_details":{"cached_tokens":20},
            "output_tokens_details":{"reasoning_tokens":4}})");
    return whole(json::serialize(body));
  });
  covenant::http_engine engine(openai_options(server));
  EXPECT_EQ(engine.complete(request(false)).usage, (usage{50, 9, 20, 0, 4}));
}

// Anthropic's input_tokens leaves out the cached input and the cache writes; covenant's counts all.
TEST(ReportedUsage, AnthropicCacheReadsAndWritesArePartsOfTheInputWholeAndStreamed) {
  const std::string usage_json =
      R"({"input_tokens":200,"cache_read_input_tokens":800,"cache_creation_input_tokens":100,"output_tokens":50})";
  for (const bool stream : {false, true}) {
    SCOPED_TRACE(stream ? "streamed" : "whole");
    loopback_server server([&](const received_request&, std::size_t) {
      if (!stream) {
        json::value m = json::parse(covenant_test::anthropic_message(answer_json, 1, 1));
        m.as_object()["usage"] = json::parse(usage_json);
        return whole(json::serialize(m));
      }
      std::vector<std::string> events = covenant_test::anthropic_stream({answer_json}, false);
      // message_start reports the input (and the first output token); message_delta the output so far.
      for (std::string& e : events) {
        if (e.find("message_start") != std::string::npos) {
          const std::size_t data = e.find("data: ") + 6;
          json::value v = json::parse(std::string_view(e).substr(data));
          json::object u = json::parse(usage_json).as_object();
          u["output_tokens"] = 1;
          v.at("message").as_object()["usage"] = u;
          e = e.substr(0, data) + json::serialize(v) + "\n\n";
        } else if (e.find("message_delta") != std::string::npos) {
          const std::size_t data = e.find("data: ") + 6;
          json::value v = json::parse(std::string_view(e).substr(data));
          v.as_object()["usage"] = json::object{{"output_tokens", 50}};
          e = e.substr(0, data) + json::serialize(v) + "\n\n";
        }
      }
      return streamed(std::move(events));
    });
    covenant::http_engine engine(anthropic_options(server));
    const covenant::chat_response r = engine.complete(request(stream));
    EXPECT_EQ(json::parse(r.text), json::parse(answer_json));
    EXPECT_EQ(r.usage, (usage{1100, 50, 800, 100, 0}));
  }
}

TEST(ReportedUsage, AServerThatNamesNoModelIsTakenToHaveUsedTheOneAskedFor) {
  loopback_server server([](const received_request&, std::size_t) {
    json::value body = json::parse(openai_body());
    body.as_object().erase("model");
    return whole(json::serialize(body));
  });
  covenant::http_engine engine(openai_options(server));
  EXPECT_EQ(engine.complete(request(false)).model, "gpt-test");
}

// ---------------------------------------------------------------------------------------------
// Prices

TEST(Prices, CostCountsEachPartAtItsOwnPriceAndDefaultsToItsWhole) {
  const token_price p{2.0, 8.0, 0.5, 2.5, std::nullopt};
  // 1000 input of which 800 cached and 100 written, 300 output of which 200 reasoning (at output).
  const usage u{1000, 300, 800, 100, 200};
  EXPECT_DOUBLE_EQ(covenant::cost_of(u, p), (100 * 2.0 + 800 * 0.5 + 100 * 2.5 + 300 * 8.0) / 1e6);
  // without part prices, every part at its whole's price
  EXPECT_DOUBLE_EQ(covenant::cost_of(u, token_price{2.0, 8.0}), (1000 * 2.0 + 300 * 8.0) / 1e6);
  EXPECT_DOUBLE_EQ(covenant::cost_of(usage{}, p), 0.0);
}

TEST(Prices, APartLargerThanItsWholeCountsAsTheWhole) {
  const token_price p{1.0, 4.0, 0.25, 3.0, 10.0};
  // a server that reports more cached tokens than input, and more reasoning than output
  EXPECT_DOUBLE_EQ(covenant::cost_of(usage{100, 10, 500, 50, 99}, p), (100 * 0.25 + 10 * 10.0) / 1e6);
}

TEST(Prices, AnExactNameWinsThenTheMostSpecificPattern) {
  price_table t;
  t.set("*", token_price{9, 9});
  t.set("gpt-4o*", token_price{2.5, 10});
  t.set("gpt-4o-mini*", token_price{0.15, 0.6});
  t.set("gpt-4o-mini-2024-07-18", token_price{0.1, 0.5});
  ASSERT_NE(t.find("gpt-4o-mini-2024-07-18"), nullptr);
  EXPECT_EQ(t.find("gpt-4o-mini-2024-07-18")->input, 0.1);
  EXPECT_EQ(t.find("gpt-4o-mini-2025-01-01")->input, 0.15);
  EXPECT_EQ(t.find("gpt-4o-2024-08-06")->input, 2.5);
  EXPECT_EQ(t.find("claude-x")->input, 9);
  t.set("gpt-4o*", token_price{3, 12});  // set again: replaced, not added
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.find("gpt-4o")->input, 3);
}

TEST(Prices, AModelWithoutAPriceHasNoCostNotAZeroOne) {
  price_table t;
  t.set("claude-*-4*", token_price{3, 15});
  EXPECT_EQ(t.find("gpt-4o"), nullptr);
  EXPECT_FALSE(t.cost("gpt-4o", usage{10, 10}).has_value());
  EXPECT_TRUE(t.find("claude-sonnet-4-5") != nullptr);
  EXPECT_FALSE(t.find("claude-sonnet-3") != nullptr);
  EXPECT_DOUBLE_EQ(*t.cost("claude-opus-4", usage{1'000'000, 0}), 3.0);
}

TEST(Prices, AFileIsReadWithItsDate) {
  const price_table t = price_table::parse(R"({
    "taken": "2026-11-01",
    "source": "the providers' price pages",
    "models": {
      "gpt-4o-mini*": {"input": 0.15, "cached_input": 0.075, "output": 0.6},
      "claude-sonnet-4*": {"input": 3, "cached_input": 0.3, "cache_write": 3.75, "output": 15}
    }})");
  EXPECT_EQ(t.taken(), "2026-11-01");
  EXPECT_EQ(t.size(), 2u);
  ASSERT_NE(t.find("claude-sonnet-4-5"), nullptr);
  EXPECT_EQ(*t.find("claude-sonnet-4-5"), (token_price{3, 15, 0.3, 3.75, std::nullopt}));
}

TEST(Prices, EveryIssueOfABadFileIsReportedAtOnceWithItsPath) {
  const covenant::price_table_result r = price_table::try_parse(R"({
    "taken": "last week",
    "models": {
      "gpt-4o": {"input": -1, "output": 10, "cached": 1.25},
      "": {"input": 1, "output": 1},
      "o3": {"output": 8}
    }})");
  ASSERT_FALSE(r.ok());
  std::vector<std::string> seen;
  for (const covenant::issue& i : r.issues) seen.push_back(i.to_string());
  EXPECT_THAT(seen, ::testing::UnorderedElementsAre(HasSubstr("taken"), HasSubstr("models.gpt-4o.input: must be >= 0"),
                                                    HasSubstr("models.gpt-4o.cached: unknown field"),
                                                    HasSubstr("models.o3.input: required field is missing")));
  // an empty name is reported once the rest reads
  const covenant::price_table_result empty =
      price_table::try_parse(R"({"taken": "2026-11-01", "models": {"": {"input": 1, "output": 1}}})");
  ASSERT_EQ(empty.issues.size(), 1u);
  EXPECT_THAT(empty.issues[0].to_string(), HasSubstr("must not be empty"));
  try {
    (void)price_table::parse(R"({"models": {}})", "prices.json");
    FAIL() << "a file without a date or a price was read";
  } catch (const covenant::price_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("prices.json: 2 issues"));
    EXPECT_EQ(e.issues().size(), 2u);
  }
}

TEST(Prices, AFileThatCannotBeReadIsAnIssueNotACrash) {
  const covenant::price_table_result r = price_table::try_load("/nonexistent/prices.json");
  ASSERT_EQ(r.issues.size(), 1u);
  EXPECT_THAT(r.issues[0].message, HasSubstr("/nonexistent/prices.json"));
  EXPECT_THROW((void)price_table::load("/nonexistent/prices.json"), covenant::price_error);
  const auto dir = std::filesystem::temp_directory_path() / "covenant_cost_test_prices.json";
  {
    std::ofstream out(dir);
    out << R"({"taken": "2026-11-01", "models": {"m": {"input": 1, "output": 2}}})";
  }
  EXPECT_EQ(price_table::load(dir).find("m")->output, 2);
  std::filesystem::remove(dir);
}

// ---------------------------------------------------------------------------------------------
// Cost in the outcome

std::shared_ptr<const price_table> scripted_prices() {
  auto t = std::make_shared<price_table>();
  t->set("scripted", token_price{1.0, 2.0});  // the scripted engine's replies name this model
  return t;
}

TEST(CallCost, EachAttemptIsPricedAndTheOutcomeSumsThem) {
  covenant::testing::scripted_engine model{
      covenant::testing::step(R"({"answer": "", "confidence": 0.9})", usage{1000, 100}),
      covenant::testing::step(answer_json, usage{2000, 50})};
  covenant::contract_options o = covenant::testing::instant({.tries = 2});
  o.prices = scripted_prices();
  const covenant::contract<QA> qa{model, o};
  const auto [value, outcome] = qa.run(Question{"Capital?"});
  ASSERT_TRUE(outcome.success);
  ASSERT_EQ(outcome.attempts.size(), 2u);
  EXPECT_EQ(outcome.attempts[0].model, "scripted");
  EXPECT_DOUBLE_EQ(*outcome.attempts[0].cost_usd, (1000 * 1.0 + 100 * 2.0) / 1e6);
  EXPECT_DOUBLE_EQ(*outcome.attempts[1].cost_usd, (2000 * 1.0 + 50 * 2.0) / 1e6);
  EXPECT_DOUBLE_EQ(*outcome.cost_usd, *outcome.attempts[0].cost_usd + *outcome.attempts[1].cost_usd);
}

TEST(CallCost, UnknownWithoutPricesOrWhenAModelHasNone) {
  {
    covenant::testing::scripted_engine model{covenant::testing::step(answer_json, usage{10, 10})};
    const covenant::contract<QA> qa{model, covenant::testing::instant()};
    const auto outcome = qa.run(Question{"Capital?"}).outcome;
    EXPECT_FALSE(outcome.cost_usd.has_value());
    EXPECT_FALSE(outcome.attempts.at(0).cost_usd.has_value());
  }
  covenant::testing::scripted_engine model{covenant::testing::step(answer_json, usage{10, 10})};
  covenant::contract_options o = covenant::testing::instant();
  auto other = std::make_shared<price_table>();
  other->set("gpt-4o", token_price{1, 1});
  o.prices = other;
  const covenant::contract<QA> qa{model, o};
  const auto outcome = qa.run(Question{"Capital?"}).outcome;
  ASSERT_TRUE(outcome.success);
  EXPECT_FALSE(outcome.attempts.at(0).cost_usd.has_value());
  EXPECT_FALSE(outcome.cost_usd.has_value());  // never shown as 0
}

TEST(CallCost, AnAttemptTheEngineFailedCostsNothingReported) {
  covenant::testing::scripted_engine model{covenant::testing::step::failure("quota", 429)};
  covenant::contract_options o = covenant::testing::instant();
  o.prices = scripted_prices();
  const covenant::contract<QA> qa{model, o};
  const auto outcome = qa.run(Question{"Capital?"}).outcome;
  ASSERT_FALSE(outcome.success);
  ASSERT_EQ(outcome.attempts.size(), 1u);
  EXPECT_EQ(outcome.attempts[0].cost_usd, 0.0);
  EXPECT_EQ(outcome.cost_usd, 0.0);
}

// The real path: an HTTP engine, a server reporting its model and usage, the contract pricing it.
TEST(CallCost, AContractOverTheHttpEnginePricesWhatTheServerReports) {
  loopback_server server([](const received_request&, std::size_t) { return whole(openai_body()); });
  covenant::http_engine engine(openai_options(server));
  auto prices = std::make_shared<price_table>();
  prices->set("o3-mini*", token_price{1.1, 4.4, 0.55, std::nullopt, std::nullopt});
  covenant::contract_options o = covenant::testing::instant();
  o.prices = prices;
  const covenant::contract<QA> qa{engine, o};
  const auto outcome = qa.run(Question{"Capital?"}).outcome;
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(outcome.usage, (usage{1000, 300, 800, 0, 200}));
  EXPECT_DOUBLE_EQ(*outcome.cost_usd, (200 * 1.1 + 800 * 0.55 + 300 * 4.4) / 1e6);
}

}  // namespace

namespace {

TEST(Prices, TheExampleFileReadsAndPricesTheModelsItNames) {
  const price_table t = price_table::load(std::string(COVENANT_SOURCE_DIR) + "/examples/prices.json");
  EXPECT_FALSE(t.taken().empty());
  for (const char* model : {"gpt-4o-mini-2024-07-18", "gpt-4o-2024-08-06", "o3-mini-2025-01-31", "claude-sonnet-4-20250514",
                            "claude-opus-4-1-20250805", "claude-3-5-haiku-20241022"}) {
    SCOPED_TRACE(model);
    const token_price* p = t.find(model);
    ASSERT_NE(p, nullptr);
    EXPECT_GT(p->input, 0);
    EXPECT_GT(p->output, p->input);
    ASSERT_TRUE(p->cached_input.has_value());
    EXPECT_LT(*p->cached_input, p->input);  // a cache hit costs less: the point of the prompt cache
  }
}

}  // namespace


namespace {

TEST(ReportedUsage, ACassetteKeepsThePricedPartsAndReplaysThem) {
  const auto file = std::filesystem::temp_directory_path() / "covenant_cost_test_cassette.jsonl";
  std::filesystem::remove(file);
  covenant::testing::scripted_engine inner{
      covenant::testing::step(answer_json, usage{1000, 300, 800, 100, 200}),
      covenant::testing::step(answer_json, usage{10, 5})};
  {
    covenant::cassette_engine rec{{.path = file, .mode = covenant::cassette_mode::record}, inner};
    EXPECT_EQ(rec.complete(request(false)).usage, (usage{1000, 300, 800, 100, 200}));
    covenant::chat_request second = request(false);
    second.messages.back().content = "again";
    (void)rec.complete(second);
  }
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr(R"("cached_input_tokens":800,"cache_write_tokens":100,"reasoning_tokens":200)"));
  EXPECT_EQ(text.find(R"("cached_input_tokens":0)"), std::string::npos);  // parts of 0 are not written
  covenant::cassette_engine play{{.path = file, .mode = covenant::cassette_mode::replay}};
  EXPECT_EQ(play.complete(request(false)).usage, (usage{1000, 300, 800, 100, 200}));
  std::filesystem::remove(file);
}

}  // namespace

namespace {

// ---------------------------------------------------------------------------------------------
// Budgets of one call

// A server that always answers with an empty answer (rejected), 1000 tokens in and 100 out.
loopback_server rejecting_server() {
  return loopback_server([](const received_request&, std::size_t) {
    return whole(covenant_test::openai_completion(R"({"answer": "", "confidence": 0.9})", 1000, 100));
  });
}

TEST(CallBudget, ATokenCapEndsTheRemedyLoopBeforeTheAttemptThatWouldPassIt) {
  loopback_server server = rejecting_server();
  covenant::http_engine engine(openai_options(server));
  covenant::contract_options o = covenant::testing::instant({.tries = 5});
  o.budget.max_tokens = 2500;  // two attempts (2200) fit; a third (about 1100 more) would not
  const covenant::contract<QA> qa{engine, o};
  const auto [value, outcome] = qa.run(Question{"Capital?"});
  EXPECT_FALSE(outcome.success);
  EXPECT_EQ(outcome.reason, "budget");
  EXPECT_EQ(outcome.failed_stage, covenant::stage::validate);
  EXPECT_EQ(outcome.attempts.size(), 2u);
  EXPECT_EQ(server.requests(), 2u);
  EXPECT_EQ(outcome.usage.total(), 2200u);
  EXPECT_EQ(value.answer, "");  // forward ran, with the failed outcome
  EXPECT_THAT(outcome.summary(), HasSubstr("failed at validate (budget) after 2 model calls"));
}

TEST(CallBudget, ACostCapEndsTheRemedyLoopBeforeTheAttemptThatWouldPassIt) {
  loopback_server server = rejecting_server();
  covenant::http_engine engine(openai_options(server));
  auto prices = std::make_shared<price_table>();
  prices->set("loopback", token_price{1, 2});  // an attempt: 0.0012 dollars
  covenant::contract_options o = covenant::testing::instant({.tries = 5});
  o.prices = prices;
  o.budget.max_cost_usd = 0.003;
  const covenant::contract<QA> qa{engine, o};
  const auto outcome = qa.run(Question{"Capital?"}).outcome;
  EXPECT_EQ(outcome.reason, "budget");
  EXPECT_EQ(outcome.attempts.size(), 2u);
  EXPECT_DOUBLE_EQ(*outcome.cost_usd, 0.0024);
}

TEST(CallBudget, AnUnknownCostStopsTheAskingUnderACostCap) {
  loopback_server server = rejecting_server();
  covenant::http_engine engine(openai_options(server));
  auto prices = std::make_shared<price_table>();
  prices->set("gpt-4o", token_price{1, 2});  // the server's model, loopback, has none
  covenant::contract_options o = covenant::testing::instant({.tries = 5});
  o.prices = prices;
  o.budget.max_cost_usd = 10;
  const covenant::contract<QA> qa{engine, o};
  const auto outcome = qa.run(Question{"Capital?"}).outcome;
  EXPECT_EQ(outcome.reason, "budget");
  EXPECT_EQ(outcome.attempts.size(), 1u);
  EXPECT_FALSE(outcome.cost_usd.has_value());
}

TEST(CallBudget, WithinTheCapsTheRemedyLoopGoesOnAsUsual) {
  covenant::testing::scripted_engine model{
      covenant::testing::step(R"({"answer": "", "confidence": 0.9})", usage{1000, 100}),
      covenant::testing::step(R"({"answer": "", "confidence": 0.9})", usage{1000, 100}),
      covenant::testing::step(answer_json, usage{1000, 100})};
  covenant::contract_options o = covenant::testing::instant({.tries = 5});
  o.prices = scripted_prices();
  o.budget = {.max_tokens = 10'000, .max_cost_usd = 1.0};
  const covenant::contract<QA> qa{model, o};
  const auto outcome = qa.run(Question{"Capital?"}).outcome;
  EXPECT_TRUE(outcome.success);
  EXPECT_EQ(outcome.attempts.size(), 3u);
  EXPECT_TRUE(outcome.reason.empty());
}

TEST(CallBudget, ACapThatCannotWorkIsRefusedWhenTheContractIsMade) {
  covenant::testing::scripted_engine model{answer_json};
  covenant::contract_options no_prices = covenant::testing::instant();
  no_prices.budget.max_cost_usd = 1;
  EXPECT_THROW((covenant::contract<QA>{model, no_prices}), std::invalid_argument);
  covenant::contract_options negative = covenant::testing::instant();
  negative.prices = scripted_prices();
  negative.budget.max_cost_usd = -1;
  EXPECT_THROW((covenant::contract<QA>{model, negative}), std::invalid_argument);
  negative.budget.max_cost_usd = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW((covenant::contract<QA>{model, negative}), std::invalid_argument);
}

}  // namespace

namespace {

// ---------------------------------------------------------------------------------------------
// Budgets of a batch

loopback_server answering_server(std::chrono::milliseconds delay = 0ms) {
  return loopback_server([delay](const received_request&, std::size_t) {
    response_plan p = whole(covenant_test::openai_completion(answer_json, 1000, 100));  // 1100 tokens
    p.delay = delay;
    return p;
  });
}

std::vector<Question> questions(int n) { return std::vector<Question>(static_cast<std::size_t>(n), Question{"Capital?"}); }

TEST(BatchBudget, NoRecordStartsOnceTheTokensSpentReachTheCap) {
  loopback_server server = answering_server();
  covenant::http_engine engine(openai_options(server));
  const covenant::contract<QA> qa{engine, covenant::testing::instant()};
  std::size_t delivered = 0;
  const covenant::batch_progress summary = covenant::run_batch(
      qa, questions(10), [&](std::size_t, auto&&) { ++delivered; }, {.concurrency = 1, .max_tokens = 3000});
  EXPECT_TRUE(summary.budget_reached);
  EXPECT_TRUE(summary.stopped);
  EXPECT_EQ(summary.done, 3u);  // 2200 spent: a third starts; 3300: none more
  EXPECT_EQ(delivered, 3u);
  EXPECT_EQ(server.requests(), 3u);
  EXPECT_THAT(summary.line(), HasSubstr("budget reached"));
}

TEST(BatchBudget, TheCallsInFlightCountAndFinishWhenACostCapIsReached) {
  loopback_server server = answering_server(20ms);
  covenant::http_engine engine(openai_options(server));
  auto prices = std::make_shared<price_table>();
  prices->set("loopback", token_price{1, 2});  // a record: 0.0012 dollars
  covenant::contract_options o = covenant::testing::instant();
  o.prices = prices;
  const covenant::contract<QA> qa{engine, o};
  std::size_t delivered = 0;
  const covenant::batch_progress summary = covenant::run_batch(
      qa, questions(40), [&](std::size_t, auto&& r) { delivered += r.outcome.success ? 1 : 0; },
      {.concurrency = 4, .max_cost_usd = 0.006});
  EXPECT_TRUE(summary.budget_reached);
  // Every call started finished (none was cancelled), and none started once the spending of
  // those finished plus the expected spending of those in flight reached the cap.
  EXPECT_EQ(delivered, summary.done);
  EXPECT_EQ(server.requests(), summary.done);
  EXPECT_GE(summary.done, 2u);
  EXPECT_LE(summary.done, 8u);  // at most the cap's 5 records and the 3 others in flight
  EXPECT_LT(summary.cost_usd, 0.006 + 4 * 0.0012);
  EXPECT_EQ(summary.unpriced, 0u);
}

TEST(BatchBudget, AnUnknownCostReachesACostCapAndABadCapIsRefused) {
  loopback_server server = answering_server();
  covenant::http_engine engine(openai_options(server));
  const covenant::contract<QA> qa{engine, covenant::testing::instant()};  // no prices: costs unknown
  const covenant::batch_progress summary =
      covenant::run_batch(qa, questions(5), [](std::size_t, auto&&) {}, {.concurrency = 1, .max_cost_usd = 1});
  EXPECT_TRUE(summary.budget_reached);
  EXPECT_EQ(summary.done, 1u);
  EXPECT_THROW(covenant::run_batch(qa, questions(1), [](std::size_t, auto&&) {}, {.max_cost_usd = -1}),
               std::invalid_argument);
}

}  // namespace

namespace {

// ---------------------------------------------------------------------------------------------
// Prompt caching

/// A loopback server with a prefix cache as each provider reports it: the system prompt of a
/// request (for Anthropic, only when marked with cache_control) is "cached" once seen, and a later
/// request with the same system text reports its tokens (4 bytes a token) as read from the cache.
class caching_server {
 public:
  explicit caching_server(bool anthropic)
      : anthropic_(anthropic), server_([this](const received_request& r, std::size_t i) { return answer(r, i); }) {}
  loopback_server& server() { return server_; }
  std::vector<std::string> systems() {
    std::lock_guard lock(mutex_);
    return systems_;
  }

 private:
  response_plan answer(const received_request& r, std::size_t index) {
    const json::object body = json::parse(r.body).as_object();
    std::string system;
    bool marked = false;
    if (anthropic_) {
      const json::value& s = body.at("system");
      if (s.is_string()) {
        system = s.as_string();
      } else {
        system = s.at(0).at("text").as_string();
        marked = s.at(0).as_object().contains("cache_control");
      }
    } else {
      system = body.at("messages").at(0).at("content").as_string();
      marked = true;  // OpenAI caches a repeated prefix by itself
    }
    const std::uint64_t system_tokens = system.size() / 4;
    bool hit = false;
    bool written = false;
    {
      std::lock_guard lock(mutex_);
      systems_.push_back(system);
      if (marked) {
        hit = seen_.count(system) != 0;
        written = !hit;
        seen_.insert(system);
      }
    }
    // The second request is rejected: its remedy attempt must hit the cache too.
    const std::string reply = index == 1 ? R"({"answer": "", "confidence": 0.9})" : answer_json;
    const std::uint64_t total_in = system_tokens + 40;
    if (!anthropic_) {
      json::value v = json::parse(covenant_test::openai_completion(reply, static_cast<int>(total_in), 10));
      if (hit) v.at("usage").as_object()["prompt_tokens_details"] = json::object{{"cached_tokens", system_tokens}};
      return whole(json::serialize(v));
    }
    json::value m = json::parse(covenant_test::anthropic_tool_message("Answer", reply, 1, 10));
    json::object& u = m.at("usage").as_object();
    u["input_tokens"] = total_in - (hit || written ? system_tokens : 0);
    u["cache_read_input_tokens"] = hit ? system_tokens : 0;
    u["cache_creation_input_tokens"] = written ? system_tokens : 0;
    return whole(json::serialize(m));
  }

  bool anthropic_;
  std::mutex mutex_;
  std::vector<std::string> systems_;
  std::set<std::string> seen_;
  loopback_server server_;
};

TEST(PromptCache, TheSystemPromptIsTheSameForEveryRecordAndAttemptSoTheProvidersCacheHits) {
  for (const bool anthropic : {false, true}) {
    SCOPED_TRACE(anthropic ? "anthropic" : "openai");
    caching_server cache(anthropic);
    covenant::http_engine_options eo = anthropic ? anthropic_options(cache.server()) : openai_options(cache.server());
    eo.cache_system_prompt = true;
    covenant::http_engine engine(eo);
    const covenant::contract<QA> qa{engine, covenant::testing::instant()};
    std::vector<Question> records;
    for (int i = 0; i < 6; ++i) records.push_back(Question{"Capital of country " + std::to_string(i) + "?"});
    const covenant::batch_progress summary =
        covenant::run_batch(qa, records, [](std::size_t, auto&&) {}, {.concurrency = 1});
    ASSERT_EQ(summary.succeeded, 6u);
    const std::vector<std::string> systems = cache.systems();
    ASSERT_EQ(systems.size(), 7u);  // six records, one of them asked twice
    for (const std::string& s : systems) EXPECT_EQ(s, systems.front());  // byte for byte
    // Every request after the first read the system prompt from the cache.
    const std::uint64_t system_tokens = systems.front().size() / 4;
    EXPECT_GT(system_tokens, 50u);
    EXPECT_EQ(summary.cached_tokens_in, 6 * system_tokens);
    EXPECT_EQ(summary.tokens_in, 7 * (system_tokens + 40));
    EXPECT_THAT(summary.line(), HasSubstr("% cached)"));
  }
}

TEST(PromptCache, WithoutTheOptionAnthropicsSystemPromptIsAPlainStringAndNothingIsCached) {
  caching_server cache(true);
  covenant::http_engine engine(anthropic_options(cache.server()));
  const covenant::contract<QA> qa{engine, covenant::testing::instant()};
  std::uint64_t cached = 0;
  for (int i = 0; i < 4; ++i) {  // the same system prompt four times (one call asked twice)
    const auto outcome = qa.run(Question{"Capital?"}).outcome;
    ASSERT_TRUE(outcome.success) << outcome.summary();
    cached += outcome.usage.cached_input_tokens;
  }
  ASSERT_EQ(cache.server().requests(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_TRUE(json::parse(cache.server().request(i).body).at("system").is_string());
  EXPECT_EQ(cached, 0u);  // unmarked: the server cached nothing
}

}  // namespace
