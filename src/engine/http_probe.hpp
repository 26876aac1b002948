// Internal: the HTTP engine's health probe, one GET exchange on the engine's own multi loop
// (http_transport.hpp). http_engine::probe() fills a probe_request from the engine's settings and
// its wire dialect; run_probe() runs it and reads the answer.
#pragma once

#include <curl/curl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "covenant/engine/http_engine.hpp"
#include "curl_handles.hpp"
#include "http_transport.hpp"

namespace covenant::detail {

struct probe_request {
  std::shared_ptr<multi_loop> loop;  ///< the engine's loop: its strand, pool and connections
  std::string url;                   ///< the real URL (the dialect's probe_url)
  std::string shown_url;             ///< the URL as messages show it (no user-info, no query)
  curl_header_list headers;          ///< the request's header lines, the dialect's auth headers included
  std::chrono::milliseconds timeout{0};          ///< the whole exchange; positive
  std::chrono::milliseconds connect_timeout{0};  ///< TCP and TLS; positive
  std::string secret;                ///< redacted from every message (the API key)
  /// Sets the engine's own connection options on an easy handle (protocols, proxy, CA file, user
  /// agent, HTTP version, no redirects): the function the engine's exchanges use.
  std::function<void(CURL*)> configure;
};

/// Runs `r` on its loop and waits for the answer (never on the loop's own thread: the caller
/// checks). Never throws but std::bad_alloc.
probe_result run_probe(probe_request r);

}  // namespace covenant::detail
