// covenant check FILE...
#include <iostream>

#include "cli.hpp"

namespace covenant::cli {

namespace {

std::string count(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "2 classes, 1 enum, 0 aliases"
std::string summary(const loaded_schema& s) {
  std::size_t classes = 0;
  std::size_t enums = 0;
  std::size_t aliases = 0;
  for (const auto& d : s.set.all().defs) {
    if (d.object() != nullptr) ++classes;
    else if (d.enumeration() != nullptr) ++enums;
    else ++aliases;
  }
  std::string out = count(classes, "class", "classes") + ", " + count(enums, "enum", "enums") + ", " +
                    count(aliases, "alias", "aliases");
  if (s.json_schema) out = "JSON Schema, root " + s.document->title() + ", " + out;
  if (!s.notes.empty()) out += ", " + count(s.notes.size(), "note", "notes");
  return out;
}

}  // namespace

int run_check(const std::vector<std::string>& args) {
  const arguments a = parse_arguments(args, {});
  if (a.help) {
    std::cout << help_text("check");
    return exit_ok;
  }
  if (a.positional.empty()) throw usage_error("missing the schema FILE to check");
  int status = exit_ok;
  for (const std::string& file : a.positional) {
    const loaded_schema s = load_schema_arg(file);
    print_diagnostics(std::cout, s.issues);
    print_diagnostics(std::cout, s.notes);
    if (s.ok()) {
      std::cout << file << ": ok (" << summary(s) << ")\n";
    } else {
      std::cout << file << ": " << count(s.issues.size(), "problem", "problems") << "\n";
      status = exit_error;
    }
  }
  return status;
}

}  // namespace covenant::cli
