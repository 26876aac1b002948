// Agents over HTTP: the loop against loopback servers speaking OpenAI Chat Completions and
// Anthropic Messages, whole and streamed: parallel tool calls, a pre() violation fed back and
// corrected, a throwing tool, a tool past its timeout, the step limit, malformed arguments read
// leniently, streamed tool arguments, and many agents at once.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/engine/logging.hpp>

#include "act_threads.hpp"
#include "loopback_engine.hpp"
#include "loopback_server.hpp"
#include "trip_planner.hpp"

namespace agent_http_test {

using covenant_test::live_act;
using covenant_test::live_acts;
using covenant_test::start_act_thread;

using covenant_test::trip::Advice;
using covenant_test::trip::Time;
using covenant_test::trip::TimeArgs;
using covenant_test::trip::Trip;
using covenant_test::trip::Weather;
using covenant_test::trip::WeatherArgs;

struct GetWeather {
  static constexpr std::string_view name = "get_weather";
  static constexpr std::string_view description = "The current weather of a city.";
  void pre(const WeatherArgs& a) const {
    if (a.city.empty()) throw covenant::violation("city", "must name a city");
  }
  Weather act(const WeatherArgs& a) const {
    const live_act live;
    if (a.city == "Atlantis") throw std::runtime_error("no station there");
    if (a.city == "Slowtown") std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return {a.city == "Paris" ? 21.5 : 3.0, "clear"};
  }
};
struct GetTime {
  static constexpr std::string_view name = "get_time";
  static constexpr std::string_view description = "The local time of a time zone.";
  static constexpr bool quick = true;
  Time act(const TimeArgs& a) const { return {a.zone == "Europe/Paris" ? "14:00" : "08:00"}; }
};
struct Planner {
  static constexpr std::string_view prompt = "Advise what to wear for the trip. Check the weather first.";
  covenant::toolset<GetWeather, GetTime> tools;
  Advice forward(const Trip&, const covenant::outcome<Advice>& o) const {
    return o.result.value_or(Advice{"(no advice)"});
  }
};

}  // namespace agent_http_test

namespace {

namespace json = boost::json;
using namespace agent_http_test;
using covenant::tool_status;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;
using ::testing::HasSubstr;

struct call {
  std::string id;
  std::string name;
  std::string arguments;  // as the model writes them (not always JSON)
};
/// One reply of the scripted model: tool calls, or the answer (a JSON object's text).
struct turn {
  std::vector<call> calls;
  std::string answer;
};

turn calls(std::vector<call> c) {
  turn t;
  t.calls = std::move(c);
  return t;
}
turn answers(std::string answer) {
  turn t;
  t.answer = std::move(answer);
  return t;
}

struct dialect {
  covenant::provider provider;
  bool stream;
  std::string name;
};

/// What a request carried back: each tool result's call id, text and error flag.
struct result_seen {
  std::string id;
  std::string content;
  bool error = false;
};

std::vector<result_seen> results_in(const received_request& r, covenant::provider p) {
  std::vector<result_seen> out;
  const json::value body = json::parse(r.body);
  for (const json::value& m : body.at("messages").as_array()) {
    const json::object& o = m.as_object();
    if (p == covenant::provider::openai) {
      if (o.at("role").as_string() != "tool") continue;
      out.push_back({std::string(o.at("tool_call_id").as_string()), std::string(o.at("content").as_string()), false});
      continue;
    }
    if (o.at("role").as_string() != "user" || !o.at("content").is_array()) continue;
    for (const json::value& b : o.at("content").as_array()) {
      const json::object& block = b.as_object();
      if (block.at("type").as_string() != "tool_result") continue;
      const json::value* err = block.if_contains("is_error");
      const json::value& content = block.at("content");
      out.push_back({std::string(block.at("tool_use_id").as_string()),
                     content.is_string() ? std::string(content.as_string()) : json::serialize(content),
                     err != nullptr && err->is_bool() && err->as_bool()});
    }
  }
  return out;
}

/// The answer tool's name: the request's tool that is not one of the agent's (Anthropic's
/// tools mode; empty when there is none).
std::string answer_tool(const received_request& r) {
  const json::value body = json::parse(r.body);
  const json::value* tools = body.as_object().if_contains("tools");
  if (tools == nullptr) return {};
  for (const json::value& t : tools->as_array()) {
    const json::object& o = t.as_object();
    const json::value& name = o.contains("function") ? o.at("function").at("name") : o.at("name");
    if (name.as_string() != "get_weather" && name.as_string() != "get_time") return std::string(name.as_string());
  }
  return {};
}

std::string sse(std::string_view event, const json::value& data) {
  std::string out;
  if (!event.empty()) out += "event: " + std::string(event) + "\n";
  out += "data: " + json::serialize(data) + "\n\n";
  return out;
}

/// Splits `s` into two pieces (arguments arrive in pieces).
std::vector<std::string> halves(const std::string& s) {
  if (s.size() < 2) return {s};
  return {s.substr(0, s.size() / 2), s.substr(s.size() / 2)};
}

response_plan openai_reply(const turn& t, bool stream) {
  if (!stream) {
    json::object message{{"role", "assistant"}};
    if (t.calls.empty()) {
      message["content"] = t.answer;
    } else {
      message["content"] = nullptr;
      json::array calls;
      for (const call& c : t.calls)
        calls.push_back(json::object{{"id", c.id},
                                     {"type", "function"},
                                     {"function", json::object{{"name", c.name}, {"arguments", c.arguments}}}});
      message["tool_calls"] = std::move(calls);
    }
    json::object body{{"id", "chatcmpl-1"},
                      {"object", "chat.completion"},
                      {"model", "loopback"},
                      {"choices", json::array{json::object{{"index", 0},
                                                           {"message", std::move(message)},
                                                           {"finish_reason", t.calls.empty() ? "stop" : "tool_calls"}}}},
                      {"usage", json::object{{"prompt_tokens", 40}, {"completion_tokens", 8}}}};
    return covenant_test::whole_reply(json::serialize(body));
  }
  auto chunk = [](json::object delta, json::value finish = nullptr) {
    return sse("", json::object{{"id", "c"},
                                {"model", "loopback"},
                                {"choices", json::array{json::object{{"index", 0},
                                                                     {"delta", std::move(delta)},
                                                                     {"finish_reason", std::move(finish)}}}}});
  };
  std::vector<std::string> events{chunk(json::object{{"role", "assistant"}})};
  if (t.calls.empty()) {
    for (const std::string& piece : halves(t.answer)) events.push_back(chunk(json::object{{"content", piece}}));
  } else {
    for (std::size_t k = 0; k < t.calls.size(); ++k)
      events.push_back(chunk(json::object{
          {"tool_calls", json::array{json::object{{"index", k},
                                                  {"id", t.calls[k].id},
                                                  {"type", "function"},
                                                  {"function", json::object{{"name", t.calls[k].name}, {"arguments", ""}}}}}}}));
    // The calls' arguments interleaved, piece by piece.
    for (std::size_t piece = 0; piece < 2; ++piece)
      for (std::size_t k = 0; k < t.calls.size(); ++k) {
        const auto parts = halves(t.calls[k].arguments);
        if (piece >= parts.size()) continue;
        events.push_back(chunk(json::object{{"tool_calls", json::array{json::object{
                                                               {"index", k},
                                                               {"function", json::object{{"arguments", parts[piece]}}}}}}}));
      }
  }
  events.push_back(chunk(json::object{}, json::value(t.calls.empty() ? "stop" : "tool_calls")));
  events.push_back(sse("", json::object{{"id", "c"},
                                        {"choices", json::array{}},
                                        {"usage", json::object{{"prompt_tokens", 40}, {"completion_tokens", 8}}}}));
  events.emplace_back("data: [DONE]\n\n");
  return covenant_test::streamed_reply(std::move(events));
}

/// A tool_use block's input: the arguments' JSON, or (text that is not JSON) the text as a JSON
/// string, as a server that double-encodes would send it.
json::value tool_input(const std::string& arguments) {
  boost::system::error_code ec;
  json::value v = json::parse(arguments, ec);
  if (ec) return json::value(arguments);
  return v;
}

response_plan anthropic_reply(const turn& t, bool stream, const std::string& answer_name) {
  std::vector<call> blocks = t.calls;
  if (t.calls.empty()) blocks.push_back({"toolu_answer", answer_name, t.answer});
  if (!stream) {
    json::array content;
    for (const call& c : blocks)
      content.push_back(json::object{{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", tool_input(c.arguments)}});
    json::object body{{"id", "msg_1"},
                      {"type", "message"},
                      {"role", "assistant"},
                      {"model", "loopback"},
                      {"content", std::move(content)},
                      {"stop_reason", "tool_use"},
                      {"usage", json::object{{"input_tokens", 40}, {"output_tokens", 8}}}};
    return covenant_test::whole_reply(json::serialize(body));
  }
  std::vector<std::string> events{sse("message_start", json::object{{"type", "message_start"},
                                                                    {"message", json::object{{"model", "loopback"},
                                                                                             {"usage", json::object{{"input_tokens", 40}}}}}})};
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    events.push_back(sse("content_block_start",
                         json::object{{"type", "content_block_start"},
                                      {"index", k},
                                      {"content_block", json::object{{"type", "tool_use"},
                                                                     {"id", blocks[k].id},
                                                                     {"name", blocks[k].name},
                                                                     {"input", json::object{}}}}}));
    for (const std::string& piece : halves(blocks[k].arguments))
      events.push_back(sse("content_block_delta",
                           json::object{{"type", "content_block_delta"},
                                        {"index", k},
                                        {"delta", json::object{{"type", "input_json_delta"}, {"partial_json", piece}}}}));
    events.push_back(sse("content_block_stop", json::object{{"type", "content_block_stop"}, {"index", k}}));
  }
  events.push_back(sse("message_delta", json::object{{"type", "message_delta"},
                                                     {"delta", json::object{{"stop_reason", "tool_use"}}},
                                                     {"usage", json::object{{"output_tokens", 8}}}}));
  events.push_back(sse("message_stop", json::object{{"type", "message_stop"}}));
  return covenant_test::streamed_reply(std::move(events));
}

/// A model that follows `script` by how many tool results the request carries (so that many
/// calls at once each follow it): the n-th turn after n-1 steps.
class scripted_server {
 public:
  scripted_server(const dialect& d, std::vector<turn> script)
      : d_(d), script_(std::move(script)),
        server_([this](const received_request& r, std::size_t) { return answer(r); }) {}

  [[nodiscard]] covenant::http_engine_options options() const {
    return covenant_test::loopback_engine_options(server_, d_.provider, "loopback");
  }
  [[nodiscard]] const loopback_server& server() const { return server_; }

 private:
  response_plan answer(const received_request& r) {
    // The steps so far: the model's earlier turns that called tools.
    std::size_t steps = 0;
    const json::value body = json::parse(r.body);
    for (const json::value& m : body.at("messages").as_array()) {
      const json::object& o = m.as_object();
      if (o.at("role").as_string() != "assistant") continue;
      if (o.contains("tool_calls")) ++steps;
      if (const json::value* c = o.if_contains("content"); c != nullptr && c->is_array())
        for (const json::value& b : c->as_array())
          if (b.as_object().at("type").as_string() == "tool_use") {
            ++steps;
            break;
          }
    }
    const turn& t = script_[std::min(steps, script_.size() - 1)];
    // Streamed when the request asks for it.
    const json::value* stream = body.as_object().if_contains("stream");
    const bool streamed = stream != nullptr && stream->is_bool() && stream->as_bool();
    if (d_.provider == covenant::provider::openai) return openai_reply(t, streamed);
    return anthropic_reply(t, streamed, answer_tool(r));
  }

  dialect d_;
  std::vector<turn> script_;
  loopback_server server_;
};

class AgentHttp : public ::testing::TestWithParam<dialect> {
 protected:
  void SetUp() override { covenant::set_log_level(covenant::log_level::warn); }

  /// Runs the planner against `server`: blocking, or streamed when the dialect streams.
  covenant::contract<Planner>::call_result run(scripted_server& server, covenant::contract_options opts = {},
                                               std::function<void(const covenant::stream_update<Advice>&)> on_update = {}) {
    covenant::http_engine model{server.options()};
    covenant::contract<Planner> planner{model, opts};
    if (!GetParam().stream) return planner.run(Trip{"Paris"});
    if (!on_update) on_update = [](const covenant::stream_update<Advice>&) {};
    return planner.stream(Trip{"Paris"}, on_update).get();
  }
};

const char* answer_json = R"({"advice": "a light jacket"})";

TEST_P(AgentHttp, ParallelCallsRunAndTheirResultsGoBack) {
  scripted_server server(GetParam(), {calls({{"c1", "get_weather", R"({"city": "Paris"})"},
                                           {"c2", "get_time", R"({"zone": "Europe/Paris"})"}}),
                                      answers(answer_json)});
  auto [value, o] = run(server);
  ASSERT_TRUE(o.success) << o.summary();
  EXPECT_EQ(value.advice, "a light jacket");
  ASSERT_EQ(o.steps.size(), 1u);
  ASSERT_EQ(o.steps[0].tools.size(), 2u);
  EXPECT_EQ(o.steps[0].tools[0].call.id, "c1");
  EXPECT_EQ(o.steps[0].tools[0].status, tool_status::ok);
  EXPECT_EQ(o.steps[0].tools[1].call.name, "get_time");
  EXPECT_EQ(o.steps[0].tools[1].status, tool_status::ok);
  EXPECT_EQ(o.steps[0].usage.input_tokens, 40u);

  // The first request offered both tools; the second carried one result per call, by id.
  ASSERT_EQ(server.server().requests(), 2u);
  const std::string first = server.server().request(0).body;
  EXPECT_THAT(first, HasSubstr("\"get_weather\""));
  EXPECT_THAT(first, HasSubstr("\"get_time\""));
  const auto results = results_in(server.server().request(1), GetParam().provider);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].id, "c1");
  EXPECT_THAT(results[0].content, HasSubstr("21.5"));
  EXPECT_FALSE(results[0].error);
  EXPECT_EQ(results[1].id, "c2");
  EXPECT_THAT(results[1].content, HasSubstr("14:00"));
}

TEST_P(AgentHttp, APreViolationIsFedBackAndTheModelCorrectsIt) {
  scripted_server server(GetParam(), {calls({{"c1", "get_weather", R"({"city": ""})"}}),
                                      calls({{"c2", "get_weather", R"({"city": "Paris"})"}}), answers(answer_json)});
  auto [value, o] = run(server);
  ASSERT_TRUE(o.success) << o.summary();
  ASSERT_EQ(o.steps.size(), 2u);
  EXPECT_EQ(o.steps[0].tools.at(0).status, tool_status::pre);
  EXPECT_EQ(o.steps[1].tools.at(0).status, tool_status::ok);
  const auto fed = results_in(server.server().request(1), GetParam().provider);
  ASSERT_EQ(fed.size(), 1u);
  EXPECT_THAT(fed[0].content, HasSubstr("city: must name a city"));
  if (GetParam().provider == covenant::provider::anthropic) {
    EXPECT_TRUE(fed[0].error);
  }
}

TEST_P(AgentHttp, AThrowingToolAndOnePastItsTimeoutAreErrorResults) {
  scripted_server server(GetParam(), {calls({{"c1", "get_weather", R"({"city": "Atlantis"})"},
                                           {"c2", "get_weather", R"({"city": "Slowtown"})"}}),
                                      answers(answer_json)});
  covenant::contract_options opts;
  opts.agent.tool_timeout = std::chrono::milliseconds(50);
  auto [value, o] = run(server, opts);
  ASSERT_TRUE(o.success) << o.summary();
  const auto& runs = o.steps.at(0).tools;
  EXPECT_EQ(runs.at(0).status, tool_status::failed);
  EXPECT_EQ(runs.at(1).status, tool_status::timeout);
  const auto fed = results_in(server.server().request(1), GetParam().provider);
  ASSERT_EQ(fed.size(), 2u);
  EXPECT_THAT(fed[0].content, HasSubstr("no station there"));
  EXPECT_THAT(fed[1].content, HasSubstr("did not finish within 50 ms"));
}

TEST_P(AgentHttp, TheStepLimitEndsTheCallAndForwardRuns) {
  scripted_server server(GetParam(), {calls({{"", "get_time", R"({"zone": "UTC"})"}})});
  covenant::contract_options opts;
  opts.agent.max_steps = 2;
  auto [value, o] = run(server, opts);
  EXPECT_FALSE(o.success);
  EXPECT_EQ(o.failed_stage, covenant::stage::tool);
  EXPECT_EQ(o.reason, "max_steps");
  EXPECT_EQ(value.advice, "(no advice)");
  EXPECT_EQ(o.steps.size(), 3u);
  EXPECT_EQ(server.server().requests(), 3u);
}

TEST_P(AgentHttp, MalformedArgumentsAreReadLeniently) {
  scripted_server server(GetParam(), {calls({{"c1", "get_weather", "{city: 'Paris',}"}}), answers(answer_json)});
  auto [value, o] = run(server);
  ASSERT_TRUE(o.success) << o.summary();
  const covenant::tool_run& r = o.steps.at(0).tools.at(0);
  EXPECT_EQ(r.status, tool_status::ok) << r.result;
  EXPECT_EQ(json::parse(r.arguments), json::parse(R"({"city": "Paris"})"));
  EXPECT_FALSE(r.notes.empty());
}

TEST_P(AgentHttp, StreamedToolArgumentsReachOnUpdate) {
  if (!GetParam().stream) GTEST_SKIP() << "a whole reply has no pieces";
  scripted_server server(GetParam(), {calls({{"c1", "get_weather", R"({"city": "Paris"})"},
                                           {"c2", "get_time", R"({"zone": "Europe/Paris"})"}}),
                                      answers(answer_json)});
  std::mutex m;
  std::vector<std::string> names;
  std::vector<std::string> last(2);
  bool partial_answer = false;
  auto [value, o] = run(server, {}, [&](const covenant::stream_update<Advice>& u) {
    std::lock_guard lock(m);
    if (u.what == covenant::stream_update<Advice>::kind::tool_arguments) {
      if (u.tool_index >= last.size()) return;
      last[u.tool_index] = std::string(u.text);
      if (names.size() <= u.tool_index) names.resize(u.tool_index + 1);
      names[u.tool_index] = std::string(u.tool_name);
    }
    if (u.what == covenant::stream_update<Advice>::kind::partial) partial_answer = true;
  });
  ASSERT_TRUE(o.success) << o.summary();
  std::lock_guard lock(m);
  EXPECT_THAT(names, ::testing::ElementsAre("get_weather", "get_time"));
  EXPECT_EQ(json::parse(last[0]), json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(json::parse(last[1]), json::parse(R"({"zone": "Europe/Paris"})"));
  EXPECT_TRUE(partial_answer);
}

TEST_P(AgentHttp, ManyAgentsAtOnce) {
  scripted_server server(GetParam(), {calls({{"c1", "get_weather", R"({"city": "Paris"})"},
                                           {"c2", "get_time", R"({"zone": "UTC"})"}}),
                                      answers(answer_json)});
  covenant::http_engine model{server.options()};
  covenant::contract<Planner> planner{model};
  std::vector<covenant::future<covenant::contract<Planner>::call_result>> calls;
  for (int i = 0; i < 24; ++i) calls.push_back(planner.run_async(Trip{"Paris"}));
  for (auto& f : calls) {
    auto r = f.get();
    ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
    ASSERT_EQ(r.outcome.steps.size(), 1u);
    EXPECT_EQ(r.outcome.steps[0].tools.at(1).status, tool_status::ok);
  }
  EXPECT_EQ(server.server().requests(), 48u);
}

INSTANTIATE_TEST_SUITE_P(Dialects, AgentHttp,
                         ::testing::Values(dialect{covenant::provider::openai, false, "openai"},
                                           dialect{covenant::provider::openai, true, "openai_streamed"},
                                           dialect{covenant::provider::anthropic, false, "anthropic"},
                                           dialect{covenant::provider::anthropic, true, "anthropic_streamed"}),
                         [](const ::testing::TestParamInfo<dialect>& i) { return i.param.name; });

}  // namespace
