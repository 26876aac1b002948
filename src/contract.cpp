// Non-template parts of the contract: prompts, corrective messages, logging, defaults.
#include "covenant/contract.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <mutex>
#include <random>
#include <thread>

namespace covenant::detail {

spdlog::logger& log() {
  static const std::shared_ptr<spdlog::logger> logger = [] {
    if (auto existing = spdlog::get("covenant")) return existing;
    try {
      return spdlog::stderr_color_mt("covenant");
    } catch (const spdlog::spdlog_ex&) {
      return spdlog::get("covenant");  // registered concurrently by the application
    }
  }();
  return *logger;
}

void seal_input_message(std::string& message, std::size_t json_start) {
  std::size_t lt = message.find('<', json_start);
  if (lt != std::string::npos) {
    std::string escaped(message, 0, lt);
    for (std::size_t i = lt; i < message.size(); ++i) {
      if (message[i] == '<') escaped += "\\u003c";
      else escaped.push_back(message[i]);
    }
    message.swap(escaped);
  }
  message += "\n</input>";
}

namespace {

void append_issue_lines(std::string& out, const issue_list& issues, std::string_view indent) {
  for (const auto& i : issues) {
    out += indent;
    out += "- ";
    i.append_to(out);
    out.push_back('\n');
  }
}

}  // namespace

std::string corrective_message(const attempt& rejected, const std::vector<const attempt*>& earlier,
                               std::string_view what) {
  std::string out = "Your previous reply was rejected:\n";
  append_issue_lines(out, rejected.issues, "");
  for (const note& n : rejected.notes) {
    if (n.kind == note_kind::truncated) {
      out += "Your reply was cut off before its end; what was cut mid-way was dropped.\n";
      break;
    }
  }
  if (!earlier.empty()) {
    out += "Earlier replies were rejected too:\n";
    for (const attempt* a : earlier) {
      out += "Reply " + std::to_string(a->number) + " (" + elide(a->text) + "):\n";
      append_issue_lines(out, a->issues, "  ");
    }
  }
  out += "Reply again with the complete ";
  out += what;
  out += " only, fixing every problem listed.";
  return out;
}

std::string output_system_prompt(std::string_view task_prompt, std::string_view output_format) {
  std::string out(task_prompt);
  out += "\n\nThe input comes as JSON between <input> and </input>.\n";
  out += output_format;
  return out;
}

std::string input_repair_system_prompt(std::string_view task_prompt, std::string_view input_format) {
  std::string out = "You prepare inputs for this task:\n";
  out += task_prompt;
  out += "\n\nThe input between <input> and </input> breaks the task's rules. Reply with a corrected input "
         "that keeps the user's intent and fixes every problem listed.\n";
  out += input_format;
  return out;
}

std::string input_repair_message(std::string input_block, const issue_list& issues) {
  std::string out = std::move(input_block);
  out += "\nProblems with this input:\n";
  append_issue_lines(out, issues, "");
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

void default_sleep(std::chrono::nanoseconds d) { std::this_thread::sleep_for(d); }

double default_random() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(gen);
}

issue hook_exception_issue(std::string_view hook, std::string_view type, std::string_view what) {
  issue i;
  i.code = issue_code::hook_exception;
  i.message = std::string(hook) + " threw " + std::string(type);
  if (!what.empty()) {
    i.message += ": ";
    i.message += what;
  }
  return i;
}

std::shared_ptr<const boost::json::value> strict_schema_or_null(const boost::json::value& (*get)()) {
  try {
    const boost::json::value& v = get();
    return std::shared_ptr<const boost::json::value>(std::shared_ptr<const boost::json::value>{}, &v);
  } catch (const std::exception&) {
    return nullptr;  // not expressible in strict mode (maps, non-object root): prompt text only
  }
}

void log_call_result(std::string_view expression, const outcome_base& o, bool graceful) {
  spdlog::logger& l = log();
  const double ms = std::chrono::duration<double, std::milli>(o.elapsed).count();
  if (o.success) {
    if (l.should_log(spdlog::level::info))
      l.info("{}: {} in {:.1f} ms (tokens in {}, out {})", expression, o.summary(), ms, o.usage.input_tokens,
             o.usage.output_tokens);
  } else if (l.should_log(spdlog::level::err)) {
    l.error("{}: {} in {:.1f} ms (tokens in {}, out {}); forward runs with the failure{}", expression, o.summary(),
            ms, o.usage.input_tokens, o.usage.output_tokens, graceful ? "" : ", then the call throws");
  }
}

void log_retry(std::string_view expression, const attempt& a, std::chrono::nanoseconds wait, int left) {
  spdlog::logger& l = log();
  if (!l.should_log(spdlog::level::info)) return;
  std::string first;
  if (!a.issues.empty()) first = a.issues.front().to_string();
  l.info("{}: {} attempt {} rejected ({} issue{}: {}); asking again in {:.3f} s ({} {} left)", expression,
         a.kind == attempt_kind::input_repair ? "input repair" : "output", a.number, a.issues.size(),
         a.issues.size() == 1 ? "" : "s", first, std::chrono::duration<double>(wait).count(), left,
         left == 1 ? "try" : "tries");
}

void log_prompt(std::string_view expression, std::string_view what, std::string_view text) {
  spdlog::logger& l = log();
  if (l.should_log(spdlog::level::debug)) l.debug("{}: {}:\n{}", expression, what, text);
}

}  // namespace covenant::detail
