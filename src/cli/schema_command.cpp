// covenant schema FILE [--type TYPE] [--format json-schema|openai-strict|prompt]
#include <covenant/read/dynamic.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/types/prompt_format.hpp>

#include <exception>
#include <iostream>

#include "cli.hpp"

namespace covenant::cli {

int run_schema(const std::vector<std::string>& args) {
  const arguments a = parse_arguments(args, {{"--type", true}, {"--format", true}});
  if (a.help) {
    std::cout << help_text("schema");
    return exit_ok;
  }
  if (a.positional.empty()) throw usage_error("missing the schema FILE");
  if (a.positional.size() > 1) throw usage_error("unexpected argument '" + a.positional[1] + "'");
  const std::string format = a.get("--format").value_or("json-schema");
  if (format != "json-schema" && format != "openai-strict" && format != "prompt")
    throw usage_error("unknown format '" + format + "' (json-schema, openai-strict or prompt)");

  const loaded_schema s = load_schema_arg(a.positional.front());
  if (!s.ok()) {
    print_diagnostics(std::cerr, s.issues);
    return exit_error;
  }
  const schema::model m = select_model(s, a.get("--type"));
  std::string out;
  if (format == "prompt") {
    out = prompt_text(m);
  } else if (format == "openai-strict") {
    try {
      out = json_pretty(to_openai_strict_schema(m));
    } catch (const std::exception& e) {
      throw fatal_error("type '" + m.title() + "' has no OpenAI strict schema: " + e.what());
    }
  } else {
    out = json_pretty(to_json_schema(m));
  }
  if (out.empty() || out.back() != '\n') out.push_back('\n');
  std::cout << out;
  return exit_ok;
}

}  // namespace covenant::cli
