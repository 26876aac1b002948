// OpenTelemetry spans and metrics of contract calls, exported over OTLP/HTTP to a collector the test
// starts on 127.0.0.1 (tests/support/otlp_receiver.hpp), which decodes every export: span names,
// kinds, parents, the GenAI attributes, events, the resource, the histograms' buckets; and an
// exporter that never holds a call up: a collector that is down, answers 503 or hangs costs dropped
// spans, counted, and the queue stays bounded.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/telemetry/audit_log.hpp>
#include <covenant/telemetry/otel.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
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

namespace {

using namespace otel_test;
using namespace std::chrono_literals;
using covenant_test::is_hex;
using covenant_test::loopback_server;
using covenant_test::otlp_receiver;
using covenant_test::otlp_span;
using covenant_test::received_request;
using covenant_test::response_plan;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace json = boost::json;

std::string completion(const std::string& content, const std::string& id, const std::string& finish = "stop") {
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

std::string tool_calls_reply(const std::vector<std::pair<std::string, std::string>>& calls, const std::string& id) {
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
covenant::otel_options options_for(const otlp_receiver& r) {
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
const std::vector<otlp_span>& spans_of(const otlp_receiver& r) {
  static std::deque<std::vector<otlp_span>> kept;
  kept.push_back(r.spans());
  return kept.back();
}
const std::vector<covenant_test::otlp_metric>& metrics_of(const otlp_receiver& r) {
  static std::deque<std::vector<covenant_test::otlp_metric>> kept;
  kept.push_back(r.last_metrics());
  return kept.back();
}

const otlp_span* find(const std::vector<otlp_span>& spans, const std::string& name, std::size_t nth = 0) {
  for (const otlp_span& s : spans)
    if (s.name == name && nth-- == 0) return &s;
  return nullptr;
}

std::vector<const otlp_span*> named(const std::vector<otlp_span>& spans, const std::string& prefix) {
  std::vector<const otlp_span*> out;
  for (const otlp_span& s : spans)
    if (s.name.starts_with(prefix)) out.push_back(&s);
  return out;
}

const covenant_test::otlp_metric* metric(const std::vector<covenant_test::otlp_metric>& all, const std::string& name) {
  for (const auto& m : all)
    if (m.name == name) return &m;
  return nullptr;
}

/// A scripted engine giving the same reply to every call.
covenant::testing::scripted_engine::responder always(std::string text) {
  return [text = std::move(text)](const covenant::chat_request&, std::size_t) {
    covenant::chat_response r;
    r.text = text;
    r.usage.input_tokens = 10;
    r.usage.output_tokens = 5;
    r.finish_reason = "stop";
    return r;
  };
}

const std::vector<double> token_bounds{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864};
const std::vector<double> second_bounds{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};

/// A model server answering `replies` in order (the last one again after them).
struct model_server {
  explicit model_server(std::vector<response_plan> replies)
      : plans(std::move(replies)),
        server([this](const received_request&, std::size_t i) { return plans[std::min(i, plans.size() - 1)]; }) {}
  std::vector<response_plan> plans;
  loopback_server server;
};

covenant::http_engine_options engine_options(const loopback_server& s) {
  covenant::http_engine_options o = covenant_test::loopback_engine_options(s, covenant::provider::openai, "gpt-test");
  o.retry.tries = 2;
  o.retry.delay = 1ms;
  o.retry.max_delay = 5ms;
  return o;
}

// ---- a plain call ------------------------------------------------------------------------------

TEST(OtelSpans, APlainCallIsACallSpanWithAChatClientSpanUnderIt) {
  otlp_receiver collector;
  model_server model({covenant_test::whole_reply(completion(R"({"answer": "Paris", "confidence": 9})", "chatcmpl-1"))});
  covenant::http_engine engine(engine_options(model.server));
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{engine, co};
  auto r = ask.run(Question{"capital of France?"});
  ASSERT_TRUE(r.outcome.success);
  ASSERT_TRUE(tracer->flush(5s));

  const std::vector<otlp_span> spans = collector.spans();
  ASSERT_EQ(spans.size(), 2u);
  const otlp_span* call = find(spans, "Ask");
  const otlp_span* chat = find(spans, "chat gpt-test");
  ASSERT_NE(call, nullptr);
  ASSERT_NE(chat, nullptr);
  // Ids in hex, one trace, the chat span a child of the call's.
  EXPECT_TRUE(is_hex(call->trace_id, 32));
  EXPECT_TRUE(is_hex(call->span_id, 16));
  EXPECT_TRUE(is_hex(chat->span_id, 16));
  EXPECT_EQ(chat->trace_id, call->trace_id);
  EXPECT_EQ(chat->parent_span_id, call->span_id);
  EXPECT_EQ(call->parent_span_id, "");
  EXPECT_EQ(call->kind, 1);  // INTERNAL
  EXPECT_EQ(chat->kind, 3);  // CLIENT
  EXPECT_EQ(call->flags, 0x101u);  // sampled, no parent (known local)
  EXPECT_LE(call->start, chat->start);
  EXPECT_LE(chat->start, chat->end);
  EXPECT_LE(chat->end, call->end);
  // The outcome's trace context is the call span's, and the request carried the chat span's.
  EXPECT_EQ(r.outcome.trace.trace_id_hex(), call->trace_id);
  EXPECT_EQ(r.outcome.trace.span_id_hex(), call->span_id);
  EXPECT_EQ(model.server.request(0).headers.at("traceparent"), "00-" + call->trace_id + "-" + chat->span_id + "-01");

  // The chat span's GenAI attributes.
  const auto& a = chat->attributes;
  EXPECT_EQ(a.str("gen_ai.operation.name"), "chat");
  EXPECT_EQ(a.str("gen_ai.provider.name"), "openai");
  EXPECT_EQ(a.str("gen_ai.request.model"), "gpt-test");
  EXPECT_EQ(a.str("gen_ai.response.model"), "gpt-test-0613");
  EXPECT_EQ(a.str("gen_ai.response.id"), "chatcmpl-1");
  EXPECT_THAT(a.strings("gen_ai.response.finish_reasons"), ElementsAre("stop"));
  EXPECT_EQ(a.integer("gen_ai.usage.input_tokens"), 10);  // cached tokens included
  EXPECT_EQ(a.integer("gen_ai.usage.output_tokens"), 5);
  EXPECT_EQ(a.integer("gen_ai.usage.cache_read.input_tokens"), 4);
  EXPECT_EQ(a.str("gen_ai.output.type"), "json");
  EXPECT_EQ(a.str("server.address"), "127.0.0.1");
  EXPECT_EQ(a.integer("server.port"), model.server.port());
  EXPECT_EQ(a.str("gen_ai.system"), "openai");  // the older name, without the opt-in
  EXPECT_FALSE(a.has("error.type"));
  EXPECT_FALSE(a.has("gen_ai.input.messages"));  // content only when asked for
  EXPECT_EQ(a.str("covenant.attempt.verdict"), "accepted");
  EXPECT_EQ(chat->status_code, 0);

  // The call span: the outcome and the stage times.
  const auto& c = call->attributes;
  EXPECT_EQ(c.str("covenant.contract"), "Ask");
  EXPECT_EQ(c.str("covenant.query_id"), r.outcome.query_id);
  EXPECT_EQ(c.boolean("covenant.outcome.success"), true);
  EXPECT_EQ(c.integer("covenant.outcome.attempts"), 1);
  EXPECT_EQ(c.integer("covenant.usage.input_tokens"), 10);
  EXPECT_EQ(call->status_code, 0);
  std::vector<std::string> stages;
  for (const auto* e : call->events_named("covenant.stage")) stages.push_back(e->attributes.str("covenant.stage.name"));
  EXPECT_THAT(stages, ::testing::IsSupersetOf({"input_validation", "render", "engine", "validate", "forward"}));

  // The resource and the scope.
  EXPECT_EQ(call->resource.str("service.name"), "otel-test");
  EXPECT_EQ(call->resource.str("telemetry.sdk.name"), "covenant");
  EXPECT_EQ(call->resource.str("telemetry.sdk.language"), "cpp");
  EXPECT_FALSE(call->resource.str("telemetry.sdk.version").empty());
  EXPECT_EQ(call->resource.str("deployment.environment.name"), "test");
  EXPECT_EQ(call->scope_name, "covenant");

  // The metrics: the conventions' histograms with their buckets.
  const auto metrics = collector.last_metrics();
  const auto* usage = metric(metrics, "gen_ai.client.token.usage");
  ASSERT_NE(usage, nullptr);
  EXPECT_EQ(usage->unit, "{token}");
  EXPECT_EQ(usage->temporality, 2);  // cumulative
  ASSERT_EQ(usage->points.size(), 2u);
  for (const auto& p : usage->points) {
    EXPECT_EQ(p.bounds, token_bounds);
    EXPECT_EQ(p.count, 1u);
    EXPECT_EQ(p.bucket_counts.size(), token_bounds.size() + 1);
    EXPECT_EQ(p.attributes.str("gen_ai.operation.name"), "chat");
    EXPECT_EQ(p.attributes.str("gen_ai.provider.name"), "openai");
    EXPECT_EQ(p.attributes.str("gen_ai.request.model"), "gpt-test");
    EXPECT_EQ(p.attributes.str("gen_ai.response.model"), "gpt-test-0613");
    EXPECT_EQ(p.attributes.integer("server.port"), model.server.port());
    const std::string type = p.attributes.str("gen_ai.token.type");
    // 10 input tokens fall in (4, 16], 5 output tokens too: the third bucket.
    EXPECT_EQ(p.sum, type == "input" ? 10.0 : 5.0);
    EXPECT_EQ(p.bucket_counts[2], 1u) << type;
  }
  const auto* duration = metric(metrics, "gen_ai.client.operation.duration");
  ASSERT_NE(duration, nullptr);
  EXPECT_EQ(duration->unit, "s");
  ASSERT_EQ(duration->points.size(), 1u);
  EXPECT_EQ(duration->points[0].bounds, second_bounds);
  EXPECT_EQ(duration->points[0].count, 1u);
  EXPECT_EQ(metric(metrics, "gen_ai.client.operation.time_to_first_chunk"), nullptr);  // nothing streamed
  const auto* processed = metric(metrics, "otel.sdk.processor.span.processed");
  ASSERT_NE(processed, nullptr);
  EXPECT_FALSE(processed->histogram);
}

// ---- two rejected replies ------------------------------------------------------------------------

TEST(OtelSpans, EachRejectedReplyIsAnEventWithItsIssuesPathsAndCodes) {
  otlp_receiver collector;
  model_server model({covenant_test::whole_reply(completion(R"({"answer": "?", "confidence": 3})", "c-1")),
                      covenant_test::whole_reply(completion(R"({"answer": "Paris", "confidence": 12})", "c-2")),
                      covenant_test::whole_reply(completion(R"({"answer": "Paris", "confidence": 9})", "c-3"))});
  covenant::http_engine engine(engine_options(model.server));
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  covenant::contract_options co = covenant::testing::instant();
  co.retry.tries = 3;
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{engine, co};
  auto r = ask.run(Question{"?"});
  ASSERT_TRUE(r.outcome.success);
  ASSERT_EQ(r.outcome.attempts.size(), 3u);
  ASSERT_TRUE(tracer->flush(5s));

  const std::vector<otlp_span> spans = collector.spans();
  ASSERT_EQ(spans.size(), 4u);
  const otlp_span* call = find(spans, "Ask");
  ASSERT_NE(call, nullptr);
  const auto chats = named(spans, "chat ");
  ASSERT_EQ(chats.size(), 3u);
  // In the order they were made, each a child of the call, each with its own span id.
  EXPECT_EQ(chats[0]->attributes.str("gen_ai.response.id"), "c-1");
  EXPECT_EQ(chats[1]->attributes.str("gen_ai.response.id"), "c-2");
  EXPECT_EQ(chats[2]->attributes.str("gen_ai.response.id"), "c-3");
  for (const otlp_span* s : chats) EXPECT_EQ(s->parent_span_id, call->span_id);
  EXPECT_NE(chats[0]->span_id, chats[1]->span_id);
  EXPECT_EQ(chats[0]->attributes.str("covenant.attempt.verdict"), "rejected");
  EXPECT_EQ(chats[1]->attributes.str("covenant.attempt.verdict"), "rejected");
  EXPECT_EQ(chats[2]->attributes.str("covenant.attempt.verdict"), "accepted");
  for (int k = 0; k < 3; ++k) EXPECT_EQ(chats[k]->attributes.integer("covenant.attempt.number"), k + 1);

  const auto first = chats[0]->events_named("covenant.reply.rejected");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0]->attributes.integer("covenant.issue.count"), 1);
  EXPECT_THAT(first[0]->attributes.strings("covenant.issue.paths"), ElementsAre("answer"));
  EXPECT_THAT(first[0]->attributes.strings("covenant.issue.codes"), ElementsAre("postcondition_violation"));
  const auto second = chats[1]->events_named("covenant.reply.rejected");
  ASSERT_EQ(second.size(), 1u);
  EXPECT_THAT(second[0]->attributes.strings("covenant.issue.paths"), ElementsAre("confidence"));
  EXPECT_THAT(second[0]->attributes.strings("covenant.issue.codes"), ElementsAre("constraint_violation"));
  EXPECT_TRUE(chats[2]->events_named("covenant.reply.rejected").empty());
  // Each request carried its own span as traceparent.
  for (std::size_t k = 0; k < 3; ++k)
    EXPECT_EQ(model.server.request(k).headers.at("traceparent"), "00-" + call->trace_id + "-" + chats[k]->span_id + "-01");

  // The remedy loop on the call's span: two retries, then success after 3 attempts.
  const auto retries = call->events_named("covenant.remedy.retry");
  ASSERT_EQ(retries.size(), 2u);
  EXPECT_EQ(retries[0]->attributes.integer("covenant.attempt.next"), 2);
  EXPECT_EQ(retries[1]->attributes.integer("covenant.attempt.next"), 3);
  EXPECT_EQ(call->attributes.integer("covenant.outcome.attempts"), 3);
  EXPECT_EQ(call->attributes.boolean("covenant.outcome.success"), true);
}

// ---- a streamed call stopped early ---------------------------------------------------------------

TEST(OtelSpans, AStreamStoppedEarlyIsAnEventAndTheTimeToFirstChunkIsRecorded) {
  otlp_receiver collector;
  // confidence 12 breaks its range as soon as it is complete: the stream stops there.
  const std::vector<std::string> bad = {R"({"confidence": 1)", R"(2, "answer": ")", std::string(400, 'x'), R"("})"};
  model_server model({[&] {
                        response_plan p = covenant_test::streamed_reply(covenant_test::openai_stream(bad, "stop", 10, 5));
                        p.chunk_delay = 5ms;
                        return p;
                      }(),
                      covenant_test::streamed_reply(
                          covenant_test::openai_stream({R"({"confidence": 8, "answer": "Paris"})"}, "stop", 10, 5))});
  covenant::http_engine engine(engine_options(model.server));
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{engine, co};
  auto r = ask.stream(Question{"?"}, [](const covenant::stream_update<Answer>&) {}).get();
  ASSERT_TRUE(r.outcome.success);
  ASSERT_EQ(r.outcome.attempts.size(), 2u);
  ASSERT_TRUE(tracer->flush(5s));

  const std::vector<otlp_span> spans = collector.spans();
  const auto chats = named(spans, "chat ");
  ASSERT_EQ(chats.size(), 2u);
  EXPECT_EQ(chats[0]->attributes.boolean("gen_ai.request.stream"), true);
  const auto stop = chats[0]->events_named("covenant.stream.early_stop");
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0]->attributes.str("covenant.issue.path"), "confidence");
  EXPECT_LT(*stop[0]->attributes.integer("covenant.stream.bytes_kept"), 100);
  EXPECT_EQ(chats[0]->events_named("covenant.reply.rejected").size(), 1u);
  EXPECT_TRUE(chats[1]->events_named("covenant.stream.early_stop").empty());
  for (const otlp_span* s : chats) {
    ASSERT_TRUE(s->attributes.number("gen_ai.response.time_to_first_chunk").has_value());
    EXPECT_GT(*s->attributes.number("gen_ai.response.time_to_first_chunk"), 0.0);
  }
  const auto* ttfc = metric(metrics_of(collector), "gen_ai.client.operation.time_to_first_chunk");
  ASSERT_NE(ttfc, nullptr);
  std::uint64_t n = 0;
  for (const auto& p : ttfc->points) {
    EXPECT_EQ(p.bounds, second_bounds);
    n += p.count;
  }
  EXPECT_EQ(n, 2u);
}

// ---- an agent with three tool calls --------------------------------------------------------------

TEST(OtelSpans, AnAgentsToolCallsAreExecuteToolSpansBesideTheChatSpans) {
  otlp_receiver collector;
  model_server model({covenant_test::whole_reply(tool_calls_reply({{"call_1", "Paris"}, {"call_2", "Oslo"}}, "s-1")),
                      covenant_test::whole_reply(tool_calls_reply({{"call_3", "Rome"}}, "s-2")),
                      covenant_test::whole_reply(completion(R"({"advice": "bring a coat"})", "a-1"))});
  covenant::http_engine engine(engine_options(model.server));
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Planner> planner{engine, co};
  auto r = planner.run(Question{"a trip"});
  ASSERT_TRUE(r.outcome.success) << r.outcome.summary();
  ASSERT_EQ(r.outcome.steps.size(), 2u);
  ASSERT_TRUE(tracer->flush(5s));

  const std::vector<otlp_span> spans = collector.spans();
  const otlp_span* call = find(spans, "Planner");
  ASSERT_NE(call, nullptr);
  const auto tools = named(spans, "execute_tool ");
  ASSERT_EQ(tools.size(), 3u);
  std::vector<std::string> ids;
  for (const otlp_span* t : tools) {
    EXPECT_EQ(t->name, "execute_tool get_weather");
    EXPECT_EQ(t->kind, 1);
    EXPECT_EQ(t->parent_span_id, call->span_id);
    EXPECT_EQ(t->trace_id, call->trace_id);
    EXPECT_EQ(t->attributes.str("gen_ai.operation.name"), "execute_tool");
    EXPECT_EQ(t->attributes.str("gen_ai.tool.name"), "get_weather");
    EXPECT_EQ(t->attributes.str("gen_ai.tool.type"), "function");
    EXPECT_EQ(t->attributes.str("covenant.tool.status"), "ok");
    EXPECT_FALSE(t->attributes.has("gen_ai.tool.call.arguments"));
    EXPECT_LE(t->start, t->end);
    ids.push_back(t->attributes.str("gen_ai.tool.call.id"));
  }
  EXPECT_THAT(ids, ElementsAre("call_1", "call_2", "call_3"));
  EXPECT_EQ(tools[0]->attributes.integer("covenant.agent.step"), 1);
  EXPECT_EQ(tools[2]->attributes.integer("covenant.agent.step"), 2);
  const auto chats = named(spans, "chat ");
  ASSERT_EQ(chats.size(), 3u);  // two steps and the answer
  EXPECT_THAT(chats[0]->attributes.strings("gen_ai.response.finish_reasons"), ElementsAre("tool_calls"));
  EXPECT_EQ(chats[0]->attributes.integer("covenant.agent.step"), 1);
  EXPECT_EQ(chats[0]->attributes.integer("covenant.agent.tool_calls"), 2);
  EXPECT_EQ(chats[1]->attributes.str("gen_ai.response.id"), "s-2");
  EXPECT_EQ(chats[2]->attributes.str("gen_ai.response.id"), "a-1");
  EXPECT_EQ(chats[0]->attributes.integer("gen_ai.usage.input_tokens"), 20);
  EXPECT_EQ(call->attributes.integer("covenant.outcome.agent_steps"), 2);
  EXPECT_EQ(call->attributes.integer("covenant.outcome.model_calls"), 3);
  // Three model calls: three duration points in one series.
  const auto* duration = metric(metrics_of(collector), "gen_ai.client.operation.duration");
  ASSERT_NE(duration, nullptr);
  ASSERT_EQ(duration->points.size(), 1u);
  EXPECT_EQ(duration->points[0].count, 3u);
}

// ---- 429, then a reply ---------------------------------------------------------------------------

TEST(OtelSpans, ATooManyRequestsAnswerIsARateLimitWaitEventOfTheChatSpan) {
  otlp_receiver collector;
  response_plan limited;
  limited.status = 429;
  limited.headers = {{"Retry-After", "0"}};
  limited.body = R"({"error": {"message": "Rate limit reached"}})";
  model_server model({limited, covenant_test::whole_reply(completion(R"({"answer": "Paris", "confidence": 9})", "c-ok"))});
  covenant::http_engine engine(engine_options(model.server));
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{engine, co};
  auto r = ask.run(Question{"?"});
  ASSERT_TRUE(r.outcome.success);
  ASSERT_EQ(r.outcome.attempts.size(), 1u);
  ASSERT_EQ(r.outcome.attempts[0].transport_retries.size(), 1u);
  ASSERT_TRUE(tracer->flush(5s));

  const std::vector<otlp_span> spans = collector.spans();
  const auto chats = named(spans, "chat ");
  ASSERT_EQ(chats.size(), 1u);  // one model request, retried by the transport
  const auto waits = chats[0]->events_named("covenant.rate_limit.wait");
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(waits[0]->attributes.integer("http.response.status_code"), 429);
  EXPECT_EQ(waits[0]->attributes.integer("covenant.retry.number"), 1);
  EXPECT_EQ(waits[0]->attributes.number("covenant.retry.wait"), 0.0);
  EXPECT_THAT(waits[0]->attributes.str("covenant.retry.reason"), HasSubstr("429"));
  EXPECT_GE(waits[0]->time, chats[0]->start);
  EXPECT_LE(waits[0]->time, chats[0]->end);
  EXPECT_EQ(chats[0]->attributes.str("gen_ai.response.id"), "c-ok");
  EXPECT_EQ(chats[0]->status_code, 0);
  // Both exchanges carried the same traceparent: the one model request's span.
  EXPECT_EQ(model.server.request(0).headers.at("traceparent"), model.server.request(1).headers.at("traceparent"));
}

// ---- a call that fails -----------------------------------------------------------------------------

TEST(OtelSpans, AFailedCallHasErrorSpansWithTheirErrorTypes) {
  otlp_receiver collector;
  response_plan refused;
  refused.status = 400;
  refused.body = R"({"error": {"message": "bad request"}})";
  model_server model({refused});
  covenant::http_engine engine(engine_options(model.server));
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{engine, co};
  auto r = ask.run(Question{"?"});
  ASSERT_FALSE(r.outcome.success);
  ASSERT_TRUE(tracer->flush(5s));

  const std::vector<otlp_span> spans = collector.spans();
  const otlp_span* call = find(spans, "Ask");
  const auto chats = named(spans, "chat ");
  ASSERT_NE(call, nullptr);
  ASSERT_EQ(chats.size(), 1u);
  EXPECT_EQ(chats[0]->status_code, 2);
  EXPECT_EQ(chats[0]->attributes.str("error.type"), "400");
  EXPECT_THAT(chats[0]->status_message, HasSubstr("bad request"));
  EXPECT_EQ(call->status_code, 2);
  EXPECT_EQ(call->attributes.str("error.type"), "engine");
  EXPECT_EQ(call->attributes.str("covenant.outcome.stage"), "engine");
  EXPECT_EQ(call->attributes.boolean("covenant.outcome.success"), false);
  const auto* duration = metric(metrics_of(collector), "gen_ai.client.operation.duration");
  ASSERT_NE(duration, nullptr);
  ASSERT_EQ(duration->points.size(), 1u);
  EXPECT_EQ(duration->points[0].attributes.str("error.type"), "400");
}

// ---- trace context -------------------------------------------------------------------------------

TEST(OtelContext, AParentGivenToTheCallMakesItsSpansChildrenOfIt) {
  otlp_receiver collector;
  model_server model({covenant_test::whole_reply(completion(R"({"answer": "Paris", "confidence": 9})", "c"))});
  covenant::http_engine engine(engine_options(model.server));
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{engine, co};
  const auto parent =
      covenant::trace_context::parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor=abc");
  ASSERT_TRUE(parent);
  covenant::call_options call;
  call.trace = *parent;
  auto r = ask.run(Question{"?"}, call);
  ASSERT_TRUE(r.outcome.success);
  ASSERT_TRUE(tracer->flush(5s));
  const std::vector<otlp_span> spans = collector.spans();
  const otlp_span* s = find(spans, "Ask");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->trace_id, "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(s->parent_span_id, "b7ad6b7169203331");
  EXPECT_EQ(s->trace_state, "vendor=abc");
  EXPECT_EQ(s->flags & 0x1ffu, 0x01u);  // sampled; whether the parent is remote is not known
  const received_request req = model.server.request(0);
  EXPECT_THAT(req.headers.at("traceparent"), HasSubstr("0af7651916cd43dd8448eb211c80319c"));
  EXPECT_EQ(req.headers.at("tracestate"), "vendor=abc");
}

TEST(OtelContext, AnUnsampledParentRecordsNothingAndItsContextIsSentOnUnchanged) {
  otlp_receiver collector;
  model_server model({covenant_test::whole_reply(completion(R"({"answer": "Paris", "confidence": 9})", "c"))});
  covenant::http_engine engine(engine_options(model.server));
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{engine, co};
  const std::string parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
  covenant::call_options call;
  call.trace = *covenant::trace_context::parse(parent);
  auto r = ask.run(Question{"?"}, call);
  ASSERT_TRUE(r.outcome.success);
  tracer->flush(5s);
  EXPECT_TRUE(collector.spans().empty());
  EXPECT_EQ(model.server.request(0).headers.at("traceparent"), parent);
  EXPECT_EQ(r.outcome.trace.traceparent(), parent);
  // Metrics are not sampled: the call is counted all the same.
  const auto* duration = metric(metrics_of(collector), "gen_ai.client.operation.duration");
  ASSERT_NE(duration, nullptr);
  EXPECT_EQ(duration->points[0].count, 1u);
}

TEST(OtelContext, WithoutATracerAParentIsStillSentToTheServer) {
  model_server model({covenant_test::whole_reply(completion(R"({"answer": "Paris", "confidence": 9})", "c"))});
  covenant::http_engine engine(engine_options(model.server));
  covenant::contract<Ask> ask{engine, covenant::testing::instant()};
  const std::string parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
  covenant::call_options call;
  call.trace = *covenant::trace_context::parse(parent);
  auto r = ask.run(Question{"?"}, call);
  ASSERT_TRUE(r.outcome.success);
  EXPECT_EQ(model.server.request(0).headers.at("traceparent"), parent);
  covenant::call_options none;
  auto plain = ask.run(Question{"?"}, none);
  EXPECT_EQ(model.server.request(1).headers.count("traceparent"), 0u);
  EXPECT_FALSE(plain.outcome.trace.valid());
}

TEST(OtelContext, TraceparentIsReadAsTheW3CFormatSays) {
  const auto t = covenant::trace_context::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->sampled());
  EXPECT_EQ(t->trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(t->span_id_hex(), "00f067aa0ba902b7");
  EXPECT_EQ(t->traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  EXPECT_FALSE(covenant::trace_context::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01"));
  EXPECT_FALSE(covenant::trace_context::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"));
  EXPECT_FALSE(covenant::trace_context::parse("00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"));
  EXPECT_FALSE(covenant::trace_context::parse("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"));
  EXPECT_FALSE(covenant::trace_context::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"));
  EXPECT_TRUE(covenant::trace_context::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"));
  EXPECT_FALSE(covenant::trace_context::parse("garbage"));
}

// ---- samplers ------------------------------------------------------------------------------------

TEST(OtelSampling, AlwaysOffRecordsNoSpanButTheMetrics) {
  otlp_receiver collector;
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o = options_for(collector);
  o.sampler = covenant::otel_sampler::always_off;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{model, co};
  auto r = ask.run(Question{"?"});
  ASSERT_TRUE(r.outcome.success);
  EXPECT_FALSE(r.outcome.trace.valid());
  tracer->flush(5s);
  EXPECT_TRUE(collector.spans().empty());
  EXPECT_EQ(tracer->stats().spans_recorded, 0u);
  const auto* usage = metric(metrics_of(collector), "gen_ai.client.token.usage");
  ASSERT_NE(usage, nullptr);
  EXPECT_EQ(usage->points[0].attributes.str("gen_ai.provider.name"), "unknown");  // the scripted engine names none
}

TEST(OtelSampling, TraceIdRatioKeepsAShareOfTraces) {
  otlp_receiver collector;
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o = options_for(collector);
  o.sampler = covenant::otel_sampler::traceidratio;
  o.sampler_ratio = 0.25;
  o.traces_endpoint = collector.traces_url();
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{model, co};
  int sampled = 0;
  for (int k = 0; k < 400; ++k) sampled += ask.run(Question{"?"}).outcome.trace.valid() ? 1 : 0;
  EXPECT_GT(sampled, 50);  // 100 expected; the ids are random
  EXPECT_LT(sampled, 150);
  EXPECT_EQ(tracer->stats().spans_recorded, static_cast<std::uint64_t>(sampled) * 2);
}

// ---- content -------------------------------------------------------------------------------------

TEST(OtelContent, CapturedContentFollowsTheSchemasAndIsRedacted) {
  otlp_receiver collector;
  model_server model({covenant_test::whole_reply(completion(R"({"answer": "the secret-word is Paris", "confidence": 9})", "c"))});
  covenant::http_engine engine(engine_options(model.server));
  covenant::otel_options o = options_for(collector);
  o.capture_content = true;
  o.redact = {"secret-word"};
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{engine, co};
  auto r = ask.run(Question{"what is the secret-word?"});
  ASSERT_TRUE(r.outcome.success);
  ASSERT_TRUE(tracer->flush(5s));
  const auto chats = named(spans_of(collector), "chat ");
  ASSERT_EQ(chats.size(), 1u);
  const std::string in = chats[0]->attributes.str("gen_ai.input.messages");
  const std::string out = chats[0]->attributes.str("gen_ai.output.messages");
  const std::string system = chats[0]->attributes.str("gen_ai.system_instructions");
  EXPECT_THAT(in, ::testing::Not(HasSubstr("secret-word")));
  EXPECT_THAT(in, HasSubstr("[redacted]"));
  EXPECT_THAT(out, HasSubstr("the [redacted] is Paris"));
  const json::value input = json::parse(in);
  ASSERT_TRUE(input.is_array());
  EXPECT_EQ(input.at(0).at("role").as_string(), "user");
  EXPECT_EQ(input.at(0).at("parts").at(0).at("type").as_string(), "text");
  const json::value output = json::parse(out);
  EXPECT_EQ(output.at(0).at("role").as_string(), "assistant");
  EXPECT_EQ(output.at(0).at("finish_reason").as_string(), "stop");
  EXPECT_THAT(system, HasSubstr("Answer the question."));
  EXPECT_EQ(json::parse(system).at(0).at("type").as_string(), "text");
}

// ---- the audit log joins the trace ---------------------------------------------------------------

TEST(OtelAudit, AuditLinesCarryTheCallsTraceAndSpanIds) {
  otlp_receiver collector;
  const auto dir = std::filesystem::temp_directory_path() / ("covenant-otel-audit-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir, .flush_interval = 0ms});
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  co.observers.push_back(audit);
  covenant::contract<Ask> ask{model, co};
  auto r = ask.run(Question{"?"});
  ASSERT_TRUE(r.outcome.success);
  audit->flush();
  std::ifstream in(audit->current_file());
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  const json::value v = json::parse(line);
  EXPECT_EQ(v.at("trace_id").as_string(), r.outcome.trace.trace_id_hex());
  EXPECT_EQ(v.at("span_id").as_string(), r.outcome.trace.span_id_hex());
  ASSERT_TRUE(tracer->flush(5s));
  const otlp_span* call = find(spans_of(collector), "Ask");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->span_id, std::string(v.at("span_id").as_string()));
  std::filesystem::remove_all(dir);
}

// ---- protobuf ------------------------------------------------------------------------------------

TEST(OtelProtobuf, TheProtobufEncodingCarriesWhatTheJsonOneDoes) {
  otlp_receiver collector;
  model_server model({covenant_test::whole_reply(completion(R"({"answer": "Paris", "confidence": 9})", "chatcmpl-9"))});
  covenant::http_engine engine(engine_options(model.server));
  covenant::otel_options o = options_for(collector);
  o.protocol = covenant::otlp_protocol::http_protobuf;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{engine, co};
  auto r = ask.run(Question{"?"});
  ASSERT_TRUE(r.outcome.success);
  ASSERT_TRUE(tracer->flush(5s));
  EXPECT_EQ(collector.server().request(0).headers.at("content-type"), "application/x-protobuf");
  const std::vector<otlp_span> spans = collector.spans();
  ASSERT_EQ(spans.size(), 2u);
  const otlp_span* call = find(spans, "Ask");
  const otlp_span* chat = find(spans, "chat gpt-test");
  ASSERT_NE(call, nullptr);
  ASSERT_NE(chat, nullptr);
  EXPECT_EQ(call->trace_id, r.outcome.trace.trace_id_hex());
  EXPECT_EQ(chat->parent_span_id, call->span_id);
  EXPECT_EQ(chat->kind, 3);
  EXPECT_EQ(chat->attributes.str("gen_ai.response.id"), "chatcmpl-9");
  EXPECT_EQ(chat->attributes.integer("gen_ai.usage.input_tokens"), 10);
  EXPECT_EQ(chat->attributes.integer("server.port"), model.server.port());
  EXPECT_THAT(chat->attributes.strings("gen_ai.response.finish_reasons"), ElementsAre("stop"));
  EXPECT_EQ(call->attributes.boolean("covenant.outcome.success"), true);
  EXPECT_GT(chat->start, 0u);
  EXPECT_EQ(call->resource.str("service.name"), "otel-test");
  const auto metrics = collector.last_metrics();
  const auto* usage = metric(metrics, "gen_ai.client.token.usage");
  ASSERT_NE(usage, nullptr);
  ASSERT_EQ(usage->points.size(), 2u);
  EXPECT_EQ(usage->points[0].bounds, token_bounds);
  EXPECT_EQ(usage->points[0].count, 1u);
  EXPECT_EQ(usage->points[0].bucket_counts[2], 1u);
}

// ---- the exporter never holds a call up ----------------------------------------------------------

/// A port on 127.0.0.1 nothing listens on (bound, then closed).
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

TEST(OtelExporter, ACollectorThatIsDownCostsDroppedSpansCountedNotCalls) {
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o;
  o.traces_endpoint = "http://127.0.0.1:" + std::to_string(closed_port()) + "/v1/traces";
  o.metrics_endpoint.clear();
  o.retry.tries = 2;
  o.retry.delay = 1ms;
  o.retry.max_delay = 2ms;
  o.schedule_delay = 1h;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{model, co};
  for (int k = 0; k < 5; ++k) ASSERT_TRUE(ask.run(Question{"?"}).outcome.success);
  EXPECT_FALSE(tracer->flush(5s));
  const covenant::otel_stats s = tracer->stats();
  EXPECT_EQ(s.spans_recorded, 10u);
  EXPECT_EQ(s.spans_dropped, 10u);
  EXPECT_EQ(s.spans_exported, 0u);
  EXPECT_EQ(s.export_failures, 1u);
  EXPECT_EQ(s.export_retries, 2u);
  EXPECT_THAT(tracer->render_prometheus(), HasSubstr("covenant_otel_spans_dropped_total{reason=\"export_failed\"} 10"));
}

TEST(OtelExporter, ACollectorAnswering503IsRetriedWithBackoffThenTheBatchIsDropped) {
  otlp_receiver collector([](const received_request&, std::size_t) {
    response_plan p;
    p.status = 503;
    p.body = R"({"code": 14, "message": "unavailable"})";
    return p;
  });
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o = options_for(collector);
  o.metrics_endpoint.clear();
  o.retry.tries = 3;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{model, co};
  ASSERT_TRUE(ask.run(Question{"?"}).outcome.success);
  EXPECT_FALSE(tracer->flush(5s));
  EXPECT_EQ(collector.requests_to("/v1/traces"), 4u);  // the export and three retries
  const covenant::otel_stats s = tracer->stats();
  EXPECT_EQ(s.export_retries, 3u);
  EXPECT_EQ(s.spans_dropped, 2u);
  EXPECT_EQ(s.export_failures, 1u);
}

TEST(OtelExporter, ACallEndsWhileTheCollectorStillHoldsTheExport) {
  otlp_receiver collector([](const received_request&, std::size_t) {
    response_plan p;
    p.hang = true;
    return p;
  });
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o = options_for(collector);
  o.metrics_endpoint.clear();
  o.export_timeout = 60s;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{model, co};
  ASSERT_TRUE(ask.run(Question{"?"}).outcome.success);
  tracer->flush_async();
  ASSERT_TRUE(collector.server().wait_for_requests(1, 10s));  // the collector holds it now
  // Calls go on, each ending while the export is still held: none waits for the exporter.
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(ask.run(Question{"?"}).outcome.success);
    EXPECT_EQ(tracer->stats().exports_in_flight, 1u);
    EXPECT_FALSE(collector.server().client_left_early(0));
  }
  EXPECT_EQ(collector.server().requests(), 1u);
  EXPECT_EQ(tracer->stats().spans_queued, 6u);
  // Shutting down with a short deadline aborts the held export: everything left is dropped.
  tracer->shutdown(100ms);
  const covenant::otel_stats s = tracer->stats();
  EXPECT_EQ(s.spans_exported, 0u);
  EXPECT_EQ(s.spans_dropped, 8u);
  EXPECT_EQ(s.spans_queued, 0u);
  EXPECT_EQ(s.exports_in_flight, 0u);
}

TEST(OtelExporter, TheQueueIsBoundedAndWhatDoesNotFitIsDroppedAndCounted) {
  otlp_receiver collector([](const received_request&, std::size_t) {
    response_plan p;
    p.hang = true;
    return p;
  });
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o = options_for(collector);
  o.metrics_endpoint.clear();
  o.max_queue_size = 4;
  o.max_export_batch_size = 2;  // a full batch starts an export at once: it hangs, the rest waits
  o.export_timeout = 60s;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{model, co};
  ASSERT_TRUE(ask.run(Question{"?"}).outcome.success);  // 2 spans: a full batch, sent
  ASSERT_TRUE(collector.server().wait_for_requests(1, 10s));
  for (int k = 0; k < 20; ++k) ASSERT_TRUE(ask.run(Question{"?"}).outcome.success);
  const covenant::otel_stats s = tracer->stats();
  EXPECT_EQ(s.spans_recorded, 42u);
  EXPECT_EQ(s.spans_queued, 4u);
  EXPECT_EQ(s.max_spans_queued, 4u);
  EXPECT_EQ(s.spans_dropped_queue_full, 36u);  // 2 in flight, 4 queued, the rest dropped
  EXPECT_EQ(s.spans_dropped, 36u);
  EXPECT_THAT(tracer->render_prometheus(), HasSubstr("covenant_otel_spans_dropped_total{reason=\"queue_full\"} 36"));
  tracer->shutdown(50ms);
}

TEST(OtelExporter, ADisabledTracerRecordsAndSendsNothing) {
  otlp_receiver collector;
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o = options_for(collector);
  o.enabled = false;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{model, co};
  ASSERT_TRUE(ask.run(Question{"?"}).outcome.success);
  tracer->shutdown(1s);
  EXPECT_EQ(collector.server().requests(), 0u);
  EXPECT_EQ(tracer->stats().spans_recorded, 0u);
}

// ---- the environment -------------------------------------------------------------------------------

struct env_var {
  env_var(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~env_var() { ::unsetenv(name); }
  const char* name;
};

TEST(OtelEnvironment, TheStandardVariablesSetTheOptions) {
  const env_var a("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/");
  const env_var b("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://metrics:9090/otlp/v1/metrics");
  const env_var c("OTEL_EXPORTER_OTLP_HEADERS", "api-key=secret%20one, x-team = blue");
  const env_var d("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
  const env_var e("OTEL_SERVICE_NAME", "answers");
  const env_var f("OTEL_RESOURCE_ATTRIBUTES", "service.name=ignored,deployment.environment.name=prod,team=a%2Cb");
  const env_var g("OTEL_TRACES_SAMPLER", "parentbased_traceidratio");
  const env_var h("OTEL_TRACES_SAMPLER_ARG", "0.5");
  const env_var i("OTEL_SEMCONV_STABILITY_OPT_IN", "http,gen_ai_latest_experimental");
  const env_var j("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true");
  const env_var k("OTEL_BSP_MAX_QUEUE_SIZE", "100");
  const covenant::otel_options o = covenant::otel_options::from_env();
  EXPECT_TRUE(o.enabled);
  EXPECT_EQ(o.traces_endpoint, "http://collector:4318/v1/traces");
  EXPECT_EQ(o.metrics_endpoint, "http://metrics:9090/otlp/v1/metrics");
  ASSERT_EQ(o.headers.size(), 2u);
  EXPECT_EQ(o.headers[0], (std::pair<std::string, std::string>{"api-key", "secret one"}));
  EXPECT_EQ(o.headers[1], (std::pair<std::string, std::string>{"x-team", "blue"}));
  EXPECT_EQ(o.protocol, covenant::otlp_protocol::http_protobuf);
  EXPECT_EQ(o.service_name, "answers");
  ASSERT_EQ(o.resource.size(), 2u);
  EXPECT_EQ(o.resource[1], (std::pair<std::string, std::string>{"team", "a,b"}));
  EXPECT_EQ(o.sampler, covenant::otel_sampler::parentbased_traceidratio);
  EXPECT_EQ(o.sampler_ratio, 0.5);
  EXPECT_TRUE(o.latest_semconv_only);
  EXPECT_TRUE(o.capture_content);
  EXPECT_EQ(o.max_queue_size, 100u);
}

TEST(OtelEnvironment, MalformedVariablesAreRefusedNamingThem) {
  {
    const env_var a("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
    EXPECT_THAT([] { (void)covenant::otel_options::from_env(); },
                ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("OTEL_EXPORTER_OTLP_PROTOCOL")));
  }
  {
    const env_var a("OTEL_TRACES_SAMPLER", "sometimes");
    EXPECT_THAT([] { (void)covenant::otel_options::from_env(); },
                ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("OTEL_TRACES_SAMPLER")));
  }
  {
    const env_var a("OTEL_TRACES_SAMPLER", "traceidratio");
    const env_var b("OTEL_TRACES_SAMPLER_ARG", "2");
    EXPECT_THAT([] { (void)covenant::otel_options::from_env(); },
                ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("OTEL_TRACES_SAMPLER_ARG")));
  }
  {
    const env_var a("OTEL_EXPORTER_OTLP_HEADERS", "no-equals-sign");
    EXPECT_THAT([] { (void)covenant::otel_options::from_env(); },
                ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("OTEL_EXPORTER_OTLP_HEADERS")));
  }
  {
    const env_var a("OTEL_SDK_DISABLED", "true");
    EXPECT_FALSE(covenant::otel_options::from_env().enabled);
  }
  {
    const env_var a("OTEL_SEMCONV_STABILITY_OPT_IN", "http");
    EXPECT_FALSE(covenant::otel_options::from_env().latest_semconv_only);
  }
}

TEST(OtelEnvironment, WithTheOptInOnlyTheLatestNamesAreWritten) {
  otlp_receiver collector;
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o = options_for(collector);
  o.latest_semconv_only = true;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{model, co};
  ASSERT_TRUE(ask.run(Question{"?"}).outcome.success);
  ASSERT_TRUE(tracer->flush(5s));
  const auto chats = named(spans_of(collector), "chat");
  ASSERT_EQ(chats.size(), 1u);
  EXPECT_EQ(chats[0]->name, "chat");  // the scripted engine names no model
  EXPECT_TRUE(chats[0]->attributes.has("gen_ai.provider.name"));
  EXPECT_FALSE(chats[0]->attributes.has("gen_ai.system"));
}

TEST(OtelSpans, AnApplicationsOwnSpanIsTheParentOfTheCallsItGivesItsContextTo) {
  otlp_receiver collector;
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  covenant::contract_options co = covenant::testing::instant();
  co.observers.push_back(tracer);
  covenant::contract<Ask> ask{model, co};
  covenant::otel_span request = tracer->start_span("handle request");
  request.set("app.user", "u-1");
  covenant::call_options call;
  call.trace = request.context();
  ASSERT_TRUE(ask.run(Question{"?"}, call).outcome.success);
  request.end();
  ASSERT_TRUE(tracer->flush(5s));
  const std::vector<otlp_span> spans = collector.spans();
  const otlp_span* app = find(spans, "handle request");
  const otlp_span* s = find(spans, "Ask");
  ASSERT_NE(app, nullptr);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->parent_span_id, app->span_id);
  EXPECT_EQ(s->trace_id, app->trace_id);
  EXPECT_EQ(app->attributes.str("app.user"), "u-1");
}

}  // namespace
