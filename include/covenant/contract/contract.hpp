// covenant/contract/contract.hpp - design by contract around a model call.
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
//      retry options (covenant/engine/retry.hpp) and asks again, at most retry.tries times.
//   6. forward ALWAYS runs: on success with the (remedied, act-modified when act returns the input
//      type) input and an outcome holding the validated result; on failure with the original input
//      and an outcome holding every issue and the attempt history. Its return value is the call's.
// Engine failures (transport, quota) are not violations: they fail the call at stage `engine`
// without a corrective message. An exception from any stage before forward is recorded on the
// outcome as an issue of that stage; forward still runs. Nothing about a call is kept on the
// contract or the Expression (only the aggregate perf stats): one contract can be called from many
// threads at once.
//
// Asynchronous calls (docs/contracts.md, "Asynchronous calls"):
//     covenant::future<R> f = summarize.run_async(text, {.timeout = 30s});   // returns at once
//     auto f2 = summarize.stream(text, [](const covenant::stream_update<Summary>& u) { ... });
// The engine's transfers run on the runtime's I/O loop, remedy waits are timers, and the hooks,
// reading and forward run on the runtime's workers (or call_options::executor), one piece of a
// call at a time. A stop request or a passed deadline aborts the transfer at once and forward runs
// with a failed outcome at stage `cancelled` or `deadline`. A contract may be destroyed while its
// asynchronous calls are in flight: they hold what they need and finish normally.
#pragma once

#include <boost/core/demangle.hpp>

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

#include "covenant/contract/agent.hpp"
#include "covenant/contract/contract_options.hpp"
#include "covenant/read/decode.hpp"
#include "covenant/contract/detail/call.hpp"
#include "covenant/read/detail/filter.hpp"
#include "covenant/contract/detail/expression.hpp"
#include "covenant/contract/detail/run_hook.hpp"
#include "covenant/read/detail/read_reply.hpp"
#include "covenant/contract/detail/tool_runs.hpp"
#include "covenant/read/detail/stream_reader.hpp"
#include "covenant/types/encode.hpp"
#include "covenant/engine/engine.hpp"
#include "covenant/engine/future.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/json_schema.hpp"
#include "covenant/read/lenient.hpp"
#include "covenant/contract/outcome.hpp"
#include "covenant/read/partial.hpp"
#include "covenant/contract/perf_stats.hpp"
#include "covenant/types/prompt_format.hpp"
#include "covenant/engine/retry.hpp"
#include "covenant/read/validate.hpp"
#include "covenant/contract/violation.hpp"

namespace covenant {

namespace detail {
template <class T>
struct partial_type {
  using type = partial<T>;
};
template <>
struct partial_type<boost::json::value> {
  using type = partial_json;
};
}  // namespace detail

/// The partial view of an output type: partial<T>, or partial_json for runtime schemas.
template <class T>
using partial_of = typename detail::partial_type<T>::type;

/// What a streaming call reports while the reply is being written (contract::stream).
template <class Output>
struct stream_update {
  enum class kind : std::uint8_t {
    attempt_started,  ///< attempt `attempt` starts streaming (after a rejection: clear what was shown)
    partial,          ///< what the reply shows changed: `partial` and `text` say what it is now
    /// Agents: the model is writing the arguments of tool call `tool_index` of its reply:
    /// `tool_name` and `text` (the arguments so far) say what they are now.
    tool_arguments,
  };
  kind what = kind::attempt_started;
  /// 1-based number of the output attempt.
  int attempt = 1;
  /// The reply text so far (empty for attempt_started).
  std::string_view text{};
  /// attempt_started after a rejection: the rejected attempt (its issues say why); else null.
  const covenant::attempt* rejected = nullptr;
  /// kind::partial: the value so far with the state of each part (covenant/read/partial.hpp); valid
  /// during the callback only.
  const partial_of<Output>* partial = nullptr;
  /// kind::tool_arguments: the call's position in the reply (0-based) and the tool's name.
  std::size_t tool_index = 0;
  std::string_view tool_name{};
};

namespace detail {

/// Puts the JSON of an input between <input> and </input>: `message` holds "<input>\n" followed
/// by the JSON from `json_start` on; '<' in the JSON is escaped so the data cannot close the block.
COVENANT_API void seal_input_message(std::string& message, std::size_t json_start);

/// Writes the input message of `value` into `m` (a user message, empty): its JSON inside
/// <input>...</input>, each media field written as its reference ("<image 1>") with the media in
/// the message's `media`. A reference the model wrote in a repaired input stands for the media of
/// `originals` it names.
template <class T>
void render_input_message(message& m, const T& value, const std::vector<media>* originals = nullptr) {
  m.content.reserve(256);
  m.content += "<input>\n";
  const std::size_t start = m.content.size();
  media_sink sink{&m.media, originals};
  write_input_json(value, m.content, sink);
  seal_input_message(m.content, start);
}

/// System prompt of the output phase: the task, the input's schema (empty: not shown), the
/// output format and the rules the output must follow (shown as a list).
COVENANT_API std::string output_system_prompt(std::string_view task_prompt, std::string_view output_format,
                                              std::string_view input_format = {},
                                              const std::vector<std::string>& rules = {});
/// System prompt of the input-repair phase.
COVENANT_API std::string input_repair_system_prompt(std::string_view task_prompt, std::string_view input_format);
/// First user message of the input-repair phase: the bad input (its <input> block) and its problems.
COVENANT_API std::string input_repair_message(std::string input_block, const issue_list& issues);


/// Reads replies of one remedy phase into a T and checks them with `check(value, issues, stage)`
/// (a check that ran nothing sets the stage to perf_stage::total: no lap). Not streamed: the
/// input-repair phase's reader (streaming_reader below adds the stream of the output phase).
template <class T, class Check>
class typed_reader : public reply_reader {
 public:
  typed_reader(const contract_options& options, attempt_kind kind, std::optional<T>& destination, Check check)
      : options_(&options), repairing_(kind == attempt_kind::input_repair), destination_(&destination),
        check_(std::move(check)) {}

  stage read(attempt& a, call_timings& times, time_point& mark) override {
    std::chrono::nanoseconds parse_time{0};
    std::chrono::nanoseconds validate_time{0};
    decoded<T> r = read_reply<T>(std::string_view(a.text), options_->decode, options_->strictness, a.notes,
                                 parse_time, validate_time, options_->clock, &mark);
    if (repairing_) {
      if (parse_time.count() > 0 || validate_time.count() > 0)
        times.add(perf_stage::pre_remedy, parse_time + validate_time);
    } else {
      if (parse_time.count() > 0) times.add_attempt(perf_stage::parse, parse_time);
      if (validate_time.count() > 0) times.add_attempt(perf_stage::validate, validate_time);
    }
    stage failed_at = stage::validate;
    if (!r.ok()) {
      a.issues = std::move(r.issues);
      if (a.issues.front().code == issue_code::parse_error) failed_at = stage::parse;
      destination_->reset();
      return failed_at;
    }
    // Straight into the destination (one move of the value): a rejected value is taken back
    // below, and the call drops the result of a call that failed after a read (call::finish).
    *destination_ = std::move(r.value);
    perf_stage where = perf_stage::validate;
    check_(**destination_, a.issues, a.notes, where);
    if (where != perf_stage::total) {
      const time_point t = options_->clock ? options_->clock() : std::chrono::steady_clock::now();
      times.add(repairing_ ? perf_stage::pre_remedy : where, t - mark);
      mark = t;
    }
    if (!a.issues.empty()) {
      failed_at = where == perf_stage::post ? stage::post : stage::validate;
      // Kept when every issue is a noop (the contract turns those into notes and accepts).
      const bool only_noop = std::all_of(a.issues.begin(), a.issues.end(),
                                         [](const issue& i) { return i.action == fail_action::noop; });
      if (!only_noop) destination_->reset();
    }
    return failed_at;
  }

  void accept() override {}

 protected:
  const contract_options* options_;

 private:
  bool repairing_;
  std::optional<T>* destination_;
  Check check_;
};

/// The stream of one reply as the application sees it (contract::stream's on_update), for the typed
/// and the dynamic streaming readers alike: `Reader` is stream_reader<T> or dynamic_stream_reader.
/// An exception from on_update is logged and ignored: what a stream shows never decides a call. One
/// from a check the reader runs (a C++ predicate marked streaming_safe) is logged and ends the
/// judging of this reply's stream; the final reading runs the same check, which decides the call.
template <class Output, class Reader>
class stream_feed {
 public:
  std::function<void(const stream_update<Output>&)> on_update;

  /// Attempt `number` starts streaming (`make`: the reader's constructor arguments, the first time).
  template <class... Make>
  void start(int number, const attempt* rejected, Make&&... make) {
    if (!reader_) reader_.emplace(std::forward<Make>(make)...);
    else reader_->reset();
    number_ = number;
    judging_ = true;
    tool_text_.clear();
    if (!on_update) return;
    stream_update<Output> u;
    u.what = stream_update<Output>::kind::attempt_started;
    u.attempt = number;
    u.rejected = rejected;
    show(u);
  }

  /// The next piece of the reply: reply_reader::stream_text.
  bool text(std::string_view delta, issue_list& violations, std::size_t& kept) {
    if (!reader_ || !judging_) return false;
    bool changed = false;
    try {
      changed = reader_->feed(delta);
    } catch (const std::exception& e) {
      judging_ = false;
      stream_check_threw(e.what());
      return false;
    } catch (...) {
      judging_ = false;
      stream_check_threw(nullptr);
      return false;
    }
    if (changed && on_update) {
      stream_update<Output> u;
      u.what = stream_update<Output>::kind::partial;
      u.attempt = number_;
      u.text = reader_->text();
      u.partial = &reader_->view();
      show(u);
    }
    return stream_stop(*reader_, violations, kept);
  }

  /// The next piece of the arguments of tool call `index`: reply_reader::stream_tool_text.
  void tool_text(std::size_t index, std::string_view name, std::string_view delta) {
    if (!on_update) return;
    if (tool_text_.size() <= index) tool_text_.resize(index + 1);
    auto& [tool, text] = tool_text_[index];
    if (!name.empty()) tool = name;
    text += delta;
    stream_update<Output> u;
    u.what = stream_update<Output>::kind::tool_arguments;
    u.attempt = number_;
    u.text = text;
    u.tool_index = index;
    u.tool_name = tool;
    show(u);
  }

 private:
  void show(const stream_update<Output>& u) noexcept {
    try {
      on_update(u);
    } catch (const std::exception& e) {
      stream_callback_threw(e.what());
    } catch (...) {
      stream_callback_threw(nullptr);
    }
  }

  std::optional<Reader> reader_;
  int number_ = 1;
  bool judging_ = true;
  std::vector<std::pair<std::string, std::string>> tool_text_;  // each tool call's name and arguments so far
};

/// typed_reader with the stream of a reply: what it shows so far, and its early violations.
template <class T, class Check>
class streaming_reader final : public typed_reader<T, Check> {
 public:
  using typed_reader<T, Check>::typed_reader;

  void stream_start(int number, const attempt* rejected) override {
    feed_.start(number, rejected, options_->decode, options_->strictness);
  }
  bool stream_text(std::string_view delta, issue_list& violations, std::size_t& kept) override {
    return feed_.text(delta, violations, kept);
  }
  void stream_tool_text(std::size_t index, std::string_view name, std::string_view delta) override {
    feed_.tool_text(index, name, delta);
  }
  void on_update(std::function<void(const stream_update<T>&)> f) { feed_.on_update = std::move(f); }

 private:
  using typed_reader<T, Check>::options_;
  stream_feed<T, stream_reader<T>> feed_;
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
  using call_result = contract_result<result_type, output_type>;

  /// `model` must outlive the contract's blocking calls; asynchronous calls in flight when it is
  /// destroyed end cancelled (covenant/engine/engine.hpp). Throws std::invalid_argument for invalid
  /// options (contract_options::check).
  explicit contract(engine& model, contract_options options = {}, Expr expression = Expr{})
      : core_(std::make_shared<core>(model, std::move(options), std::move(expression))) {}

  /// A copy is a contract of its own: the same engine and options, a copy of the Expression, and
  /// statistics of its own (calls through the copy never show in the original's stats()). Calls
  /// in flight on the original are not affected. Needs a copyable Expression.
  contract(const contract& other)
    requires std::is_copy_constructible_v<Expr>
      : core_(std::make_shared<core>(*other.live().model, other.live().options, other.live().expr)) {}
  contract& operator=(const contract& other)
    requires std::is_copy_constructible_v<Expr>
  {
    if (this != &other) core_ = std::make_shared<core>(*other.live().model, other.live().options, other.live().expr);
    return *this;
  }
  /// Moving hands the contract over (its statistics too); the moved-from contract may only be
  /// destroyed or assigned to: a call through it throws std::logic_error. Calls in flight go on.
  contract(contract&&) noexcept = default;
  contract& operator=(contract&&) noexcept = default;
  ~contract() = default;

  /// Runs the contract and returns forward's value. When the contract failed and
  /// contract_options::graceful is false, throws covenant::contract_failure<result_type> (carrying
  /// forward's value and the outcome) after forward has run.
  result_type operator()(const input_type& input) const {
    return value_of(run_as(input, nullptr, detail::call_via::call_operator));
  }
  /// The same, with a stop token or a deadline for this call.
  result_type operator()(const input_type& input, const call_options& options) const {
    return value_of(run_as(input, &options, detail::call_via::call_operator));
  }

  /// Runs the contract and returns forward's value together with the outcome. Never throws for a
  /// failed contract: an exception from any stage before forward (a hook, the engine, rendering)
  /// is recorded as an issue of that stage and forward runs with the failure. Exceptions of
  /// forward itself propagate.
  [[nodiscard]] call_result run(const input_type& input) const {
    return run_as(input, nullptr, detail::call_via::run);
  }
  /// run() with a stop token or a deadline: a stop request or the deadline aborts the engine call
  /// in progress (or the wait between attempts) and forward runs with a failed outcome at stage
  /// `cancelled` or `deadline`. Everything still runs on the calling thread.
  [[nodiscard]] call_result run(const input_type& input, const call_options& options) const {
    return run_as(input, &options, detail::call_via::run);
  }

  /// Starts the contract and returns at once. The future gives run()'s result (or forward's
  /// exception); future::cancel() and options.stop cancel the call, options.timeout/deadline bound
  /// it. The input is copied. See the top of this header for which thread runs what.
  [[nodiscard]] future<call_result> run_async(input_type input, call_options options = {}) const {
    return start(std::move(input), std::move(options), nullptr);
  }

  /// run_async() with the reply streamed: `on_update` is told when each output attempt starts
  /// and as its text arrives (on a worker, one call at a time per contract call). With
  /// contract_options::early_stop, a streamed reply that already broke a rule no later text can
  /// fix is stopped and the model asked again at once.
  [[nodiscard]] future<call_result> stream(input_type input,
                                           std::function<void(const stream_update<output_type>&)> on_update,
                                           call_options options = {}) const {
    return start(std::move(input), std::move(options), std::move(on_update));
  }

  /// Per-stage timing statistics of every call so far.
  [[nodiscard]] const perf_stats& stats() const noexcept { return core_->stats; }
  [[nodiscard]] perf_stats& stats() noexcept { return core_->stats; }
  [[nodiscard]] const Expr& expression() const noexcept { return core_->expr; }
  [[nodiscard]] const contract_options& options() const noexcept { return core_->options; }
  /// The system message every output request starts with.
  [[nodiscard]] const std::string& system_prompt() const noexcept { return core_->system_prompt; }

 private:
  struct core final : detail::contract_core {
    core(engine& model, contract_options opts, Expr e)
        : detail::contract_core(model, std::move(opts), std::string(traits::name)), expr(std::move(e)) {
      options.check();
      schema_name = std::string(schema_name_of<output_type>());
      const std::string task = traits::prompt_of(expr);
      const std::string input_format =
          options.describe_input && has_prompt_metadata(schema_of<input_type>())
              ? prompt_text(schema_of<input_type>(), {.header = false})
              : std::string();
      system_prompt = detail::output_system_prompt(task, prompt_of<output_type>(), input_format, traits::rules_of());
      repair_prompt = detail::input_repair_system_prompt(task, prompt_of<input_type>());
      if (options.send_json_schema)
        response_schema = detail::strict_schema_or_null(&openai_strict_schema_of<output_type>);
      set_tools(detail::tool_runners_of(expr));
      // Build every schema model now, not on the first call.
      (void)schema_of<input_type>();
      (void)schema_of<intermediate_type>();
      (void)schema_of<output_type>();
    }
    Expr expr;
    std::string system_prompt;
    std::string repair_prompt;
  };

  template <class U>
  static std::string_view schema_name_of() {
    return schema_name<U>();
  }

  // Checks of a repaired input: its schema, then pre().
  struct input_check {
    const core* c;
    const std::vector<media>* originals;  // the input's media, which a repaired input refers to
    void operator()(const input_type& in, issue_list& found, note_list&, perf_stage&) const {
      // A repaired input names the input's media by their references ("<image 1>").
      media_tally tally{c->model->accepted_media(), originals};
      found = detail::validate_input(in, tally);
      if constexpr (traits::with_pre) {
        if (found.empty())
          detail::run_hook("pre", issue_code::precondition_violation, found, [&] { c->expr.pre(in); });
      }
    }
  };

  // Checks of an output: post() (the decoder checked the schema). `context` points to the call's
  // act result (or input), set once the output request is prepared.
  struct output_check {
    const core* c;
    const intermediate_type* const* context;
    void operator()(output_type& out, issue_list& issues, note_list& notes, perf_stage& where) const {
      // Tool checks (the application's predicates), their filters applied before post() sees the value.
      const bool tools = detail::apply_tool_checks(out, issues);
      if (!issues.empty() && detail::apply_filters(out, issues, notes)) {
        for (issue& i : covenant::validate(out)) issues.push_back(std::move(i));
      }
      if constexpr (traits::with_post) {
        where = tools ? perf_stage::validate : perf_stage::post;
        // post() sees only a value its checks accepted (noop failures are only noted).
        for (const issue& i : issues)
          if (i.action != fail_action::noop) return;
        where = perf_stage::post;
        detail::run_hook("post", issue_code::postcondition_violation, issues, [&] {
          if constexpr (traits::post_arity() == 2) c->expr.post(out, **context);
          else c->expr.post(out);
        });
        // on-fail action filter: the items post() pointed at are dropped; what is left is
        // checked against the schema again (a list may now be too short).
        if (!issues.empty() && detail::apply_filters(out, issues, notes)) {
          for (issue& i : covenant::validate(out)) issues.push_back(std::move(i));
        }
      } else {
        (void)out;
        (void)issues;
        (void)notes;
        where = tools ? perf_stage::validate : perf_stage::total;  // total: nothing ran, no stage to time
      }
    }
  };

  // One call: its input, outcome and intermediate values, run by detail::run_blocking or
  // detail::start_async.
  class call final : public detail::call_steps {
   public:
    // Blocking: the caller's input.
    call(const core& c, const input_type& input)
        : c_(&c), input_(&input),
          input_reader_(c.options, attempt_kind::input_repair, repaired_, input_check{&c, &input_media_}),
          output_reader_(c.options, attempt_kind::output, oc_.result, output_check{&c, &context_}) {
      begin();
    }
    // Asynchronous: owns its input and completes a future.
    call(const core& c, input_type&& input, std::shared_ptr<detail::future_state<call_result>> promise)
        : c_(&c), owned_(std::move(input)), input_(&*owned_),
          input_reader_(c.options, attempt_kind::input_repair, repaired_, input_check{&c, &input_media_}),
          output_reader_(c.options, attempt_kind::output, oc_.result, output_check{&c, &context_}),
          promise_(std::move(promise)) {
      via = detail::call_via::run_async;
      begin();
    }

    stage check_input(std::vector<message>& repair) override {
      at = stage::input_validation;
      media_tally tally{c_->model->accepted_media()};
      issue_list input_issues = detail::validate_input(*input_, tally);
      lap(perf_stage::input_validation);
      stage input_stage = input_issues.empty() ? stage::none : stage::input_validation;
      if constexpr (traits::with_pre) {
        if (input_issues.empty()) {
          at = stage::pre;
          detail::run_hook("pre", issue_code::precondition_violation, input_issues, [&] { c_->expr.pre(*input_); });
          lap(perf_stage::pre);
          if (!input_issues.empty()) input_stage = stage::pre;
        }
      }
      if (input_issues.empty()) return stage::none;
      oc_.input_issues = input_issues;
      // A media that cannot be sent (a file not read, a type the provider refuses) is no text the
      // model could repair.
      if (!c_->options.pre_remedy || tally.refused) {
        oc_.issues = std::move(input_issues);
        return input_stage;
      }
      at = stage::pre_remedy;
      repair.push_back({role::system, c_->repair_prompt});
      message bad_input{role::user, std::string()};
      detail::render_input_message(bad_input, *input_);
      input_media_ = bad_input.media;
      bad_input.content = detail::input_repair_message(std::move(bad_input.content), input_issues);
      repair.push_back(std::move(bad_input));
      if (c_->options.verbose) detail::log_prompt(c_->name, "input repair prompt", repair[1].content);
      return stage::pre_remedy;
    }

    detail::reply_reader& input_reader() override { return input_reader_; }

    stage prepare(std::vector<message>& base) override {
      const input_type& current = repaired_ ? *repaired_ : *input_;
      if constexpr (traits::with_act) {
        at = stage::act;
        issue_list act_issues;
        detail::run_hook("act", issue_code::hook_exception, act_issues, [&] { acted_.emplace(c_->expr.act(current)); });
        lap(perf_stage::act);
        if (!acted_) {
          oc_.issues = std::move(act_issues);
          return stage::act;
        }
        if (issue_list act_checks = covenant::validate(*acted_); !act_checks.empty()) {
          oc_.issues = std::move(act_checks);
          return stage::act;
        }
      }
      const intermediate_type& context = [&]() -> const intermediate_type& {
        if constexpr (traits::with_act) return *acted_;
        else return current;
      }();
      context_ = &context;
      at = stage::render;
      base.reserve(4);
      // Both messages made in place (a message is moved field by field).
      message& system = base.emplace_back();
      system.role = role::system;
      system.content = c_->system_prompt;
      message& user = base.emplace_back();
      user.role = role::user;
      // (a repaired input's references were checked with it: each names one of the input's media)
      detail::render_input_message(user, context, repaired_ ? &input_media_ : nullptr);
      if (c_->options.verbose) {
        detail::log_prompt(c_->name, "system prompt", base[0].content);
        detail::log_prompt(c_->name, "user prompt", base[1].content);
      }
      lap(perf_stage::render);
      return stage::none;
    }

    detail::reply_reader& output_reader() override { return output_reader_; }

    void discard() override { oc_.result.reset(); }

    void finish(stage failed) override {
      if (failed == stage::none) {
        oc_.success = true;
      } else {
        oc_.failed_stage = failed;
        oc_.result.reset();  // a reply read but then rejected (cut off, say) is no result
      }
      const input_type& forward_input = [&]() -> const input_type& {
        if constexpr (std::is_same_v<intermediate_type, input_type> && traits::with_act) {
          if (oc_.success) return *acted_;
        }
        if (oc_.success && repaired_) return *repaired_;
        return *input_;
      }();
      const detail::time_point f0 = c_->now();
      oc_.elapsed = f0 - start;
      // One path for every call: forward, the record (also when forward throws), then the result.
      try {
        result_type value = c_->expr.forward(forward_input, oc_);
        record(f0);
        if (promise_) promise_->set_value(call_result{std::move(value), std::move(oc_)});
        else value_.emplace(std::move(value));
      } catch (...) {
        record(f0, true);
        if (promise_) promise_->set_exception(std::current_exception());
        else error_ = std::current_exception();
      }
    }

    void on_update(std::function<void(const stream_update<output_type>&)> f) { output_reader_.on_update(std::move(f)); }

    /// The blocking call's result, once finish() ran (built in the caller's return value: the
    /// outcome is moved once); forward's exception is rethrown.
    call_result take() {
      if (error_) std::rethrow_exception(error_);
      return call_result{std::move(*value_), std::move(oc_)};
    }

   private:

    void begin() {
      oc = &oc_;
      start = c_->now();
      mark = start;
    }

    void lap(perf_stage s) {
      const detail::time_point t = c_->now();
      times.add(s, t - mark);
      mark = t;
    }

    void record(detail::time_point f0, bool forward_threw = false) {
      const detail::time_point f1 = c_->now();
      times.add(perf_stage::forward, f1 - f0);
      times.add(perf_stage::total, f1 - start);
      detail::call_finished(*c_, oc_, times, via, forward_threw);
    }

    std::optional<result_type> value_;  // forward's value (blocking calls)
    std::exception_ptr error_;          // or its exception
    const core* c_;
    std::optional<input_type> owned_;
    const input_type* input_;
    outcome<output_type> oc_;
    std::optional<input_type> repaired_;
    std::vector<media> input_media_;  // the input's media, as the input-repair message sent them
    std::optional<intermediate_type> acted_;
    const intermediate_type* context_ = nullptr;
    detail::typed_reader<input_type, input_check> input_reader_;
    detail::streaming_reader<output_type, output_check> output_reader_;
    std::shared_ptr<detail::future_state<call_result>> promise_;
  };

  future<call_result> start(input_type input, call_options options,
                            std::function<void(const stream_update<output_type>&)> on_update) const {
    auto [f, promise] = detail::make_future<call_result>();
    const std::stop_token cancel = promise->stop.get_token();
    auto c = std::make_shared<call>(live(), std::move(input), promise);
    const bool streaming = static_cast<bool>(on_update);
    if (streaming) c->on_update(std::move(on_update));
    // The call keeps the contract's core alive: the contract may go away first.
    detail::start_async(std::shared_ptr<detail::call_steps>(c, c.get()),
                        std::shared_ptr<const detail::contract_core>(core_, core_.get()), std::move(options), cancel,
                        streaming);
    return std::move(f);
  }

  call_result run_as(const input_type& input, const call_options* options, detail::call_via via) const {
    // The caller's input is read in place: the call ends (forward has run) before this returns.
    auto c = std::make_shared<call>(live(), input);
    c->via = via;
    detail::run_blocking(std::shared_ptr<detail::call_steps>(c, c.get()),
                         std::shared_ptr<const detail::contract_core>(core_, core_.get()), options);
    return c->take();
  }

  result_type value_of(call_result&& r) const {
    if (!r.outcome.success && !core_->options.graceful)
      throw contract_failure<result_type>(static_cast<outcome_base&>(r.outcome), std::move(r.value));
    return std::move(r.value);
  }

  /// The core, or std::logic_error for a moved-from contract.
  const core& live() const {
    if (!core_) detail::throw_moved_from("covenant::contract");
    return *core_;
  }

  std::shared_ptr<core> core_;
};

}  // namespace covenant
