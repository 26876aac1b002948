// The `covenant` command-line tool: what the commands share (arguments, files, schemas).
#pragma once

#include <covenant/types/schema.hpp>
#include <covenant/runtime/schema_diagnostic.hpp>
#include <covenant/runtime/json_schema_import.hpp>
#include <covenant/runtime/schema_file.hpp>

#include <cstddef>
#include <initializer_list>
#include <iosfwd>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace covenant::cli {

/// Exit statuses.
inline constexpr int exit_ok = 0;
inline constexpr int exit_invalid = 1;  ///< parse: the input does not validate
inline constexpr int exit_error = 2;    ///< usage, schema or file errors
inline constexpr int exit_budget = 3;   ///< run: the budget ended the run before every record ran

/// A wrong command line: the message is shown with the command's usage line.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A schema or file that cannot be used: the message is shown as is.
class fatal_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// One option a command accepts.
struct option_spec {
  std::string_view name;  ///< "--type"
  bool takes_value = false;
};

/// A command line after the command name: options (last one wins) and positional arguments.
struct arguments {
  std::map<std::string, std::string, std::less<>> options;
  std::vector<std::string> positional;
  bool help = false;

  [[nodiscard]] bool has(std::string_view name) const { return options.find(name) != options.end(); }
  [[nodiscard]] std::optional<std::string> get(std::string_view name) const;
};

/// Reads `--name value`, `--name=value`, flags, `-` (a positional: standard input), `--` (the rest
/// is positional) and `-h`/`--help`. Throws usage_error for an unknown option or a missing value.
arguments parse_arguments(const std::vector<std::string>& args, std::initializer_list<option_spec> specs);

/// The bytes of a file, at most `max_bytes` (throws fatal_error when it is larger, missing, a
/// directory or unreadable). "-" reads standard input.
std::string read_input(const std::string& file, std::size_t max_bytes);

/// A schema file (BAML syntax) or JSON Schema document, loaded.
using loaded_schema = covenant::schema_document;

/// Loads a schema file; problems (including a file that cannot be read) are in `issues`.
inline loaded_schema load_schema_arg(const std::string& file) { return covenant::try_load_schema_document(file); }

/// The model of `type` (a name or type expression; empty: the only top-level class, or the root
/// of a JSON Schema document). Throws fatal_error naming the types when it cannot be chosen.
schema::model select_model(const loaded_schema& s, const std::optional<std::string>& type);

/// `file:line:column: code: message` (`file:/json/pointer: ...` for JSON Schema keywords; the
/// parts that are unknown are left out).
std::string format_diagnostic(const schema_diagnostic& d);

/// `text` with control characters and bytes that are not UTF-8 written as \xNN, safe to print.
std::string printable(std::string_view text);

/// `text` with every byte that is not part of valid UTF-8 replaced by U+FFFD.
std::string valid_utf8(std::string_view text);

/// Writes every diagnostic of a failed load to `out`, one per line.
void print_diagnostics(std::ostream& out, const schema_diagnostics& ds);

// ---- commands: each returns the exit status ----------------------------------------------------

int run_schema(const std::vector<std::string>& args);
int run_parse(const std::vector<std::string>& args);
int run_check(const std::vector<std::string>& args);
int run_run(const std::vector<std::string>& args);
int run_health(const std::vector<std::string>& args);

/// Help texts ("" = the tool's); empty view for an unknown command.
std::string_view help_text(std::string_view command);
/// The usage line(s) of a command ("" = the tool's).
std::string_view usage_text(std::string_view command);

}  // namespace covenant::cli
