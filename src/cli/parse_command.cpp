// covenant parse --schema FILE [--type TYPE] [--strictness LEVEL] [--partial] [--json] [--compact] [INPUT]
#include <covenant/read/dynamic.hpp>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <iostream>

#include "cli.hpp"

namespace covenant::cli {

namespace {

boost::json::value report(const read_result& r) {
  boost::json::object o;
  o["ok"] = r.ok();
  o["value"] = r.ok() ? r.value : boost::json::value(nullptr);
  boost::json::array issues;
  for (const issue& i : r.issues) {
    boost::json::object x;
    x["path"] = valid_utf8(i.path.to_string());
    x["code"] = to_string(i.code);
    x["expected"] = valid_utf8(i.expected);
    x["actual"] = valid_utf8(i.actual);  // a parse error quotes the input as written
    x["message"] = valid_utf8(i.message);
    issues.push_back(std::move(x));
  }
  o["issues"] = std::move(issues);
  boost::json::array notes;
  for (const note& n : r.notes) {
    boost::json::object x;
    x["kind"] = to_string(n.kind);
    x["path"] = valid_utf8(n.path.to_string());
    x["detail"] = valid_utf8(n.detail);
    notes.push_back(std::move(x));
  }
  o["notes"] = std::move(notes);
  return o;
}

strictness strictness_named(const std::string& name) {
  if (name == "strict") return strictness::strict;
  if (name == "repair") return strictness::repair;
  if (name == "coerce") return strictness::coerce;
  throw usage_error("unknown strictness '" + name + "' (strict, repair or coerce)");
}

}  // namespace

int run_parse(const std::vector<std::string>& args) {
  const arguments a = parse_arguments(args, {{"--schema", true},
                                             {"--type", true},
                                             {"--strictness", true},
                                             {"--partial", false},
                                             {"--json", false},
                                             {"--compact", false},
                                             {"--keys", true}});
  if (a.help) {
    std::cout << help_text("parse");
    return exit_ok;
  }
  const std::optional<std::string> schema_file = a.get("--schema");
  if (!schema_file) throw usage_error("missing --schema FILE");
  if (a.positional.size() > 1) throw usage_error("unexpected argument '" + a.positional[1] + "'");
  read_options options;
  options.level = strictness_named(a.get("--strictness").value_or("coerce"));
  options.partial = a.has("--partial");
  const std::string keys = a.get("--keys").value_or("json");
  if (keys == "declared") options.keys = output_keys::declared;
  else if (keys != "json") throw usage_error("unknown --keys '" + keys + "' (json or declared)");
  const bool as_report = a.has("--json");
  const bool compact = a.has("--compact");

  const loaded_schema s = load_schema_arg(*schema_file);
  if (!s.ok()) {
    print_diagnostics(std::cerr, s.issues);
    return exit_error;
  }
  const schema::model m = select_model(s, a.get("--type"));
  const std::string input = read_input(a.positional.empty() ? std::string("-") : a.positional.front(),
                                       options.decode.max_input_bytes);

  const read_result r = try_read_dynamic(input, m, options);
  auto print = [&](const boost::json::value& v) { std::cout << (compact ? json_text(v) : json_pretty(v)) << "\n"; };
  if (as_report) {
    print(report(r));
  } else if (r.ok()) {
    print(r.value);
  } else {
    for (const issue& i : r.issues) std::cerr << printable(i.to_string()) << "\n";
  }
  return r.ok() ? exit_ok : exit_invalid;
}

}  // namespace covenant::cli
