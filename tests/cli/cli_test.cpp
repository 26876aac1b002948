// The `covenant` command-line tool, run as the built binary: every command, exit statuses,
// stdout and stderr, the --json report, strictness levels, partial streams, type expressions,
// check's diagnostics, help texts, and bad input of every kind.
#include <covenant/types/json_schema.hpp>
#include <covenant/types/prompt_format.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <covenant/types/version.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

#ifdef COVENANT_CLI_PATH
constexpr const char* cli_path = COVENANT_CLI_PATH;
#else
constexpr const char* cli_path = nullptr;
#endif

struct run_result {
  int status = -1;  ///< exit status; -1 when the program did not exit normally
  std::string out;
  std::string err;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') q += "'\\''";
    else q.push_back(c);
  }
  return q + "'";
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

const char* ticket_baml = R"(/// How urgent a ticket is.
enum Priority {
  LOW
  HIGH @alias("urgent")
}

class Tag {
  name string
}

/// A support ticket.
class Ticket {
  title string @assert({{ this|length > 0 }})
  priority Priority
  tags Tag[]
  estimate float? @assert({{ this >= 0 }})
}
)";

const char* notes_baml = R"(class Ticket {
  title string
}
class Note {
  text string
}
)";

const char* answer_baml = R"(model FinalAnswer {
    answer: string @assert({{ this|length > 0 }})
    confidence: float @assert({{ this >= 0 and this <= 1 }})
    sources: string[] @assert({{ this|length >= 1 }})
    reasoning?: string
    metadata?: {
        model_used?: string
        token_usage?: { input_tokens?: int }
    }
}
)";

const char* review_json_schema = R"({
  "title": "Review",
  "type": "object",
  "properties": {
    "approved": {"type": "boolean"},
    "issues": {"type": "array", "items": {"$ref": "#/$defs/Issue"}}
  },
  "required": ["approved", "issues"],
  "$defs": {
    "Issue": {"type": "object", "properties": {"line": {"type": "integer"}, "text": {"type": "string"}},
              "required": ["line", "text"]}
  }
})";

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cli_path == nullptr) GTEST_SKIP() << "the covenant tool is not built";
    static std::atomic<int> counter{0};
    dir_ = fs::temp_directory_path() /
           ("covenant_cli_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::create_directories(dir_);
    write("ticket.baml", ticket_baml);
    write("notes.baml", notes_baml);
    write("answer.baml", answer_baml);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  std::string write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    std::ofstream f(p, std::ios::binary);
    f << content;
    return p.string();
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  /// Runs the tool with `args` (and `input` on stdin).
  run_result run(const std::vector<std::string>& args, const std::string& input = {}) {
    const fs::path in = dir_ / "stdin.txt";
    const fs::path out = dir_ / "stdout.txt";
    const fs::path err = dir_ / "stderr.txt";
    {
      std::ofstream f(in, std::ios::binary);
      f << input;
    }
    std::string command = quote(cli_path);
    for (const auto& a : args) command.append(1, ' ').append(quote(a));
    command += " < " + quote(in.string()) + " > " + quote(out.string()) + " 2> " + quote(err.string());
    const int raw = std::system(command.c_str());
    run_result r;
    if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
    r.out = slurp(out);
    r.err = slurp(err);
    // Sanitizer reports (clang build) would otherwise pass for an exit status.
    EXPECT_THAT(r.err, AllOf(Not(HasSubstr("Sanitizer")), Not(HasSubstr("runtime error"))));
    return r;
  }

  fs::path dir_;
};

// ---- help, version, usage errors -----------------------------------------------------------------

TEST_F(Cli, VersionPrintsTheLibraryVersion) {
  const auto r = run({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "covenant " + std::string(covenant::version()) + "\n");
}

TEST_F(Cli, HelpListsEveryCommand) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--help"}, {"-h"}, {"help"}}) {
    const auto r = run(args);
    EXPECT_EQ(r.status, 0);
    EXPECT_THAT(r.out, StartsWith("usage: covenant <command> [options]\n"));
    for (const char* word : {"schema", "parse", "check", "--version", "exit status"})
      EXPECT_THAT(r.out, HasSubstr(word));
    EXPECT_THAT(r.err, IsEmpty());
  }
}

TEST_F(Cli, EachCommandHasHelpThreeWays) {
  for (const std::string cmd : {"schema", "parse", "check"}) {
    const auto a = run({"help", cmd});
    const auto b = run({cmd, "--help"});
    const auto c = run({cmd, "-h"});
    EXPECT_EQ(a.status, 0);
    EXPECT_EQ(b.status, 0);
    EXPECT_EQ(c.status, 0);
    EXPECT_THAT(a.out, StartsWith("usage: covenant " + cmd));
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.out, c.out);
  }
  const auto parse = run({"help", "parse"});
  for (const char* option : {"--schema", "--type", "--strictness", "--partial", "--json", "strict", "repair", "coerce"})
    EXPECT_THAT(parse.out, HasSubstr(option));
  EXPECT_THAT(run({"help", "schema"}).out, HasSubstr("json-schema (default), openai-strict or prompt"));
  EXPECT_THAT(run({"help", "check"}).out, HasSubstr("file:line:column: code: message"));
}

TEST_F(Cli, UsageErrorsExitTwoWithTheUsage) {
  struct bad {
    std::vector<std::string> args;
    const char* message;
    const char* usage;
  };
  const std::vector<bad> cases = {
      {{}, "covenant: missing command", "usage: covenant <command>"},
      {{"frobnicate"}, "unknown command 'frobnicate'", "usage: covenant <command>"},
      {{"--bogus"}, "unknown option '--bogus'", "usage: covenant <command>"},
      {{"help", "nope"}, "unknown command 'nope'", "usage: covenant <command>"},
      {{"schema"}, "covenant schema: missing the schema FILE", "usage: covenant schema FILE"},
      {{"schema", file("ticket.baml"), "--bogus"}, "unknown option '--bogus'", "usage: covenant schema FILE"},
      {{"schema", file("ticket.baml"), "--format", "xml"}, "unknown format 'xml'", "usage: covenant schema"},
      {{"schema", file("ticket.baml"), "extra"}, "unexpected argument 'extra'", "usage: covenant schema"},
      {{"parse"}, "missing --schema FILE", "usage: covenant parse"},
      {{"parse", "--schema"}, "option '--schema' needs a value", "usage: covenant parse"},
      {{"parse", "--schema", file("ticket.baml"), "--strictness", "loose"}, "unknown strictness 'loose'",
       "usage: covenant parse"},
      {{"parse", "--schema", file("ticket.baml"), "--json=yes"}, "option '--json' takes no value",
       "usage: covenant parse"},
      {{"check"}, "missing the schema FILE", "usage: covenant check FILE..."},
  };
  for (const auto& c : cases) {
    const auto r = run(c.args);
    EXPECT_EQ(r.status, 2) << c.message;
    EXPECT_THAT(r.err, HasSubstr(c.message));
    EXPECT_THAT(r.err, HasSubstr(c.usage));
    EXPECT_THAT(r.out, IsEmpty()) << c.message;
  }
}

// ---- schema --------------------------------------------------------------------------------------

TEST_F(Cli, SchemaPrintsThePrettyJsonSchema) {
  const auto set = covenant::schema_set::parse(ticket_baml);
  const auto r = run({"schema", file("ticket.baml"), "--type", "Ticket"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("{\n  \"$schema\": \"https://json-schema.org/draft/2020-12/schema\",\n  \"title\": \"Ticket\""));
  EXPECT_THAT(r.out, HasSubstr("\n    \"title\": {\n      \"type\": \"string\",\n      \"minLength\": 1\n    },"));
  EXPECT_EQ(json::parse(r.out), covenant::to_json_schema(set.model("Ticket")));
  EXPECT_EQ(r.out.back(), '\n');
  EXPECT_THAT(r.err, IsEmpty());
}

TEST_F(Cli, SchemaFormats) {
  const auto set = covenant::schema_set::parse(ticket_baml);
  const auto strict = run({"schema", file("ticket.baml"), "--type", "Ticket", "--format", "openai-strict"});
  ASSERT_EQ(strict.status, 0) << strict.err;
  EXPECT_EQ(json::parse(strict.out), covenant::to_openai_strict_schema(set.model("Ticket")));
  const auto prompt = run({"schema", file("ticket.baml"), "--type=Ticket", "--format=prompt"});
  ASSERT_EQ(prompt.status, 0) << prompt.err;
  EXPECT_EQ(prompt.out, covenant::prompt_text(set.model("Ticket")) + "\n");
  const auto schema = run({"schema", file("ticket.baml"), "--format", "json-schema"});
  EXPECT_EQ(schema.status, 0);
  EXPECT_EQ(json::parse(schema.out), covenant::to_json_schema(set.model("Ticket")));
}

TEST_F(Cli, SchemaWithoutTypeTakesTheOnlyTopLevelClass) {
  // Ticket uses Tag: Ticket is the one class no other type uses.
  EXPECT_EQ(json::parse(run({"schema", file("ticket.baml")}).out).at("title"), "Ticket");
  // The model form: inline objects are classes used by FinalAnswer.
  EXPECT_EQ(json::parse(run({"schema", file("answer.baml")}).out).at("title"), "FinalAnswer");
  // Two unrelated classes: the user has to choose.
  const auto r = run({"schema", file("notes.baml")});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.err, HasSubstr("declares several classes; choose one with --type: Ticket, Note"));
  EXPECT_THAT(r.out, IsEmpty());
  write("enum.baml", "enum Color { RED GREEN }\n");
  const auto e = run({"schema", file("enum.baml")});
  EXPECT_EQ(e.status, 2);
  EXPECT_THAT(e.err, HasSubstr("declares no class; choose a type with --type (types: Color)"));
  EXPECT_EQ(json::parse(run({"schema", file("enum.baml"), "--type", "Color"}).out).at("enum"),
            json::parse(R"(["RED", "GREEN"])"));
}

TEST_F(Cli, SchemaTypeExpressions) {
  const auto list = run({"schema", file("notes.baml"), "--type", "Note[]"});
  ASSERT_EQ(list.status, 0) << list.err;
  const json::value l = json::parse(list.out);
  EXPECT_EQ(l.at("type"), "array");
  EXPECT_EQ(l.at("items"), json::parse(R"({"$ref": "#/$defs/Note"})"));
  const auto either = run({"schema", file("notes.baml"), "--type", "Ticket | Note"});
  ASSERT_EQ(either.status, 0) << either.err;
  EXPECT_EQ(json::parse(either.out).at("anyOf").as_array().size(), 2u);
  const auto map = run({"schema", file("notes.baml"), "--type", "map<string, int>", "--format", "prompt"});
  EXPECT_EQ(map.status, 0);
  const auto unknown = run({"schema", file("notes.baml"), "--type", "Ticket | Nope"});
  EXPECT_EQ(unknown.status, 2);
  EXPECT_THAT(unknown.err, HasSubstr("type 'Ticket | Nope': unknown type 'Nope'; types in "));
  EXPECT_THAT(unknown.err, HasSubstr("notes.baml: Ticket, Note"));
  const auto broken = run({"schema", file("notes.baml"), "--type", "Ticket[", "--format", "prompt"});
  EXPECT_EQ(broken.status, 2);
  EXPECT_THAT(broken.err, HasSubstr("is not a valid type expression"));
}

TEST_F(Cli, SchemaReadsJsonSchemaDocuments) {
  const std::string by_name = write("review.json", review_json_schema);
  const std::string by_content = write("review.schema", std::string("\n  ") + review_json_schema);
  for (const auto& f : {by_name, by_content}) {
    const auto r = run({"schema", f});
    ASSERT_EQ(r.status, 0) << r.err;
    const json::value s = json::parse(r.out);
    EXPECT_EQ(s.at("title"), "Review");
    EXPECT_EQ(s.at("required"), json::parse(R"(["approved", "issues"])"));
  }
  const auto issue = run({"schema", by_name, "--type", "Issue[]"});
  ASSERT_EQ(issue.status, 0) << issue.err;
  EXPECT_EQ(json::parse(issue.out).at("items"), json::parse(R"({"$ref": "#/$defs/Issue"})"));
  const auto prompt = run({"schema", by_name, "--format", "prompt"});
  EXPECT_EQ(prompt.status, 0);
  EXPECT_THAT(prompt.out, HasSubstr("\"approved\": bool"));
}

TEST_F(Cli, SchemaErrorsExitTwoWithEveryProblem) {
  write("bad.baml", "class Answer {\n  x Foo\n  y Bar\n}\n");
  const auto r = run({"schema", file("bad.baml")});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(lines(r.err), ElementsAre(file("bad.baml") + ":2:5: unknown_type: unknown type 'Foo'",
                                        file("bad.baml") + ":3:5: unknown_type: unknown type 'Bar'"));
  EXPECT_THAT(r.out, IsEmpty());
}

// ---- parse ---------------------------------------------------------------------------------------

TEST_F(Cli, ParsePrintsTheValidatedValue) {
  const std::string reply = R"({"title": "Printer on fire", "priority": "urgent", "tags": [{"name": "hw"}], "extra": 1})";
  const std::string expected = R"({"title":"Printer on fire","priority":"urgent","tags":[{"name":"hw"}]})";
  const std::string input = write("reply.txt", reply);
  for (const std::vector<std::string>& where : {std::vector<std::string>{}, {"-"}, {input}}) {
    std::vector<std::string> args = {"parse", "--schema", file("ticket.baml"), "--type", "Ticket"};
    args.insert(args.end(), where.begin(), where.end());
    const auto r = run(args, reply);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(json::serialize(json::parse(r.out)), expected);
    EXPECT_THAT(r.out, StartsWith("{\n  \"title\": \"Printer on fire\",\n"));
    EXPECT_THAT(r.err, IsEmpty());
  }
  const auto compact = run({"parse", "--schema", file("ticket.baml"), "--compact"}, reply);
  EXPECT_EQ(compact.out, expected + "\n");
}

TEST_F(Cli, ParseListsEveryIssueOnStderr) {
  const std::string reply = R"({"title": "", "priority": "soon", "estimate": -1})";
  const auto r = run({"parse", "--schema", file("ticket.baml"), "--strictness", "repair"}, reply);
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.out, IsEmpty());
  EXPECT_THAT(lines(r.err), ElementsAre("title: must not be empty (got \"\")",
                                        "priority: must be one of \"LOW\", \"urgent\" (got \"soon\")",
                                        "estimate: must be >= 0 (got -1)", "tags: required field is missing"));
  // At the coerce level (the default) the missing list of tags is read as empty.
  const auto c = run({"parse", "--schema", file("ticket.baml")}, reply);
  EXPECT_EQ(c.status, 1);
  EXPECT_THAT(lines(c.err), ElementsAre("title: must not be empty (got \"\")",
                                        "priority: must be one of \"LOW\", \"urgent\" (got \"soon\")",
                                        "estimate: must be >= 0 (got -1)"));
}

TEST_F(Cli, ParseJsonReportListsNotesOfAMalformedReply) {
  const std::string reply =
      "Sure! Here is the ticket:\n```json\n{'title': 'Printer on fire', priority: 'URGENT', tags: [{name: 'hw',},],"
      " 'estimate': '1.5',}\n```\nAnything else?";
  const auto r = run({"parse", "--schema", file("ticket.baml"), "--json"}, reply);
  ASSERT_EQ(r.status, 0) << r.err;
  const json::value report = json::parse(r.out);
  std::set<std::string> keys;
  for (const auto& kv : report.as_object()) keys.insert(std::string(kv.key()));
  EXPECT_EQ(keys, (std::set<std::string>{"ok", "value", "issues", "notes"}));
  EXPECT_EQ(report.at("ok"), true);
  EXPECT_EQ(report.at("value"),
            json::parse(R"({"title":"Printer on fire","priority":"urgent","tags":[{"name":"hw"}],"estimate":1.5})"));
  EXPECT_TRUE(report.at("issues").as_array().empty());
  std::set<std::string> kinds;
  for (const auto& n : report.at("notes").as_array()) {
    EXPECT_EQ(n.as_object().size(), 3u);
    EXPECT_TRUE(n.at("path").is_string());
    EXPECT_FALSE(n.at("detail").as_string().empty());
    kinds.insert(std::string(n.at("kind").as_string()));
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"extracted", "repaired", "coerced"}));
  EXPECT_THAT(r.out, HasSubstr(R"x("detail": "fenced block 1 (json)")x"));
  EXPECT_THAT(r.out, HasSubstr(R"("path": "estimate")"));
  EXPECT_THAT(r.err, IsEmpty());
}

TEST_F(Cli, ParseJsonReportOfAFailure) {
  const auto r = run({"parse", "--schema", file("answer.baml"), "--json", "--compact"},
                     R"({"answer": "Paris", "confidence": "very high", "sources": []})");
  EXPECT_EQ(r.status, 1);
  EXPECT_THAT(r.err, IsEmpty());
  const json::value report = json::parse(r.out);
  EXPECT_EQ(report.at("ok"), false);
  EXPECT_TRUE(report.at("value").is_null());
  EXPECT_EQ(report.at("issues"), json::parse(R"([
    {"path": "confidence", "code": "type_mismatch", "expected": "number", "actual": "\"very high\"",
     "message": "expected number"},
    {"path": "sources", "code": "constraint_violation", "expected": "at least 1 item", "actual": "[]",
     "message": "must not be empty"}])"));
  EXPECT_EQ(lines(r.out).size(), 1u);
}

TEST_F(Cli, ParseReadsTheSharedMalformedSamples) {
  const fs::path dir = fs::path(COVENANT_SHARED_DIR) / "bench/python/samples/malformed";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "samples absent";
  std::size_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".txt") continue;
    ++n;
    const auto r = run({"parse", "--schema", file("answer.baml"), "--json", entry.path().string()});
    EXPECT_EQ(r.status, 0) << entry.path() << "\n" << r.out << r.err;
    const json::value report = json::parse(r.out);
    EXPECT_EQ(report.at("ok"), true) << entry.path();
    EXPECT_FALSE(report.at("notes").as_array().empty()) << entry.path();
    EXPECT_EQ(report.at("value").at("sources").as_array().size(), 2u) << entry.path();
  }
  EXPECT_GT(n, 0u);
}

TEST_F(Cli, StrictnessLevels) {
  const std::string fenced = "```json\n{\"answer\": \"Paris\", \"confidence\": \"0.9\", \"sources\": [\"atlas\"]}\n```";
  const auto strict = run({"parse", "--schema", file("answer.baml"), "--strictness", "strict"}, fenced);
  EXPECT_EQ(strict.status, 1);
  EXPECT_THAT(strict.err, StartsWith("invalid JSON at line 1, column 1"));
  const auto repair = run({"parse", "--schema", file("answer.baml"), "--strictness", "repair"}, fenced);
  EXPECT_EQ(repair.status, 1);
  EXPECT_EQ(repair.err, "confidence: expected number (got \"0.9\")\n");
  const auto coerce = run({"parse", "--schema", file("answer.baml"), "--strictness", "coerce", "--compact"}, fenced);
  EXPECT_EQ(coerce.status, 0) << coerce.err;
  EXPECT_EQ(coerce.out, "{\"answer\":\"Paris\",\"confidence\":0.9,\"sources\":[\"atlas\"]}\n");
  // coerce is the default
  EXPECT_EQ(run({"parse", "--schema", file("answer.baml"), "--compact"}, fenced).out, coerce.out);
  // strict JSON is accepted at every level
  const std::string plain = R"({"answer": "Paris", "confidence": 0.9, "sources": ["atlas"]})";
  EXPECT_EQ(run({"parse", "--schema", file("answer.baml"), "--strictness", "strict", "--compact"}, plain).out, coerce.out);
}

TEST_F(Cli, PartialReadsAnUnfinishedStream) {
  const std::string cut = R"({"answer": "Paris is the capital", "confidence": 0.9, "metadata": {"model_used": "gpt-4o)";
  // final mode: the cut value is dropped and the missing sources are an issue
  const auto final_ = run({"parse", "--schema", file("answer.baml"), "--json", "--compact"}, cut);
  EXPECT_EQ(final_.status, 1);
  const json::value f = json::parse(final_.out);
  EXPECT_EQ(f.at("issues").at(0).at("path"), "sources");
  EXPECT_EQ(f.at("issues").at(0).at("code"), "missing_field");
  EXPECT_THAT(final_.out, HasSubstr(R"("kind":"truncated","path":"metadata.model_used")"));
  // partial mode: the value so far, what is still coming as notes
  const auto partial = run({"parse", "--schema", file("answer.baml"), "--partial", "--json"}, cut);
  ASSERT_EQ(partial.status, 0) << partial.out << partial.err;
  const json::value p = json::parse(partial.out);
  EXPECT_EQ(p.at("ok"), true);
  EXPECT_EQ(p.at("value"),
            json::parse(R"({"answer": "Paris is the capital", "confidence": 0.9, "metadata": {"model_used": "gpt-4o"}})"));
  std::vector<std::string> incomplete;
  for (const auto& n : p.at("notes").as_array())
    if (n.at("kind") == "incomplete") incomplete.push_back(std::string(n.at("path").as_string()) + ": " +
                                                           std::string(n.at("detail").as_string()));
  EXPECT_THAT(incomplete, ::testing::Contains("sources: required field not written yet"));
  EXPECT_THAT(incomplete, ::testing::Contains(HasSubstr("metadata.model_used: ")));
  // plain output of a partial value
  const auto plain = run({"parse", "--schema", file("answer.baml"), "--partial", "--compact"}, cut);
  EXPECT_EQ(plain.status, 0);
  EXPECT_EQ(plain.out,
            "{\"answer\":\"Paris is the capital\",\"confidence\":0.9,\"metadata\":{\"model_used\":\"gpt-4o\"}}\n");
  // a finished value is checked in full, also in partial mode
  const auto bad = run({"parse", "--schema", file("answer.baml"), "--partial"}, R"({"answer": "x", "confidence": 1.5, "sou)");
  EXPECT_EQ(bad.status, 1);
  EXPECT_EQ(bad.err, "confidence: must be <= 1 (got 1.5)\n");
  // complete text is read as in final mode
  const auto done = run({"parse", "--schema", file("answer.baml"), "--partial"}, R"({"answer": "x", "confidence": 0.5})");
  EXPECT_EQ(done.status, 1);
  EXPECT_EQ(done.err, "sources: required field is missing\n");
}

TEST_F(Cli, ParseTypeExpressions) {
  const auto list = run({"parse", "--schema", file("notes.baml"), "--type", "string[]", "--compact"}, "['a', 'b',]");
  EXPECT_EQ(list.status, 0) << list.err;
  EXPECT_EQ(list.out, "[\"a\",\"b\"]\n");
  const auto either =
      run({"parse", "--schema", file("notes.baml"), "--type", "Ticket | Note", "--compact"}, R"({"text": "hi"})");
  EXPECT_EQ(either.status, 0) << either.err;
  EXPECT_EQ(either.out, "{\"text\":\"hi\"}\n");
  const auto map = run({"parse", "--schema", file("notes.baml"), "--type", "map<string, int>", "--compact"},
                       R"({"a": "1,234", "b": 2})");
  EXPECT_EQ(map.status, 0) << map.err;
  EXPECT_EQ(map.out, "{\"a\":1234,\"b\":2}\n");
  const auto number = run({"parse", "--schema", file("notes.baml"), "--type", "int"}, "12,111");
  EXPECT_EQ(number.status, 0) << number.err;
  EXPECT_EQ(number.out, "12111\n");
  const auto wrong = run({"parse", "--schema", file("notes.baml"), "--type", "Note[]", "--strictness", "repair"},
                         R"([{"text": {}}, {}])");
  EXPECT_EQ(wrong.status, 1);
  EXPECT_THAT(lines(wrong.err), ElementsAre("[0].text: expected string (got {})", "[1].text: required field is missing"));
  // at the coerce level (the default) an object given for a string is read as its text
  const auto text = run({"parse", "--schema", file("notes.baml"), "--type", "Note[]"}, R"([{"text": {}}, {}])");
  EXPECT_EQ(text.status, 1);
  EXPECT_THAT(lines(text.err), ElementsAre("[1].text: required field is missing"));
}

TEST_F(Cli, ParseSchemaAndFileErrorsExitTwo) {
  write("bad.baml", "class A {\n  x Foo\n}\n");
  const auto schema = run({"parse", "--schema", file("bad.baml")}, "{}");
  EXPECT_EQ(schema.status, 2);
  EXPECT_EQ(schema.err, file("bad.baml") + ":2:5: unknown_type: unknown type 'Foo'\n");
  const auto missing_schema = run({"parse", "--schema", file("nope.baml")}, "{}");
  EXPECT_EQ(missing_schema.status, 2);
  EXPECT_EQ(missing_schema.err, file("nope.baml") + ": io_error: cannot read the file: no such file\n");
  const auto missing_input = run({"parse", "--schema", file("ticket.baml"), file("nope.txt")});
  EXPECT_EQ(missing_input.status, 2);
  EXPECT_EQ(missing_input.err, "covenant parse: cannot read '" + file("nope.txt") + "': no such file\n");
  const auto directory = run({"parse", "--schema", file("ticket.baml"), dir_.string()});
  EXPECT_EQ(directory.status, 2);
  EXPECT_THAT(directory.err, HasSubstr("is a directory"));
  const auto schema_dir = run({"parse", "--schema", dir_.string()}, "{}");
  EXPECT_EQ(schema_dir.status, 2);
  EXPECT_THAT(schema_dir.err, HasSubstr("io_error: cannot read the file: is a directory"));
  const auto type = run({"parse", "--schema", file("ticket.baml"), "--type", "Nope"}, "{}");
  EXPECT_EQ(type.status, 2);
  EXPECT_THAT(type.err, HasSubstr("unknown type 'Nope'; types in "));
}

// ---- check ---------------------------------------------------------------------------------------

TEST_F(Cli, CheckSummarizesGoodFiles) {
  const std::string json_schema = write("review.json", review_json_schema);
  const auto r = run({"check", file("ticket.baml"), file("answer.baml"), json_schema});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(lines(r.out), ElementsAre(file("ticket.baml") + ": ok (2 classes, 1 enum, 0 aliases)",
                                        file("answer.baml") + ": ok (3 classes, 0 enums, 0 aliases)",
                                        json_schema + ": ok (JSON Schema, root Review, 2 classes, 0 enums, 0 aliases)"));
}

TEST_F(Cli, CheckListsEveryProblemWithFileLineAndColumn) {
  const std::string bad = write("bad.baml", R"(class Answer {
  text string
  source Sourc
  text int
  score float @assert({{ this >>> 1 }})
}
enum E {
  A
  A
}
interface Old {}
)");
  const auto r = run({"check", bad, file("ticket.baml")});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(lines(r.out),
              ElementsAre(bad + ":3:10: unknown_type: unknown type 'Sourc'",
                          bad + ":4:3: duplicate_field: field 'text' of 'Answer' is already declared at line 2",
                          bad + ":5:32: invalid_constraint: @assert: expected a value but found '>'",
                          bad + ":9:3: duplicate_value: value 'A' of enum 'E' is already declared",
                          StartsWith(bad + ":11:1: unsupported: "), bad + ": 5 problems",
                          file("ticket.baml") + ": ok (2 classes, 1 enum, 0 aliases)"));
  EXPECT_THAT(r.err, IsEmpty());
}

TEST_F(Cli, CheckJsonSchemaProblemsCarryTheirPointer) {
  const std::string bad = write("bad.json", R"({"type": "object", "properties": {"a": {"type": "strin"}}, "required": ["b"]})");
  const auto r = run({"check", bad});
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(lines(r.out), ElementsAre(bad + ":1:73:/required/0: invalid_json_schema: required property 'b' is not declared in properties",
                                        bad + ":1:41:/properties/a/type: invalid_json_schema: unknown type 'strin'",
                                        bad + ": 2 problems"));
  const std::string broken = write("broken.json", "{\"type\": \n  \"object\",,}");
  const auto b = run({"check", broken});
  EXPECT_EQ(b.status, 2);
  EXPECT_THAT(lines(b.out).front(), StartsWith(broken + ":2:12: syntax_error: invalid JSON"));
}

TEST_F(Cli, CheckNotesSkippedDeclarations) {
  const std::string f = write("fn.baml", "class A {\n  x int\n}\nfunction Extract(text: string) -> A {\n  client GPT4\n  prompt #\"...\"#\n}\n");
  const auto r = run({"check", f});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(lines(r.out), ElementsAre(StartsWith(f + ":4:1: note: "), f + ": ok (1 class, 0 enums, 0 aliases, 1 note)"));
}

TEST_F(Cli, CheckTheExampleSchemaFiles) {
  const std::string dir = std::string(COVENANT_SOURCE_DIR) + "/examples/models/";
  const auto r = run({"check", dir + "final_answer_v1.baml", dir + "final_answer_v2.baml"});
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(lines(r.out), ElementsAre(HasSubstr("final_answer_v1.baml: ok (3 classes"),
                                        HasSubstr("final_answer_v2.baml: ok (3 classes")));
}

// ---- bad input -----------------------------------------------------------------------------------

TEST_F(Cli, NeverCrashesOnBadInput) {
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary.push_back(static_cast<char>((i * 7919 + 13) % 256));
  const std::string bin = write("binary.baml", binary);
  const std::string bin_json = write("binary.json", "{" + binary);
  const std::string empty = write("empty.baml", "");
  const std::string invalid_utf8 = write("utf8.baml", "class A {\n  x \xff\xfe int\n}\n");
  const std::string huge_schema = write("huge.baml", "class A {\n" + std::string(5u << 20, ' ') + "}\n");
  const std::string deep_schema = write("deep.baml", "class A {\n  x " + std::string(5000, '(') + "int" + std::string(5000, ')') + "\n}\n");
  for (const auto& f : {bin, bin_json, invalid_utf8, huge_schema, deep_schema}) {
    const auto c = run({"check", f});
    EXPECT_EQ(c.status, 2) << f << "\n" << c.out;
    EXPECT_THAT(c.out, HasSubstr(" problem")) << f;
    EXPECT_EQ(run({"schema", f}).status, 2) << f;
    EXPECT_EQ(run({"parse", "--schema", f}, "{}").status, 2) << f;
  }
  // diagnostics quote bytes that are not printable UTF-8 as \xNN
  EXPECT_THAT(run({"check", invalid_utf8}).out, HasSubstr("\\xff"));
  EXPECT_EQ(run({"check", empty}).status, 0);
  EXPECT_EQ(run({"schema", empty}).status, 2);

  // model output of every bad kind: exit 1 with issues, never a crash
  const std::vector<std::string> inputs = {
      binary,
      "",
      "\xff\xfe{\"answer\": \"\xc3\x28\"}",
      std::string(100000, '['),
      std::string(100000, '{') + "\"a\":",
      "{\"answer\": \"" + std::string(5u << 20, 'x'),
      "```json\n" + std::string(10000, '`'),
  };
  for (const auto& input : inputs) {
    const auto r = run({"parse", "--schema", file("answer.baml")}, input);
    EXPECT_EQ(r.status, 1) << input.substr(0, 40);
    EXPECT_FALSE(r.err.empty());
    // The report is valid JSON (and UTF-8) whatever the input. (In partial mode a run of '{' is
    // the beginning of an object: the value so far is {}.)
    const auto j = run({"parse", "--schema", file("answer.baml"), "--json", "--partial"}, input);
    EXPECT_EQ(j.status, json::parse(j.out).at("ok").as_bool() ? 0 : 1) << input.substr(0, 40);
  }
}

}  // namespace

namespace {

TEST_F(Cli, ParseKeysDeclaredOrJson) {
  // ticket.baml: enum value HIGH has @alias("urgent").
  const std::string input = R"({"title": "Printer", "priority": "urgent", "tags": []})";
  const auto json_keys = run({"parse", "--schema", file("ticket.baml"), "--compact"}, input);
  EXPECT_EQ(json_keys.status, 0) << json_keys.err;
  EXPECT_THAT(json_keys.out, HasSubstr(R"("priority":"urgent")"));
  const auto declared = run({"parse", "--schema", file("ticket.baml"), "--compact", "--keys", "declared"}, input);
  EXPECT_EQ(declared.status, 0) << declared.err;
  EXPECT_THAT(declared.out, HasSubstr(R"("priority":"HIGH")"));
  const auto bad = run({"parse", "--schema", file("ticket.baml"), "--keys", "both"}, input);
  EXPECT_EQ(bad.status, 2);
  EXPECT_THAT(bad.err, HasSubstr("unknown --keys 'both'"));
}

}  // namespace
