// covenant/engine.hpp - what a contract needs from a model: one chat completion.
//
// An engine turns a conversation into the model's reply text. Transport failures (HTTP 429/5xx,
// timeouts) are the engine's business: it retries them itself (honouring Retry-After) and throws
// covenant::engine_error when it gives up. A contract never shows such a failure to the model as
// "your output was wrong".
#pragma once

#include <boost/json/value.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace covenant {

enum class role : std::uint8_t { system, user, assistant };

/// "system", "user", "assistant"
std::string_view to_string(role r) noexcept;

struct message {
  covenant::role role = covenant::role::user;
  std::string content;

  friend bool operator==(const message&, const message&) = default;
};

/// Tokens reported by the engine.
struct usage {
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;

  [[nodiscard]] std::uint64_t total() const noexcept { return input_tokens + output_tokens; }
  usage& operator+=(const usage& o) noexcept {
    input_tokens += o.input_tokens;
    output_tokens += o.output_tokens;
    return *this;
  }
  friend usage operator+(usage a, const usage& b) noexcept { return a += b; }
  friend bool operator==(const usage&, const usage&) = default;
};

struct chat_request {
  std::vector<message> messages;
  /// JSON Schema of the expected reply (OpenAI strict form) for engines with structured outputs;
  /// null when the reply is not JSON-constrained. Shared, built once per contract.
  std::shared_ptr<const boost::json::value> response_schema;
  /// Name of the expected type (for structured-output APIs).
  std::string schema_name;
  std::optional<double> temperature;
  std::optional<std::uint32_t> max_tokens;
};

struct chat_response {
  std::string text;
  covenant::usage usage;
  std::string model;
  std::string finish_reason;  ///< "stop", "length" (cut off by the token limit), ...
};

/// The engine could not produce a reply (after its own transport retries).
class engine_error : public std::runtime_error {
 public:
  explicit engine_error(const std::string& what, int status = 0, bool retryable = false)
      : std::runtime_error(what), status_(status), retryable_(retryable) {}
  /// HTTP status when there was one, else 0.
  [[nodiscard]] int status() const noexcept { return status_; }
  /// Whether the failure was transient (it was retried until the engine's budget ran out).
  [[nodiscard]] bool retryable() const noexcept { return retryable_; }

 private:
  int status_;
  bool retryable_;
};

/// A chat model. Implementations must be safe to call from several threads at once.
class engine {
 public:
  virtual ~engine() = default;
  /// The model's reply to the conversation. Throws engine_error on failure.
  virtual chat_response complete(const chat_request& request) = 0;
};

}  // namespace covenant
