// What the OpenTelemetry tests share: a question-and-answer contract and a weather agent, replies
// in the OpenAI format, a tracer's options pointed at the test's collector, and lookups of the spans
// and metrics the collector decoded.
#pragma once

#include <covenant/contract/agent.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/telemetry/otel.hpp>
#include <covenant/testing/testing.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loopback_engine.hpp"
#include "loopback_server.hpp"
#include "otlp_receiver.hpp"

namespace otel_test {

struct Question {
  std::string text;
};
struct Answer {
  std::string answer;
  int confidence = 0;
};
struct Ask {
  static constexpr std::string_view prompt = "Answer the question.";
  void post(const Answer& a) const {
    if (a.answer == "?") throw covenant::violation("answer", "must be an answer");
  }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const { return o.result.value_or(Answer{}); }
};

struct CityArgs {
  std::string city;
};
struct Weather {
  int celsius = 0;
};
struct GetWeather {
  static constexpr std::string_view name = "get_weather";
  static constexpr std::string_view description = "The weather of a city.";
  static constexpr bool quick = true;
  Weather act(const CityArgs& a) const { return {a.city == "Paris" ? 21 : 4}; }
};
struct Plan {
  std::string advice;
};
struct Planner {
  static constexpr std::string_view prompt = "Advise. Check the weather first.";
  covenant::toolset<GetWeather> tools;
  Plan forward(const Question&, const covenant::outcome<Plan>& o) const { return o.result.value_or(Plan{}); }
};

}  // namespace otel_test

template <>
struct covenant::describe<otel_test::Answer> {
  static constexpr auto fields = covenant::fields<otel_test::Answer>(
      covenant::field<&otel_test::Answer::answer>("The answer."),
      covenant::field<&otel_test::Answer::confidence>(
          "Confidence, 0 to 10.", covenant::range{0, 10}));
};


namespace otel_test {

using namespace std::chrono_literals;
using covenant_test::loopback_server;
using covenant_test::otlp_receiver;
using covenant_test::otlp_span;
using covenant_test::received_request;
using covenant_test::response_plan;
namespace json = boost::json;

inline std::string completion(const std::string& content, const std::string& id, const std::string& finish = "stop") {
  json::object reply{{"id", id},
                     {"object", "chat.completion"},
                     {"model", "gpt-test-0613"},
                     {"choices", json::array{json::object{{"index", 0},
                                                          {"message", json::object{{"role", "assistant"}, {"content", content}}},
                                                          {"finish_reason", finish}}}},
                     {"usage", json::object{{"prompt_tokens", 10},
                                            {"completion_tokens", 5},
                                            {"prompt_tokens_details", json::object{{"cached_tokens", 4}}}}}};
  return json::serialize(reply);
}

inline std::string tool_calls_reply(const std::vector<std::pair<std::string, std::string>>& calls, const std::string& id) {
  json::array list;
  for (const auto& [call_id, city] : calls)
    list.push_back(json::object{{"id", call_id},
                                {"type", "function"},
                                {"function", json::object{{"name", "get_weather"},
                                                          {"arguments", json::serialize(json::object{{"city", city}})}}}});
  json::object reply{{"id", id},
                     {"model", "gpt-test-0613"},
                     {"choices", json::array{json::object{
                                     {"index", 0},
                                     {"message", json::object{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", list}}},
                                     {"finish_reason", "tool_calls"}}}},
                     {"usage", json::object{{"prompt_tokens", 20}, {"completion_tokens", 8}}}};
  return json::serialize(reply);
}

/// A tracer exporting to `r`, quick enough for tests (flush() sends at once anyway).
inline covenant::otel_options options_for(const otlp_receiver& r) {
  covenant::otel_options o;
  o.traces_endpoint = r.traces_url();
  o.metrics_endpoint = r.metrics_url();
  o.service_name = "otel-test";
  o.resource = {{"deployment.environment.name", "test"}};
  o.schedule_delay = 1h;  // exports start with flush() (or a full batch) only: the tests say when
  o.metric_interval = 1h;
  o.retry.delay = 1ms;
  o.retry.max_delay = 5ms;
  o.export_timeout = 5s;
  o.redact_env_keys = false;
  return o;
}

/// The spans the collector received so far, kept for the rest of the test (find() and named()
/// return pointers into them).
inline const std::vector<otlp_span>& spans_of(const otlp_receiver& r) {
  static std::deque<std::vector<otlp_span>> kept;
  kept.push_back(r.spans());
  return kept.back();
}
inline const std::vector<covenant_test::otlp_metric>& metrics_of(const otlp_receiver& r) {
  static std::deque<std::vector<covenant_test::otlp_metric>> kept;
  kept.push_back(r.last_metrics());
  return kept.back();
}

inline const otlp_span* find(const std::vector<otlp_span>& spans, const std::string& name, std::size_t nth = 0) {
  for (const otlp_span& s : spans)
    if (s.name == name && nth-- == 0) return &s;
  return nullptr;
}

inline std::vector<const otlp_span*> named(const std::vector<otlp_span>& spans, const std::string& prefix) {
  std::vector<const otlp_span*> out;
  for (const otlp_span& s : spans)
    if (s.name.starts_with(prefix)) out.push_back(&s);
  return out;
}

inline const covenant_test::otlp_metric* metric(const std::vector<covenant_test::otlp_metric>& all, const std::string& name) {
  for (const auto& m : all)
    if (m.name == name) return &m;
  return nullptr;
}

/// A scripted engine giving the same reply to every call.
inline covenant::testing::scripted_engine::responder always(std::string text) {
  return [text = std::move(text)](const covenant::chat_request&, std::size_t) {
    covenant::chat_response r;
    r.text = text;
    r.usage.input_tokens = 10;
    r.usage.output_tokens = 5;
    r.finish_reason = "stop";
    return r;
  };
}

inline const std::vector<double> token_bounds{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};
inline const std::vector<double> second_bounds{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};

/// A model server answering `replies` in order (the last one again after them).
struct model_server {
  explicit model_server(std::vector<response_plan> replies)
      : plans(std::move(replies)),
        server([this](const received_request&, std::size_t i) { return plans[std::min(i, plans.size() - 1)]; }) {}
  std::vector<response_plan> plans;
  loopback_server server;
};

inline covenant::http_engine_options engine_options(const loopback_server& s) {
  covenant::http_engine_options o = covenant_test::loopback_engine_options(s, covenant::provider::openai, "gpt-test");
  o.retry.tries = 2;
  o.retry.delay = 1ms;
  o.retry.max_delay = 5ms;
  return o;
}


/// The contract options of the tests (no waits between tries) with `tracer` observing the calls.
inline covenant::contract_options observed_by(const std::shared_ptr<covenant::otel_tracer>& tracer) {
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  return co;
}

/// A collector that never answers (each export is held until the exporter gives up).
inline response_plan hold(const received_request&, std::size_t) {
  response_plan p;
  p.hang = true;
  return p;
}


}  // namespace otel_test
