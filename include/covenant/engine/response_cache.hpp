// covenant/engine/response_cache.hpp - answer a request seen before from a local cache.
//
// For development loops, evaluations and re-runs: the same request (its messages with their tool
// calls and tool results, output mode, schema, tools and sampling options, in a scope naming the
// model and endpoint; the cassette's normalised request, covenant/engine/cassette.hpp) is answered
// from an SQLite file instead of the server, and costs nothing. Remedy attempts are requests like
// the first ones, so a re-run of a fixed prompt replays the whole conversation, and so does an
// agent's conversation whose tools give the same results. A stored reply keeps its text, its tool
// calls (with their ids), reasoning, model, finish reason and mode; a streamed call answered from
// the cache gets each tool call's arguments as one piece (on_tool_text), then the text as one.
//
//     covenant::http_engine server{options};
//     covenant::cached_engine model{{.path = "cache/responses.sqlite", .scope = "openai gpt-4o-mini"}, server};
//     covenant::contract<Ask> ask{model};   // a repeated question never reaches the server
//
// Many processes may share one file at once (SQLite in WAL mode). A cache that cannot be opened,
// is corrupted or stays locked never fails a call: the call goes to the inner engine, and the
// problem is logged as a warning. Only whole replies are stored: never an error, a reply cut off,
// or one a stop request ended.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stop_token>
#include <string>

#include "covenant/engine/engine.hpp"
#include "covenant/types/config.hpp"

namespace covenant {

struct response_cache_options {
  /// The SQLite file (its directory is created when missing).
  std::filesystem::path path{};
  /// What decides a reply besides the request: provider, endpoint, model, reasoning settings.
  /// Requests of different scopes never share an entry. Required: a cache without one would
  /// answer for another model.
  std::string scope{};
  /// Entries older than this are misses (and dropped); 0: no limit.
  std::chrono::milliseconds max_age{0};
  /// The file's size at most, in bytes (0: no limit): past it, the oldest entries are dropped.
  std::uint64_t max_bytes = 0;
  /// How long a lookup or a write waits for another process's lock before it gives up (a miss,
  /// or a reply not stored).
  std::chrono::milliseconds busy_timeout{2000};
};

/// What a cached_engine did so far.
struct response_cache_stats {
  std::uint64_t hits = 0;     ///< requests answered from the cache
  std::uint64_t misses = 0;   ///< requests sent to the inner engine
  std::uint64_t stored = 0;   ///< replies written to the cache
  std::uint64_t errors = 0;   ///< cache failures (each one a miss or a reply not stored)
};

/// An engine that answers from a response cache, and asks `inner` (storing its reply) otherwise.
/// A reply from the cache has chat_response::from_cache set and a usage of 0: it cost nothing.
class COVENANT_API cached_engine final : public engine {
 public:
  /// `inner` must outlive this engine. Throws std::invalid_argument for an empty scope or path;
  /// never for the cache file itself (see above).
  cached_engine(response_cache_options options, engine& inner);
  ~cached_engine() override;
  cached_engine(const cached_engine&) = delete;
  cached_engine& operator=(const cached_engine&) = delete;

  chat_response complete(const chat_request& request) override;
  void start(const chat_request& request, std::shared_ptr<reply_receiver> receiver, std::stop_token stop) override;
  [[nodiscard]] engine_capabilities capabilities() const noexcept override;
  /// The inner engine's.
  [[nodiscard]] const covenant::media_limits* accepted_media() const noexcept override { return inner_->accepted_media(); }
  /// The engine behind the cache's.
  [[nodiscard]] const covenant::engine_info* info() const noexcept override { return inner_->info(); }

  [[nodiscard]] response_cache_stats stats() const noexcept;
  [[nodiscard]] const response_cache_options& options() const noexcept;

  struct state;

 private:
  std::shared_ptr<state> state_;
  engine* inner_;
};

}  // namespace covenant
