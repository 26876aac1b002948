// A reply_receiver for engine tests: records what an engine reports for one asynchronous call, in
// order (text pieces, tool-argument pieces), and its end (the reply or the error).
#pragma once

#include <gtest/gtest.h>

#include <covenant/engine/engine.hpp>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace covenant_test {

class reply_collector final : public covenant::reply_receiver {
 public:
  /// One piece of a streamed reply, in the order it came.
  struct event {
    enum kind_type { tool_text, text } kind;
    std::size_t index = 0;  ///< tool_text: the call's place among the reply's tool calls
    std::string name;       ///< tool_text: the tool's name, with the call's first piece
    std::string delta;
  };
  using piece = std::tuple<std::size_t, std::string, std::string>;  // index, name, delta

  /// The call's stop source (pass stop.get_token() to the engine).
  std::stop_source stop;
  /// Ask for the stop at the first tool piece.
  bool stop_at_first_tool_piece = false;

  void on_text(std::string_view delta) noexcept override {
    std::lock_guard lock(mutex_);
    events_.push_back({event::text, 0, {}, std::string(delta)});
  }
  void on_tool_text(std::size_t index, std::string_view name, std::string_view delta) noexcept override {
    {
      std::lock_guard lock(mutex_);
      events_.push_back({event::tool_text, index, std::string(name), std::string(delta)});
    }
    if (stop_at_first_tool_piece) stop.request_stop();
  }
  void on_reply(covenant::chat_response r) noexcept override { set(std::move(r)); }
  void on_error(const covenant::engine_error& e) noexcept override { set(e); }

  /// Waits for the end of the call; whether it came within `timeout`.
  bool wait(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, timeout, [this] { return result_.has_value(); });
  }
  /// Whether the call ended with a reply.
  bool ok() {
    std::lock_guard lock(mutex_);
    return result_ && std::holds_alternative<covenant::chat_response>(*result_);
  }
  /// Waits for the end of the call; the reply (a failed test, and an empty reply, when there is none).
  covenant::chat_response reply() {
    if (!wait()) {
      ADD_FAILURE() << "no reply within 10 s";
      return {};
    }
    std::lock_guard lock(mutex_);
    if (const auto* e = std::get_if<covenant::engine_error>(&*result_)) {
      ADD_FAILURE() << e->what();
      return {};
    }
    return std::get<covenant::chat_response>(*result_);
  }
  /// The error the call ended with (call after wait(), when !ok()).
  covenant::engine_error error() {
    std::lock_guard lock(mutex_);
    return std::get<covenant::engine_error>(*result_);
  }
  std::vector<event> events() {
    std::lock_guard lock(mutex_);
    return events_;
  }
  /// The text pieces alone.
  std::vector<std::string> texts() {
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const event& e : events_)
      if (e.kind == event::text) out.push_back(e.delta);
    return out;
  }
  /// The text pieces together.
  std::string joined() {
    std::string out;
    for (const std::string& t : texts()) out += t;
    return out;
  }
  /// The tool pieces alone.
  std::vector<piece> pieces() {
    std::lock_guard lock(mutex_);
    std::vector<piece> out;
    for (const event& e : events_)
      if (e.kind == event::tool_text) out.emplace_back(e.index, e.name, e.delta);
    return out;
  }

 private:
  template <class V>
  void set(V&& v) {
    {
      std::lock_guard lock(mutex_);
      if (!result_) result_.emplace(std::forward<V>(v));
    }
    cv_.notify_all();
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<event> events_;
  std::optional<std::variant<covenant::chat_response, covenant::engine_error>> result_;
};

}  // namespace covenant_test
