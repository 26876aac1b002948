#include "covenant/contract/outcome.hpp"

#include "covenant/engine/engine.hpp"
#include "covenant/contract/observer.hpp"

namespace covenant {

std::string_view to_string(role r) noexcept {
  switch (r) {
    case role::system: return "system";
    case role::user: return "user";
    case role::assistant: return "assistant";
    case role::tool: return "tool";
  }
  return "user";
}

std::string_view to_string(output_mode m) noexcept {
  switch (m) {
    case output_mode::json_schema: return "json_schema";
    case output_mode::json_object: return "json_object";
    case output_mode::tools: return "tools";
    case output_mode::prompt: return "prompt";
    case output_mode::automatic: return "auto";
  }
  return "json_schema";
}

std::optional<output_mode> parse_output_mode(std::string_view name) noexcept {
  for (output_mode m : {output_mode::json_schema, output_mode::json_object, output_mode::tools, output_mode::prompt,
                        output_mode::automatic})
    if (name == to_string(m)) return m;
  if (name == "automatic") return output_mode::automatic;
  return std::nullopt;
}

std::string_view to_string(stage s) noexcept {
  switch (s) {
    case stage::none: return "none";
    case stage::input_validation: return "input_validation";
    case stage::pre: return "pre";
    case stage::pre_remedy: return "pre_remedy";
    case stage::act: return "act";
    case stage::render: return "render";
    case stage::engine: return "engine";
    case stage::tool: return "tool";
    case stage::parse: return "parse";
    case stage::validate: return "validate";
    case stage::post: return "post";
    case stage::post_remedy: return "post_remedy";
    case stage::forward: return "forward";
    case stage::cancelled: return "cancelled";
    case stage::deadline: return "deadline";
  }
  return "none";
}

std::string_view to_string(verdict v) noexcept {
  switch (v) {
    case verdict::accepted: return "accepted";
    case verdict::rejected: return "rejected";
    case verdict::failed: return "failed";
  }
  return "failed";
}

std::string_view to_string(tool_status s) noexcept {
  switch (s) {
    case tool_status::ok: return "ok";
    case tool_status::unknown_tool: return "unknown_tool";
    case tool_status::arguments: return "arguments";
    case tool_status::pre: return "pre";
    case tool_status::failed: return "failed";
    case tool_status::timeout: return "timeout";
    case tool_status::post: return "post";
    case tool_status::refused: return "refused";
  }
  return "failed";
}

std::vector<const tool_run*> outcome_base::tool_runs() const {
  std::vector<const tool_run*> out;
  for (const agent_step& s : steps)
    for (const tool_run& r : s.tools) out.push_back(&r);
  return out;
}

std::string outcome_base::summary() const {
  const std::size_t n = calls();
  std::string out;
  if (success) {
    out = "succeeded";
  } else {
    out = "failed at ";
    out += to_string(failed_stage);
    if (!reason.empty()) out += " (" + reason + ")";
  }
  out += " after " + std::to_string(n) + (n == 1 ? " model call" : " model calls");
  if (!steps.empty()) {
    std::size_t tools = 0;
    for (const agent_step& s : steps) tools += s.tools.size();
    out += " (" + std::to_string(steps.size()) + (steps.size() == 1 ? " step, " : " steps, ") + std::to_string(tools) +
           (tools == 1 ? " tool call)" : " tool calls)");
  }
  if (!success && !issues.empty()) {
    out += ": ";
    issues.front().append_to(out);
    if (issues.size() > 1) out += " (+" + std::to_string(issues.size() - 1) + " more)";
  }
  return out;
}

contract_error::contract_error(outcome_base outcome)
    : std::runtime_error("covenant contract " + outcome.summary()), outcome_(std::move(outcome)) {}

}  // namespace covenant
