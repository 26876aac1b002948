// Liveness under faults: every call ends, exactly once, with the outcome its faults lead to, by the
// bound its options imply, whatever the model server does and however little else is in flight.
//
// The fault server (tests/support/fault_server.hpp) answers with 429s, 5xx, closed and cut
// connections, held requests, trickled bodies, bodies that are not replies, cut and silent
// streams, in either wire dialect; tests/support/fault_model.hpp says what each call must end
// with. Nothing here injects a sleep or a clock: every wait is the production timer.
//   FaultAlone   one call, nothing else in flight, one fault then good answers (or the fault every
//                time), through the blocking, asynchronous and streaming paths;
//   WaitAlone    each other waiting state on its own: the limiter's back-off, the remedy delay,
//                cancellation and deadlines during a retry's wait;
//   FaultLoad    seeded random faults at concurrency 1, 8 and 200 through the blocking,
//                asynchronous, streaming and batch paths.
#include <covenant/contract/batch.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/types/describe.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/engine/rate_limiter.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <deque>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "fault_model.hpp"
#include "fault_server.hpp"

namespace fault_injection_test {

struct Ticket {
  std::string id;
  int n = 0;
};

struct Label {
  std::string label;
};

/// What the calls did, as their hooks saw it: when each started (pre) and ended (forward), and
/// how many times forward ran.
class ledger {
 public:
  void started(const std::string& id) {
    std::lock_guard lock(mutex_);
    calls_[id].start = std::chrono::steady_clock::now();
  }
  void forwarded(const std::string& id) {
    std::lock_guard lock(mutex_);
    auto& c = calls_[id];
    c.end = std::chrono::steady_clock::now();
    ++c.forwards;
  }
  struct call {
    std::chrono::steady_clock::time_point start{}, end{};
    int forwards = 0;
  };
  [[nodiscard]] std::map<std::string, call> calls() const {
    std::lock_guard lock(mutex_);
    return calls_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, call> calls_;
};

struct Classify {
  static constexpr std::string_view prompt = "Label the ticket: L followed by its id.";
  ledger* book = nullptr;
  void pre(const Ticket& t) const { book->started(t.id); }
  void post(const Label& l, const Ticket& t) const {
    if (l.label != "L" + t.id) throw covenant::violation("label", "must be L" + t.id);
  }
  std::string forward(const Ticket& t, const covenant::outcome<Label>&) const {
    book->forwarded(t.id);
    return t.id;
  }
};

}  // namespace fault_injection_test

template <>
struct covenant::describe<fault_injection_test::Label> {
  static constexpr auto fields = covenant::fields<fault_injection_test::Label>(
      covenant::field<&fault_injection_test::Label::label>("L followed by the ticket's id.", covenant::non_empty{}));
};

namespace {

using namespace std::chrono_literals;
using namespace fault_injection_test;
using covenant_test::dialect;
using covenant_test::fault;
using covenant_test::fault_client;
using covenant_test::fault_options;
using covenant_test::fault_server;
using ::testing::HasSubstr;

using contract_t = covenant::contract<Classify>;
using result_t = contract_t::call_result;

/// The record id a request is about (its first user message renders the ticket as JSON).
std::string id_of_key(const std::string& key) {
  static const std::regex id(R"re("id"\s*:\s*"([^"]+)")re");
  std::smatch m;
  return std::regex_search(key, m, id) ? m[1].str() : std::string();
}

/// The good answer for a request about ticket <id>: {"label": "L<id>"}.
std::string answer_for(const std::string& key) { return R"({"label": "L)" + id_of_key(key) + R"("})"; }

covenant::http_engine_options engine_options(const fault_server& server, const fault_client& c) {
  covenant::http_engine_options o;
  o.provider = c.dialect == dialect::anthropic ? covenant::provider::anthropic : covenant::provider::openai;
  o.base_url = server.base_url();
  o.model = "loopback";
  o.retry.tries = c.transport_tries;
  o.retry.delay = 5ms;
  o.retry.max_delay = c.transport_max_delay;
  o.connect_timeout = 2s;
  o.request_timeout = c.request_timeout;
  o.stream_idle_timeout = c.stream_idle_timeout;
  return o;
}

covenant::contract_options contract_options(const fault_client& c) {
  covenant::contract_options o;  // no injected sleep: remedy waits are the runtime's timers
  o.retry.tries = c.tries;
  o.retry.delay = c.remedy_delay;
  o.retry.jitter = 0;
  o.graceful = true;
  return o;
}

/// Ends the test program when the calls it watches have not all ended within `limit`: a hang
/// fails at once, with the test's name, instead of waiting for the test runner's timeout.
class watchdog {
 public:
  explicit watchdog(std::chrono::seconds limit) : thread_([this, limit] {
    std::unique_lock lock(mutex_);
    if (!done_cv_.wait_for(lock, limit, [this] { return done_; })) {
      const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
      std::fprintf(stderr, "\nHANG: %s.%s: the calls did not all end within %lld s\n", info->test_suite_name(),
                   info->name(), static_cast<long long>(limit.count()));
      std::fflush(stderr);
      std::_Exit(3);
    }
  }) {}
  ~watchdog() {
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    done_cv_.notify_all();
    thread_.join();
  }
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread thread_;
};

enum class path : std::uint8_t { blocking, async, stream, batch };

std::string_view to_string(path p) {
  switch (p) {
    case path::blocking: return "blocking";
    case path::async: return "async";
    case path::stream: return "stream";
    case path::batch: return "batch";
  }
  return "?";
}

/// Runs `tickets` through `c` with at most `concurrency` calls in flight; the results by id.
std::map<std::string, std::vector<result_t>> run_all(const contract_t& c, const std::vector<Ticket>& tickets,
                                                     path how, std::size_t concurrency) {
  const watchdog guard(std::chrono::seconds(60));
  std::mutex m;
  std::map<std::string, std::vector<result_t>> out;
  auto keep = [&](const std::string& id, result_t r) {
    std::lock_guard lock(m);
    out[id].push_back(std::move(r));
  };
  switch (how) {
    case path::blocking: {
      std::atomic<std::size_t> next{0};
      std::vector<std::thread> threads;
      for (std::size_t t = 0; t < concurrency; ++t)
        threads.emplace_back([&] {
          for (std::size_t i = next++; i < tickets.size(); i = next++) keep(tickets[i].id, c.run(tickets[i]));
        });
      for (auto& t : threads) t.join();
      break;
    }
    case path::async:
    case path::stream: {
      std::deque<std::pair<std::string, covenant::future<result_t>>> window;
      auto settle_one = [&] {
        auto [id, f] = std::move(window.front());
        window.pop_front();
        keep(id, f.get());
      };
      for (const Ticket& t : tickets) {
        if (window.size() >= concurrency) settle_one();
        window.emplace_back(t.id, how == path::async ? c.run_async(t)
                                                     : c.stream(t, [](const covenant::stream_update<Label>&) {}));
      }
      while (!window.empty()) settle_one();
      break;
    }
    case path::batch: {
      covenant::batch_options o;
      o.concurrency = concurrency;
      covenant::run_batch(c, tickets, [&](std::size_t i, result_t&& r) { keep(tickets[i].id, std::move(r)); }, o);
      break;
    }
  }
  return out;
}

std::vector<Ticket> tickets(std::size_t n, const std::string& prefix = "t") {
  std::vector<Ticket> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back({prefix + std::to_string(i), static_cast<int>(i)});
  return out;
}

/// Holds every call to what its served faults say: it ended exactly once, with the expected
/// outcome, after exactly the expected requests, and by the bound its faults and waits imply
/// (twice their time, plus `slack` for the load itself: a liveness check, not a timing target).
void check_every_call(const std::vector<Ticket>& in, const std::map<std::string, std::vector<result_t>>& results,
                      const ledger& book, const fault_server& server, const fault_client& client,
                      std::chrono::milliseconds slack) {
  std::map<std::string, std::vector<fault>> served;
  for (const auto& [key, faults] : server.served()) served[id_of_key(key)] = faults;
  const auto calls = book.calls();
  ASSERT_EQ(results.size(), in.size()) << "every call ends";
  for (const Ticket& t : in) {
    SCOPED_TRACE("ticket " + t.id);
    auto r = results.find(t.id);
    ASSERT_NE(r, results.end()) << "the call never ended";
    ASSERT_EQ(r->second.size(), 1u) << "the call ended more than once";
    const result_t& res = r->second.front();
    const auto call = calls.find(t.id);
    ASSERT_NE(call, calls.end());
    EXPECT_EQ(call->second.forwards, 1) << "forward runs exactly once";
    EXPECT_EQ(res.value, t.id);
    const std::vector<fault>& got = served[t.id];
    const covenant_test::fault_expectation want = covenant_test::expect_outcome(got, client);
    EXPECT_EQ(got.size(), want.requests) << "requests made for faults: " << want.why;
    EXPECT_EQ(res.outcome.success, want.ok) << want.why << "\n" << res.outcome.summary();
    if (res.outcome.success) {
      ASSERT_TRUE(res.outcome.result.has_value());
      EXPECT_EQ(res.outcome.result->label, "L" + t.id);
    } else {
      EXPECT_TRUE(want.stages.count(res.outcome.failed_stage) == 1)
          << "failed at " << covenant::to_string(res.outcome.failed_stage) << " after " << want.why;
      EXPECT_FALSE(res.outcome.issues.empty());
    }
    const auto took = call->second.end - call->second.start;
    EXPECT_LE(took, 2 * want.budget + slack)
        << "took " << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms after " << want.why;
  }
}

// ---------------------------------------------------------------------------------------------
// One call, nothing else in flight

using alone_param = std::tuple<dialect, fault, path, bool /* every time */>;

class FaultAlone : public ::testing::TestWithParam<alone_param> {};

TEST_P(FaultAlone, TheCallEndsWithWhatItsFaultsLeadTo) {
  const auto [d, f, how, every_time] = GetParam();
  if (covenant_test::stream_only(f) && how != path::stream) GTEST_SKIP() << "a stream-only fault";
  fault_client client;
  client.dialect = d;
  client.transport_tries = 2;
  client.tries = 1;
  client.request_timeout = 300ms;
  client.stream_idle_timeout = 150ms;
  client.remedy_delay = 10ms;
  fault_options fo;
  fo.dialect = d;
  fo.answer = answer_for;
  fo.script = every_time ? std::vector<fault>(8, f) : std::vector<fault>{f};
  fault_server server(fo);
  covenant::http_engine engine(engine_options(server, client));
  ledger book;
  const contract_t c{engine, contract_options(client), Classify{&book}};
  const std::vector<Ticket> in = tickets(1);
  const auto results = run_all(c, in, how, 1);
  check_every_call(in, results, book, server, client, 2s);
  // A server's Retry-After was really waited for: the retry came no sooner.
  if (!every_time && (f == fault::rate_limited || f == fault::rate_limited_ms)) {
    ASSERT_GE(server.requests(), 2u);
    EXPECT_GE(server.server().request(1).at - server.server().request(0).at, 20ms);
  }
  // A fault every time that the engine retries spends the transport budget, and says so.
  const result_t& r = results.begin()->second.front();
  const auto want = covenant_test::expect_outcome(server.served(server.served().begin()->first), client);
  if (every_time && !want.ok && want.stages.count(covenant::stage::engine) == 1 && want.requests == 3u) {
    EXPECT_THAT(r.outcome.summary(), HasSubstr("gave up after 3 attempts"));
  }
}

std::string alone_name(const ::testing::TestParamInfo<alone_param>& p) {
  const auto [d, f, how, every_time] = p.param;
  return std::string(covenant_test::to_string(d)) + "_" + std::string(covenant_test::to_string(f)) + "_" +
         std::string(to_string(how)) + (every_time ? "_every_time" : "_once");
}

std::vector<fault> faults_but_none() {
  std::vector<fault> out;
  for (fault f : covenant_test::all_faults())
    if (f != fault::none) out.push_back(f);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Faults, FaultAlone,
                         ::testing::Combine(::testing::Values(dialect::openai, dialect::anthropic),
                                            ::testing::ValuesIn(faults_but_none()),
                                            ::testing::Values(path::blocking, path::async, path::stream),
                                            ::testing::Bool()),
                         alone_name);

class RefusedAlone : public ::testing::TestWithParam<std::tuple<dialect, path>> {};

TEST_P(RefusedAlone, ARefusedConnectionIsRetriedThenTheCallFailsAtTheEngine) {
  const auto [d, how] = GetParam();
  covenant::http_engine_options o;
  o.provider = d == dialect::anthropic ? covenant::provider::anthropic : covenant::provider::openai;
  o.base_url = "http://127.0.0.1:" + std::to_string(covenant_test::refused_port()) + (d == dialect::openai ? "/v1" : "");
  o.retry.tries = 2;
  o.retry.delay = 20ms;
  std::atomic<int> retries{0};
  o.on_retry = [&](const covenant::transport_retry& r) {
    ++retries;
    EXPECT_EQ(r.status, 0);
    EXPECT_THAT(r.reason, HasSubstr("connection failed"));
  };
  covenant::http_engine engine(o);
  ledger book;
  fault_client client;
  client.tries = 1;
  const contract_t c{engine, contract_options(client), Classify{&book}};
  const std::vector<Ticket> in = tickets(1);
  const auto results = run_all(c, in, how, 1);
  ASSERT_EQ(results.size(), 1u);
  const result_t& r = results.begin()->second.front();
  EXPECT_FALSE(r.outcome.success);
  EXPECT_EQ(r.outcome.failed_stage, covenant::stage::engine);
  EXPECT_THAT(r.outcome.summary(), HasSubstr("gave up after 3 attempts"));
  EXPECT_EQ(retries.load(), 2);
  EXPECT_EQ(book.calls().at("t0").forwards, 1);
}

INSTANTIATE_TEST_SUITE_P(Refused, RefusedAlone,
                         ::testing::Combine(::testing::Values(dialect::openai, dialect::anthropic),
                                            ::testing::Values(path::blocking, path::async, path::stream)),
                         [](const ::testing::TestParamInfo<std::tuple<dialect, path>>& p) {
                           return std::string(covenant_test::to_string(std::get<0>(p.param))) + "_" +
                                  std::string(to_string(std::get<1>(p.param)));
                         });

// ---------------------------------------------------------------------------------------------
// Each other waiting state, alone

struct wait_setup {
  fault_client client;
  fault_options server;
  wait_setup() {
    client.transport_tries = 2;
    client.tries = 1;
    client.request_timeout = 2s;
    server.answer = answer_for;
    server.fault_rate = 0;  // only what the script says
  }
};

TEST(WaitAlone, ARateLimiterBackOffAfterA429EndsByItself) {
  wait_setup s;
  s.server.script = {fault::rate_limited};
  s.server.retry_after = "0.05";
  fault_server server(s.server);
  covenant::http_engine engine(engine_options(server, s.client));
  ledger book;
  const contract_t c{engine, contract_options(s.client), Classify{&book}};
  const watchdog guard(std::chrono::seconds(30));
  auto limits = std::make_shared<covenant::rate_limiter>(covenant::rate_limiter_options{.requests_per_minute = 6000});
  covenant::call_options o;
  o.limiter = limits;
  for (const bool async : {false, true}) {
    const Ticket t{async ? "async" : "blocking", 1};
    const result_t r = async ? c.run_async(t, o).get() : c.run(t, o);
    EXPECT_TRUE(r.outcome.success) << r.outcome.summary();
  }
  EXPECT_EQ(limits->stats().back_offs, 2u);
  EXPECT_EQ(server.requests(), 4u);
}

// The remedy delay with nothing injected: a runtime timer for run_async(), the calling thread's
// sleep for run(). Each call is alone: one server, one engine, one call.
TEST(WaitAlone, TheRemedyDelayIsARealWaitForABlockingAndAnAsynchronousCall) {
  for (const bool async : {false, true}) {
    SCOPED_TRACE(async ? "run_async" : "run");
    wait_setup s;
    s.client.remedy_delay = 50ms;
    s.server.dialect = dialect::openai;
    std::atomic<int> asked{0};
    s.server.answer = [&](const std::string& key) {
      return asked++ == 0 ? std::string(R"({"label": "wrong"})") : answer_for(key);
    };
    fault_server server(s.server);
    covenant::http_engine engine(engine_options(server, s.client));
    ledger book;
    const contract_t c{engine, contract_options(s.client), Classify{&book}};
    const watchdog guard(std::chrono::seconds(30));
    const result_t r = async ? c.run_async(Ticket{"t1", 1}).get() : c.run(Ticket{"t1", 1});
    EXPECT_TRUE(r.outcome.success) << r.outcome.summary();
    ASSERT_EQ(server.requests(), 2u);
    EXPECT_GE(server.server().request(1).at - server.server().request(0).at, 50ms);
  }
}

TEST(WaitAlone, AHeldRequestTimesOutAfterAShorterConnectTimeoutWasArmed) {
  // The connect timeout is libcurl's first deadline and the request timeout its next: the I/O
  // loop's timer, armed for the first, must still be there for the second.
  wait_setup s;
  s.server.script = {fault::hold};
  fault_server server(s.server);
  covenant::http_engine_options o = engine_options(server, s.client);
  o.connect_timeout = 50ms;
  o.request_timeout = 300ms;
  o.retry.tries = 0;
  covenant::http_engine engine(o);
  ledger book;
  const contract_t c{engine, contract_options(s.client), Classify{&book}};
  const watchdog guard(std::chrono::seconds(30));
  const result_t r = c.run(Ticket{"t1", 1});
  EXPECT_FALSE(r.outcome.success);
  EXPECT_EQ(r.outcome.failed_stage, covenant::stage::engine);
  EXPECT_THAT(r.outcome.summary(), HasSubstr("timed out"));
}

TEST(WaitAlone, CancellingDuringARetryWaitEndsTheCallAtOnce) {
  wait_setup s;
  s.client.transport_max_delay = 30s;
  s.server.script = {fault::rate_limited, fault::rate_limited, fault::rate_limited};
  s.server.retry_after = "20";  // a long wait: only the stop can end it soon
  fault_server server(s.server);
  covenant::http_engine engine(engine_options(server, s.client));
  ledger book;
  const contract_t c{engine, contract_options(s.client), Classify{&book}};
  const watchdog guard(std::chrono::seconds(30));
  for (const bool async : {false, true}) {
    std::stop_source stop;
    covenant::call_options o;
    o.stop = stop.get_token();
    const std::size_t before = server.requests();
    std::thread stopper([&] {
      server.server().wait_for_requests(before + 1, 10s);
      std::this_thread::sleep_for(50ms);  // into the retry's wait
      stop.request_stop();
    });
    const auto t0 = std::chrono::steady_clock::now();
    const result_t r = async ? c.run_async(Ticket{"a", 1}, o).get() : c.run(Ticket{"b", 2}, o);
    stopper.join();
    EXPECT_FALSE(r.outcome.success);
    EXPECT_EQ(r.outcome.failed_stage, covenant::stage::cancelled);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);  // not the 20 s the server asked for
    EXPECT_EQ(server.requests(), before + 1);
  }
}

TEST(WaitAlone, ADeadlineDuringARetryWaitEndsTheCall) {
  wait_setup s;
  s.client.transport_max_delay = 30s;
  s.server.script = {fault::rate_limited, fault::rate_limited};
  s.server.retry_after = "20";
  fault_server server(s.server);
  covenant::http_engine engine(engine_options(server, s.client));
  ledger book;
  const contract_t c{engine, contract_options(s.client), Classify{&book}};
  const watchdog guard(std::chrono::seconds(30));
  for (const bool async : {false, true}) {
    covenant::call_options o;
    o.timeout = 200ms;
    const auto t0 = std::chrono::steady_clock::now();
    const result_t r = async ? c.run_async(Ticket{"a", 1}, o).get() : c.run(Ticket{"b", 2}, o);
    EXPECT_FALSE(r.outcome.success);
    EXPECT_EQ(r.outcome.failed_stage, covenant::stage::deadline);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  }
}

// ---------------------------------------------------------------------------------------------
// Seeded random faults under load

using load_param = std::tuple<path, dialect, std::size_t /* concurrency */>;

class FaultLoad : public ::testing::TestWithParam<load_param> {};

TEST_P(FaultLoad, EveryCallEndsOnceWithItsOutcomeAndNoFaultStallsTheOthers) {
  const auto [how, d, concurrency] = GetParam();
  fault_client client;
  client.dialect = d;
  client.transport_tries = 2;
  client.tries = 1;
  client.remedy_delay = 10ms;
  client.request_timeout = concurrency >= 100 ? 1500ms : concurrency > 1 ? 600ms : 300ms;
  client.stream_idle_timeout = client.request_timeout / 2;
  fault_options fo;
  fo.seed = 1000 + static_cast<std::uint64_t>(how) * 100 + static_cast<std::uint64_t>(d) * 10 + concurrency;
  fo.dialect = d;
  fo.answer = answer_for;
  fo.fault_rate = concurrency >= 100 ? 0.3 : 0.5;
  fault_server server(fo);
  covenant::http_engine engine(engine_options(server, client));
  ledger book;
  const contract_t c{engine, contract_options(client), Classify{&book}};
  const std::size_t n = concurrency >= 100 ? 2 * concurrency : concurrency > 1 ? 6 * concurrency : 24;
  const std::vector<Ticket> in = tickets(n);
  const auto results = run_all(c, in, how, concurrency);
  check_every_call(in, results, book, server, client, concurrency >= 100 ? 5s : 2s);
  // The seed drew faults of many kinds, and some calls failed while others did not.
  EXPECT_GE(server.counts().size(), 5u);
}

INSTANTIATE_TEST_SUITE_P(Load, FaultLoad,
                         ::testing::Combine(::testing::Values(path::blocking, path::async, path::stream, path::batch),
                                            ::testing::Values(dialect::openai, dialect::anthropic),
                                            ::testing::Values(std::size_t{1}, std::size_t{8}, std::size_t{200})),
                         [](const ::testing::TestParamInfo<load_param>& p) {
                           return std::string(to_string(std::get<0>(p.param))) + "_" +
                                  std::string(covenant_test::to_string(std::get<1>(p.param))) + "_c" +
                                  std::to_string(std::get<2>(p.param));
                         });

}  // namespace
