// One contract object called from many threads at once: every call gets its own outcome.
// Also built with ThreadSanitizer (target covenant_tsan_tests) in the clang test tree.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace threads_test {

struct Ticket {
  std::string id;
  int attempts_wanted = 1;
};

struct Echo {
  std::string id;
  double score = 0;
};

// post rejects a low score; forward returns the echoed id, or "failed:<id>".
struct EchoBack {
  static constexpr std::string_view prompt = "Echo the ticket id.";
  void post(const Echo& e, const Ticket& t) const {
    if (e.id != t.id) throw covenant::violation("id", "must echo the ticket id " + t.id);
    if (e.score < 0.5) throw covenant::violation("score", "must be at least 0.5");
  }
  std::string forward(const Ticket& t, const covenant::outcome<Echo>& o) const {
    return o.success ? o.result->id : "failed:" + t.id;
  }
};

}  // namespace threads_test

template <>
struct covenant::describe<threads_test::Echo> {
  static constexpr auto fields = covenant::fields<threads_test::Echo>(
      covenant::field<&threads_test::Echo::score>("Score.", covenant::range{0.0, 1.0}));
};

namespace {

using namespace threads_test;

// Replies with a low score until the conversation holds `attempts_wanted` user turns, reading the
// ticket from the request itself (the engine keeps no per-call state either).
covenant::chat_response reply(const covenant::chat_request& req, std::size_t) {
  const std::string& input = req.messages.at(1).content;
  const auto start = input.find("\"id\":\"") + 6;
  const std::string id = input.substr(start, input.find('"', start) - start);
  const auto wanted_at = input.find("\"attempts_wanted\":") + 18;
  const int wanted = std::stoi(input.substr(wanted_at));
  // The attempt number travels in the previous reply (an unknown field, ignored by the decoder).
  int attempt = 1;
  if (req.messages.size() > 2) {
    const std::string& previous = req.messages.at(2).content;
    attempt = std::stoi(previous.substr(previous.find("\"n\": ") + 5)) + 1;
  }
  covenant::chat_response r;
  r.text = R"({"id": ")" + id + R"(", "score": )" + (attempt >= wanted ? "0.9" : "0.1") +
           ", \"n\": " + std::to_string(attempt) + "}";
  r.usage = {10, 1};
  return r;
}

TEST(ContractThreads, ConcurrentCallsKeepTheirOwnOutcomes) {
  covenant::testing::scripted_engine model{covenant::testing::scripted_engine::responder(reply)};
  const covenant::contract<EchoBack> c{model, covenant::testing::instant({.tries = 2})};
  constexpr int threads = 8;
  constexpr int calls = 60;
  std::atomic<int> mismatches{0};
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) (void)c.stats().table();
  });
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int i = 0; i < calls; ++i) {
        const Ticket ticket{"t" + std::to_string(t) + "-" + std::to_string(i), 1 + (i % 4)};
        auto r = c.run(ticket);
        const bool should_succeed = ticket.attempts_wanted <= 3;  // 1 + tries
        const std::string expected = should_succeed ? ticket.id : "failed:" + ticket.id;
        const std::size_t expected_calls = should_succeed ? static_cast<std::size_t>(ticket.attempts_wanted) : 3u;
        if (r.value != expected || r.outcome.attempts.size() != expected_calls ||
            r.outcome.usage.input_tokens != 10 * expected_calls)
          ++mismatches;
      }
    });
  }
  for (auto& th : pool) th.join();
  done = true;
  reader.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(c.stats().of(covenant::perf_stage::total).count, static_cast<std::uint64_t>(threads * calls));
}

}  // namespace
