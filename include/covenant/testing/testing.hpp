// covenant/testing/testing.hpp - unit-test contracted code without a model.
//
//     covenant::testing::scripted_engine model{
//         R"({"answer": "x", "confidence": 1.7, "sources": ["a"]})",   // first reply: rejected
//         R"({"answer": "x", "confidence": 0.7, "sources": ["a"]})"};  // second reply: accepted
//     covenant::contract<MyExpression> c{model, covenant::testing::instant()};
//     auto [value, outcome] = c.run(input);
//     EXPECT_EQ(model.calls(), 2u);
//     EXPECT_THAT(model.request(1).messages.back().content, HasSubstr("confidence: must be <= 1 (got 1.7)"));
//
// A step can call tools instead of answering (agents, docs/agents.md): the reply carries the calls
// in chat_response::tool_calls, and the next step answers once the tools' results are sent back.
//
//     covenant::testing::scripted_engine model{
//         covenant::testing::step::calls({{.id = "", .name = "get_weather", .arguments = R"({"city": "Oslo"})"}}),
//         R"({"forecast": "rain", "celsius": 4})"};   // the answer, after the tool's result
//     // The first reply's call gets the id "call_0_0"; the second request ends with the tool's
//     // result: model.request(1).messages.back() is a role::tool message with tool_call_id "call_0_0".
//
// Everything here is thread-safe. GoogleTest matchers live in covenant/testing/gtest.hpp.
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

#include "covenant/contract/contract.hpp"
#include "covenant/engine/engine.hpp"
#include "covenant/engine/runtime.hpp"

namespace covenant::testing {

/// One scripted step: a reply (with optional usage / finish reason), a reply that calls tools, or
/// an engine failure.
struct step {
  std::string text;
  covenant::usage usage{};
  std::string finish_reason = "stop";
  bool fail = false;       ///< throw engine_error instead of replying
  int status = 0;          ///< HTTP-like status of the failure
  /// The tool calls of the reply (chat_response::tool_calls). A call without an id gets
  /// "call_<call index>_<k>" (the 0-based index of the engine call, and of the call in the reply).
  std::vector<tool_call> tool_calls{};
  step(std::string t) : text(std::move(t)) {}  // NOLINT(google-explicit-constructor)
  step(const char* t) : text(t) {}             // NOLINT(google-explicit-constructor)
  step(std::string t, covenant::usage u, std::string finish = "stop")
      : text(std::move(t)), usage(u), finish_reason(std::move(finish)) {}
  /// A reply that calls tools instead of answering: no text, finish reason "tool_calls".
  static step calls(std::vector<tool_call> calls, covenant::usage u = {}) {
    step s(std::string(), u, "tool_calls");
    s.tool_calls = std::move(calls);
    return s;
  }
  /// An engine failure with this message (and status).
  static step failure(std::string message, int status = 503) {
    step s(std::move(message));
    s.fail = true;
    s.status = status;
    return s;
  }
};

/// An engine that replies from a script (or a function) and records every request.
///
/// Asynchronous calls (start()) get their reply the same way. A request that asks to stream
/// (contract::stream) gets the reply text in pieces of stream_in_chunks() bytes (default: the
/// whole text as one piece), delivered on the runtime's workers, `delay` apart (a timer, no
/// sleeping thread); a stop request between pieces ends the reply with a cancellation, and
/// streamed_bytes() tells how much of it was delivered. A reply with tool calls streams each call's
/// arguments first, call after call, in pieces of the same size through on_tool_text(k, name,
/// piece) (the name with the first piece of call k; a call with empty arguments gets one empty
/// piece), then its text. Destroying the engine ends the streams it is still delivering with a
/// cancellation. A responder's reply is delivered as it returns it (tool calls included, their
/// ids untouched).
class COVENANT_API scripted_engine : public engine {
 public:
  using responder = std::function<chat_response(const chat_request&, std::size_t call_index)>;

  scripted_engine();
  scripted_engine(std::initializer_list<step> steps);
  explicit scripted_engine(std::vector<step> steps);
  /// Replies computed by `fn` from the request and the 0-based call index.
  explicit scripted_engine(responder fn);
  ~scripted_engine() override;

  /// Appends a reply to the script.
  scripted_engine& then(step s);
  /// Streamed replies arrive in pieces of `bytes` bytes (0: the whole text at once), `delay`
  /// apart. Pieces may split a UTF-8 character, as network reads do.
  scripted_engine& stream_in_chunks(std::size_t bytes, std::chrono::milliseconds delay = std::chrono::milliseconds(0));
  /// The runtime whose timers and workers deliver streamed pieces (default runtime::shared()).
  scripted_engine& use_runtime(covenant::runtime& rt);

  /// The next scripted reply. Throws engine_error when the script is exhausted.
  chat_response complete(const chat_request& request) override;
  /// The next scripted reply, delivered to `receiver` (streamed in pieces when asked to).
  void start(const chat_request& request, std::shared_ptr<reply_receiver> receiver, std::stop_token stop) override;
  [[nodiscard]] engine_capabilities capabilities() const noexcept override { return {true, true}; }

  /// Bytes of the i-th call's reply text delivered before it ended (the whole text unless a
  /// stream was stopped; 0 for a failure; tool calls' arguments not counted). Throws
  /// std::out_of_range.
  [[nodiscard]] std::size_t streamed_bytes(std::size_t i) const;
  /// Whether the i-th call's stream was ended by its stop request: the engine saw the stop and
  /// sent nothing more (false while it is still sending, and for a stream that ran to its end).
  /// Throws std::out_of_range.
  [[nodiscard]] bool stopped(std::size_t i) const;

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

  struct stream_state;

 private:
  chat_response next_reply(const chat_request& request, std::size_t& index);

  mutable std::mutex mutex_;
  std::vector<step> steps_;
  responder responder_;
  std::vector<chat_request> requests_;
  std::size_t next_ = 0;
  std::size_t chunk_bytes_ = 0;
  std::chrono::milliseconds chunk_delay_{0};
  covenant::runtime* runtime_ = nullptr;
  std::shared_ptr<stream_state> streams_;
};

/// Records requested sleeps instead of sleeping.
class COVENANT_API fake_sleeper {
 public:
  void operator()(std::chrono::nanoseconds d);
  [[nodiscard]] std::vector<std::chrono::nanoseconds> sleeps() const;
  [[nodiscard]] std::chrono::nanoseconds total() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::chrono::nanoseconds> sleeps_;
};

/// A clock that only moves when told to (each reading can also advance it by a fixed step).
class COVENANT_API manual_clock {
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
class COVENANT_API seeded_random {
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
class COVENANT_API log_capture {
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

/// Contract options for tests: the given retry options, no real sleeping (waits are recorded in
/// `sleeper` when given), seeded jitter.
COVENANT_API contract_options instant(retry_options retry = {}, fake_sleeper* sleeper = nullptr,
                                      std::uint64_t seed = 42);

}  // namespace covenant::testing
