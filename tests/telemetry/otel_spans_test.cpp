// OpenTelemetry spans and metrics of contract calls, exported over OTLP/HTTP to a collector the test
// starts on 127.0.0.1 (tests/support/otlp_receiver.hpp), which decodes every export: span names,
// kinds, parents, the GenAI attributes, events, the resource and the histograms' buckets; trace
// context, sampling, captured content and the audit lines' ids.
#include <covenant/telemetry/audit_log.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "otel_fixture.hpp"

namespace {

using namespace otel_test;
using covenant_test::is_hex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// ---- a plain call ------------------------------------------------------------------------------

TEST(OtelSpans, APlainCallIsACallSpanWithAChatClientSpanUnderIt) {
  otlp_receiver collector;
  model_server model({covenant_test::whole_reply(completion(R"({"answer": "Paris", "confidence": 9})", "chatcmpl-1"))});
  covenant::http_engine engine(engine_options(model.server));
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
  co.retry.tries = 3;
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
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
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


TEST(OtelSpans, AnApplicationsOwnSpanIsTheParentOfTheCallsItGivesItsContextTo) {
  otlp_receiver collector;
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  auto tracer = std::make_shared<covenant::otel_tracer>(options_for(collector));
  covenant::contract_options co = observed_by(tracer);
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
