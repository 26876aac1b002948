// The answer validator example (examples/models/validate_answer.hpp): the specification's error
// codes for every issue, schema and registry error, and validate_answer's retries, backoff,
// versions and results, offline with the scripted engine.
#include <covenant/telemetry/audit_log.hpp>
#include <covenant/telemetry/metrics.hpp>
#include <covenant/testing/testing.hpp>
#include <boost/json/parse.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../examples/models/validate_answer.hpp"

namespace {

namespace v = models::validator;
using covenant::testing::fake_sleeper;
using covenant::testing::scripted_engine;
using covenant::testing::step;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

std::string schema_file(const char* version) {
  std::ifstream f(std::string(COVENANT_SOURCE_DIR) + "/examples/models/final_answer_" + version + ".baml");
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const char* valid_answer = R"({"answer": "330 m", "confidence": 0.9, "sources": ["doc-eiffel"]})";

struct fixture {
  scripted_engine generator;
  fake_sleeper sleeper;
  v::answer_validator validator;

  explicit fixture(std::vector<step> replies = {})
      : generator(std::move(replies)), validator(generator, {.sleep = std::ref(sleeper)}) {
    EXPECT_TRUE(validator.add_version("v1", schema_file("v1"), "final_answer_v1.baml").empty());
    EXPECT_TRUE(validator.add_version("v2", schema_file("v2"), "final_answer_v2.baml").empty());
  }
};

std::vector<std::string> codes(const std::vector<v::ValidationError>& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(v::code_text(e.code));
  return out;
}

TEST(ValidateAnswer, ErrorCodesTypesAndStatuses) {
  EXPECT_EQ(v::code_text(v::baml_error::schema_parse), "BAML-ERR-001");
  EXPECT_EQ(v::code_text(v::baml_error::invalid_schema), "BAML-ERR-008");
  EXPECT_EQ(v::error_type(v::baml_error::missing_field), "missing_field");
  EXPECT_EQ(v::error_type(v::baml_error::type_mismatch), "type_mismatch");
  EXPECT_EQ(v::error_type(v::baml_error::constraint_violation), "constraint_violation");
  EXPECT_EQ(v::error_type(v::baml_error::retries_exceeded), "max_retries_exceeded");
  EXPECT_EQ(v::error_type(v::baml_error::version_not_found), "schema_version_not_found");
  EXPECT_EQ(v::http_status(v::baml_error::constraint_violation), 422);
  EXPECT_EQ(v::http_status(v::baml_error::version_not_found), 400);
  EXPECT_EQ(v::http_status(v::baml_error::retries_exceeded), 500);
  EXPECT_EQ(v::http_status(v::baml_error::framework), 500);
}

TEST(ValidateAnswer, IssueCodesMapToTheSpecificationCodes) {
  using covenant::issue_code;
  EXPECT_EQ(v::code_for(issue_code::missing_field), v::baml_error::missing_field);
  EXPECT_EQ(v::code_for(issue_code::type_mismatch), v::baml_error::type_mismatch);
  EXPECT_EQ(v::code_for(issue_code::parse_error), v::baml_error::type_mismatch);
  EXPECT_EQ(v::code_for(issue_code::constraint_violation), v::baml_error::constraint_violation);
  EXPECT_EQ(v::code_for(issue_code::invariant_violation), v::baml_error::constraint_violation);
  EXPECT_EQ(v::code_for(issue_code::unknown_field), v::baml_error::constraint_violation);
  EXPECT_EQ(v::code_for(issue_code::precondition_violation), v::baml_error::constraint_violation);
  EXPECT_EQ(v::code_for(issue_code::postcondition_violation), v::baml_error::constraint_violation);
  EXPECT_EQ(v::code_for(issue_code::hook_exception), v::baml_error::framework);
  EXPECT_EQ(v::code_for(issue_code::engine_error), v::baml_error::framework);
}

TEST(ValidateAnswer, SchemaAndRegistryErrorsMapToTheSpecificationCodes) {
  using covenant::registry_error_code;
  using covenant::schema_error_code;
  EXPECT_EQ(v::code_for(schema_error_code::syntax_error), v::baml_error::schema_parse);
  EXPECT_EQ(v::code_for(schema_error_code::limit_exceeded), v::baml_error::schema_parse);
  EXPECT_EQ(v::code_for(schema_error_code::io_error), v::baml_error::schema_parse);
  for (auto c : {schema_error_code::unsupported, schema_error_code::unknown_type, schema_error_code::duplicate_type,
                 schema_error_code::duplicate_field, schema_error_code::duplicate_value,
                 schema_error_code::conflicting_alias, schema_error_code::unescaped_recursion,
                 schema_error_code::invalid_constraint, schema_error_code::unknown_attribute,
                 schema_error_code::invalid_attribute, schema_error_code::invalid_map_key,
                 schema_error_code::invalid_json_schema})
    EXPECT_EQ(v::code_for(c), v::baml_error::invalid_schema) << covenant::to_string(c);
  EXPECT_EQ(v::code_for(registry_error_code::unknown_version), v::baml_error::version_not_found);
  EXPECT_EQ(v::code_for(registry_error_code::unknown_schema), v::baml_error::version_not_found);
  EXPECT_EQ(v::code_for(registry_error_code::invalid_reference), v::baml_error::version_not_found);
  EXPECT_EQ(v::code_for(registry_error_code::invalid_schema), v::baml_error::invalid_schema);
  EXPECT_EQ(v::code_for(registry_error_code::duplicate_version), v::baml_error::invalid_schema);
}

TEST(ValidateAnswer, ValidationErrorsKeepPathExpectedAndActual) {
  covenant::issue i;
  i.path = covenant::path::parse("metadata.token_usage.input_tokens");
  i.code = covenant::issue_code::constraint_violation;
  i.expected = ">= 0";
  i.actual = "-1";
  i.message = "must be >= 0";
  const v::ValidationError e = v::to_validation_error(i);
  EXPECT_EQ(e.field_name, "metadata.token_usage.input_tokens");
  EXPECT_EQ(e.error_type, "constraint_violation");
  EXPECT_EQ(e.expected, ">= 0");
  EXPECT_EQ(e.actual, "-1");
  EXPECT_EQ(e.code, v::baml_error::constraint_violation);
  EXPECT_EQ(e.to_string(), "BAML-ERR-004 metadata.token_usage.input_tokens: must be >= 0 (got -1)");
}

TEST(ValidateAnswer, ValidAnswerNeedsNoRetry) {
  fixture f;
  const auto start = std::chrono::steady_clock::now();
  const auto out = f.validator.validate_answer(std::string("```json\n") + valid_answer + "\n```", "How tall?");
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(out.is_valid);
  EXPECT_FALSE(out.validation_error);
  EXPECT_EQ(out.retry_count, 0);
  EXPECT_TRUE(out.errors.empty());
  EXPECT_EQ(out.schema, "FinalAnswer@v1");
  EXPECT_EQ(*out.validated_answer, boost::json::parse(valid_answer));
  EXPECT_LE(out.validation_time, elapsed.count());  // seconds, of this call
  EXPECT_EQ(f.generator.calls(), 0u);
  EXPECT_TRUE(f.sleeper.sleeps().empty());
}

TEST(ValidateAnswer, TheValidationTimeCoversTheWaitBeforeARetry) {
  scripted_engine generator{valid_answer};
  std::vector<std::chrono::nanoseconds> asked;
  // The wait asked for is 1 s; this one sleeps 50 ms of it for real.
  v::answer_validator validator(generator, {.sleep = [&](std::chrono::nanoseconds d) {
                                              asked.push_back(d);
                                              std::this_thread::sleep_for(50ms);
                                            }});
  ASSERT_TRUE(validator.add_version("v1", schema_file("v1"), "final_answer_v1.baml").empty());
  const auto start = std::chrono::steady_clock::now();
  const auto out = validator.validate_answer(R"({"confidence": "high"})", "How tall?");
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(out.is_valid);
  EXPECT_EQ(out.retry_count, 1);
  EXPECT_THAT(asked, ElementsAre(1s));
  EXPECT_GE(out.validation_time, 0.050);  // the wait is part of it
  EXPECT_LE(out.validation_time, elapsed.count());
}

TEST(ValidateAnswer, EveryProblemOfTheAnswerIsReportedAndSentBack) {
  fixture f({valid_answer});
  const auto out = f.validator.validate_answer(
      R"({"confidence": "high", "sources": ["", "doc"], "metadata": {"token_usage": {"input_tokens": -1}}})",
      "How tall is the Eiffel Tower?", {{"doc-eiffel", "330 metres"}});
  ASSERT_TRUE(out.is_valid);
  EXPECT_EQ(out.retry_count, 1);
  ASSERT_EQ(out.attempts.size(), 2u);
  EXPECT_THAT(codes(out.attempts[0].errors),
              ElementsAre("BAML-ERR-003", "BAML-ERR-004", "BAML-ERR-004", "BAML-ERR-002"));
  EXPECT_EQ(out.attempts[0].errors[0].field_name, "confidence");
  EXPECT_EQ(out.attempts[0].errors[3].field_name, "answer");
  EXPECT_TRUE(out.attempts[1].errors.empty());
  // The generator saw the query, the evidence, the rejected answer and every problem.
  ASSERT_EQ(f.generator.calls(), 1u);
  const std::string asked = f.generator.last_message(0);
  EXPECT_THAT(asked, HasSubstr("How tall is the Eiffel Tower?"));
  EXPECT_THAT(asked, HasSubstr("doc-eiffel"));
  EXPECT_THAT(asked, HasSubstr("metadata.token_usage.input_tokens: must be >= 0 (got -1)"));
  EXPECT_THAT(asked, HasSubstr("answer: required field is missing"));
  EXPECT_THAT(f.sleeper.sleeps(), ElementsAre(1s));
}

TEST(ValidateAnswer, RetriesExhaustedReturnTheLastOutputFlagged) {
  const std::string last = R"({"answer": "330 m", "confidence": 2, "sources": ["doc"]})";
  fixture f({R"({"answer": ""})", "no JSON at all", last});
  const auto out = f.validator.validate_answer(R"({"answer": "330 m"})", "q", {}, "v1", 3);
  EXPECT_FALSE(out.is_valid);
  EXPECT_TRUE(out.validation_error);
  EXPECT_FALSE(out.validated_answer);
  EXPECT_EQ(out.retry_count, 3);
  EXPECT_EQ(out.last_output, last);
  EXPECT_THAT(codes(out.errors), ElementsAre("BAML-ERR-004", "BAML-ERR-005"));
  EXPECT_EQ(out.errors.back().message, "the answer is still invalid after 3 retries");
  ASSERT_EQ(out.attempts.size(), 4u);
  EXPECT_THAT(codes(out.attempts[2].errors), ElementsAre("BAML-ERR-003"));  // no JSON: type mismatch
  EXPECT_EQ(f.generator.calls(), 3u);
  // exponential backoff: 1 s, 2 s, 4 s
  EXPECT_THAT(f.sleeper.sleeps(), ElementsAre(1s, 2s, 4s));
}

TEST(ValidateAnswer, FiveRetriesWaitAtMostThirtySeconds) {
  fixture f({"{}", "{}", "{}", "{}", "{}"});
  const auto out = f.validator.validate_answer("{}", "q", {}, "v1", 5);
  EXPECT_EQ(out.retry_count, 5);
  EXPECT_THAT(f.sleeper.sleeps(), ElementsAre(1s, 2s, 4s, 8s, 8s));
  EXPECT_LE(f.sleeper.total(), 30s);
}

TEST(ValidateAnswer, MaxRetriesMustBeOneToFive) {
  fixture f;
  EXPECT_THROW((void)f.validator.validate_answer("{}", "q", {}, "v1", 0), std::invalid_argument);
  EXPECT_THROW((void)f.validator.validate_answer("{}", "q", {}, "v1", 6), std::invalid_argument);
}

TEST(ValidateAnswer, UnknownVersionIsErr007) {
  fixture f;
  const auto out = f.validator.validate_answer(valid_answer, "q", {}, "v9");
  EXPECT_FALSE(out.is_valid);
  EXPECT_FALSE(out.validation_error);
  EXPECT_EQ(out.schema, "");
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].code, v::baml_error::version_not_found);
  EXPECT_EQ(out.errors[0].error_type, "schema_version_not_found");
  EXPECT_THAT(out.errors[0].message, HasSubstr("v9"));
  EXPECT_EQ(f.generator.calls(), 0u);

  scripted_engine none;
  const v::answer_validator empty{none};
  EXPECT_EQ(empty.validate_answer(valid_answer, "q").errors.at(0).code, v::baml_error::version_not_found);
}

TEST(ValidateAnswer, GeneratorFailureIsErr006) {
  fixture f({step::failure("upstream unavailable")});
  const auto out = f.validator.validate_answer(R"({"answer": "330 m"})", "q");
  EXPECT_FALSE(out.is_valid);
  EXPECT_TRUE(out.validation_error);
  EXPECT_EQ(out.last_output, R"({"answer": "330 m"})");
  ASSERT_EQ(out.errors.size(), 1u);
  EXPECT_EQ(out.errors[0].code, v::baml_error::framework);
  EXPECT_THAT(out.errors[0].message, HasSubstr("upstream unavailable"));
}

TEST(ValidateAnswer, InvalidSchemasAreErr001AndErr008) {
  fixture f;
  const auto syntax = f.validator.add_version("v3", "model FinalAnswer {\n  answer string\n}\n", "v3.baml");
  ASSERT_FALSE(syntax.empty());
  EXPECT_EQ(syntax[0].code, v::baml_error::schema_parse);
  EXPECT_THAT(syntax[0].field_name, ::testing::StartsWith("v3.baml:2:"));
  const auto invalid = f.validator.add_version("v3", "model FinalAnswer {\n  answer: Text\n}\n", "v3.baml");
  ASSERT_EQ(invalid.size(), 1u);
  EXPECT_EQ(invalid[0].code, v::baml_error::invalid_schema);
  EXPECT_EQ(invalid[0].field_name, "v3.baml:2:11");
  EXPECT_EQ(invalid[0].message, "unknown type 'Text'");
  const auto duplicate = f.validator.add_version("v1", schema_file("v1"));
  ASSERT_EQ(duplicate.size(), 1u);
  EXPECT_EQ(duplicate[0].code, v::baml_error::invalid_schema);
  EXPECT_THAT(f.validator.registry().versions("FinalAnswer"), ElementsAre("v1", "v2"));
}

TEST(ValidateAnswer, VersionsAreCompatibleAndEachValidatesItsOwnFields) {
  fixture f;
  EXPECT_TRUE(f.validator.registry().check_compatibility("FinalAnswer", "v1", "v2").compatible());
  const std::string with_language =
      R"({"answer": "330 m", "confidence": 0.9, "sources": ["doc"], "language": "en"})";
  const auto v1 = f.validator.validate_answer(with_language, "q", {}, "v1");
  ASSERT_TRUE(v1.is_valid);
  EXPECT_FALSE(v1.validated_answer->as_object().contains("language"));  // not a v1 field
  const auto v2 = f.validator.validate_answer(with_language, "q", {}, "v2");
  ASSERT_TRUE(v2.is_valid);
  EXPECT_EQ(v2.schema, "FinalAnswer@v2");
  EXPECT_EQ(v2.validated_answer->at("language"), "en");
  fixture g({with_language});
  const auto bad = g.validator.validate_answer(
      R"({"answer": "330 m", "confidence": 0.9, "sources": ["doc"], "language": "English"})", "q", {}, "v2", 1);
  EXPECT_TRUE(bad.is_valid);
  EXPECT_EQ(bad.retry_count, 1);
  EXPECT_THAT(codes(bad.attempts[0].errors), ElementsAre("BAML-ERR-004"));
  EXPECT_EQ(bad.attempts[0].errors[0].field_name, "language");
}


// Seed 000 §6.1 (metrics) and §7.1 (audit logging): what a validator with covenant's metrics and
// audit log reports for three validations (valid at once, repaired by one retry, retries run out).
TEST(ValidateAnswerTelemetry, MetricsAndAuditLinesCarryTheSpecifiedFields) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("covenant_validator_audit_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto metrics = std::make_shared<covenant::metrics>();
  auto audit = std::make_shared<covenant::audit_log>(covenant::audit_log_options{.directory = dir});
  scripted_engine generator{valid_answer, R"({"answer": ""})", R"({"answer": ""})"};
  fake_sleeper sleeper;
  v::answer_validator validator(generator, {.sleep = std::ref(sleeper), .observers = {metrics, audit}});
  ASSERT_TRUE(validator.add_version("v1", schema_file("v1"), "final_answer_v1.baml").empty());
  ASSERT_TRUE(validator.validate_answer(valid_answer, "q", {}, "v1", 3, "query-1").is_valid);
  ASSERT_TRUE(validator.validate_answer(R"({"answer": "330 m", "confidence": 1.7, "sources": ["d"]})", "q", {}, "v1", 3,
                                        "query-2")
                  .is_valid);
  ASSERT_FALSE(validator.validate_answer(R"({"answer": ""})", "q", {}, "v1", 2, "query-3").is_valid);

  // §7.1: every validation attempt, with timestamp, query id, result, retry count, schema version
  // and the error details of a failure.
  audit->flush();
  std::ifstream in(audit->current_file());
  std::vector<boost::json::object> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(boost::json::parse(line).as_object());
  ASSERT_EQ(lines.size(), 1u + 2u + 3u);
  std::vector<std::string> summary;
  for (const auto& l : lines) {
    EXPECT_FALSE(l.at("ts").as_string().empty());
    EXPECT_EQ(l.at("schema_version").as_string(), "v1");
    summary.push_back(std::string(l.at("query_id").as_string()) + " " + std::string(l.at("result").as_string()) +
                      " retry " + std::to_string(l.at("retry_count").as_int64()) + " issues " +
                      std::to_string(l.at("issues").as_array().size()));
  }
  EXPECT_THAT(summary, ElementsAre("query-1 accepted retry 0 issues 0", "query-2 rejected retry 0 issues 1",
                                   "query-2 accepted retry 1 issues 0", "query-3 rejected retry 0 issues 3",
                                   "query-3 rejected retry 1 issues 3", "query-3 failed retry 2 issues 3"));
  EXPECT_EQ(lines[1].at("issues").as_array()[0].at("path").as_string(), "confidence");

  // §6.1: success rate, failures by error type, latency, retry count distribution and average,
  // schema version usage, errors by field.
  const std::string text = metrics->render();
  auto has = [&](const std::string& line) { return text.find("\n" + line + "\n") != std::string::npos; };
  EXPECT_TRUE(has(R"(covenant_calls_total{contract="validate_answer"} 3)")) << text;
  EXPECT_TRUE(has(R"(covenant_call_success_ratio{contract="validate_answer"} 0.6666666666666666)")) << text;
  EXPECT_TRUE(has(R"(covenant_call_failure_issues_total{contract="validate_answer",code="missing_field"} 2)")) << text;
  EXPECT_TRUE(has(R"(covenant_call_duration_seconds_count{contract="validate_answer"} 3)")) << text;
  EXPECT_TRUE(has(R"(covenant_call_retries_bucket{contract="validate_answer",le="0"} 1)")) << text;
  EXPECT_TRUE(has(R"(covenant_call_retries_bucket{contract="validate_answer",le="1"} 2)")) << text;
  EXPECT_TRUE(has(R"(covenant_call_retries_bucket{contract="validate_answer",le="2"} 3)")) << text;
  EXPECT_TRUE(has(R"(covenant_call_retries_average{contract="validate_answer"} 1)")) << text;
  EXPECT_TRUE(has(R"(covenant_schema_version_calls_total{contract="validate_answer",schema_version="v1"} 3)")) << text;
  EXPECT_TRUE(has(R"(covenant_attempt_issue_fields_total{contract="validate_answer",field="confidence"} 4)")) << text;
  fs::remove_all(dir);
}

}  // namespace
