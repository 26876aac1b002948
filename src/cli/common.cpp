// What the commands of the `covenant` tool share: arguments, files, schemas, diagnostics.
#include <covenant/runtime/json_schema_import.hpp>
#include <covenant/read/validate.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <system_error>
#include <utility>

#include "runtime/text_file.hpp"
#include "cli.hpp"

#include <CLI/CLI.hpp>

namespace covenant::cli {

namespace {

// Calls f on every type under `t` (iteratively).
template <class F>
void for_each_type(const schema::type& t, F&& f) {
  std::vector<const schema::type*> stack{&t};
  while (!stack.empty()) {
    const schema::type* x = stack.back();
    stack.pop_back();
    f(*x);
    for (const auto& a : x->args) stack.push_back(&a);
  }
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

// Declared names of the set's classes, enums and aliases, in declaration order.
std::string type_list(const schema_set& set) {
  std::vector<std::string> names = set.names();
  return names.empty() ? std::string("none") : join(names);
}

}  // namespace

std::string printable(std::string_view text) { return detail::printable_text(text); }

std::string valid_utf8(std::string_view text) { return detail::repair_utf8(text); }

std::optional<std::string> arguments::get(std::string_view name) const {
  auto it = options.find(name);
  if (it == options.end()) return std::nullopt;
  return it->second;
}

arguments parse_arguments(const std::vector<std::string>& args, std::initializer_list<option_spec> specs) {
  // CLI11 reads the command line; the help texts stay the tool's own (printed by the commands).
  CLI::App app;
  app.set_help_flag();
  app.allow_extras(false);
  app.allow_windows_style_options(false);
  arguments out;
  app.add_flag("-h,--help", out.help);
  std::map<std::string, std::string, std::less<>> values;
  std::map<std::string, bool, std::less<>> flags;
  for (const option_spec& spec : specs) {
    const std::string name(spec.name);
    if (spec.takes_value) {
      app.add_option(name, values[name])->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)->allow_extra_args(false);
    } else {
      app.add_flag(name, flags[name])->disable_flag_override()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
  }
  app.add_option("arguments", out.positional)->expected(0, -1);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 reads from the back
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    // CLI11's finding, in the tool's words: an unknown option, a flag given a value, an option
    // without its value.
    for (const std::string& a : args) {
      if (a.size() < 2 || a[0] != '-' || a == "--") continue;
      const std::string name = a.substr(0, a.find('='));
      const option_spec* spec = nullptr;
      for (const option_spec& s : specs)
        if (s.name == name) spec = &s;
      if (spec == nullptr && name != "-h" && name != "--help") throw usage_error("unknown option '" + name + "'");
      if (spec != nullptr && !spec->takes_value && a.find('=') != std::string::npos)
        throw usage_error("option '" + name + "' takes no value");
    }
    const std::string what = e.what();
    for (const option_spec& spec : specs)
      if (spec.takes_value && what.find(std::string(spec.name)) != std::string::npos)
        throw usage_error("option '" + std::string(spec.name) + "' needs a value");
    throw usage_error(what);
  }
  for (const option_spec& spec : specs) {
    const std::string name(spec.name);
    if (spec.takes_value) {
      if (app.count(name) > 0) out.options[name] = values[name];
    } else if (app.count(name) > 0) {
      out.options[name] = "";
    }
  }
  return out;
}

std::string read_input(const std::string& file, std::size_t max_bytes) {
  detail::file_text f = file == "-" ? detail::read_text(std::cin, max_bytes) : detail::read_text_file(file, max_bytes);
  const std::string name = file == "-" ? std::string("standard input") : "'" + file + "'";
  if (!f.error.empty()) throw fatal_error("cannot read " + name + ": " + f.error);
  return std::move(f.text);
}

schema::model select_model(const loaded_schema& s, const std::optional<std::string>& type) {
  const schema_set& set = s.set;
  if (type) {
    schema_model_result m = set.try_model_for(*type);
    if (m.ok()) return std::move(*m.model);
    std::string message = "type '" + *type + "'";
    if (!m.issues.empty()) {
      const schema_diagnostic& d = m.issues.front();
      message += d.code == schema_error_code::unknown_type ? std::string(": ") : " is not a valid type expression: ";
      message += d.message;
      if (d.column > 0 && d.code != schema_error_code::unknown_type) message += " (column " + std::to_string(d.column) + ")";
    } else {
      message += " cannot be used";
    }
    message += "; types in " + s.file + ": " + type_list(set);
    throw fatal_error(message);
  }
  if (s.document) return *s.document;
  // The only class; else the only class that no other type uses.
  const auto& defs = set.all().defs;
  std::vector<std::uint32_t> classes;
  std::set<std::uint32_t> used;
  for (std::uint32_t i = 0; i < defs.size(); ++i) {
    auto note_refs = [&](const schema::type& t) {
      for_each_type(t, [&](const schema::type& x) {
        if (x.kind == schema::kind::ref && x.def != i) {
          if (x.def != schema::no_def) used.insert(x.def);
          else if (const auto* d = set.all().find(x.name)) used.insert(static_cast<std::uint32_t>(d - defs.data()));
        }
      });
    };
    if (const auto* o = defs[i].object()) {
      classes.push_back(i);
      for (const auto& f : o->fields) note_refs(f.type);
    } else if (const auto* a = defs[i].alias()) {
      note_refs(a->target);
    }
  }
  std::vector<std::uint32_t> top;
  for (auto c : classes)
    if (used.count(c) == 0) top.push_back(c);
  const std::vector<std::uint32_t>& pick = classes.size() == 1 ? classes : top;
  if (pick.size() == 1) return set.model(defs[pick.front()].name);
  if (classes.empty()) throw fatal_error(s.file + " declares no class; choose a type with --type (types: " + type_list(set) + ")");
  std::vector<std::string> names;
  for (auto c : top.empty() ? classes : top) names.push_back(defs[c].name);
  throw fatal_error(s.file + " declares several classes; choose one with --type: " + join(names));
}

std::string format_diagnostic(const schema_diagnostic& d) {
  std::string out = d.file;
  if (d.line > 0) {
    out += ":" + std::to_string(d.line);
    if (d.column > 0) out += ":" + std::to_string(d.column);
  }
  if (!d.pointer.empty()) {
    if (!out.empty()) out += ":";
    out += d.pointer;
  }
  if (!out.empty()) out += ": ";
  out += d.code == schema_error_code::skipped ? std::string_view("note") : to_string(d.code);
  out += ": ";
  out += d.message;
  return printable(out);
}

void print_diagnostics(std::ostream& out, const schema_diagnostics& ds) {
  for (const auto& d : ds) out << format_diagnostic(d) << "\n";
}

}  // namespace covenant::cli
