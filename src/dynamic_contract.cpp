#include "covenant/dynamic_contract.hpp"

#include "covenant/detail/dynamic_read.hpp"

#include "covenant/json_schema.hpp"
#include "covenant/prompt_format.hpp"

namespace covenant {

namespace {

std::shared_ptr<const boost::json::value> strict_schema(const schema::model& m) {
  try {
    return std::make_shared<const boost::json::value>(to_openai_strict_schema(m));
  } catch (const std::exception&) {
    return nullptr;  // not expressible in strict mode: the prompt text carries the schema
  }
}

std::string input_message(const boost::json::value& input) {
  std::string message = "<input>\n";
  const std::size_t start = message.size();
  message += json_text(input);
  detail::seal_input_message(message, start);
  return message;
}

}  // namespace

dynamic_contract::dynamic_contract(engine& model, dynamic_task task, contract_options options)
    : task_(std::move(task)),
      options_(std::move(options)),
      runner_(model, task_.name.empty() ? std::string_view("task") : std::string_view(task_.name),
              options_.send_json_schema ? strict_schema(task_.output) : nullptr, task_.output.title()),
      repair_runner_(model, task_.name.empty() ? std::string_view("task") : std::string_view(task_.name), nullptr,
                     {}) {
  options_.retry.check();
  system_prompt_ = detail::output_system_prompt(task_.prompt, prompt_text(task_.output));
  if (task_.input) repair_prompt_ = detail::input_repair_system_prompt(task_.prompt, prompt_text(*task_.input));
}

decoded<boost::json::value> dynamic_contract::read(const schema::model& m, std::string_view text, note_list& notes,
                                                   std::chrono::nanoseconds& parse,
                                                   std::chrono::nanoseconds& valid) const {
  lenient_options reading;
  reading.level = options_.strictness;
  reading.max_depth = options_.decode.max_depth;
  return detail::read_dynamic_reply(
      text, options_.decode, reading, notes, parse, valid, options_.clock,
      [&](std::string_view t, const decode_options& o) {
        dynamic_result d = decode_dynamic(t, m, o);
        decoded<boost::json::value> r;
        r.issues = std::move(d.issues);
        r.notes = std::move(d.notes);
        if (r.issues.empty()) r.value.emplace(std::move(d.value));
        return r;
      });
}

outcome<boost::json::value> dynamic_contract::run(const boost::json::value& input) const {
  call_timings times;
  outcome<boost::json::value> oc;
  auto now = [&] { return detail::remedy_runner::now(options_); };
  const detail::time_point start = now();
  detail::time_point mark = start;
  auto lap = [&](perf_stage s) {
    const detail::time_point t = now();
    times.add(s, t - mark);
    mark = t;
  };
  auto finish = [&](stage failed) {
    if (!oc.success) oc.failed_stage = failed;
    oc.elapsed = now() - start;
    times.add(perf_stage::total, oc.elapsed);
    stats_.record(times);
    detail::log_call_result(task_.name.empty() ? "task" : task_.name, oc, options_.retry.graceful);
    return std::move(oc);
  };

  // input validation and pre
  issue_list input_issues;
  boost::json::value current = input;
  if (task_.input) {
    dynamic_result v = validate_value(input, *task_.input);
    input_issues = std::move(v.issues);
    if (input_issues.empty()) current = std::move(v.value);
  }
  lap(perf_stage::input_validation);
  stage input_stage = input_issues.empty() ? stage::none : stage::input_validation;
  auto run_pre = [&](const boost::json::value& in, issue_list& out) {
    if (task_.pre) detail::run_hook("pre", issue_code::precondition_violation, out, [&] { task_.pre(in); });
  };
  if (input_issues.empty() && task_.pre) {
    run_pre(current, input_issues);
    lap(perf_stage::pre);
    if (!input_issues.empty()) input_stage = stage::pre;
  }
  if (!input_issues.empty()) {
    oc.input_issues = input_issues;
    if (!options_.pre_remedy || !task_.input) {
      oc.issues = std::move(input_issues);
      return finish(input_stage);
    }
    std::vector<message> base;
    base.push_back({role::system, repair_prompt_});
    base.push_back({role::user, detail::input_repair_message(input_message(input), input_issues)});
    const schema::model& in_model = *task_.input;
    std::optional<boost::json::value> repaired = repair_runner_.template generate<boost::json::value>(
        options_, std::move(base), attempt_kind::input_repair, true, oc, times, mark,
        [&](std::string_view text, note_list& notes, std::chrono::nanoseconds& p, std::chrono::nanoseconds& v) {
          return read(in_model, text, notes, p, v);
        },
        [&](const boost::json::value& in, issue_list& found, perf_stage&) { run_pre(in, found); });
    mark = now();
    if (!repaired) return finish(stage::pre_remedy);
    current = std::move(*repaired);
  }

  // render
  std::vector<message> base;
  base.push_back({role::system, system_prompt_});
  base.push_back({role::user, input_message(current)});
  if (options_.verbose) {
    detail::log_prompt(task_.name, "system prompt", base[0].content);
    detail::log_prompt(task_.name, "user prompt", base[1].content);
  }
  lap(perf_stage::render);

  std::optional<boost::json::value> result = runner_.template generate<boost::json::value>(
      options_, std::move(base), attempt_kind::output, options_.post_remedy, oc, times, mark,
      [&](std::string_view text, note_list& notes, std::chrono::nanoseconds& p, std::chrono::nanoseconds& v) {
        return read(task_.output, text, notes, p, v);
      },
      [&](const boost::json::value& out, issue_list& issues, perf_stage& where) {
        if (task_.post) {
          where = perf_stage::post;
          detail::run_hook("post", issue_code::postcondition_violation, issues, [&] { task_.post(out, current); });
        }
      });
  if (!result) return finish(oc.failed_stage);
  oc.result = std::move(result);
  oc.success = true;
  return finish(stage::none);
}

boost::json::value dynamic_contract::operator()(const boost::json::value& input) const {
  outcome<boost::json::value> o = run(input);
  if (o.success) return std::move(*o.result);
  if (!options_.retry.graceful)
    throw contract_failure<boost::json::value>(static_cast<outcome_base&>(o), boost::json::value());
  return nullptr;
}

}  // namespace covenant
