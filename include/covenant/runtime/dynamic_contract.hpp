// covenant/runtime/dynamic_contract.hpp - a contract whose output type is a runtime schema (a schema file,
// a JSON Schema document, the registry), with the output as a validated boost::json::value.
//
//     auto types = covenant::schema_set::load("review.baml");
//     covenant::dynamic_contract review{engine, {.name = "review_code",
//                                                .prompt = "Review the code.",
//                                                .output = types.model("CodeReviewResult")}};
//     covenant::outcome<boost::json::value> o = review.run(boost::json::value{{"code", source}});
//
// Everything works as in covenant::contract (covenant/contract/contract.hpp): the prompt shows the output
// schema's prompt text, replies are read strictly then leniently, validated with every issue, fed
// back on the retry schedule, and every stage is timed. The hooks are functions: `pre` on the
// input and `post` on the output (throwing covenant::violation); input validation uses `input`
// when given. There is no forward: the outcome is the result.
#pragma once

#include <boost/json/value.hpp>

#include <functional>
#include <string>
#include <vector>
#include <optional>
#include <string>

#include "covenant/contract/contract.hpp"
#include "covenant/engine/future.hpp"
#include "covenant/read/dynamic.hpp"
#include "covenant/types/schema.hpp"

namespace covenant {

/// What a dynamic contract's call operator throws (its fallback is null). Instantiated once, in the
/// library, so that its typeinfo is the library's own and a program catches it across a shared
/// libcovenant.
extern template class COVENANT_API contract_failure<boost::json::value>;

/// What a dynamic contract does: the runtime counterpart of an Expression.
struct dynamic_task {
  /// Name in logs ("task" when empty).
  std::string name{};
  /// The fixed task prompt.
  std::string prompt{};
  /// Schema of the output (the model's reply).
  schema::model output{};
  /// Schema of the input, when it should be validated (and, with pre_remedy, repaired); shown in
  /// the system prompt when it has descriptions or constraints (contract_options::describe_input).
  std::optional<schema::model> input{};
  /// Rules the output must follow beyond its schema (what `post` checks), shown in the system
  /// prompt so the model knows them before its first answer.
  std::vector<std::string> rules{};
  /// Optional precondition on the input; throws covenant::violation.
  std::function<void(const boost::json::value& input)> pre{};
  /// Optional postcondition on the validated output (with the input); throws covenant::violation.
  std::function<void(const boost::json::value& output, const boost::json::value& input)> post{};
  /// The schema's version (registry-backed tasks, e.g. "v2"): in observers' events, audit lines,
  /// metrics (covenant_schema_version_calls_total) and log lines.
  std::string schema_version{};
  /// The folder relative file paths of the input's media fields (`image`, `pdf`, `audio`) are
  /// read from (empty: the current directory). See docs/media.md.
  std::string media_root{};
};

class COVENANT_API dynamic_contract {
 public:
  using input_type = boost::json::value;
  /// What run() returns, as contract::run() does: the value (the validated output; null when the
  /// contract failed) and the call's outcome.
  using call_result = contract_result<boost::json::value, boost::json::value>;

  /// `model` must outlive the contract's blocking calls (see covenant/engine/engine.hpp for asynchronous
  /// calls). Throws std::invalid_argument for invalid options (contract_options::check).
  dynamic_contract(engine& model, dynamic_task task, contract_options options = {});
  /// A copy is a contract of its own, with statistics of its own (as contract's copies are).
  dynamic_contract(const dynamic_contract& other);
  dynamic_contract& operator=(const dynamic_contract& other);
  /// The moved-from contract may only be destroyed or assigned to: a call through it throws
  /// std::logic_error.
  dynamic_contract(dynamic_contract&&) noexcept;
  dynamic_contract& operator=(dynamic_contract&&) noexcept;
  ~dynamic_contract();

  /// Runs the contract. Never throws for a failed contract: see the outcome.
  ///
  ///     auto [value, outcome] = c.run(input);
  [[nodiscard]] call_result run(const boost::json::value& input) const;
  /// run() with a stop token or a deadline (see contract::run).
  [[nodiscard]] call_result run(const boost::json::value& input, const call_options& options) const;

  /// Starts the contract and returns at once (see contract::run_async).
  [[nodiscard]] future<call_result> run_async(boost::json::value input, call_options options = {}) const;
  /// run_async() with the reply streamed to `on_update` (see contract::stream).
  [[nodiscard]] future<call_result> stream(
      boost::json::value input, std::function<void(const stream_update<boost::json::value>&)> on_update,
      call_options options = {}) const;

  /// The validated output. When the contract failed: null if contract_options::graceful, else
  /// throws covenant::contract_failure<boost::json::value> (fallback null) with the outcome.
  boost::json::value operator()(const boost::json::value& input) const;

  /// Per-stage timing statistics of every call so far (see contract::stats).
  [[nodiscard]] const covenant::perf_stats& stats() const noexcept;
  [[nodiscard]] covenant::perf_stats& stats() noexcept;
  [[nodiscard]] const dynamic_task& task() const noexcept;
  [[nodiscard]] const std::string& system_prompt() const noexcept;

  struct core;

 private:
  future<call_result> start(boost::json::value input, call_options options,
                                            std::function<void(const stream_update<boost::json::value>&)> on_update) const;
  [[nodiscard]] const core& live() const;
  std::shared_ptr<core> core_;
};

}  // namespace covenant
