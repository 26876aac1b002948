// covenant/testing.hpp - unit-test contracted code without a model.
//
//     covenant::testing::scripted_engine model{
//         R"({"answer": "x", "confidence": 1.7, "sources": ["a"]})",   // first reply: rejected
//         R"({"answer": "x", "confidence": 0.7, "sources": ["a"]})"};  // second reply: accepted
//     covenant::contract<MyExpression> c{model, covenant::testing::instant()};
//     auto [value, outcome] = c.run(input);
//     EXPECT_EQ(model.calls(), 2u);
//     EXPECT_THAT(model.request(1).messages.back().content, HasSubstr("confidence: must be <= 1 (got 1.7)"));
//
// Everything here is thread-safe. GoogleTest matchers live in covenant/gtest.hpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/contract.hpp"
#include "covenant/engine.hpp"

namespace covenant::testing {

/// One scripted step: a reply (with optional usage / finish reason) or an engine failure.
struct step {
  std::string text;
  covenant::usage usage{};
  std::string finish_reason = "stop";
  bool fail = false;       ///< throw engine_error instead of replying
  int status = 0;          ///< HTTP-like status of the failure
  step(std::string t) : text(std::move(t)) {}  // NOLINT(google-explicit-constructor)
  step(const char* t) : text(t) {}             // NOLINT(google-explicit-constructor)
  step(std::string t, covenant::usage u, std::string finish = "stop")
      : text(std::move(t)), usage(u), finish_reason(std::move(finish)) {}
  /// An engine failure with this message (and status).
  static step failure(std::string message, int status = 503) {
    step s(std::move(message));
    s.fail = true;
    s.status = status;
    return s;
  }
};

/// An engine that replies from a script (or a function) and records every request.
class scripted_engine : public engine {
 public:
  using responder = std::function<chat_response(const chat_request&, std::size_t call_index)>;

  scripted_engine() = default;
  scripted_engine(std::initializer_list<step> steps) : steps_(steps) {}
  explicit scripted_engine(std::vector<step> steps) : steps_(std::move(steps)) {}
  /// Replies computed by `fn` from the request and the 0-based call index.
  explicit scripted_engine(responder fn) : responder_(std::move(fn)) {}

  /// Appends a reply to the script.
  scripted_engine& then(step s);

  /// The next scripted reply. Throws engine_error when the script is exhausted.
  chat_response complete(const chat_request& request) override;

  /// Number of requests received.
  [[nodiscard]] std::size_t calls() const;
  /// Copy of the i-th request (0-based). Throws std::out_of_range.
  [[nodiscard]] chat_request request(std::size_t i) const;
  /// Copies of every request.
  [[nodiscard]] std::vector<chat_request> requests() const;
  /// Content of the last message of the i-th request (the newest user turn).
  [[nodiscard]] std::string last_message(std::size_t i) const;
  /// Forget recorded requests and rewind the script.
  void reset();

 private:
  mutable std::mutex mutex_;
  std::vector<step> steps_;
  responder responder_;
  std::vector<chat_request> requests_;
  std::size_t next_ = 0;
};

/// Records requested sleeps instead of sleeping.
class fake_sleeper {
 public:
  void operator()(std::chrono::nanoseconds d);
  [[nodiscard]] std::vector<std::chrono::nanoseconds> sleeps() const;
  [[nodiscard]] std::chrono::nanoseconds total() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::chrono::nanoseconds> sleeps_;
};

/// A clock that only moves when told to (each reading can also advance it by a fixed step).
class manual_clock {
 public:
  explicit manual_clock(std::chrono::nanoseconds step = std::chrono::nanoseconds(0)) : step_(step) {}
  std::chrono::steady_clock::time_point operator()();
  void advance(std::chrono::nanoseconds d);

 private:
  std::mutex mutex_;
  std::chrono::steady_clock::time_point now_{};
  std::chrono::nanoseconds step_;
};

/// A deterministic uniform [0, 1) source, safe to share between threads.
class seeded_random {
 public:
  explicit seeded_random(std::uint64_t seed) : gen_(seed) {}
  double operator()();

 private:
  std::mutex mutex_;
  std::mt19937_64 gen_;
};

/// Captures what the library's "covenant" logger writes (debug level and up, one line each as
/// `[level] message`) while it is alive, then restores the logger's level. Captures from any
/// thread; create one at a time.
class log_capture {
 public:
  log_capture();
  ~log_capture();
  log_capture(const log_capture&) = delete;
  log_capture& operator=(const log_capture&) = delete;
  /// Everything written so far.
  [[nodiscard]] std::string text() const;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

/// Contract options for tests: the given retry policy, no real sleeping (waits are recorded in
/// `sleeper` when given), seeded jitter.
contract_options instant(retry_policy retry = {}, fake_sleeper* sleeper = nullptr, std::uint64_t seed = 42);

}  // namespace covenant::testing
