// Non-template parts of the typed contract: prompts and input messages.
#include "covenant/contract/contract.hpp"

#include <memory>
#include <string>

namespace covenant::detail {

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

void append_issue_lines(std::string& out, const issue_list& issues) {
  for (const auto& i : issues) {
    out += "- ";
    i.append_to(out);
    out.push_back('\n');
  }
}

}  // namespace

std::string output_system_prompt(std::string_view task_prompt, std::string_view output_format,
                                 std::string_view input_format, const std::vector<std::string>& rules) {
  std::string out(task_prompt);
  out += "\n\nThe input comes as JSON between <input> and </input>.\n";
  if (!input_format.empty()) {
    out += "The input follows this schema:\n";
    out += input_format;
    out += "\n\n";
  }
  out += output_format;
  if (!rules.empty()) {
    out += "\n\nYour answer must also follow these rules (they are checked):";
    for (const std::string& r : rules) {
      out += "\n- ";
      out += r;
    }
  }
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
  append_issue_lines(out, issues);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::shared_ptr<const boost::json::value> strict_schema_or_null(const boost::json::value& (*get)()) {
  try {
    const boost::json::value& v = get();
    return std::shared_ptr<const boost::json::value>(std::shared_ptr<const boost::json::value>{}, &v);
  } catch (const std::exception&) {
    return nullptr;  // not expressible in strict mode (maps, non-object root): prompt text only
  }
}

}  // namespace covenant::detail
