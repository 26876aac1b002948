// `covenant run --otlp-endpoint`: a run span (a child of TRACEPARENT), a span per record with its
// id, the calls' spans under it, exported to a collector on 127.0.0.1; result and audit lines carry
// the calls' trace and span ids.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli_fixture.hpp"
#include "otlp_receiver.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;
using covenant_test::label_reply;
using covenant_test::otlp_span;
using covenant_test::run_result;
using ::testing::HasSubstr;

class CliRunOtel : public covenant_test::label_run_fixture {
 protected:
  CliRunOtel() : label_run_fixture("covenant_run_otel_test") {}
};

TEST_F(CliRunOtel, EachRecordIsASpanUnderTheRunsAndItsLinesCarryTheCallsIds) {
  covenant_test::loopback_server model([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  covenant_test::otlp_receiver collector;
  const std::string input = write("in.jsonl", covenant_test::label_records(3, {1}));
  const std::string audit = path("audit");
  const std::string parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  const run_result r = run_tool({"run", "--schema", path("label.baml"), "--prompt", "Label.", "--tries", "1", "--delay", "0",
                                 "--otlp-endpoint", collector.endpoint(), "--audit-log", audit, "--quiet", input},
                                {"COVENANT_BASE_URL=" + model.base_url(), "TRACEPARENT=" + parent, "OTEL_SERVICE_NAME=labels"});
  EXPECT_EQ(r.status, 1) << r.err;  // record 1 failed
  const std::vector<json::value> lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 3u);

  const std::vector<otlp_span> spans = collector.spans();
  const otlp_span* run = nullptr;
  std::map<std::string, const otlp_span*> records;  // by record id
  std::map<std::string, const otlp_span*> calls;    // by span id
  for (const otlp_span& s : spans) {
    if (s.name == "covenant run") run = &s;
    if (s.name == "covenant run record") records[s.attributes.str("covenant.record.id")] = &s;
    if (s.name == "Label") calls[s.span_id] = &s;
  }
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(run->parent_span_id, "00f067aa0ba902b7");
  EXPECT_EQ(run->resource.str("service.name"), "labels");
  ASSERT_EQ(records.size(), 3u);
  ASSERT_EQ(calls.size(), 3u);
  for (const json::value& line : lines) {
    const std::string id(line.at("id").as_string());
    ASSERT_TRUE(records.count(id)) << id;
    const otlp_span* rec = records[id];
    EXPECT_EQ(rec->parent_span_id, run->span_id);
    EXPECT_EQ(rec->trace_id, run->trace_id);
    EXPECT_EQ(rec->attributes.str("covenant.query_id"), std::string(line.at("query_id").as_string()));
    EXPECT_EQ(rec->attributes.boolean("covenant.outcome.success"), line.at("ok").as_bool());
    // The line's ids are its call's span, a child of the record's.
    const std::string span_id(line.at("span_id").as_string());
    ASSERT_TRUE(calls.count(span_id)) << span_id;
    EXPECT_EQ(std::string(line.at("trace_id").as_string()), run->trace_id);
    EXPECT_EQ(calls[span_id]->parent_span_id, rec->span_id);
    if (!line.at("ok").as_bool()) {
      EXPECT_EQ(rec->status_code, 2);
    }
  }
  // Each chat span is a child of a call span, and the model server saw its traceparent.
  std::set<std::string> sent;
  for (std::size_t i = 0; i < model.requests(); ++i) sent.insert(model.request(i).headers.at("traceparent"));
  std::size_t chats = 0;
  for (const otlp_span& s : spans) {
    if (!s.name.starts_with("chat")) continue;
    ++chats;
    EXPECT_TRUE(calls.count(s.parent_span_id));
    EXPECT_TRUE(sent.count("00-" + s.trace_id + "-" + s.span_id + "-01")) << s.span_id;
  }
  EXPECT_EQ(chats, 4u);  // record 1 was asked twice
  // The audit lines have the same ids as their records' result lines.
  std::size_t audited = 0;
  for (const auto& e : fs::directory_iterator(audit)) {
    for (const json::value& a : json_lines(read(e.path().string()))) {
      ++audited;
      EXPECT_TRUE(calls.count(std::string(a.at("span_id").as_string())));
      EXPECT_EQ(std::string(a.at("trace_id").as_string()), run->trace_id);
    }
  }
  EXPECT_EQ(audited, 4u);
}

TEST_F(CliRunOtel, ACollectorThatIsDownCostsSpansNotTheRun) {
  covenant_test::loopback_server model([](const covenant_test::received_request& r, std::size_t) {
    return label_reply(r, 0ms);
  });
  const std::string input = write("in.jsonl", covenant_test::label_records(2));
  const run_result r = run_tool({"run", "--schema", path("label.baml"), "--prompt", "Label.", "--otlp-endpoint",
                                 "http://127.0.0.1:9", "--quiet", input},
                                {"COVENANT_BASE_URL=" + model.base_url(), "OTEL_EXPORTER_OTLP_TIMEOUT=2000"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json_lines(r.out).size(), 2u);
  EXPECT_THAT(r.err, HasSubstr("spans were not exported"));
}

TEST_F(CliRunOtel, AMalformedVariableIsAnErrorNamingIt) {
  const std::string input = write("in.jsonl", covenant_test::label_records(1));
  const run_result r = run_tool({"run", "--schema", path("label.baml"), "--prompt", "Label.", "--otlp-endpoint",
                                 "http://127.0.0.1:9", input},
                                {"COVENANT_BASE_URL=http://127.0.0.1:9/v1", "OTEL_TRACES_SAMPLER=sometimes"});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("OTEL_TRACES_SAMPLER"));
}

}  // namespace
