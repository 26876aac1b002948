// validate_answer: the answer validator of a question-answering system, built on covenant's
// runtime schemas. An answer generator's raw reply is read against a versioned FinalAnswer schema
// (schema files in the `model` form, kept in a registry); when it does not validate, the generator
// is asked again with every problem, up to max_retries times with exponential backoff (1 s, 2 s,
// 4 s, ... capped at 8 s so five retries wait at most 23 s), and the result says what happened in
// the error codes of the specification:
//
//   BAML-ERR-001 schema parsing error          BAML-ERR-005 maximum retries exceeded
//   BAML-ERR-002 missing required field        BAML-ERR-006 framework error (the generator failed)
//   BAML-ERR-003 type mismatch                 BAML-ERR-007 schema version not found
//   BAML-ERR-004 constraint violation          BAML-ERR-008 invalid schema definition
//
//     models::validator::answer_validator v{generator};
//     v.add_version("v1", read_file("final_answer_v1.baml"));
//     auto out = v.validate_answer(raw, query, evidence, "v1", 3);
//     if (out.is_valid) use(*out.validated_answer);
//     else if (out.validation_error) show(out.last_output);   // the last attempt, flagged invalid
//
// The retries are a covenant::dynamic_contract over the generator (any covenant::engine; the
// example and the tests use the scripted engine, so everything runs offline).
#pragma once

#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/engine/engine.hpp>
#include <covenant/types/issues.hpp>
#include <covenant/contract/observer.hpp>
#include <covenant/runtime/registry.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace models::validator {

/// The specification's error codes.
enum class baml_error : std::uint8_t {
  schema_parse = 1,          ///< BAML-ERR-001: a schema file does not parse (or cannot be read)
  missing_field = 2,         ///< BAML-ERR-002: a required field is missing
  type_mismatch = 3,         ///< BAML-ERR-003: a value of the wrong type (or no JSON at all)
  constraint_violation = 4,  ///< BAML-ERR-004: a constraint (range, length, ...) failed
  retries_exceeded = 5,      ///< BAML-ERR-005: still invalid after the last retry
  framework = 6,             ///< BAML-ERR-006: the generator (engine) or a hook failed
  version_not_found = 7,     ///< BAML-ERR-007: no such schema version
  invalid_schema = 8,        ///< BAML-ERR-008: a schema parses but is not a valid definition
};

/// "BAML-ERR-004".
inline std::string code_text(baml_error e) { return "BAML-ERR-00" + std::to_string(static_cast<int>(e)); }

/// The error_type word of a code ("missing_field", "type_mismatch", "constraint_violation", ...).
inline std::string_view error_type(baml_error e) noexcept {
  switch (e) {
    case baml_error::schema_parse: return "schema_parse_error";
    case baml_error::missing_field: return "missing_field";
    case baml_error::type_mismatch: return "type_mismatch";
    case baml_error::constraint_violation: return "constraint_violation";
    case baml_error::retries_exceeded: return "max_retries_exceeded";
    case baml_error::framework: return "framework_error";
    case baml_error::version_not_found: return "schema_version_not_found";
    case baml_error::invalid_schema: return "invalid_schema";
  }
  return "framework_error";
}

/// The HTTP status the specification pairs with a code (422 for answers that do not validate,
/// 400 for an unknown version, 500 otherwise).
inline int http_status(baml_error e) noexcept {
  switch (e) {
    case baml_error::missing_field:
    case baml_error::type_mismatch:
    case baml_error::constraint_violation: return 422;
    case baml_error::version_not_found: return 400;
    default: return 500;
  }
}

/// The code of a problem in an answer. Text that is not JSON at all is a type mismatch (text
/// where an object was expected); cross-field rules, unknown fields and rejected postconditions
/// are constraint violations; a failed engine or hook, a cancelled call or a passed deadline is a
/// framework error, as is a problem of an agent's loop (an unknown tool, a limit reached).
inline baml_error code_for(covenant::issue_code c) noexcept {
  switch (c) {
    case covenant::issue_code::missing_field: return baml_error::missing_field;
    case covenant::issue_code::type_mismatch:
    case covenant::issue_code::parse_error: return baml_error::type_mismatch;
    case covenant::issue_code::constraint_violation:
    case covenant::issue_code::invariant_violation:
    case covenant::issue_code::unknown_field:
    case covenant::issue_code::precondition_violation:
    case covenant::issue_code::postcondition_violation: return baml_error::constraint_violation;
    case covenant::issue_code::hook_exception:
    case covenant::issue_code::engine_error:
    case covenant::issue_code::cancelled:
    case covenant::issue_code::deadline:
    case covenant::issue_code::unknown_tool:
    case covenant::issue_code::limit_reached: return baml_error::framework;
  }
  return baml_error::framework;
}

/// The code of a schema load problem: text that cannot be read as a schema (syntax, size and
/// nesting limits, unreadable file) is a parsing error; everything else makes the definition
/// invalid (unknown or duplicate types and fields, recursion, bad constraints, ...).
inline baml_error code_for(covenant::schema_error_code c) noexcept {
  switch (c) {
    case covenant::schema_error_code::syntax_error:
    case covenant::schema_error_code::limit_exceeded:
    case covenant::schema_error_code::io_error: return baml_error::schema_parse;
    default: return baml_error::invalid_schema;
  }
}

/// The code of a registry error: a schema (or version) that is not registered, or a reference
/// that names none, is "not found"; a definition the registry refuses is invalid.
inline baml_error code_for(covenant::registry_error_code c) noexcept {
  switch (c) {
    case covenant::registry_error_code::unknown_schema:
    case covenant::registry_error_code::unknown_version:
    case covenant::registry_error_code::invalid_reference: return baml_error::version_not_found;
    case covenant::registry_error_code::duplicate_version:
    case covenant::registry_error_code::invalid_schema: return baml_error::invalid_schema;
  }
  return baml_error::invalid_schema;
}

/// One problem, in the specification's shape.
struct ValidationError {
  std::string field_name;  ///< "confidence", "sources[1]", "metadata.token_usage.input_tokens"; "" = the answer
  std::string error_type;  ///< "missing_field", "type_mismatch", "constraint_violation", ...
  std::string expected;
  std::string actual;
  std::string message;
  baml_error code = baml_error::framework;

  /// "BAML-ERR-004 confidence: must be <= 1 (got 1.7)"
  [[nodiscard]] std::string to_string() const {
    std::string out = code_text(code) + " ";
    if (!field_name.empty()) out += field_name + ": ";
    out += message;
    if (!actual.empty()) out += " (got " + actual + ")";
    return out;
  }
};

inline ValidationError make_error(baml_error code, std::string message, std::string field = {}) {
  ValidationError e;
  e.field_name = std::move(field);
  e.error_type = std::string(error_type(code));
  e.message = std::move(message);
  e.code = code;
  return e;
}

inline ValidationError to_validation_error(const covenant::issue& i) {
  ValidationError e = make_error(code_for(i.code), i.message, i.path.to_string());
  e.expected = i.expected;
  e.actual = i.actual;
  return e;
}

/// A schema problem; field_name is its place in the file ("final_answer.baml:4:12").
inline ValidationError to_validation_error(const covenant::schema_diagnostic& d) {
  std::string where = d.file;
  if (d.line > 0) where += ":" + std::to_string(d.line) + ":" + std::to_string(d.column);
  else if (!d.pointer.empty()) where += (where.empty() ? "" : ":") + d.pointer;
  return make_error(code_for(d.code), d.message, std::move(where));
}

inline std::vector<ValidationError> to_validation_errors(const covenant::issue_list& issues) {
  std::vector<ValidationError> out;
  out.reserve(issues.size());
  for (const auto& i : issues) out.push_back(to_validation_error(i));
  return out;
}

/// A piece of evidence the answer was built from.
struct EvidenceChunk {
  std::string id;
  std::string text;
};

/// One output that was validated: the raw answer (first), then each regenerated one.
struct Attempt {
  std::string output;
  std::vector<ValidationError> errors;  ///< empty: this output was accepted
};

struct ValidatorOutput {
  bool is_valid = false;
  /// The answer, validated against the schema version (keys in schema order, optional fields
  /// only when present). Present exactly when is_valid.
  std::optional<boost::json::value> validated_answer;
  /// Why it is not valid: the last output's problems, then BAML-ERR-005 when retries ran out (or
  /// the single error of an unknown version, an invalid schema or a failed generator).
  std::vector<ValidationError> errors;
  /// Regenerations asked for (0 when the raw answer was valid).
  int retry_count = 0;
  /// Wall time of the call, in seconds (waits between retries included).
  double validation_time = 0;
  /// Set when no output validated after the answer was read: `last_output` is then the last
  /// output as written, to be shown with a warning.
  bool validation_error = false;
  std::string last_output;
  /// The schema used, "FinalAnswer@v1" ("" when the version was not found).
  std::string schema;
  /// Every output validated, in order, with its problems.
  std::vector<Attempt> attempts;
};

/// Tells `inner` about a validate_answer call as one validation: the raw answer is attempt 1 and
/// each regeneration a retry (the contract that regenerates numbers its own calls from 1).
class validation_observer final : public covenant::observer {
 public:
  validation_observer(covenant::observer& inner, const covenant::attempt* raw) : inner_(&inner), raw_(raw) {}
  void on_request(const covenant::request_event& e) override {
    // The first regeneration is the first retry of the validation.
    if (e.attempt == 1 && raw_ != nullptr)
      inner_->on_retry(covenant::retry_event{e.call, e.kind, 2, std::chrono::nanoseconds(0), raw_->issues});
    inner_->on_request(covenant::request_event{e.call, e.kind, e.attempt + 1, e.request});
  }
  void on_stream(const covenant::stream_event& e) override { inner_->on_stream(e); }
  void on_attempt(const covenant::attempt_event& e) override {
    covenant::attempt a = e.a;
    a.number += 1;
    inner_->on_attempt(covenant::attempt_event{e.call, a, e.verdict, e.retries + 1, e.steps});
  }
  void on_action(const covenant::action_event& e) override {
    inner_->on_action(covenant::action_event{e.call, e.attempt + 1, e.action, e.note, e.issue});
  }
  void on_retry(const covenant::retry_event& e) override {
    inner_->on_retry(covenant::retry_event{e.call, e.kind, e.next_attempt + 1, e.wait, e.issues});
  }
  void on_finished(const covenant::finished_event& e) override {
    covenant::outcome_base o = e.outcome;
    for (auto& a : o.attempts) a.number += 1;
    if (raw_ != nullptr) o.attempts.insert(o.attempts.begin(), *raw_);
    inner_->on_finished(covenant::finished_event{e.call, o, e.timings});
  }

 private:
  covenant::observer* inner_;
  const covenant::attempt* raw_;
};

struct validator_options {
  /// Wait before the first retry; each later one waits `backoff` times longer, at most max_delay.
  std::chrono::milliseconds first_delay{1000};
  double backoff = 2.0;
  std::chrono::milliseconds max_delay{8000};
  /// Sleeps between retries (default: std::this_thread::sleep_for); tests record instead.
  std::function<void(std::chrono::nanoseconds)> sleep{};
  /// Told about every validation (covenant::metrics, covenant::audit_log, tracing): one call per
  /// validate_answer, the raw answer as attempt 1, each regeneration as a retry, with the query
  /// id given to validate_answer and the schema version used.
  std::vector<std::shared_ptr<covenant::observer>> observers{};
};

/// Validates answers against the registered versions of FinalAnswer and asks `generator` for
/// corrected ones. Thread-safe for concurrent validate_answer calls once the versions are added.
class answer_validator {
 public:
  static constexpr std::string_view schema_name = "FinalAnswer";

  explicit answer_validator(covenant::engine& generator, validator_options options = {})
      : generator_(&generator), options_(std::move(options)) {}

  /// Registers version `version` of FinalAnswer from schema-file text (its `FinalAnswer` type).
  /// Returns every problem (BAML-ERR-001 for text that does not parse, BAML-ERR-008 for an
  /// invalid definition or a version already registered); empty when registered.
  std::vector<ValidationError> add_version(std::string_view version, std::string_view schema_text,
                                           std::string_view file = {}) {
    covenant::schema_load_options load;
    load.file = file.empty() ? "FinalAnswer@" + std::string(version) : std::string(file);
    try {
      registry_.add_schema_file(schema_name, version, schema_text, schema_name, load);
      return {};
    } catch (const covenant::registry_error& e) {
      std::vector<ValidationError> out;
      for (const auto& d : e.issues()) out.push_back(to_validation_error(d));
      if (out.empty()) out.push_back(make_error(code_for(e.code()), e.what()));
      return out;
    }
  }

  [[nodiscard]] const covenant::schema_registry& registry() const noexcept { return registry_; }

  /// Reads `raw_answer` against FinalAnswer@schema_version; when it does not validate, asks the
  /// generator again (with the query, the evidence, the rejected answer and every problem) at
  /// most `max_retries` times (1 to 5; std::invalid_argument otherwise).
  [[nodiscard]] ValidatorOutput validate_answer(std::string_view raw_answer, std::string_view query,
                                                const std::vector<EvidenceChunk>& evidence = {},
                                                std::string_view schema_version = "v1", int max_retries = 3,
                                                std::string_view query_id = {}) const {
    if (max_retries < 1 || max_retries > 5) throw std::invalid_argument("max_retries must be between 1 and 5");
    const auto start = std::chrono::steady_clock::now();
    ValidatorOutput out;
    auto finish = [&]() -> ValidatorOutput {
      out.validation_time = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return std::move(out);
    };

    std::optional<covenant::registered_schema> schema;
    try {
      schema = registry_.get(schema_name, schema_version);
    } catch (const covenant::registry_error& e) {
      out.errors.push_back(make_error(code_for(e.code()), e.what()));
      return finish();
    }
    out.schema = schema->ref();

    // The raw answer, read the way contracts read replies (fences, repairs, coercions).
    const auto read_start = std::chrono::steady_clock::now();
    covenant::read_result first = covenant::try_read_dynamic(raw_answer, *schema->model);
    out.attempts.push_back({std::string(raw_answer), to_validation_errors(first.issues)});
    const std::string id = query_id.empty() ? covenant::make_query_id() : std::string(query_id);
    const std::string version(schema_version);
    covenant::attempt raw;
    raw.text = std::string(raw_answer);
    raw.issues = first.issues;
    raw.notes = first.notes;
    raw.latency = std::chrono::steady_clock::now() - read_start;
    if (first.ok()) {
      out.is_valid = true;
      out.validated_answer = std::move(first.value);
      // One validation, accepted at once: told to the observers here (no contract runs).
      const covenant::call_info info{"validate_answer", id, version};
      covenant::outcome_base o;
      o.success = true;
      o.query_id = id;
      o.attempts.push_back(raw);
      o.elapsed = std::chrono::steady_clock::now() - start;
      const covenant::call_timings timings;
      for (const auto& ob : options_.observers) {
        try {
          ob->on_attempt(covenant::attempt_event{info, raw, covenant::verdict::accepted, 0});
          ob->on_finished(covenant::finished_event{info, o, timings});
        } catch (...) {
        }
      }
      return finish();
    }

    // Retries: a dynamic contract over the generator; the first regeneration is its first call
    // (after first_delay), later ones are its remedy attempts (after 2 s, 4 s, ...).
    covenant::contract_options co;
    co.retry.tries = max_retries - 1;
    co.retry.delay = std::chrono::duration_cast<std::chrono::milliseconds>(options_.first_delay * options_.backoff);
    co.retry.backoff = options_.backoff;
    co.retry.max_delay = options_.max_delay;
    co.retry.jitter = 0;
    co.graceful = true;
    co.accumulate_errors = true;
    co.sleep = options_.sleep;
    // Observers see the raw answer's rejection as attempt 1, then the contract's calls as retries.
    std::vector<std::shared_ptr<validation_observer>> adapters;
    for (const auto& ob : options_.observers) {
      if (!ob) continue;
      const covenant::call_info info{"validate_answer", id, version};
      try {
        ob->on_attempt(covenant::attempt_event{info, raw, covenant::verdict::rejected, 0});
      } catch (...) {
      }
      co.observers.push_back(std::make_shared<validation_observer>(*ob, &raw));
    }
    covenant::dynamic_task task;
    task.name = "validate_answer";
    task.schema_version = version;
    task.prompt =
        "You write the final answer of a question-answering system. The answer in the input, to the "
        "query in the input, does not satisfy the answer schema; the input lists every problem. "
        "Answer the query again from the evidence, as one JSON object that satisfies the schema.";
    task.output = *schema->model;
    const covenant::dynamic_contract regenerate{*generator_, std::move(task), co};

    boost::json::object input;
    input["query"] = query;
    boost::json::array chunks;
    for (const auto& c : evidence) chunks.push_back(boost::json::object{{"id", c.id}, {"text", c.text}});
    input["evidence"] = std::move(chunks);
    input["rejected_answer"] = raw_answer;
    boost::json::array problems;
    for (const auto& i : first.issues) problems.push_back(boost::json::string(i.to_string()));
    input["problems"] = std::move(problems);

    sleep(options_.first_delay);
    covenant::call_options call;
    call.query_id = id;
    covenant::outcome<boost::json::value> o = regenerate.run(input, call).outcome;
    out.retry_count = static_cast<int>(o.calls());
    for (const auto& a : o.attempts) out.attempts.push_back({a.text, to_validation_errors(a.issues)});
    if (o.success) {
      out.is_valid = true;
      out.validated_answer = std::move(*o.result);
      return finish();
    }
    out.validation_error = true;
    out.last_output = std::string(raw_answer);
    for (const auto& a : o.attempts)
      if (!a.engine_failed) out.last_output = a.text;
    if (o.failed_stage == covenant::stage::engine) {
      const std::string why = o.issues.empty() ? std::string("the answer generator failed") : o.issues.front().message;
      out.errors.push_back(make_error(baml_error::framework, why));
      return finish();
    }
    out.errors = to_validation_errors(o.issues);
    out.errors.push_back(make_error(baml_error::retries_exceeded,
                                    "the answer is still invalid after " + std::to_string(out.retry_count) +
                                        (out.retry_count == 1 ? " retry" : " retries")));
    return finish();
  }

 private:
  void sleep(std::chrono::milliseconds d) const {
    const std::chrono::nanoseconds ns = d;
    if (options_.sleep) options_.sleep(ns);
    else std::this_thread::sleep_for(ns);
  }

  covenant::engine* generator_;
  validator_options options_;
  covenant::schema_registry registry_;
};

}  // namespace models::validator
