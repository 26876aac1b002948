// Contracts over runtime schemas: "prompt expecting SchemaName" without a C++ struct.
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/testing/gtest.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace {

using covenant::testing::instant;
using covenant::testing::scripted_engine;
using ::testing::HasSubstr;

const char* review_schema = R"(
/// The result of a code review.
class CodeReviewResult {
  /// One-sentence verdict.
  summary string @assert(short, {{ this|length <= 80 }})
  severity "low" | "medium" | "high"
  issues Finding[]
}
class Finding {
  line int @assert(positive, {{ this > 0 }})
  message string
}
class Source {
  code string
}
)";

covenant::dynamic_task review_task() {
  auto types = covenant::schema_set::parse(review_schema);
  covenant::dynamic_task task;
  task.name = "review_code";
  task.prompt = "Review the code and report findings.";
  task.output = types.model("CodeReviewResult");
  task.input = types.model("Source");
  task.post = [](const boost::json::value& out, const boost::json::value&) {
    if (out.at("severity") == "high" && out.at("issues").as_array().empty())
      throw covenant::violation("issues", "a high severity needs at least one finding");
  };
  return task;
}

TEST(DynamicContract, PromptExpectingASchemaFromAFile) {
  scripted_engine model{
      R"({"summary": "Unchecked index.", "severity": "high", "issues": []})",
      R"(```json
{"summary": "Unchecked index.", "severity": "high", "issues": [{"line": 0, "message": "out of range"}]}
```)",
      R"({"summary": "Unchecked index.", "severity": "high", "issues": [{"line": 3, "message": "out of range"}]})"};
  const covenant::dynamic_contract review{model, review_task(), instant()};
  auto [value, o] = review.run(boost::json::value{{"code", "int f(int* a) { return a[9]; }"}});
  ASSERT_THAT(o, covenant::testing::Succeeded());
  EXPECT_EQ(value.at("issues").at(0).at("line"), 3);
  EXPECT_EQ(value, *o.result);
  EXPECT_EQ(model.calls(), 3u);
  const auto first = model.request(0);
  EXPECT_THAT(first.messages[0].content, HasSubstr("Review the code and report findings."));
  EXPECT_THAT(first.messages[0].content, HasSubstr("\"severity\": \"low\" | \"medium\" | \"high\""));
  EXPECT_NE(first.response_schema, nullptr);
  EXPECT_EQ(first.schema_name, "CodeReviewResult");
  // post() asked for a finding, then the line number was out of range.
  EXPECT_THAT(model.last_message(1), HasSubstr("- issues: a high severity needs at least one finding"));
  EXPECT_THAT(model.last_message(2), HasSubstr("- issues[0].line: "));
}

TEST(DynamicContract, InvalidInputFailsBeforeTheModel) {
  scripted_engine model{"{}"};
  auto options = instant();
  options.graceful = true;
  const covenant::dynamic_contract review{model, review_task(), options};
  auto o = review.run(boost::json::value{{"source", 1}});
  EXPECT_THAT(o, covenant::testing::FailedAt(covenant::stage::input_validation));
  EXPECT_EQ(model.calls(), 0u);
  EXPECT_TRUE(review(boost::json::value{{"source", 1}}).is_null());
}

TEST(DynamicContract, FailureThrowsUnlessGraceful) {
  scripted_engine model{"no", "no"};
  const covenant::dynamic_contract review{model, review_task(), instant({.tries = 1})};
  EXPECT_THROW((void)review(boost::json::value{{"code", "x"}}), covenant::contract_error);
  EXPECT_EQ(review.stats().of(covenant::perf_stage::engine).count, 1u);
}

}  // namespace
