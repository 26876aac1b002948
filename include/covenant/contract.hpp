// covenant/contract.hpp - design by contract around a model call.
//
// An Expression is a plain struct with a fixed task prompt and hooks over plain aggregates:
//
//     struct Summarize {
//       static constexpr std::string_view prompt = "Summarize the text in one sentence.";
//       void pre(const Text& in) const;                        // optional: throw covenant::violation
//       Prepared act(const Text& in) const;                    // optional: may change the type
//       void post(const Summary& out) const;                   // optional; or post(out, prepared)
//       Summary forward(const Text& in, const covenant::outcome<Summary>& o) const;  // required
//     };
//
//     covenant::contract<Summarize> summarize{engine, {.retry = {.tries = 3}}};
//     Summary s = summarize(text);                 // forward's value
//     auto [value, outcome] = summarize.run(text); // value and the whole story of the call
//
// One call, in order:
//   1. input validation against the input type's schema, then pre(input). With pre_remedy, the
//      model is shown the bad input and every violation and asked for a corrected input (same
//      retry schedule); otherwise the call fails at that stage.
//   2. act(input) (or the input itself when there is no act).
//   3. render: system message = the Expression's prompt + the output type's prompt text (built
//      once per contract); user message = the act result as JSON between <input> and </input>
//      ('<' is escaped as \u003c inside the JSON, so input data can never close the block).
//   4. engine call; read the reply (strict JSON first; then, per contract_options::strictness,
//      schema-guided coercions and the lenient reader: markdown fences, prose, syntax repairs,
//      truncated output), decoding into the output type with every constraint checked;
//      post(output[, act result]).
//   5. any issue and post_remedy: the rejected reply (as the assistant's turn) and a corrective
//      message listing every issue of that attempt (with accumulate_errors, also every earlier
//      attempt's issues and a short excerpt of its reply) are appended, the contract waits per the
//      retry policy (covenant/retry.hpp) and asks again, at most retry.tries times.
//   6. forward ALWAYS runs: on success with the (remedied, act-modified when act returns the input
//      type) input and an outcome holding the validated result; on failure with the original input
//      and an outcome holding every issue and the attempt history. Its return value is the call's.
// Engine failures (transport, quota) are not violations: they fail the call at stage `engine`
// without a corrective message. An exception from any stage before forward is recorded on the
// outcome as an issue of that stage; forward still runs. Nothing about a call is kept on the contract or the Expression
// (only the aggregate perf stats): one contract can be called from many threads at once.
#pragma once

#include <boost/core/demangle.hpp>
#include <spdlog/logger.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "covenant/decode.hpp"
#include "covenant/detail/expression.hpp"
#include "covenant/encode.hpp"
#include "covenant/engine.hpp"
#include "covenant/issues.hpp"
#include "covenant/json_schema.hpp"
#include "covenant/lenient.hpp"
#include "covenant/outcome.hpp"
#include "covenant/perf_stats.hpp"
#include "covenant/prompt_format.hpp"
#include "covenant/retry.hpp"
#include "covenant/validate.hpp"
#include "covenant/violation.hpp"

namespace covenant {

struct contract_options {
  /// Ask the model to repair an input that fails validation or pre().
  bool pre_remedy = false;
  /// Ask the model again when its output fails parsing, validation or post().
  bool post_remedy = true;
  /// Show every earlier attempt's issues in each corrective message (else only the latest).
  bool accumulate_errors = false;
  /// Log prompts and corrective messages (at debug level of the "covenant" logger).
  bool verbose = false;
  /// How many times to ask again, and when (see covenant/retry.hpp for the exact semantics).
  retry_policy retry{};
  /// How replies are read: strict (JSON only), repair (also extraction from prose and fences and
  /// syntax repairs), coerce (also schema-guided conversions such as "0.9" -> 0.9; the default).
  /// Whatever was repaired or coerced is recorded as notes on the attempt and the outcome.
  covenant::strictness strictness = covenant::strictness::coerce;
  /// A reply that was cut off (the text ended mid-value, or the engine reported its token limit)
  /// is accepted when what was written completely validates (the unfinished value is dropped, never
  /// completed; outcome::truncated and a `truncated` note say so). false: such a reply is rejected
  /// like any other invalid one and the model is asked again.
  bool accept_truncated = true;
  /// Options of the output decoder (unknown fields, limits).
  decode_options decode{};
  /// Send the output's JSON Schema with each request (for engines with structured outputs).
  bool send_json_schema = true;
  /// Injectable for tests: sleeps between attempts (default std::this_thread::sleep_for).
  std::function<void(std::chrono::nanoseconds)> sleep{};
  /// Injectable for tests: uniform draws in [0, 1) for jitter (default: a per-thread generator).
  std::function<double()> random{};
  /// Injectable for tests: the clock stages are timed with (default std::chrono::steady_clock).
  std::function<std::chrono::steady_clock::time_point()> clock{};
};

namespace detail {

/// The library's logger, named "covenant" (created on first use unless the application
/// registered its own logger of that name with spdlog first).
spdlog::logger& log();

using time_point = std::chrono::steady_clock::time_point;

/// Puts the JSON of an input between <input> and </input>: `message` holds "<input>\n" followed
/// by the JSON from `json_start` on; '<' in the JSON is escaped so the data cannot close the block.
void seal_input_message(std::string& message, std::size_t json_start);

/// The input message of `value`: its JSON inside <input>...</input>.
template <class T>
std::string render_input_message(const T& value) {
  std::string message;
  message.reserve(256);
  message += "<input>\n";
  const std::size_t start = message.size();
  to_json(value, message);
  seal_input_message(message, start);
  return message;
}
/// The corrective message after a rejected attempt.
std::string corrective_message(const attempt& rejected, const std::vector<const attempt*>& earlier,
                               std::string_view what);
/// System prompt of the output phase.
std::string output_system_prompt(std::string_view task_prompt, std::string_view output_format);
/// System prompt of the input-repair phase.
std::string input_repair_system_prompt(std::string_view task_prompt, std::string_view input_format);
/// First user message of the input-repair phase: the bad input (its <input> block) and its problems.
std::string input_repair_message(std::string input_block, const issue_list& issues);

void default_sleep(std::chrono::nanoseconds d);
double default_random();

/// The issue recorded when a hook throws something other than covenant::violation.
issue hook_exception_issue(std::string_view hook, std::string_view type, std::string_view what);

std::shared_ptr<const boost::json::value> strict_schema_or_null(const boost::json::value& (*get)());

void log_call_result(std::string_view expression, const outcome_base& o, bool graceful);
void log_retry(std::string_view expression, const attempt& a, std::chrono::nanoseconds wait, int left);
void log_prompt(std::string_view expression, std::string_view what, std::string_view text);

/// Runs a hook; collects covenant::violation issues (with `code`) or records another exception.
template <class F>
void run_hook(std::string_view hook, issue_code code, issue_list& out, F&& f) {
  try {
    f();
  } catch (const violation& v) {
    if (v.issues().empty()) {
      issue i;
      i.code = code;
      i.message = std::string(hook) + " rejected the value";
      out.push_back(std::move(i));
    }
    for (issue i : v.issues()) {
      if (i.code == issue_code::postcondition_violation || i.code == issue_code::precondition_violation) i.code = code;
      out.push_back(std::move(i));
    }
  } catch (const std::exception& e) {
    out.push_back(hook_exception_issue(hook, boost::core::demangle(typeid(e).name()), e.what()));
  } catch (...) {
    out.push_back(hook_exception_issue(hook, "unknown exception", ""));
  }
}

/// Reads a model reply into T. Strict JSON first (one pass, the fast path); then, unless the
/// strictness is `strict`: for well-formed JSON with issues, the same text with schema-guided
/// coercions (coerce level); for text that is not JSON, the candidates of the lenient reader
/// (fences, prose, repairs, truncation), each decoded, the best one kept: the first without
/// issues, else the one with the fewest. Notes say what was extracted, repaired and coerced.
/// `decode(text, options)` reads one JSON text into a decoded<T> (typed or dynamic decoding).
/// `reading` gives the strictness (`level`), partial mode and the lenient reader's limits.
/// With `mark`, reading starts at *mark (no clock read) and *mark is set to when it ended.
template <class T, class Decode>
decoded<T> read_reply_with(std::string_view text, const decode_options& options, const lenient_options& reading,
                           note_list& notes, std::chrono::nanoseconds& parse_time,
                           std::chrono::nanoseconds& validate_time, const std::function<time_point()>& clock,
                           Decode&& decode, time_point* mark = nullptr) {
  const strictness level = reading.level;
  auto now = [&] { return clock ? clock() : std::chrono::steady_clock::now(); };
  auto done = [&](time_point since) {
    const time_point t = now();
    validate_time += t - since;
    if (mark != nullptr) *mark = t;
  };
  const time_point t0 = mark != nullptr ? *mark : now();
  decode_options exact = options;
  exact.coerce = false;
  decoded<T> r = decode(text, exact);
  if (r.ok() || level == strictness::strict) {
    done(t0);
    for (const note& n : r.notes) notes.push_back(n);  // failed soft checks
    return r;
  }
  decode_options lenient = options;
  lenient.coerce = level == strictness::coerce;
  if (r.issues.front().code != issue_code::parse_error) {
    if (lenient.coerce) {
      decoded<T> c = decode(text, lenient);
      if (c.issues.size() < r.issues.size()) r = std::move(c);
    }
    done(t0);
    for (auto& n : r.notes) notes.push_back(std::move(n));
    return r;
  }
  // Not JSON as a whole: read the candidates of the lenient reader and keep the best.
  const std::vector<candidate> candidates = extract_candidates(text, reading);
  const time_point t1 = now();
  parse_time += t1 - t0;
  std::optional<decoded<T>> best;
  const candidate* chosen = nullptr;
  for (const candidate& c : candidates) {
    decoded<T> d = decode(c.json, lenient);
    if (d.ok()) {
      best = std::move(d);
      chosen = &c;
      break;
    }
    if (d.issues.front().code == issue_code::parse_error) continue;
    // A value of the wrong kind altogether (prose read as a string for an object) says less than
    // the parse error.
    if (d.issues.size() == 1 && d.issues.front().code == issue_code::type_mismatch && d.issues.front().path.empty())
      continue;
    if (!best || d.issues.size() < best->issues.size()) {
      best = std::move(d);
      chosen = &c;
    }
  }
  done(t1);
  if (!best) return r;
  for (const note& n : chosen->notes) notes.push_back(n);
  for (auto& n : best->notes) notes.push_back(std::move(n));
  r = std::move(*best);
  return r;  // every path returns r: no copy or move of the value on the way out
}

/// read_reply_with at strictness `level` (final mode; the lenient reader's depth limit is the
/// decoder's).
template <class T, class Decode>
decoded<T> read_reply_with(std::string_view text, const decode_options& options, strictness level, note_list& notes,
                           std::chrono::nanoseconds& parse_time, std::chrono::nanoseconds& validate_time,
                           const std::function<time_point()>& clock, Decode&& decode, time_point* mark = nullptr) {
  lenient_options reading;
  reading.level = level;
  reading.max_depth = options.max_depth;
  return read_reply_with<T>(text, options, reading, notes, parse_time, validate_time, clock,
                            std::forward<Decode>(decode), mark);
}

template <class T>
decoded<T> read_reply(std::string_view text, const decode_options& options, strictness level, note_list& notes,
                      std::chrono::nanoseconds& parse_time, std::chrono::nanoseconds& validate_time,
                      const std::function<time_point()>& clock, time_point* mark = nullptr) {
  return read_reply_with<T>(
      text, options, level, notes, parse_time, validate_time, clock,
      [](std::string_view t, const decode_options& o) { return decode<T>(t, o); }, mark);
}

/// The model-facing loop shared by typed and dynamic contracts: ask, read, check, remedy.
class remedy_runner {
 public:
  remedy_runner(engine& model, std::string_view name, std::shared_ptr<const boost::json::value> response_schema,
                std::string schema_name)
      : engine_(&model),
        name_(name),
        response_schema_(std::move(response_schema)),
        schema_name_(std::move(schema_name)) {}

  static time_point now(const contract_options& options) {
    return options.clock ? options.clock() : std::chrono::steady_clock::now();
  }

  /// Asks the model until its reply is read (`read(text, notes, parse_time, validate_time)` gives
  /// a decoded<T>), valid and passes `check(value, issues, stage)`, or tries run out.
  /// Stage times take one clock read per stage boundary: the engine call starts at `mark` (the
  /// end of the previous stage); a `read` that also takes `time_point& mark` starts reading at
  /// it and sets it to when reading ended; a `check` that ran nothing sets its stage to
  /// perf_stage::total (no lap).
  template <class T, class Read, class Check>
  std::optional<T> generate(const contract_options& options, std::vector<message> base, attempt_kind kind,
                            bool remedy, outcome_base& oc, call_timings& times, time_point& mark, Read&& read,
                            Check&& check) const {
    std::optional<T> out;
    generate_into(out, options, std::move(base), kind, remedy, oc, times, mark, std::forward<Read>(read),
                  std::forward<Check>(check));
    return out;
  }

  /// generate(), with the accepted value moved straight into `out`; returns whether there is one.
  template <class T, class Read, class Check>
  bool generate_into(std::optional<T>& out, const contract_options& options, std::vector<message> base,
                     attempt_kind kind, bool remedy, outcome_base& oc, call_timings& times, time_point& mark,
                     Read&& read, Check&& check) const {
    auto now = [&] { return remedy_runner::now(options); };
    const bool repairing = kind == attempt_kind::input_repair;
    auto lap = [&](perf_stage s) {
      const time_point t = now();
      times.add(repairing ? perf_stage::pre_remedy : s, t - mark);
      mark = t;
    };
    const int tries = options.retry.tries;
    const std::size_t first_attempt = oc.attempts.size();
    std::chrono::nanoseconds waited{0};
    chat_request request;
    request.messages = std::move(base);
    const std::size_t base_size = request.messages.size();
    if (!repairing) {
      request.response_schema = response_schema_;
      request.schema_name = schema_name_;
    }
    for (int k = 0;; ++k) {
      attempt a;
      a.kind = kind;
      a.number = k + 1;
      a.waited = waited;
      const time_point e0 = mark;
      try {
        chat_response reply = engine_->complete(request);
        a.text = std::move(reply.text);
        a.usage = reply.usage;
        a.finish_reason = std::move(reply.finish_reason);
      } catch (const std::exception& e) {
        a.engine_failed = true;
        issue i;
        i.code = issue_code::engine_error;
        i.message = std::string("engine failed: ") + e.what();
        a.issues.push_back(std::move(i));
      } catch (...) {
        a.engine_failed = true;
        issue i;
        i.code = issue_code::engine_error;
        i.message = "engine failed: unknown exception";
        a.issues.push_back(std::move(i));
      }
      {
        const time_point t = now();
        a.latency = t - e0;
        times.add(repairing ? perf_stage::pre_remedy : perf_stage::engine, t - e0);
        mark = t;
      }
      oc.usage += a.usage;
      if (a.engine_failed) {
        oc.issues = a.issues;
        oc.attempts.push_back(std::move(a));
        oc.failed_stage = repairing ? stage::pre_remedy : stage::engine;
        return false;
      }

      std::chrono::nanoseconds parse_time{0};
      std::chrono::nanoseconds validate_time{0};
      decoded<T> r = [&] {
        if constexpr (std::is_invocable_v<Read&, std::string_view, note_list&, std::chrono::nanoseconds&,
                                          std::chrono::nanoseconds&, time_point&>) {
          return read(std::string_view(a.text), a.notes, parse_time, validate_time, mark);
        } else {
          decoded<T> d = read(std::string_view(a.text), a.notes, parse_time, validate_time);
          mark = now();
          return d;
        }
      }();
      if (parse_time.count() > 0) times.add(repairing ? perf_stage::pre_remedy : perf_stage::parse, parse_time);
      if (validate_time.count() > 0) times.add(repairing ? perf_stage::pre_remedy : perf_stage::validate, validate_time);
      stage failed_at = stage::validate;
      if (!r.ok()) {
        a.issues = std::move(r.issues);
        if (a.issues.front().code == issue_code::parse_error) failed_at = stage::parse;
      } else {
        perf_stage where = perf_stage::validate;
        check(*r.value, a.issues, where);
        if (where != perf_stage::total) lap(where);
        if (!a.issues.empty()) failed_at = where == perf_stage::post ? stage::post : stage::validate;
      }
      if (a.finish_reason == "length") {
        note n;
        n.kind = note_kind::truncated;
        n.detail = "the reply was cut off by the engine's token limit";
        a.notes.push_back(std::move(n));
      }
      const bool cut = std::any_of(a.notes.begin(), a.notes.end(),
                                   [](const note& n) { return n.kind == note_kind::truncated; });
      if (cut && a.issues.empty() && !options.accept_truncated) {
        issue i;
        i.code = issue_code::parse_error;
        i.message = "the reply was cut off before its end";
        a.issues.push_back(std::move(i));
        failed_at = stage::parse;
      }
      if (a.issues.empty()) {
        oc.notes = a.notes;
        if (!repairing) oc.truncated = cut;
        oc.attempts.push_back(std::move(a));
        out = std::move(r.value);
        return true;
      }
      if (!remedy || k >= tries) {
        oc.issues = a.issues;
        oc.attempts.push_back(std::move(a));
        oc.failed_stage = repairing ? stage::pre_remedy : failed_at;
        return false;
      }
      // Remedy: corrective message, then wait.
      std::vector<const attempt*> earlier;
      if (options.accumulate_errors)
        for (std::size_t i = first_attempt; i < oc.attempts.size(); ++i) earlier.push_back(&oc.attempts[i]);
      std::string correction = corrective_message(a, earlier, repairing ? "corrected input" : "corrected JSON object");
      if (options.verbose) log_prompt(name_, "corrective message", correction);
      request.messages.resize(base_size);
      request.messages.push_back({role::assistant, a.text});
      request.messages.push_back({role::user, std::move(correction)});
      waited = options.retry.delay_before(k + 1, options.random ? options.random() : default_random());
      log_retry(name_, a, waited, tries - k);
      oc.attempts.push_back(std::move(a));
      lap(perf_stage::post_remedy);
      if (waited.count() > 0) {
        if (options.sleep) options.sleep(waited);
        else default_sleep(waited);
      }
      lap(perf_stage::post_remedy);
    }
  }

 private:
  engine* engine_;
  std::string name_;
  std::shared_ptr<const boost::json::value> response_schema_;
  std::string schema_name_;
};

}  // namespace detail

/// Wraps an Expression (see the top of this header) and an engine into a callable contract.
template <class Expr>
class contract {
  using traits = detail::expression_traits<Expr>;
  static_assert(traits::valid);

 public:
  using expression_type = Expr;
  using input_type = typename traits::input;
  using output_type = typename traits::output;
  using intermediate_type = typename traits::intermediate;
  using result_type = typename traits::result;

  /// `model` must outlive the contract. Throws std::invalid_argument for an invalid retry policy.
  explicit contract(engine& model, contract_options options = {}, Expr expression = Expr{})
      : options_(std::move(options)), expr_(std::move(expression)), runner_(model, traits::name, nullptr,
                                                                        std::string(schema_name<output_type>())) {
    options_.retry.check();
    const std::string task = traits::prompt_of(expr_);
    system_prompt_ = detail::output_system_prompt(task, prompt_of<output_type>());
    repair_prompt_ = detail::input_repair_system_prompt(task, prompt_of<input_type>());
    if (options_.send_json_schema)
      runner_ = detail::remedy_runner(model, traits::name,
                                      detail::strict_schema_or_null(&openai_strict_schema_of<output_type>),
                                      std::string(schema_name<output_type>()));
    // Build every schema model now, not on the first call.
    (void)schema_of<input_type>();
    (void)schema_of<intermediate_type>();
    (void)schema_of<output_type>();
  }

  /// Runs the contract and returns forward's value. When the contract failed and the retry
  /// policy is not graceful, throws covenant::contract_failure<result_type> (carrying forward's
  /// value and the outcome) after forward has run.
  result_type operator()(const input_type& input) const {
    contract_result<result_type, output_type> r = run(input);
    if (!r.outcome.success && !options_.retry.graceful)
      throw contract_failure<result_type>(static_cast<outcome_base&>(r.outcome), std::move(r.value));
    return std::move(r.value);
  }

  /// Runs the contract and returns forward's value together with the outcome. Never throws for a
  /// failed contract: an exception from any stage before forward (a hook, the engine, rendering)
  /// is recorded as an issue of that stage and forward runs with the failure. Exceptions of
  /// forward itself propagate.
  contract_result<result_type, output_type> run(const input_type& input) const {
    call_timings times;
    outcome<output_type> oc;
    const detail::time_point start = now();
    std::optional<input_type> repaired;
    std::optional<intermediate_type> acted;
    stage at = stage::input_validation;
    stage failed = stage::none;
    try {
      failed = run_stages(input, oc, times, start, repaired, acted, at);
    } catch (const std::exception& e) {
      oc.result.reset();
      oc.issues.push_back(
          detail::hook_exception_issue(to_string(at), boost::core::demangle(typeid(e).name()), e.what()));
      failed = at;
    } catch (...) {
      oc.result.reset();
      oc.issues.push_back(detail::hook_exception_issue(to_string(at), "unknown exception", ""));
      failed = at;
    }
    if (failed != stage::none) return finish(input, oc, times, start, failed);
    oc.success = true;
    if constexpr (std::is_same_v<intermediate_type, input_type> && traits::with_act) {
      return finish(*acted, oc, times, start, stage::none);
    } else {
      return finish(repaired ? *repaired : input, oc, times, start, stage::none);
    }
  }

  /// Per-stage timing statistics of every call so far.
  [[nodiscard]] const covenant::perf_stats& perf_stats() const noexcept { return stats_; }
  [[nodiscard]] covenant::perf_stats& perf_stats() noexcept { return stats_; }
  [[nodiscard]] const Expr& expression() const noexcept { return expr_; }
  [[nodiscard]] const contract_options& options() const noexcept { return options_; }
  /// The system message every output request starts with.
  [[nodiscard]] const std::string& system_prompt() const noexcept { return system_prompt_; }

 private:
  detail::time_point now() const { return options_.clock ? options_.clock() : std::chrono::steady_clock::now(); }

  // Stages 1-5 of a call; returns the stage that failed (stage::none: oc.result holds the output).
  // `at` follows the stage being run, for an exception that escapes one.
  stage run_stages(const input_type& input, outcome<output_type>& oc, call_timings& times, detail::time_point start,
                   std::optional<input_type>& repaired, std::optional<intermediate_type>& acted, stage& at) const {
    detail::time_point mark = start;
    auto lap = [&](perf_stage s) {
      const detail::time_point t = now();
      times.add(s, t - mark);
      mark = t;
    };

    // 1. input validation and pre
    at = stage::input_validation;
    issue_list input_issues = covenant::validate(input);
    lap(perf_stage::input_validation);
    stage input_stage = input_issues.empty() ? stage::none : stage::input_validation;
    if constexpr (traits::with_pre) {
      if (input_issues.empty()) {
        at = stage::pre;
        detail::run_hook("pre", issue_code::precondition_violation, input_issues, [&] { expr_.pre(input); });
        lap(perf_stage::pre);
        if (!input_issues.empty()) input_stage = stage::pre;
      }
    }
    if (!input_issues.empty()) {
      oc.input_issues = input_issues;
      if (!options_.pre_remedy) {
        oc.issues = std::move(input_issues);
        return input_stage;
      }
      at = stage::pre_remedy;
      repaired = repair_input(input, std::move(input_issues), oc, times);
      mark = now();
      if (!repaired) return stage::pre_remedy;
    }
    const input_type& current = repaired ? *repaired : input;

    // 2. act
    if constexpr (traits::with_act) {
      at = stage::act;
      issue_list act_issues;
      detail::run_hook("act", issue_code::hook_exception, act_issues, [&] { acted.emplace(expr_.act(current)); });
      lap(perf_stage::act);
      if (!acted) {
        oc.issues = std::move(act_issues);
        return stage::act;
      }
      if (issue_list act_checks = covenant::validate(*acted); !act_checks.empty()) {
        oc.issues = std::move(act_checks);
        return stage::act;
      }
    }
    const intermediate_type& context = [&]() -> const intermediate_type& {
      if constexpr (traits::with_act) return *acted;
      else return current;
    }();

    // 3. render
    at = stage::render;
    std::vector<message> base;
    base.reserve(4);
    base.push_back({role::system, system_prompt_});
    base.push_back({role::user, detail::render_input_message(context)});
    if (options_.verbose) {
      detail::log_prompt(traits::name, "system prompt", base[0].content);
      detail::log_prompt(traits::name, "user prompt", base[1].content);
    }
    lap(perf_stage::render);

    // 4-5. generate, read, check; remedy
    at = stage::engine;
    const bool generated = generate_into<output_type>(
        oc.result, std::move(base), attempt_kind::output, options_.post_remedy, oc, times, mark,
        [&](const output_type& out, issue_list& issues, perf_stage& where) {
          if constexpr (traits::with_post) {
            where = perf_stage::post;
            detail::run_hook("post", issue_code::postcondition_violation, issues, [&] {
              if constexpr (traits::post_arity() == 2) expr_.post(out, context);
              else expr_.post(out);
            });
          } else {
            (void)out;
            (void)issues;
            where = perf_stage::total;  // nothing ran: no stage to time
          }
        });
    return generated ? stage::none : oc.failed_stage;
  }

  contract_result<result_type, output_type> finish(const input_type& forward_input, outcome<output_type>& oc,
                                                   call_timings& times, detail::time_point start,
                                                   stage failed) const {
    if (!oc.success) oc.failed_stage = failed;
    const detail::time_point f0 = now();
    oc.elapsed = f0 - start;
    result_type value = expr_.forward(forward_input, oc);
    const detail::time_point f1 = now();
    times.add(perf_stage::forward, f1 - f0);
    times.add(perf_stage::total, f1 - start);
    stats_.record(times);
    detail::log_call_result(traits::name, oc, options_.retry.graceful);
    return {std::move(value), std::move(oc)};
  }

  // Asks the model for a T (see detail::remedy_runner::generate).
  template <class T, class Check>
  std::optional<T> generate(std::vector<message> base, attempt_kind kind, bool remedy, outcome_base& oc,
                            call_timings& times, detail::time_point& mark, Check&& check) const {
    std::optional<T> out;
    generate_into<T>(out, std::move(base), kind, remedy, oc, times, mark, std::forward<Check>(check));
    return out;
  }

  template <class T, class Check>
  bool generate_into(std::optional<T>& out, std::vector<message> base, attempt_kind kind, bool remedy,
                     outcome_base& oc, call_timings& times, detail::time_point& mark, Check&& check) const {
    return runner_.template generate_into<T>(
        out, options_, std::move(base), kind, remedy, oc, times, mark,
        [&](std::string_view text, note_list& notes, std::chrono::nanoseconds& parse, std::chrono::nanoseconds& valid,
            detail::time_point& at) {
          return detail::read_reply<T>(text, options_.decode, options_.strictness, notes, parse, valid, options_.clock,
                                       &at);
        },
        std::forward<Check>(check));
  }

  std::optional<input_type> repair_input(const input_type& input, issue_list issues, outcome_base& oc,
                                         call_timings& times) const {
    detail::time_point mark = now();
    std::vector<message> base;
    base.push_back({role::system, repair_prompt_});
    base.push_back({role::user, detail::input_repair_message(detail::render_input_message(input), issues)});
    if (options_.verbose) detail::log_prompt(traits::name, "input repair prompt", base[1].content);
    return generate<input_type>(std::move(base), attempt_kind::input_repair, true, oc, times, mark,
                                [&](const input_type& in, issue_list& found, perf_stage&) {
                                  found = covenant::validate(in);
                                  if constexpr (traits::with_pre) {
                                    if (found.empty())
                                      detail::run_hook("pre", issue_code::precondition_violation, found,
                                                       [&] { expr_.pre(in); });
                                  }
                                });
  }

  contract_options options_;
  Expr expr_;
  detail::remedy_runner runner_;
  std::string system_prompt_;
  std::string repair_prompt_;
  mutable covenant::perf_stats stats_;
};

}  // namespace covenant
