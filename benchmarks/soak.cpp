// Soak: `covenant run` over 20 000 records at --concurrency 500 against the fault-injection server
// (tests/support/fault_server.hpp: 30 % of requests get a fault of every kind, seeded), and the
// same against a server without faults. The tool runs as its own process, so what is measured is
// the tool alone: records per second, records ok and failed by stage, and its resident memory
// (peak so far) and open file descriptors at the start, the middle and the end of the run (read
// from /proc/<pid>). Every record must end with exactly one line; a hang fails the benchmark.
//   soak/faults_20000_c500   30 % faults
//   soak/clean_20000_c500    no faults
// Not part of the test suite: `./run.sh bench soak` runs it (about a minute each).
#include <benchmark/benchmark.h>

#include <boost/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fault_server.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;

std::string id_of_key(const std::string& key) {
  static const std::regex id(R"re("id"\s*:\s*"([^"]+)")re");
  std::smatch m;
  return std::regex_search(key, m, id) ? m[1].str() : std::string();
}

/// The process's resident set (peak so far, VmHWM) and current (VmRSS), in KiB.
std::pair<long, long> rss_kib(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  long hwm = 0, rss = 0;
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("VmHWM:", 0) == 0) hwm = std::stol(line.substr(6));
    if (line.rfind("VmRSS:", 0) == 0) rss = std::stol(line.substr(6));
  }
  return {hwm, rss};
}

long open_fds(pid_t pid) {
  long n = 0;
  if (DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

std::size_t lines_in(const std::string& file) {
  std::ifstream f(file, std::ios::binary);
  std::size_t n = 0;
  char buf[1 << 16];
  while (f) {
    f.read(buf, sizeof buf);
    for (std::streamsize i = 0; i < f.gcount(); ++i) n += buf[i] == '\n' ? 1 : 0;
  }
  return n;
}

void raise_file_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

void soak(benchmark::State& state, double fault_rate) {
#ifndef COVENANT_CLI_PATH
  state.SkipWithError("the covenant tool is not built");
  return;
#else
  raise_file_limit();
  constexpr int records = 20000;
  constexpr int concurrency = 500;
  const fs::path dir = fs::temp_directory_path() / ("covenant_soak_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string input = (dir / "in.jsonl").string();
  const std::string output = (dir / "out.jsonl").string();
  {
    std::ofstream f(input);
    for (int i = 0; i < records; ++i) f << R"({"id": "r)" << i << R"(", "n": )" << i << "}\n";
    std::ofstream s(dir / "label.baml");
    s << "class Label {\n  label string @assert({{ this|length > 0 }})\n}\n";
  }
  for (auto _ : state) {
    covenant_test::fault_options fo;
    fo.seed = 2026;
    fo.fault_rate = fault_rate;
    fo.answer = [](const std::string& key) { return R"({"label": "L)" + id_of_key(key) + R"("})"; };
    covenant_test::fault_server server(fo);
    std::vector<std::string> args = {COVENANT_CLI_PATH, "run", "--schema", (dir / "label.baml").string(), "--prompt",
                                     "Label the record.", "--concurrency", std::to_string(concurrency), "--tries", "1",
                                     "--delay", "0.01", "--retries", "2", "--retry-delay", "0.01", "--retry-max-delay",
                                     "0.2", "--timeout", "2", "--output", output, "--quiet", input};
    std::vector<std::string> env_storage;
    for (char** e = environ; *e != nullptr; ++e)
      if (std::string_view(*e).rfind("COVENANT_", 0) != 0) env_storage.emplace_back(*e);
    env_storage.push_back("COVENANT_BASE_URL=" + server.base_url());
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_storage) envp.push_back(e.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, (dir / "err.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const auto t0 = std::chrono::steady_clock::now();
    pid_t pid = -1;
    if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data()) != 0) {
      posix_spawn_file_actions_destroy(&fa);
      state.SkipWithError("cannot start the covenant tool");
      return;
    }
    posix_spawn_file_actions_destroy(&fa);
    // Samples: once the first lines are out (start), at half the records (middle), and the last
    // reading before the process exits (end).
    std::map<std::string, std::pair<long, long>> samples;  // name -> (peak RSS KiB, fds)
    int status = 0;
    bool ended = false;
    const auto limit = t0 + 10min;
    std::pair<long, long> last{0, 0};
    while (std::chrono::steady_clock::now() < limit) {
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        ended = true;
        break;
      }
      const std::size_t done = lines_in(output);
      const auto [hwm, rss] = rss_kib(pid);
      const long fds = open_fds(pid);
      if (hwm > 0) last = {hwm, fds};
      if (!samples.count("start") && done >= 500) samples["start"] = last;
      if (!samples.count("middle") && done >= records / 2) samples["middle"] = last;
      std::this_thread::sleep_for(20ms);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!ended) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      state.SkipWithError("HANG: covenant run did not end within 10 minutes");
      return;
    }
    samples["end"] = last;
    state.SetIterationTime(seconds);

    // Every record once, and the outcomes by stage.
    std::map<std::string, int> seen;
    std::map<std::string, long> by_stage;
    std::ifstream out(output);
    for (std::string line; std::getline(out, line);) {
      const json::value v = json::parse(line);
      ++seen[std::string(v.at("id").as_string())];
      ++by_stage[v.at("ok").as_bool() ? std::string("ok") : std::string(v.at("failed_stage").as_string())];
    }
    bool once = seen.size() == static_cast<std::size_t>(records);
    for (const auto& [id, n] : seen) once = once && n == 1;
    if (!once) {
      state.SkipWithError("not every record has exactly one line");
      return;
    }
    state.counters["records_per_s"] = static_cast<double>(records) / seconds;
    for (const auto& [stage, n] : by_stage) state.counters["records_" + stage] = static_cast<double>(n);
    state.counters["requests"] = static_cast<double>(server.requests());
    for (const char* when : {"start", "middle", "end"}) {
      state.counters[std::string("peak_rss_kib_") + when] = static_cast<double>(samples[when].first);
      state.counters[std::string("fds_") + when] = static_cast<double>(samples[when].second);
    }
    std::size_t faults = 0;
    for (const auto& [f, n] : server.counts())
      if (f != covenant_test::fault::none) faults += n;
    state.counters["faults_served"] = static_cast<double>(faults);
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
#endif
}

BENCHMARK_CAPTURE(soak, faults_20000_c500, 0.3)->Name("soak/faults_20000_c500")->Iterations(1)->Repetitions(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK_CAPTURE(soak, clean_20000_c500, 0.0)->Name("soak/clean_20000_c500")->Iterations(1)->Repetitions(1)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace
