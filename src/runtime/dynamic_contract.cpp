#include "covenant/runtime/dynamic_contract.hpp"

#include "covenant/read/detail/filter.hpp"
#include "covenant/read/detail/read_reply.hpp"
#include "covenant/read/detail/stream_reader.hpp"

#include "covenant/types/json_schema.hpp"
#include "covenant/types/prompt_format.hpp"

#include "dynamic_media.hpp"
#include "read/json_ops.hpp"

namespace covenant {

template class contract_failure<boost::json::value>;

namespace {

std::shared_ptr<const boost::json::value> strict_schema(const schema::model& m) {
  try {
    return std::make_shared<const boost::json::value>(to_openai_strict_schema(m));
  } catch (const std::exception&) {
    return nullptr;  // not expressible in strict mode: the prompt text carries the schema
  }
}

message input_message(const boost::json::value& input, std::vector<media> parts = {}) {
  message m{role::user, "<input>\n", std::move(parts)};
  const std::size_t start = m.content.size();
  m.content += json_text(input);
  detail::seal_input_message(m.content, start);
  return m;
}

}  // namespace

struct dynamic_contract::core final : detail::contract_core {
  core(engine& model, dynamic_task t, contract_options o)
      : detail::contract_core(model, std::move(o), t.name.empty() ? std::string("task") : t.name), task(std::move(t)) {
    options.check();
    schema_version = task.schema_version;
    has_forward = false;
    if (options.send_json_schema) response_schema = strict_schema(task.output);
    schema_name = task.output.title();
    const std::string input_format = options.describe_input && task.input && has_prompt_metadata(*task.input)
                                         ? prompt_text(*task.input, {.header = false})
                                         : std::string();
    system_prompt = detail::output_system_prompt(task.prompt, prompt_text(task.output), input_format, task.rules);
    if (task.input) repair_prompt = detail::input_repair_system_prompt(task.prompt, prompt_text(*task.input));
    input_media = task.input && detail::has_media(*task.input);
  }
  dynamic_task task;
  bool input_media = false;  ///< the input schema has media fields
  std::string system_prompt;
  std::string repair_prompt;
};

namespace {

/// Checks a value read from a reply (post(), or pre() of a repaired input); may drop parts of it
/// (on-fail action filter) with a note.
using json_check = std::function<void(boost::json::value&, issue_list&, note_list&)>;

/// Reads replies of one remedy phase against a runtime schema and checks them with `check`.
class dynamic_reader final : public detail::reply_reader {
 public:
  dynamic_reader(const contract_options& options, const schema::model& m, attempt_kind kind,
                 std::optional<boost::json::value>& destination, json_check check)
      : options_(&options), model_(&m), repairing_(kind == attempt_kind::input_repair),
        destination_(&destination), check_(std::move(check)) {}

  stage read(attempt& a, call_timings& times, detail::time_point& mark) override {
    std::chrono::nanoseconds parse_time{0};
    std::chrono::nanoseconds validate_time{0};
    lenient_options reading;
    reading.level = options_->strictness;
    reading.max_depth = options_->decode.max_depth;
    decoded<boost::json::value> r = detail::read_reply_with<boost::json::value>(
        a.text, options_->decode, reading, a.notes, parse_time, validate_time, options_->clock,
        [&](std::string_view t, const decode_options& o) {
          dynamic_result d = try_decode_dynamic(t, *model_, o);
          decoded<boost::json::value> out;
          out.issues = std::move(d.issues);
          out.notes = std::move(d.notes);
          if (out.issues.empty()) out.value.emplace(std::move(d.value));
          return out;
        });
    const detail::time_point t0 = now();
    if (repairing_) {
      if (parse_time.count() > 0 || validate_time.count() > 0)
        times.add(perf_stage::pre_remedy, parse_time + validate_time);
    } else {
      if (parse_time.count() > 0) times.add_attempt(perf_stage::parse, parse_time);
      if (validate_time.count() > 0) times.add_attempt(perf_stage::validate, validate_time);
    }
    mark = t0;
    last_.reset();
    if (!r.ok()) {
      a.issues = std::move(r.issues);
      return a.issues.front().code == issue_code::parse_error ? stage::parse : stage::validate;
    }
    stage failed_at = stage::validate;
    if (check_) {
      check_(*r.value, a.issues, a.notes);
      const detail::time_point t = now();
      times.add(repairing_ ? perf_stage::pre_remedy : perf_stage::post, t - mark);
      mark = t;
      if (!a.issues.empty() && !repairing_) failed_at = stage::post;
    }
    last_ = std::move(r.value);
    return failed_at;
  }

  void accept() override { *destination_ = std::move(last_); }

  void stream_start(int number, const attempt* rejected) override {
    feed_.start(number, rejected, *model_, options_->decode, options_->strictness);
  }
  bool stream_text(std::string_view delta, issue_list& violations, std::size_t& kept) override {
    return feed_.text(delta, violations, kept);
  }
  void stream_tool_text(std::size_t index, std::string_view name, std::string_view delta) override {
    feed_.tool_text(index, name, delta);
  }

  detail::stream_feed<boost::json::value, detail::dynamic_stream_reader> feed_;

 private:
  [[nodiscard]] detail::time_point now() const {
    return options_->clock ? options_->clock() : std::chrono::steady_clock::now();
  }

  const contract_options* options_;
  const schema::model* model_;
  bool repairing_;
  std::optional<boost::json::value>* destination_;
  json_check check_;
  std::optional<boost::json::value> last_;
};

/// One dynamic contract call.
class dynamic_call final : public detail::call_steps {
 public:
  /// Blocking: the caller's input. Asynchronous: `owned` holds it, and the call completes `promise`.
  dynamic_call(const dynamic_contract::core& c, const boost::json::value* input, boost::json::value owned = nullptr,
               std::shared_ptr<detail::future_state<dynamic_contract::call_result>> promise = nullptr)
      : c_(&c),
        owned_(std::move(owned)),
        input_(input != nullptr ? input : &owned_),
        input_reader_(c.options, c.task.input ? *c.task.input : c.task.output, attempt_kind::input_repair, repaired_,
                      [this](const boost::json::value& in, issue_list& found, note_list&) { check_repaired(in, found); }),
        output_reader_(c.options, c.task.output, attempt_kind::output, oc_.result, post_check()),
        promise_(std::move(promise)) {
    if (promise_) via = detail::call_via::run_async;
    oc = &oc_;
    start = c.now();
    mark = start;
  }

  stage check_input(std::vector<message>& repair) override {
    at = stage::input_validation;
    const dynamic_task& task = c_->task;
    issue_list input_issues;
    bool media_refused = false;  // a media that cannot be sent is no text the model could repair
    current_ = input_;
    if (task.input) {
      dynamic_result v = try_validate_value(*input_, *task.input);
      input_issues = std::move(v.issues);
      const bool valid = input_issues.empty();
      if (valid) {
        normalized_ = std::move(v.value);
        current_ = &normalized_;
      }
      if (c_->input_media) {  // read even when the rest is invalid: the media's problems come too
        detail::media_input media = detail::read_media_fields(valid ? normalized_ : *input_, *task.input,
                                                              task.media_root, nullptr, c_->model->accepted_media());
        media_refused = !media.issues.empty();
        for (issue& i : media.issues) input_issues.push_back(std::move(i));
        input_media_ = std::move(media.parts);
        shown_ = std::move(media.shown);
      }
    }
    lap(perf_stage::input_validation);
    stage input_stage = input_issues.empty() ? stage::none : stage::input_validation;
    if (input_issues.empty() && task.pre) {
      at = stage::pre;
      run_pre(*current_, input_issues);
      lap(perf_stage::pre);
      if (!input_issues.empty()) input_stage = stage::pre;
    }
    if (input_issues.empty()) return stage::none;
    oc_.input_issues = input_issues;
    if (!c_->options.pre_remedy || !task.input || media_refused) {
      oc_.issues = std::move(input_issues);
      return input_stage;
    }
    at = stage::pre_remedy;
    repair.push_back({role::system, c_->repair_prompt});
    if (c_->input_media) {
      repair.push_back(input_message(shown_, input_media_));  // every media was read and can be sent
    } else {
      repair.push_back(input_message(*input_));
    }
    repair.back().content = detail::input_repair_message(std::move(repair.back().content), input_issues);
    return stage::pre_remedy;
  }

  detail::reply_reader& input_reader() override { return input_reader_; }

  stage prepare(std::vector<message>& base) override {
    if (repaired_) current_ = &*repaired_;
    at = stage::render;
    base.push_back({role::system, c_->system_prompt});
    if (!c_->input_media) {
      base.push_back(input_message(*current_));
    } else if (!repaired_) {
      base.push_back(input_message(shown_, input_media_));
    } else {
      base.push_back(input_message(repaired_media_.shown, std::move(repaired_media_.parts)));
    }
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
    if (failed == stage::none) oc_.success = true;
    else oc_.failed_stage = failed;
    if (!oc_.success) oc_.result.reset();
    oc_.elapsed = c_->now() - start;
    times.add(perf_stage::total, oc_.elapsed);
    detail::call_finished(*c_, oc_, times, via);
    boost::json::value value = oc_.success && oc_.result ? *oc_.result : boost::json::value();
    dynamic_contract::call_result r{std::move(value), std::move(oc_)};
    if (promise_) promise_->set_value(std::move(r));
    else result.emplace(std::move(r));
  }

  void on_update(std::function<void(const stream_update<boost::json::value>&)> f) {
    output_reader_.feed_.on_update = std::move(f);
  }

  std::optional<dynamic_contract::call_result> result;

 private:
  // A repaired input: its media fields name the input's media by reference ("<image 1>"), or by
  // URL; each must name one of them (an issue at its path otherwise, fed back to the model), then pre().
  void check_repaired(const boost::json::value& in, issue_list& found) {
    if (c_->input_media) {
      repaired_media_ = detail::read_media_fields(in, *c_->task.input, c_->task.media_root, &input_media_,
                                                  c_->model->accepted_media());
      if (!repaired_media_.issues.empty()) {
        found = std::move(repaired_media_.issues);
        return;
      }
    }
    run_pre(in, found);
  }

  void run_pre(const boost::json::value& in, issue_list& out) const {
    if (c_->task.pre) detail::run_hook("pre", issue_code::precondition_violation, out, [&] { c_->task.pre(in); });
  }

  json_check post_check() {
    if (!c_->task.post) return {};
    return [this](boost::json::value& out, issue_list& issues, note_list& notes) {
      detail::run_hook("post", issue_code::postcondition_violation, issues, [&] { c_->task.post(out, *current_); });
      // on-fail action filter: the items post() pointed at are dropped; what is left is checked
      // against the schema again (a list may now be too short).
      const schema::model& m = c_->task.output;
      if (!issues.empty() &&
          detail::apply_filters(detail::value_ref{&out, &detail::json_ops()}, m, issues, notes)) {
        for (issue& i : try_validate_value(out, m, c_->options.decode).issues) issues.push_back(std::move(i));
      }
    };
  }

  void lap(perf_stage s) {
    const detail::time_point t = c_->now();
    times.add(s, t - mark);
    mark = t;
  }

  const dynamic_contract::core* c_;
  boost::json::value owned_;
  const boost::json::value* input_;
  boost::json::value normalized_;
  boost::json::value shown_;         // the input with its media as references
  std::vector<media> input_media_;   // the input's media, in the order of their references
  detail::media_input repaired_media_;  // the repaired input as shown, with its media (check_repaired)
  const boost::json::value* current_ = input_;
  outcome<boost::json::value> oc_;
  std::optional<boost::json::value> repaired_;
  dynamic_reader input_reader_;
  dynamic_reader output_reader_;
  std::shared_ptr<detail::future_state<dynamic_contract::call_result>> promise_;
};

}  // namespace

dynamic_contract::dynamic_contract(engine& model, dynamic_task task, contract_options options)
    : core_(std::make_shared<core>(model, std::move(task), std::move(options))) {}

dynamic_contract::dynamic_contract(const dynamic_contract& other)
    : core_(std::make_shared<core>(*other.live().model, other.live().task, other.live().options)) {}

dynamic_contract& dynamic_contract::operator=(const dynamic_contract& other) {
  if (this != &other) core_ = std::make_shared<core>(*other.live().model, other.live().task, other.live().options);
  return *this;
}

dynamic_contract::dynamic_contract(dynamic_contract&&) noexcept = default;
dynamic_contract& dynamic_contract::operator=(dynamic_contract&&) noexcept = default;
dynamic_contract::~dynamic_contract() = default;

const dynamic_contract::core& dynamic_contract::live() const {
  if (!core_) detail::throw_moved_from("covenant::dynamic_contract");
  return *core_;
}

namespace {

dynamic_contract::call_result run_as(const dynamic_contract::core& core, const boost::json::value& input,
                                   const call_options* options, detail::call_via via) {
  // The caller's input is read in place: the call ends before this returns.
  auto c = std::make_shared<dynamic_call>(core, &input);
  c->via = via;
  detail::run_blocking(std::shared_ptr<detail::call_steps>(c, c.get()),
                       std::static_pointer_cast<const detail::contract_core>(core.shared_from_this()), options);
  return std::move(*c->result);
}

}  // namespace

dynamic_contract::call_result dynamic_contract::run(const boost::json::value& input) const {
  return run_as(live(), input, nullptr, detail::call_via::run);
}

dynamic_contract::call_result dynamic_contract::run(const boost::json::value& input, const call_options& options) const {
  return run_as(live(), input, &options, detail::call_via::run);
}

future<dynamic_contract::call_result> dynamic_contract::run_async(boost::json::value input, call_options options) const {
  return start(std::move(input), std::move(options), nullptr);
}

future<dynamic_contract::call_result> dynamic_contract::stream(
    boost::json::value input, std::function<void(const stream_update<boost::json::value>&)> on_update,
    call_options options) const {
  return start(std::move(input), std::move(options), std::move(on_update));
}

future<dynamic_contract::call_result> dynamic_contract::start(
    boost::json::value input, call_options options,
    std::function<void(const stream_update<boost::json::value>&)> on_update) const {
  auto [f, promise] = detail::make_future<call_result>();
  const std::stop_token cancel = promise->stop.get_token();
  auto c = std::make_shared<dynamic_call>(live(), nullptr, std::move(input), promise);
  const bool streaming = static_cast<bool>(on_update);
  if (streaming) c->on_update(std::move(on_update));
  detail::start_async(std::shared_ptr<detail::call_steps>(c, c.get()),
                      std::shared_ptr<const detail::contract_core>(core_, core_.get()), std::move(options), cancel,
                      streaming);
  return std::move(f);
}

boost::json::value dynamic_contract::operator()(const boost::json::value& input) const {
  call_result r = run_as(live(), input, nullptr, detail::call_via::call_operator);
  outcome<boost::json::value>& o = r.outcome;
  if (o.success) return std::move(r.value);
  if (!core_->options.graceful)
    throw contract_failure<boost::json::value>(static_cast<outcome_base&>(o), boost::json::value());
  return nullptr;
}

const covenant::perf_stats& dynamic_contract::stats() const noexcept { return core_->stats; }
covenant::perf_stats& dynamic_contract::stats() noexcept { return core_->stats; }
const dynamic_task& dynamic_contract::task() const noexcept { return core_->task; }
const std::string& dynamic_contract::system_prompt() const noexcept { return core_->system_prompt; }

}  // namespace covenant
