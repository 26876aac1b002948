// The HTTP engine's options for a loopback server: no transport retries, a short timeout.
#pragma once

#include <covenant/engine/http_engine.hpp>

#include <chrono>
#include <string>

#include "loopback_server.hpp"

namespace covenant_test {

/// OpenAI's dialect at the server's /v1, or Anthropic's at its root (the engine adds /v1/messages).
inline covenant::http_engine_options loopback_engine_options(const loopback_server& s, covenant::provider provider,
                                                             std::string model) {
  covenant::http_engine_options o;
  o.provider = provider;
  o.base_url = provider == covenant::provider::anthropic ? "http://127.0.0.1:" + std::to_string(s.port()) : s.base_url();
  o.api_key = "sk-test";
  o.model = std::move(model);
  o.retry.tries = 0;
  o.request_timeout = std::chrono::seconds(5);
  return o;
}

}  // namespace covenant_test
