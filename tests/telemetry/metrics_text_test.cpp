// Metric primitives and the Prometheus text exposition writer (covenant/telemetry/metrics_text.hpp).
#include <covenant/telemetry/metrics_text.hpp>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <latch>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace prom = covenant::prometheus;

std::string value_text(double v) {
  std::string out;
  prom::append_value(out, v);
  return out;
}

TEST(MetricsText, RendersSmallRegistryExactly) {
  prom::registry r;
  auto& calls = r.add_counter("covenant_calls_total", "Contract calls.", {"contract", "stage"});
  auto& inflight = r.add_gauge("covenant_inflight_requests", "Requests in flight.");
  auto& latency = r.add_histogram("covenant_call_duration_seconds", "Call latency.", {"contract"}, {0.5, 1, 2.5});

  calls.with({"contract_b", "validate"}).inc();
  calls.with({"contract_a", "validate"}).inc(2);
  calls.with({"contract_a", "decode"}).inc(0.5);
  inflight.with().set(3);
  auto& h = latency.with({"contract_a"});
  h.observe(0.25);  // le=0.5
  h.observe(0.5);   // le=0.5 (upper bounds are inclusive)
  h.observe(0.75);  // le=1
  h.observe(2);     // le=2.5
  h.observe(10);    // only +Inf

  EXPECT_EQ(r.render(),
            "# HELP covenant_calls_total Contract calls.\n"
            "# TYPE covenant_calls_total counter\n"
            "covenant_calls_total{contract=\"contract_a\",stage=\"decode\"} 0.5\n"
            "covenant_calls_total{contract=\"contract_a\",stage=\"validate\"} 2\n"
            "covenant_calls_total{contract=\"contract_b\",stage=\"validate\"} 1\n"
            "# HELP covenant_inflight_requests Requests in flight.\n"
            "# TYPE covenant_inflight_requests gauge\n"
            "covenant_inflight_requests 3\n"
            "# HELP covenant_call_duration_seconds Call latency.\n"
            "# TYPE covenant_call_duration_seconds histogram\n"
            "covenant_call_duration_seconds_bucket{contract=\"contract_a\",le=\"0.5\"} 2\n"
            "covenant_call_duration_seconds_bucket{contract=\"contract_a\",le=\"1\"} 3\n"
            "covenant_call_duration_seconds_bucket{contract=\"contract_a\",le=\"2.5\"} 4\n"
            "covenant_call_duration_seconds_bucket{contract=\"contract_a\",le=\"+Inf\"} 5\n"
            "covenant_call_duration_seconds_sum{contract=\"contract_a\"} 13.5\n"
            "covenant_call_duration_seconds_count{contract=\"contract_a\"} 5\n");
}

TEST(MetricsText, HistogramWithoutLabelsAndEmptyFamilies) {
  prom::registry r;
  r.add_counter("unused_total", "Never incremented, has labels.", {"kind"});
  r.add_counter("idle_total", "Never incremented, no labels.");
  auto& h = r.add_histogram("size_bytes", "Sizes.", {}, {10, 100}).with();
  h.observe(100);
  h.observe(std::numeric_limits<double>::quiet_NaN());  // ignored
  h.observe(std::numeric_limits<double>::infinity());   // +Inf bucket only
  EXPECT_EQ(r.render(),
            "# HELP idle_total Never incremented, no labels.\n"
            "# TYPE idle_total counter\n"
            "idle_total 0\n"
            "# HELP size_bytes Sizes.\n"
            "# TYPE size_bytes histogram\n"
            "size_bytes_bucket{le=\"10\"} 0\n"
            "size_bytes_bucket{le=\"100\"} 1\n"
            "size_bytes_bucket{le=\"+Inf\"} 2\n"
            "size_bytes_sum +Inf\n"
            "size_bytes_count 2\n");
}

TEST(MetricsText, EscapesLabelValuesAndHelp) {
  prom::registry r;
  auto& g = r.add_gauge("odd_values", "Line one\nline two with a \\ backslash and \"quotes\".", {"path"});
  g.with({"C:\\dir\\\"quoted\"\nnext"}).set(1);
  EXPECT_EQ(r.render(),
            "# HELP odd_values Line one\\nline two with a \\\\ backslash and \"quotes\".\n"
            "# TYPE odd_values gauge\n"
            "odd_values{path=\"C:\\\\dir\\\\\\\"quoted\\\"\\nnext\"} 1\n");

  std::string out;
  prom::append_escaped_label_value(out, "a\\b\"c\nd");
  EXPECT_EQ(out, "a\\\\b\\\"c\\nd");
  out.clear();
  prom::append_escaped_help(out, "a\\b\"c\nd");
  EXPECT_EQ(out, "a\\\\b\"c\\nd");
}

TEST(MetricsText, FormatsNumbers) {
  EXPECT_EQ(value_text(0), "0");
  EXPECT_EQ(value_text(-0.0), "0");
  EXPECT_EQ(value_text(42), "42");
  EXPECT_EQ(value_text(-3), "-3");
  EXPECT_EQ(value_text(1e6), "1000000");
  EXPECT_EQ(value_text(9007199254740991.0), "9007199254740991");
  EXPECT_EQ(value_text(0.1), "0.1");
  EXPECT_EQ(value_text(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(value_text(2.5), "2.5");
  EXPECT_EQ(value_text(1.5e-7), "1.5e-07");
  EXPECT_EQ(value_text(1e300), "1e+300");
  EXPECT_EQ(value_text(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(value_text(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(value_text(std::numeric_limits<double>::quiet_NaN()), "NaN");
  for (double v : {0.05, 1.0 / 3, 123456.789, 6.02214076e23, 5e-324}) EXPECT_EQ(std::strtod(value_text(v).c_str(), nullptr), v);
}

TEST(MetricsText, RejectsInvalidNames) {
  prom::registry r;
  for (const char* bad : {"", "1abc", "a-b", "a b", "__reserved_total", "caf\xc3\xa9_total"})
    EXPECT_THROW(r.add_counter(bad, "x"), std::invalid_argument) << bad;
  EXPECT_THROW(r.add_counter("calls", "x"), std::invalid_argument) << "counter without _total";
  EXPECT_THROW(r.add_gauge("g", "x", {"1a"}), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("g", "x", {"a:b"}), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("g", "x", {"__name"}), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("g", "x", {""}), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("g", "x", {"a", "a"}), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("g", "bad \xff help"), std::invalid_argument);
  EXPECT_THROW(r.add_histogram("h", "x", {"le"}), std::invalid_argument);
  EXPECT_NO_THROW(r.add_gauge("ns:sub_metric", "colons are allowed in metric names", {"_x", "A9"}));
  EXPECT_NO_THROW(r.add_gauge("le_gauge", "le is only reserved for histograms", {"le"}));
  // Nothing invalid was registered.
  EXPECT_EQ(r.collect().size(), 2u);

  EXPECT_TRUE(prom::is_valid_metric_name("a_b:c9"));
  EXPECT_FALSE(prom::is_valid_metric_name("9a"));
  EXPECT_TRUE(prom::is_valid_label_name("_a9"));
  EXPECT_FALSE(prom::is_valid_label_name("a:b"));
}

TEST(MetricsText, RejectsInvalidBuckets) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::vector<double>> bad = {{1, 1}, {2, 1}, {1, inf}, {nan}, {-inf, 0}, {0, nan, 1}};
  for (const auto& bounds : bad) {
    EXPECT_THROW(prom::histogram{bounds}, std::invalid_argument);
    EXPECT_THROW(prom::histogram_family("h", "x", {}, bounds), std::invalid_argument);
  }
  EXPECT_NO_THROW(prom::histogram({-1, 0, 1e9}));
  EXPECT_NO_THROW(prom::histogram(std::vector<double>{}));
  const auto defaults = prom::default_seconds_buckets();
  EXPECT_NO_THROW(prom::check_bucket_bounds(defaults));
  EXPECT_EQ(defaults.front(), 0.05);
  EXPECT_EQ(defaults.back(), 120);
}

TEST(MetricsText, RejectsDuplicateRegistration) {
  prom::registry r;
  r.add_counter("calls_total", "Calls.");
  r.add_histogram("latency_seconds", "Latency.", {}, {1});
  EXPECT_THROW(r.add_counter("calls_total", "Again."), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("calls_total", "Same name, other type."), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("latency_seconds_count", "Written by the histogram."), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("latency_seconds_bucket", "Written by the histogram."), std::invalid_argument);
  EXPECT_THROW(r.add_gauge("latency_seconds_sum", "Written by the histogram."), std::invalid_argument);
  EXPECT_THROW(r.add_histogram("calls_total", "Would write calls_total too.", {}, {1}), std::invalid_argument);
  EXPECT_NO_THROW(r.add_histogram("calls", "Writes calls_bucket, calls_sum, calls_count.", {}, {1}));
  EXPECT_EQ(r.collect().size(), 3u);
}

TEST(MetricsText, ChildLookupChecksValuesAndKeepsReferences) {
  prom::counter_family f("requests_total", "Requests.", {"contract", "stage"});
  EXPECT_THROW(f.with({"only_one"}), std::invalid_argument);
  EXPECT_THROW(f.with({"a", "b", "c"}), std::invalid_argument);
  EXPECT_THROW(f.with(), std::invalid_argument);
  EXPECT_THROW(f.with({"a", "bad \xc0\xaf utf-8"}), std::invalid_argument);
  EXPECT_TRUE(f.collect().children.empty());

  prom::counter& first = f.with({"contract_a", "validate"});
  first.inc(5);
  for (int i = 0; i < 1000; ++i) f.with({"contract_" + std::to_string(i), "decode"}).inc();
  const std::vector<std::string> key = {"contract_a", "validate"};
  EXPECT_EQ(&f.with(std::span<const std::string>(key)), &first);
  const std::array<std::string_view, 2> view_key = {"contract_a", "validate"};
  EXPECT_EQ(&f.with(std::span<const std::string_view>(view_key)), &first);
  EXPECT_EQ(f.with({"contract_a", "validate"}).value(), 5);
  EXPECT_EQ(f.collect().children.size(), 1001u);

  EXPECT_THROW(first.inc(-1), std::invalid_argument);
  EXPECT_THROW(first.inc(std::numeric_limits<double>::quiet_NaN()), std::invalid_argument);
  EXPECT_EQ(first.value(), 5);
}

TEST(MetricsText, ConcurrentUpdatesSumExactly) {
  prom::registry r;
  auto& counters = r.add_counter("work_total", "Work.", {"worker_group"});
  auto& gauges = r.add_gauge("level", "Level.");
  auto& hist = r.add_histogram("work_seconds", "Work time.", {"worker_group"}, {1, 2});
  constexpr int threads = 4;
  constexpr int per_thread = 100'000;
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      auto& own = counters.with({"group_" + std::to_string(t)});
      start.arrive_and_wait();  // all threads update at the same time
      for (int i = 0; i < per_thread; ++i) {
        counters.with({"shared"}).inc();  // looked up every time
        own.inc(2);
        gauges.with().inc();
        gauges.with().dec(0.5);
        hist.with({"shared"}).observe(static_cast<double>(i % 3));  // 0, 1, 2
        if (i % 1000 == 0) (void)r.render();                      // rendering meanwhile
      }
    });
  }
  for (auto& t : pool) t.join();

  EXPECT_EQ(counters.with({"shared"}).value(), static_cast<double>(threads * per_thread));
  for (int t = 0; t < threads; ++t)
    EXPECT_EQ(counters.with({"group_" + std::to_string(t)}).value(), 2.0 * per_thread);
  EXPECT_EQ(gauges.with().value(), 0.5 * threads * per_thread);
  const prom::histogram_data h = hist.with({"shared"}).collect();
  const std::uint64_t total = threads * per_thread;
  EXPECT_EQ(h.count, total);
  ASSERT_EQ(h.cumulative_counts.size(), 2u);
  // i % 3 over 0..99999: 33334 zeros, 33333 ones, 33333 twos per thread.
  EXPECT_EQ(h.cumulative_counts[0], threads * (33'334u + 33'333u));
  EXPECT_EQ(h.cumulative_counts[1], total);
  EXPECT_EQ(h.sum, threads * (33'333.0 * 1 + 33'333.0 * 2));
}

TEST(MetricsText, AppendFamilyRendersPlainData) {
  prom::family_data f;
  f.name = "queue_depth";
  f.help = "Items waiting.";
  f.type = prom::metric_type::gauge;
  f.label_names = {"queue"};
  f.children = {{{"b"}, 2, {}}, {{"a"}, 1.25, {}}};
  std::string out = "# previous\n";
  prom::append_family(out, f);
  EXPECT_EQ(out,
            "# previous\n"
            "# HELP queue_depth Items waiting.\n"
            "# TYPE queue_depth gauge\n"
            "queue_depth{queue=\"a\"} 1.25\n"
            "queue_depth{queue=\"b\"} 2\n");

  prom::family_data h;
  h.name = "wait_seconds";
  h.help = "Waits.";
  h.type = prom::metric_type::histogram;
  h.children = {{{}, 0, {{0.5}, {3}, 4, 2.75}}};
  out.clear();
  prom::append_family(out, h);
  EXPECT_EQ(out,
            "# HELP wait_seconds Waits.\n"
            "# TYPE wait_seconds histogram\n"
            "wait_seconds_bucket{le=\"0.5\"} 3\n"
            "wait_seconds_bucket{le=\"+Inf\"} 4\n"
            "wait_seconds_sum 2.75\n"
            "wait_seconds_count 4\n");

  // Invalid data throws and leaves the output as it was.
  const std::string before = out;
  auto bad = h;
  bad.children[0].histogram.count = 2;  // below the le="0.5" bucket
  EXPECT_THROW(prom::append_family(out, bad), std::invalid_argument);
  bad = h;
  bad.children[0].histogram.cumulative_counts = {3, 4};  // one count too many
  EXPECT_THROW(prom::append_family(out, bad), std::invalid_argument);
  auto dup = f;
  dup.children.push_back({{"a"}, 7, {}});
  EXPECT_THROW(prom::append_family(out, dup), std::invalid_argument);
  auto wrong = f;
  wrong.children[0].label_values = {"x", "y"};
  EXPECT_THROW(prom::append_family(out, wrong), std::invalid_argument);
  auto counter = f;
  counter.type = prom::metric_type::counter;  // name does not end in _total
  EXPECT_THROW(prom::append_family(out, counter), std::invalid_argument);
  EXPECT_EQ(out, before);

  // A family object renders the same through the free function.
  prom::gauge_family g("queue_depth", "Items waiting.", {"queue"});
  g.with({"b"}).set(2);
  g.with({"a"}).set(1.25);
  std::string from_family;
  prom::append_family(from_family, g);
  std::string from_data;
  prom::append_family(from_data, f);
  EXPECT_EQ(from_family, from_data);
}

/// Runs `command`, returns its exit status and puts its stdout in `output`.
int run(const std::string& command, std::string& output) {
  output.clear();
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return -1;
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) output.append(buffer.data(), n);
  const int status = ::pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool promtool_available() { return std::system("command -v promtool >/dev/null 2>&1") == 0; }

/// Writes `text` to a temporary file and runs `promtool check metrics` on it (stderr included).
int promtool_check(const std::string& text, std::string& output) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("covenant_metrics_" + std::to_string(::getpid()) + "_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".prom");
  {
    std::ofstream file(path, std::ios::binary);
    file << text;
  }
  const int status = run("promtool check metrics < '" + path.string() + "' 2>&1", output);
  std::filesystem::remove(path);
  return status;
}

TEST(MetricsText, PromtoolAcceptsRealisticRegistry) {
  if (!promtool_available()) GTEST_SKIP() << "promtool is not on PATH (Debian package `prometheus`)";
  prom::registry r;
  auto& calls = r.add_counter("covenant_contract_calls_total", "Contract calls by outcome.", {"contract", "outcome"});
  auto& retries = r.add_counter("covenant_retries_total", "Retried attempts.\nCounted per contract.", {"contract"});
  auto& tokens = r.add_counter("covenant_tokens_total", "Tokens reported by the engine.", {"contract", "direction"});
  auto& inflight = r.add_gauge("covenant_requests_in_flight", "Requests sent and not yet answered.");
  auto& limiter = r.add_gauge("covenant_limiter_backoff_seconds", "Seconds left of the current back-off.",
                              {"limiter"});
  auto& latency = r.add_histogram("covenant_call_duration_seconds", "Wall time of a contract call.",
                                  {"contract", "model"});
  auto& sizes = r.add_histogram("covenant_reply_size_bytes", "Reply sizes.", {}, {64, 1024, 16384, 262144});

  calls.with({"contract_a", "ok"}).inc(41);
  calls.with({"contract_a", "violation"}).inc(2);
  calls.with({"weird \"quoted\" \\ name\nwith newline", "ok"}).inc();
  calls.with({"unicode: caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", "ok"}).inc(3);
  calls.with({"", "error"}).inc();
  calls.with({"{braces}=,comma", "ok"}).inc();
  retries.with({"contract_a"}).inc(0.5);
  tokens.with({"contract_a", "input"}).inc(123456789);
  tokens.with({"contract_a", "output"}).inc(1e17);
  inflight.with().set(-2);
  limiter.with({"shared"}).set(std::numeric_limits<double>::infinity());
  limiter.with({"other"}).set(std::numeric_limits<double>::quiet_NaN());
  limiter.with({"third"}).set(-std::numeric_limits<double>::infinity());
  for (double v : {0.01, 0.3, 0.3, 1.7, 7.5, 45.0, 200.0, 1e-9}) latency.with({"contract_a", "gpt-x"}).observe(v);
  latency.with({"weird \"quoted\" \\ name\nwith newline", "local/llama:8b"}).observe(3.25);
  for (double v : {10.0, 900.0, 5000.0, 1e6}) sizes.with().observe(v);

  const std::string text = r.render();
  std::string output;
  const int status = promtool_check(text, output);
  EXPECT_EQ(status, 0) << output << "\n--- input ---\n" << text;
  EXPECT_EQ(output, "") << "\n--- input ---\n" << text;
}

TEST(MetricsText, PromtoolRejectsBrokenText) {
  // The check above can fail: promtool reports malformed text and lint problems.
  if (!promtool_available()) GTEST_SKIP() << "promtool is not on PATH (Debian package `prometheus`)";
  std::string output;
  EXPECT_NE(promtool_check("# TYPE x gauge\nx{a=\"unterminated} 1\n", output), 0);
  EXPECT_NE(promtool_check("# TYPE calls counter\ncalls 1\n", output), 0);  // no help, no _total
  EXPECT_NE(output, "");
}

}  // namespace
