// What a call must end with, given the faults the fault server served it (fault_server.hpp), and
// how long it may take: the rules of the HTTP engine's transport retries and the contract's remedy
// loop, written as a small model the fault-injection tests hold every call to.
#pragma once

#include <covenant/contract/outcome.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include "fault_server.hpp"

namespace covenant_test {

/// The client's settings the model needs.
struct fault_client {
  covenant_test::dialect dialect = covenant_test::dialect::openai;
  int transport_tries = 2;  ///< the engine's transport retries per model call (http_engine_options::retry.tries)
  int tries = 1;        ///< the contract's remedy attempts
  std::chrono::milliseconds request_timeout{1000};
  std::chrono::milliseconds stream_idle_timeout{500};
  std::chrono::milliseconds transport_max_delay{100};  ///< http_engine_options::retry.max_delay
  std::chrono::milliseconds trickle{200};  ///< the longest a trickled answer takes
  std::chrono::milliseconds remedy_delay{0};  ///< the longest wait before a remedy attempt
};

/// What one call must end with.
struct fault_expectation {
  bool ok = false;
  std::set<covenant::stage> stages{};  ///< the failed stages allowed (empty when ok)
  std::size_t requests = 0;            ///< requests the call makes
  std::chrono::milliseconds budget{0};  ///< the time its faults and waits account for
  std::string why{};                    ///< how the model got there (for failure messages)
};

/// The outcome the served faults lead to. `served` is what the server recorded for the call; the
/// call must have made exactly `requests` of them.
inline fault_expectation expect_outcome(const std::vector<fault>& served, const fault_client& c) {
  fault_expectation e;
  std::size_t i = 0;
  auto next = [&]() -> fault {
    const fault f = i < served.size() ? served[i] : fault::none;
    ++i;
    e.why += std::string(to_string(f)) + " ";
    return f;
  };
  for (int attempt = 0;; ++attempt) {
    // One model call: the engine's exchanges until one answers, fails for good, or the budget ends.
    enum class ended { reply, unreadable, failed } how = ended::failed;
    for (int r = 0; r <= c.transport_tries; ++r) {
      const fault f = next();
      if (f == fault::close_reused) {  // libcurl sent it again on a new connection: the same exchange
        --r;
        continue;
      }
      bool retry = false;
      switch (f) {
        case fault::none: how = ended::reply; break;
        case fault::trickle: how = ended::reply; e.budget += c.trickle; break;
        case fault::not_json: how = ended::failed; break;
        case fault::empty_choices:
          // OpenAI: a completion without choices is not a reply; Anthropic: an empty message is an
          // (empty) reply, which the contract asks again for.
          how = c.dialect == dialect::anthropic ? ended::unreadable : ended::failed;
          break;
        case fault::stream_cut: how = ended::unreadable; break;  // what arrived is handed over, cut off
        case fault::stream_stall:  // the idle timeout ends it; what arrived is handed over, cut off
          how = ended::unreadable;
          e.budget += c.stream_idle_timeout;
          break;
        case fault::hold:
        case fault::stream_comments: e.budget += c.request_timeout; retry = true; break;
        default: retry = true; break;  // 429s, 5xx, a closed connection, a cut body
      }
      if (!retry) break;
      if (r == c.transport_tries) {
        how = ended::failed;
        break;
      }
      e.budget += c.transport_max_delay;
    }
    if (how == ended::reply) {
      e.ok = true;
      break;
    }
    if (how == ended::failed) {
      e.stages = {covenant::stage::engine};
      break;
    }
    if (attempt == c.tries) {  // the last remedy attempt was unreadable too
      e.stages = {covenant::stage::parse, covenant::stage::validate};
      break;
    }
    e.budget += c.remedy_delay;
  }
  e.requests = i;
  return e;
}

}  // namespace covenant_test
