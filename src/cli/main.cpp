// covenant: schemas and model output from the command line.
//
//   covenant schema FILE [--type TYPE] [--format json-schema|openai-strict|prompt]
//   covenant parse --schema FILE [--type TYPE] [--strictness LEVEL] [--partial] [--json] [INPUT]
//   covenant check FILE...
//   covenant health [--schema FILE]... [--endpoint [URL]] [--timeout MS] [--json]
//
// The work is done by the library (schema_file.hpp, json_schema_import.hpp, json_schema.hpp,
// prompt_format.hpp, dynamic.hpp); this program only reads arguments and files and prints.
#include <covenant/types/version.hpp>

#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "cli.hpp"

namespace covenant::cli {

namespace {

constexpr std::string_view main_usage = "usage: covenant <command> [options]\n";

constexpr std::string_view main_help = R"(usage: covenant <command> [options]

Schemas and model output from the command line: print a type's JSON Schema or prompt text,
read a model's reply against a type the way contracts do, check schema files, run a
contract over every record of a JSON Lines file against a model server, and check that schema
files load and the model server answers.

commands:
  schema    print a type's JSON Schema, OpenAI strict schema or prompt text
  parse     read model output against a type and print the validated value as JSON
  check     validate schema files and list every problem
  run       run a contract over every record of a JSON Lines file against a model server
  health    check that schema files load and the model server answers
  help CMD  show the help of a command

options:
  -h, --help  show this help
  --version   print the version

A schema FILE is a schema file in BAML syntax (classes, enums, type aliases, the `model` form)
or a JSON Schema document (a .json file, or any file that starts with '{').

exit status: 0 success; 1 the input does not validate (parse), some records failed (run), a
check failed (health); 2 usage, file or schema error.
)";

constexpr std::string_view schema_usage =
    "usage: covenant schema FILE [--type TYPE] [--format json-schema|openai-strict|prompt]\n";

constexpr std::string_view schema_help = R"(usage: covenant schema FILE [--type TYPE] [--format json-schema|openai-strict|prompt]

Print the JSON Schema (2020-12, 2-space indent) of a type of FILE, its OpenAI strict variant
(for structured outputs), or the prompt text a model is shown for it.

arguments:
  FILE             schema file (BAML syntax) or JSON Schema document

options:
  --type TYPE      a type name or type expression: Answer, "Answer[]", "Answer | Refusal",
                   "map<string, int>". Default: the only class of FILE (or the only one no
                   other type uses; the document's root for a JSON Schema document)
  --format FORMAT  json-schema (default), openai-strict or prompt
  -h, --help       show this help

exit status: 0 printed; 2 usage, file or schema error (every problem on stderr).
)";

constexpr std::string_view parse_usage =
    "usage: covenant parse --schema FILE [--type TYPE] [--strictness strict|repair|coerce] [--partial]\n"
    "                      [--json] [--compact] [--keys json|declared] [INPUT]\n";

constexpr std::string_view parse_help = R"(usage: covenant parse --schema FILE [--type TYPE] [--strictness strict|repair|coerce] [--partial]
                      [--json] [--compact] [--keys json|declared] [INPUT]

Read model output against a type the way contracts do: as strict JSON first; then with
schema-guided coercions ("0.9" for a number, "HIGH" for the enum value high); then the values
found in the text (markdown fences, prose, <think> blocks) with syntax repairs (trailing commas,
single quotes, unquoted keys, comments, output cut off mid-value), keeping the reading that
validates best. Print the validated value as JSON on stdout.

arguments:
  INPUT            file with the model output; - or nothing: standard input

options:
  --schema FILE    schema file (BAML syntax) or JSON Schema document
  --type TYPE      a type name or type expression (Answer, "string[]", "Answer | Refusal");
                   default: the only class of FILE, as for `covenant schema`
  --strictness L   strict: the input must be the JSON value itself; repair: also extraction
                   and syntax repairs; coerce (default): also schema-guided conversions
  --partial        the input is an unfinished stream: keep the value written so far; fields
                   not written yet and unfinished values are notes, not issues
  --json           print one report instead: {"ok", "value", "issues": [{"path", "code",
                   "expected", "actual", "message"}], "notes": [{"kind", "path", "detail"}]};
                   the notes list every extraction, repair, coercion and truncation
  --compact        print JSON on one line
  --keys K         json (default): keys and enum values as spelled in JSON (@alias applied);
                   declared: as declared in the schema (what a program sees, as BAML returns them)
  -h, --help       show this help

exit status: 0 valid; 1 not valid (every issue on stderr, one per line: `path: message`, or
in the --json report); 2 usage, file or schema error.
)";

constexpr std::string_view run_usage =
    "usage: covenant run --schema FILE [--type TYPE] --prompt TEXT|@FILE [options] [INPUT.jsonl]\n";

constexpr std::string_view run_help = R"(usage: covenant run --schema FILE [--type TYPE] --prompt TEXT|@FILE [options] [INPUT.jsonl]

Run a contract over every record of a JSON Lines file: each record (a JSON object, or one field
of it) is the input, the type of FILE is the output the model must produce, and the reply is read,
validated and asked for again exactly as a contract does. One JSON line per record is written as
soon as the record is finished: {"id", "line", "query_id", "ok", "value", "failed_stage", "issues",
"notes", "attempts", "usage": {"input_tokens", "output_tokens", and when the server reports them
"cached_input_tokens", "cache_write_tokens", "reasoning_tokens"}, "cost_usd" (with --prices; null
when the model has no price), "latency_ms", "queue_ms"};
"query_id" is that of the record's lines in --audit-log; "queue_ms" is the time the record waited
for its turn under --rpm/--tpm, a server's Retry-After or a transport retry's backoff, and
"latency_ms" the rest of its time (the two add up to it). The model server is the
endpoint of COVENANT_BASE_URL (COVENANT_PROVIDER openai or anthropic, COVENANT_API_KEY,
COVENANT_MODEL, COVENANT_TIMEOUT_S), or the flags below.

arguments:
  INPUT.jsonl        one JSON object per line; - or nothing: standard input

options:
  --schema FILE      schema file (BAML syntax) or JSON Schema document with the output type
  --type TYPE        the output type (default: the only class of FILE)
  --prompt TEXT      the task, or @FILE to read it from a file
  --input-field F    the input is field F of each record (default: the whole record)
  --input-type T     the input's type in the schema file: each input is validated against it,
                     and its image, pdf and audio fields (paths or URLs) are sent as media
  --media-root DIR   relative media paths are read from DIR (default: the input file's folder)
  --id-field F       the record's id is field F (default: id; records without one: their line)
  --output FILE      write the results to FILE (default: standard output)
  --resume           with --output: skip the records FILE already has a line for
  --base-url URL     the API root (default: COVENANT_BASE_URL)
  --model NAME       the model (default: COVENANT_MODEL)
  --timeout S        seconds allowed for one HTTP exchange (default: COVENANT_TIMEOUT_S, else 120)
  --provider P       openai (Chat Completions) or anthropic (Messages API) (default:
                     COVENANT_PROVIDER, else openai)
  --mode M           how the output type is asked for: json_schema (default), json_object,
                     tools, prompt or auto (the best mode the server accepts)
  --retries N        transport retries of one model call after a 429, a 5xx, a refused or
                     reset connection or a timeout, never shown to the model (default 4)
  --retry-delay S    seconds before the first transport retry, doubling after, unless the
                     server's Retry-After says otherwise (default 0.5)
  --retry-max-delay S
                     longest wait before a transport retry, Retry-After included (default 30)
  --tries N          times to ask again after a rejected reply (default 2)
  --delay S          seconds before the first new attempt (default 0.5)
  --backoff X        factor of each further delay (default 2)
  --max-delay S      longest delay (default 15)
  --jitter X         relative random spread of each delay, 0 to 1 (default 0.1)
  --strictness L     strict, repair or coerce (default): how replies are read
  --concurrency N    records in flight at most (default 8)
  --rpm N            requests per minute at most (default: no limit)
  --tpm N            tokens per minute at most (estimated, corrected by the reported usage)
  --shard I/N        only the records whose id hashes to I modulo N (0 <= I < N)
  --stream           one record at a time, each changed partial value printed as
                     {"partial": VALUE, "attempt": N} before the record's line
  --quiet            no progress and no summary on standard error
  --metrics-file FILE
                     write the Prometheus metrics (text format 0.0.4) to FILE every
                     --metrics-interval seconds and at the end, atomically (FILE.tmp.<pid>, then
                     renamed over FILE: node_exporter's textfile collector)
  --metrics-interval S
                     seconds between two writes of --metrics-file (default 5)
  --metrics-port PORT
                     serve the metrics at http://127.0.0.1:PORT/metrics during the run; 0 picks
                     a free port (the address is printed on standard error)
  --audit-log DIR    one JSON line per model call in DIR/audit_YYYY-MM-DD.jsonl (DIR is created)
  --audit-retention-days N
                     delete audit files older than N days (default 30; 0 keeps them all)
  --audit-include-reply
                     also write each raw reply in the audit lines (API keys redacted)
  --otlp-endpoint URL
                     OpenTelemetry traces and metrics over OTLP/HTTP to URL/v1/traces and
                     URL/v1/metrics (e.g. http://localhost:4318; also on when
                     OTEL_EXPORTER_OTLP_ENDPOINT is set): a run span, a span per record, the
                     calls' GenAI spans under it; TRACEPARENT makes the run a child of that span;
                     result and audit lines carry trace_id and span_id
  --no-prompt-cache  Anthropic: do not mark the system prompt (the same for every record) for the
                     provider's prompt cache (marked by default; OpenAI caches it by itself)
  --cache DIR        answer a request seen before (same prompt, record, schema, model, endpoint)
                     from DIR/responses.sqlite instead of the server; many runs may share DIR
  --cache-max-age S  entries older than S seconds are not used (default: no limit)
  --cache-max-mb N   keep the cache under N MiB, dropping the oldest entries (default: no limit)
  --prices FILE      token prices by model (JSON, docs/cost.md; default: COVENANT_PRICES):
                     each record's cost in its line, the run's in the progress and summary
  --max-cost USD     the run's budget in US dollars (needs prices): no record starts once the
                     spending of the records done, plus that expected of those in flight, reaches
                     it; those in flight finish; exit status 3 (run again with --resume)
  --max-tokens N     the same in tokens (input and output)
  --reasoning-effort E
                     OpenAI reasoning models: minimal, low, medium or high (sends
                     max_completion_tokens and no temperature)
  --thinking-budget N
                     Anthropic extended thinking with N tokens (at least 1024; the tool is then
                     not forced); the reasoning is kept out of the answer (--audit-include-reply
                     writes it)
  -h, --help         show this help

Progress goes to standard error: a line redrawn in place on a terminal, a line every 5 seconds
otherwise, and a summary at the end. Ctrl-C stops reading, cancels the records in flight (their
lines are not written) and exits 1; run again with --resume to finish. The library's own log is
off unless COVENANT_LOG_LEVEL is set (warn also shows transport retries).

exit status: 0 every record succeeded; 1 some records failed (or the run was interrupted); 3 the
budget was reached (records may be left: --resume with a new budget goes on); 2
usage, schema, input-file, output or telemetry errors (an audit directory that cannot be created,
a metrics file that cannot be written, a port that cannot be listened on, OTEL_* variables that
cannot work; a bad input line is
reported with its line number and skipped; the other records still run).
)";

constexpr std::string_view check_usage = "usage: covenant check FILE...\n";

constexpr std::string_view check_help = R"(usage: covenant check FILE...

Validate schema files (BAML syntax or JSON Schema documents) the way the library loads them:
syntax, unknown or duplicate types and fields, conflicting aliases, recursive types that no
value can satisfy, invalid @assert/@check expressions, load limits. Every problem is listed as
`file:line:column: code: message` (JSON Schema documents: `file:line:column:/json/pointer: code: message`),
then one summary line per file.

exit status: 0 every file is fine; 2 a file has problems or cannot be read.
)";

constexpr std::string_view health_usage =
    "usage: covenant health [--schema FILE]... [--endpoint [URL]] [--timeout MS] [--json]\n";

constexpr std::string_view health_help = R"(usage: covenant health [--schema FILE]... [--endpoint [URL]] [--timeout MS] [--json]

Check what a program needs before it starts: each schema file loads (as `covenant check` loads
it), and the model server answers its model list with HTTP 2xx within the timeout (401 or 403:
the server answers but refuses the API key), asked the way `covenant run` talks to it:
  COVENANT_PROVIDER=openai (default)  GET {URL}/models, "Authorization: Bearer KEY"
  COVENANT_PROVIDER=anthropic         GET {URL}/v1/models (a URL ending in /v1: {URL}/models),
                                      "x-api-key: KEY" and "anthropic-version: 2023-06-01"
One GET, no retries, no redirects. One line per check on stdout:

  ok    schema:answer.baml  3 types loaded (1 ms)
  FAIL  endpoint            HTTP 401 in 3 ms: the server answers but refused the API key (4 ms)

options:
  --schema FILE     a schema file (BAML syntax) or JSON Schema document to load; repeat it for
                    more files
  --endpoint [URL]  check the model server at the API root URL (default: COVENANT_BASE_URL);
                    the provider, key and CA file are COVENANT_PROVIDER, COVENANT_API_KEY and
                    COVENANT_CA_FILE, as for `covenant run`; the key is never printed
  --timeout MS      milliseconds allowed for the endpoint's answer (default 2000)
  --json            print one report instead: {"healthy", "checks": [{"name", "ok", "detail",
                    "took_ms"}]}
  -h, --help        show this help

exit status: 0 every check is ok; 1 a check failed; 2 usage error (nothing to check, an unknown
option, --endpoint without URL while COVENANT_BASE_URL is not set).
)";

int usage_failure(std::string_view command, const std::string& message) {
  std::cerr << "covenant" << (command.empty() ? "" : " ") << command << ": " << printable(message) << "\n"
            << usage_text(command);
  std::cerr << "Run 'covenant " << (command.empty() ? std::string("--help") : "help " + std::string(command))
            << "' for more.\n";
  return exit_error;
}

int run(const std::vector<std::string>& args) {
  if (args.empty()) return usage_failure("", "missing command");
  const std::string& first = args.front();
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (first == "-h" || first == "--help") {
    std::cout << main_help;
    return exit_ok;
  }
  if (first == "--version") {
    std::cout << "covenant " << covenant::version() << "\n";
    return exit_ok;
  }
  if (first == "help") {
    if (rest.empty()) {
      std::cout << main_help;
      return exit_ok;
    }
    if (rest.size() > 1) return usage_failure("", "help takes one command");
    const std::string_view text = help_text(rest.front());
    if (text.empty()) return usage_failure("", "unknown command '" + rest.front() + "'");
    std::cout << text;
    return exit_ok;
  }
  int (*command)(const std::vector<std::string>&) = nullptr;
  if (first == "schema") command = run_schema;
  else if (first == "parse") command = run_parse;
  else if (first == "check") command = run_check;
  else if (first == "run") command = run_run;
  else if (first == "health") command = run_health;
  if (command == nullptr) {
    return usage_failure("", first.starts_with("-") ? "unknown option '" + first + "'"
                                                    : "unknown command '" + first + "'");
  }
  try {
    return command(rest);
  } catch (const usage_error& e) {
    return usage_failure(first, e.what());
  } catch (const fatal_error& e) {
    std::cerr << "covenant " << first << ": " << printable(e.what()) << "\n";
    return exit_error;
  }
}

}  // namespace

std::string_view help_text(std::string_view command) {
  if (command.empty()) return main_help;
  if (command == "schema") return schema_help;
  if (command == "parse") return parse_help;
  if (command == "check") return check_help;
  if (command == "run") return run_help;
  if (command == "health") return health_help;
  return {};
}

std::string_view usage_text(std::string_view command) {
  if (command == "schema") return schema_usage;
  if (command == "parse") return parse_usage;
  if (command == "check") return check_usage;
  if (command == "run") return run_usage;
  if (command == "health") return health_usage;
  return main_usage;
}

}  // namespace covenant::cli

int main(int argc, char** argv) {
  try {
    std::ios::sync_with_stdio(false);
    const std::vector<std::string> args(argv + 1, argv + argc);
    const int status = covenant::cli::run(args);
    std::cout.flush();
    if (!std::cout) {
      std::cerr << "covenant: cannot write the output\n";
      return covenant::cli::exit_error;
    }
    return status;
  } catch (const std::bad_alloc&) {
    std::cerr << "covenant: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "covenant: error: " << e.what() << "\n";
  } catch (...) {
    std::cerr << "covenant: unknown error\n";
  }
  return covenant::cli::exit_error;
}
