// The answer validator of a question-answering system (models/validate_answer.hpp), offline: two
// versions of FinalAnswer from schema files in a registry, a scripted answer generator for the
// retries, and five calls: a valid answer, an invalid answer repaired by a retry, an unknown
// schema version (BAML-ERR-007), an answer still invalid when the retries run out (BAML-ERR-005,
// with the last output returned and flagged), and a version 2 answer.
#include <covenant/telemetry/metrics.hpp>
#include <covenant/testing/testing.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "models/validate_answer.hpp"

namespace {

using models::validator::ValidatorOutput;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void show(const char* title, const ValidatorOutput& out) {
  std::cout << "\n=== " << title << " ===\n";
  std::cout << "schema: " << (out.schema.empty() ? "(none)" : out.schema) << "\n";
  std::cout << "is_valid: " << (out.is_valid ? "true" : "false") << ", retry_count: " << out.retry_count
            << ", validation_error: " << (out.validation_error ? "true" : "false") << "\n";
  for (std::size_t i = 0; i < out.attempts.size(); ++i) {
    const auto& a = out.attempts[i];
    std::cout << (i == 0 ? "raw answer" : "retry " + std::to_string(i)) << ": "
              << (a.errors.empty() ? "valid" : std::to_string(a.errors.size()) + " problem(s)") << "\n";
    for (const auto& e : a.errors) std::cout << "  " << e.to_string() << "\n";
  }
  if (out.validated_answer) std::cout << "validated_answer: " << covenant::json_text(*out.validated_answer) << "\n";
  if (!out.errors.empty()) {
    std::cout << "errors:\n";
    for (const auto& e : out.errors) std::cout << "  " << e.to_string() << " [" << e.error_type << "]\n";
  }
  if (out.validation_error) std::cout << "last_output (invalid, shown with a warning): " << out.last_output << "\n";
}

}  // namespace

int main() {
  namespace v = models::validator;
  using covenant::testing::scripted_engine;

  // The answer generator, scripted: the replies it gives when asked for a corrected answer.
  scripted_engine generator{
      // call 2: the corrected answer
      R"({"answer": "The Eiffel Tower is 330 m tall.", "confidence": 0.9, "sources": ["doc-eiffel"]})",
      // call 4: still invalid, twice
      R"({"answer": "", "confidence": 0.5, "sources": ["doc-1"]})",
      R"({"answer": "Around 330 m.", "confidence": "very high", "sources": []})",
  };
  covenant::testing::fake_sleeper sleeper;
  // Metrics of every validation (success rate, failures by type and field, latency, retries,
  // schema versions); an audit log would be attached the same way (covenant::audit_log).
  auto metrics = std::make_shared<covenant::metrics>();
  v::answer_validator validator{generator, {.sleep = std::ref(sleeper), .observers = {metrics}}};

  const std::string dir = std::string(COVENANT_SOURCE_DIR) + "/examples/models/";
  for (const char* version : {"v1", "v2"}) {
    const std::string file = dir + "final_answer_" + version + ".baml";
    for (const auto& e : validator.add_version(version, read_file(file), file)) {
      std::cerr << e.to_string() << "\n";
      return 1;
    }
  }
  const auto compat = validator.registry().check_compatibility("FinalAnswer", "v1", "v2");
  std::cout << "FinalAnswer v1 -> v2: " << (compat.compatible() ? "backward compatible" : "breaking") << "\n"
            << compat.to_string();

  // A schema that does not load is reported with the specification's codes.
  const auto bad = validator.add_version("v3", "model FinalAnswer {\n  answer: string\n  sources: Source[]\n}\n");
  std::cout << "FinalAnswer@v3: " << bad.size() << " problem(s)\n";
  for (const auto& e : bad) std::cout << "  " << e.to_string() << "\n";

  const std::string query = "How tall is the Eiffel Tower?";
  const std::vector<v::EvidenceChunk> evidence = {{"doc-eiffel", "The tower is 330 metres (1,083 ft) tall."}};

  // 1. A valid answer (in a markdown fence, as models write it): no retry.
  const auto ok = validator.validate_answer(
      "Here you go:\n```json\n{\"answer\": \"330 m\", \"confidence\": 0.92, \"sources\": [\"doc-eiffel\"]}\n```",
      query, evidence);
  show("valid answer", ok);

  // 2. Confidence out of range and an empty source: one retry repairs it.
  const auto repaired = validator.validate_answer(
      R"({"answer": "330 m", "confidence": 1.7, "sources": [""]})", query, evidence);
  show("invalid answer, repaired by a retry", repaired);

  // 3. A version that is not registered.
  const auto unknown = validator.validate_answer(R"({"answer": "330 m"})", query, evidence, "v9");
  show("unknown schema version", unknown);

  // 4. Still invalid after the last retry: the last output comes back, flagged.
  const auto exhausted = validator.validate_answer(R"({"answer": "330 m", "sources": ["doc-eiffel"]})", query,
                                                   evidence, "v1", 2);
  show("retries exhausted", exhausted);

  // 5. Version 2 knows the language of the answer.
  const auto second = validator.validate_answer(
      R"({"answer": "330 m", "confidence": 0.9, "sources": ["doc-eiffel"], "language": "en"})", query, evidence,
      "v2");
  show("version 2", second);

  std::cout << "\nmetrics (excerpt):\n";
  {
    std::istringstream text(metrics->render());
    for (std::string line; std::getline(text, line);)
      if (line.rfind("covenant_call_success_ratio", 0) == 0 || line.rfind("covenant_call_retries_average", 0) == 0 ||
          line.rfind("covenant_schema_version_calls_total", 0) == 0 || line.rfind("covenant_call_failures_total", 0) == 0)
        std::cout << "  " << line << "\n";
  }

  std::cout << "\nwaits between retries:";
  for (auto d : sleeper.sleeps()) std::cout << " " << std::chrono::duration<double>(d).count() << "s";
  std::cout << "\n";

  const bool expected =
      compat.compatible() && bad.size() == 1 && bad[0].code == v::baml_error::invalid_schema &&  //
      ok.is_valid && ok.retry_count == 0 &&                                                       //
      repaired.is_valid && repaired.retry_count == 1 && repaired.attempts.front().errors.size() == 2 &&
      !unknown.is_valid && unknown.errors.size() == 1 && unknown.errors[0].code == v::baml_error::version_not_found &&
      !exhausted.is_valid && exhausted.validation_error && exhausted.retry_count == 2 &&
      exhausted.errors.back().code == v::baml_error::retries_exceeded && !exhausted.last_output.empty() &&
      second.is_valid && second.validated_answer->at("language") == "en" && generator.calls() == 3;
  return expected ? 0 : 1;
}
