// The OpenTelemetry exporter: the protobuf encoding carries what the JSON one does, a collector that
// is down, answers 503 or hangs costs dropped spans, counted, never a call's time, the queue stays
// bounded, and the standard environment variables set the options.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fault_server.hpp"
#include "otel_fixture.hpp"
#include "scoped_env.hpp"

namespace {

using namespace otel_test;
using covenant_test::is_hex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using covenant_test::scoped_env;

TEST(OtelProtobuf, TheProtobufEncodingCarriesWhatTheJsonOneDoes) {
  otlp_receiver collector;
  model_server model({covenant_test::whole_reply(completion(R"({"answer": "Paris", "confidence": 9})", "chatcmpl-9"))});
  covenant::http_engine engine(engine_options(model.server));
  covenant::otel_options o = options_for(collector);
  o.protocol = covenant::otlp_protocol::http_protobuf;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = observed_by(tracer);
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

TEST(OtelExporter, ACollectorThatIsDownCostsDroppedSpansCountedNotCalls) {
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o;
  o.traces_endpoint = "http://127.0.0.1:" + std::to_string(covenant_test::refused_port()) + "/v1/traces";
  o.metrics_endpoint.clear();
  o.retry.tries = 2;
  o.retry.delay = 1ms;
  o.retry.max_delay = 2ms;
  o.schedule_delay = 1h;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
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
  otlp_receiver collector(hold);
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o = options_for(collector);
  o.metrics_endpoint.clear();
  o.export_timeout = 60s;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = observed_by(tracer);
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
  otlp_receiver collector(hold);
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o = options_for(collector);
  o.metrics_endpoint.clear();
  o.max_queue_size = 4;
  o.max_export_batch_size = 2;  // a full batch starts an export at once: it hangs, the rest waits
  o.export_timeout = 60s;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = observed_by(tracer);
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
  covenant::contract_options co = observed_by(tracer);
  covenant::contract<Ask> ask{model, co};
  ASSERT_TRUE(ask.run(Question{"?"}).outcome.success);
  tracer->shutdown(1s);
  EXPECT_EQ(collector.server().requests(), 0u);
  EXPECT_EQ(tracer->stats().spans_recorded, 0u);
}

// ---- the environment -------------------------------------------------------------------------------

TEST(OtelEnvironment, TheStandardVariablesSetTheOptions) {
  const scoped_env a("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/");
  const scoped_env b("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "http://metrics:9090/otlp/v1/metrics");
  const scoped_env c("OTEL_EXPORTER_OTLP_HEADERS", "api-key=secret%20one, x-team = blue");
  const scoped_env d("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf");
  const scoped_env e("OTEL_SERVICE_NAME", "answers");
  const scoped_env f("OTEL_RESOURCE_ATTRIBUTES", "service.name=ignored,deployment.environment.name=prod,team=a%2Cb");
  const scoped_env g("OTEL_TRACES_SAMPLER", "parentbased_traceidratio");
  const scoped_env h("OTEL_TRACES_SAMPLER_ARG", "0.5");
  const scoped_env i("OTEL_SEMCONV_STABILITY_OPT_IN", "http,gen_ai_latest_experimental");
  const scoped_env j("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true");
  const scoped_env k("OTEL_BSP_MAX_QUEUE_SIZE", "100");
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
    const scoped_env a("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc");
    EXPECT_THAT([] { (void)covenant::otel_options::from_env(); },
                ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("OTEL_EXPORTER_OTLP_PROTOCOL")));
  }
  {
    const scoped_env a("OTEL_TRACES_SAMPLER", "sometimes");
    EXPECT_THAT([] { (void)covenant::otel_options::from_env(); },
                ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("OTEL_TRACES_SAMPLER")));
  }
  {
    const scoped_env a("OTEL_TRACES_SAMPLER", "traceidratio");
    const scoped_env b("OTEL_TRACES_SAMPLER_ARG", "2");
    EXPECT_THAT([] { (void)covenant::otel_options::from_env(); },
                ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("OTEL_TRACES_SAMPLER_ARG")));
  }
  {
    const scoped_env a("OTEL_EXPORTER_OTLP_HEADERS", "no-equals-sign");
    EXPECT_THAT([] { (void)covenant::otel_options::from_env(); },
                ::testing::ThrowsMessage<std::invalid_argument>(HasSubstr("OTEL_EXPORTER_OTLP_HEADERS")));
  }
  {
    const scoped_env a("OTEL_SDK_DISABLED", "true");
    EXPECT_FALSE(covenant::otel_options::from_env().enabled);
  }
  {
    const scoped_env a("OTEL_SEMCONV_STABILITY_OPT_IN", "http");
    EXPECT_FALSE(covenant::otel_options::from_env().latest_semconv_only);
  }
}

TEST(OtelEnvironment, WithTheOptInOnlyTheLatestNamesAreWritten) {
  otlp_receiver collector;
  covenant::testing::scripted_engine model{always(R"({"answer": "Paris", "confidence": 9})")};
  covenant::otel_options o = options_for(collector);
  o.latest_semconv_only = true;
  auto tracer = std::make_shared<covenant::otel_tracer>(o);
  covenant::contract_options co = observed_by(tracer);
  covenant::contract<Ask> ask{model, co};
  ASSERT_TRUE(ask.run(Question{"?"}).outcome.success);
  ASSERT_TRUE(tracer->flush(5s));
  const auto chats = named(spans_of(collector), "chat");
  ASSERT_EQ(chats.size(), 1u);
  EXPECT_EQ(chats[0]->name, "chat");  // the scripted engine names no model
  EXPECT_TRUE(chats[0]->attributes.has("gen_ai.provider.name"));
  EXPECT_FALSE(chats[0]->attributes.has("gen_ai.system"));
}

}  // namespace
