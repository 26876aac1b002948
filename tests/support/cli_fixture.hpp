// What the tests of the `covenant` tool share: a scratch directory per test, and running the tool
// (or another program) as a child process with a clean environment, its output in files. Also the
// labelling task `covenant run` is tested with, and its loopback-server replies.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "loopback_server.hpp"

extern char** environ;

namespace covenant_test {

/// The `covenant` tool built beside the tests, or null when it is not built.
inline const char* cli_tool() {
#ifdef COVENANT_CLI_PATH
  return COVENANT_CLI_PATH;
#else
  return nullptr;
#endif
}

/// How a child process ended.
struct run_result {
  int status = -1;  ///< exit status; -1 when the program did not exit normally
  std::string out;
  std::string err;
};

/// A test of the tool: skipped when the tool is not built; a scratch directory per test.
class cli_fixture : public ::testing::Test {
 protected:
  /// `name` starts the scratch directory's name (the process id and a counter follow).
  explicit cli_fixture(std::string name) : name_(std::move(name)) {}

  void SetUp() override {
    if (cli_tool() == nullptr) GTEST_SKIP() << "the covenant tool is not built";
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::temp_directory_path() /
           (name_ + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  /// Writes `content` to the scratch file `name`; returns its path.
  std::string write(const std::string& name, const std::string& content) const {
    std::ofstream f(dir_ / name, std::ios::binary);
    f << content;
    return (dir_ / name).string();
  }
  /// The path of the scratch file `name`.
  [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string read(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  /// Each non-empty line of `text` as JSON.
  static std::vector<boost::json::value> json_lines(const std::string& text) {
    std::vector<boost::json::value> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(boost::json::parse(line));
    return out;
  }

  /// A fresh tag for a child's output files.
  static std::string next_tag() {
    static std::atomic<int> runs{0};
    return "run" + std::to_string(runs++);
  }

  /// Starts `program` (searched on PATH) with `args`; its environment is this process's without
  /// COVENANT_*, OPENAI_API_KEY and ANTHROPIC_API_KEY, plus `env` ("NAME=value"); stdin from `in`,
  /// stdout and stderr to <tag>.out and <tag>.err. Returns the pid (-1 when it cannot start).
  pid_t spawn_program(const std::string& program, std::vector<std::string> args, const std::string& tag,
                      const std::vector<std::string>& env = {}, const std::string& in = "/dev/null") const {
    std::vector<std::string> env_storage;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry = *e;
      if (entry.starts_with("COVENANT_") || entry.starts_with("OPENAI_API_KEY=") ||
          entry.starts_with("ANTHROPIC_API_KEY="))
        continue;
      env_storage.emplace_back(entry);
    }
    env_storage.insert(env_storage.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (auto& s : env_storage) envp.push_back(s.data());
    envp.push_back(nullptr);
    args.insert(args.begin(), program);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    const std::string out = path(tag + ".out");
    const std::string err = path(tag + ".err");
    posix_spawn_file_actions_addopen(&fa, 0, in.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, program.c_str(), &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    EXPECT_EQ(rc, 0) << program;
    return rc == 0 ? pid : -1;
  }

  /// The tool with `args` (see spawn_program).
  pid_t spawn_tool(std::vector<std::string> args, const std::string& tag, const std::vector<std::string>& env = {}) const {
    return spawn_program(cli_tool(), std::move(args), tag, env);
  }

  /// Waits for the child started with `tag` and reads its output; a sanitizer report fails the test.
  run_result finish(pid_t pid, const std::string& tag) const {
    run_result r;
    if (pid <= 0) return r;
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status)) r.status = WEXITSTATUS(status);
    r.out = read(path(tag + ".out"));
    r.err = read(path(tag + ".err"));
    EXPECT_THAT(r.err, ::testing::AllOf(::testing::Not(::testing::HasSubstr("Sanitizer")),
                                        ::testing::Not(::testing::HasSubstr("runtime error"))));
    return r;
  }

  /// Runs the tool with `args` to its end.
  run_result run_tool(std::vector<std::string> args, const std::vector<std::string>& env = {}) const {
    const std::string tag = next_tag();
    return finish(spawn_tool(std::move(args), tag, env), tag);
  }

  std::filesystem::path dir_;

 private:
  std::string name_;
};

// ---------------------------------------------------------------------------------------------
// The labelling task of the `covenant run` tests

/// The output type: a non-empty label.
inline const char* const label_baml = R"(class Label {
  label string @assert({{ this|length > 0 }})
}
)";

/// `n` JSON Lines records {"id": "r<i>", "n": i}, with "bad": true for the indexes in `bad`.
inline std::string label_records(int n, const std::set<int>& bad = {}) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    // The id appended, not "r" + std::to_string(i): GCC 12 reports a false -Wrestrict on that in
    // Release builds.
    boost::json::object o{{"id", std::string("r").append(std::to_string(i))}, {"n", i}};
    if (bad.count(i) != 0) o["bad"] = true;
    text += boost::json::serialize(o) + "\n";
  }
  return text;
}

/// The record a request is about: the JSON between <input> and </input> in its user message.
inline boost::json::value record_of(const std::string& body) {
  const boost::json::value v = boost::json::parse(body);
  const std::string user(v.at("messages").as_array().at(1).at("content").as_string());
  const auto b = user.find('\n');
  const auto e = user.rfind("\n</input>");
  return boost::json::parse(user.substr(b + 1, e - b - 1));
}

/// A `covenant run` test over the labelling task: label.baml is in the scratch directory.
class label_run_fixture : public cli_fixture {
 protected:
  using cli_fixture::cli_fixture;
  void SetUp() override {
    cli_fixture::SetUp();
    if (IsSkipped()) return;
    write("label.baml", label_baml);
  }
  static std::string records(int n, const std::set<int>& bad = {}) { return label_records(n, bad); }
};

/// Answers {"label": "L<n>"} for record n, an empty label (rejected) when "bad" is true.
inline response_plan label_reply(const received_request& r, std::chrono::milliseconds delay) {
  const boost::json::value rec = record_of(r.body);
  response_plan p;
  p.delay = delay;
  const bool bad = rec.as_object().contains("bad") && rec.at("bad").as_bool();
  const std::string label = bad ? "" : "L" + boost::json::serialize(rec.at("n"));
  p.body = openai_completion(boost::json::serialize(boost::json::value{{"label", label}}));
  return p;
}

}  // namespace covenant_test
