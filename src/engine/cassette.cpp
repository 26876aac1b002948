// cassette_engine: records another engine's replies as JSON Lines and replays them (the format and
// the matching rules are documented in include/covenant/engine/cassette.hpp). The request key is
// request_key.cpp, redaction redaction.cpp, the file cassette_read.cpp and cassette_write.cpp, the
// messages cassette_describe.cpp.
#include "covenant/engine/cassette.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <utility>

#include "cassette_impl.hpp"
#include "log.hpp"

namespace covenant {

using namespace cassette_impl;

std::string_view to_string(cassette_mode m) noexcept {
  switch (m) {
    case cassette_mode::record: return "record";
    case cassette_mode::replay: return "replay";
    case cassette_mode::new_episodes: return "new_episodes";
  }
  return "replay";
}

std::optional<cassette_mode> parse_cassette_mode(std::string_view name) noexcept {
  if (name == "record") return cassette_mode::record;
  if (name == "replay") return cassette_mode::replay;
  if (name == "new_episodes" || name == "new-episodes") return cassette_mode::new_episodes;
  return std::nullopt;
}

namespace {

using clock_type = std::chrono::steady_clock;

std::int64_t ms_since(clock_type::time_point start) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start).count();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The recordings: found by key, each answering one call
// ---------------------------------------------------------------------------------------------

void cassette_engine::state::add(interaction it) {
  const std::size_t index = items.size();
  by_key[it.key].push_back(index);
  items.push_back(std::move(it));
}

cassette_engine::state::lookup cassette_engine::state::find(const normal_request& req, const std::string& key) {
  std::lock_guard lock(mutex);
  const std::size_t asked = ++asks[key];
  const bool replaying = options.mode == cassette_mode::replay;
  if (auto it = by_key.find(key); it != by_key.end()) {
    for (std::size_t index : it->second) {
      interaction& candidate = items[index];
      if (candidate.used) continue;
      candidate.used = true;
      return {&candidate, {}};
    }
    if (!replaying) return {};
    std::string where;
    for (std::size_t index : it->second) where += (where.empty() ? "" : ", ") + std::to_string(items[index].line);
    const std::size_t n = it->second.size();
    return {nullptr, "cassette_engine: " + options.path + ": this request was recorded " + std::to_string(n) +
                         (n == 1 ? " time" : " times") + " (line" + (n == 1 ? " " : "s ") + where + ") and asked " +
                         std::to_string(asked) + " times; every recording answers one call (" +
                         describe_request(req) + ")"};
  }
  if (!replaying) return {};
  std::string message = "cassette_engine: " + options.path + ": no recorded interaction matches this request (" +
                        describe_request(req) + ")";
  if (items.empty()) return {nullptr, message + "; the cassette has no interactions"};
  const interaction* closest = nullptr;
  std::size_t best_prefix = 0;
  std::size_t best_gap = 0;
  for (const auto& candidate : items) {
    const std::size_t prefix = common_prefix(candidate.key, key);
    const std::size_t gap = candidate.key.size() > key.size() ? candidate.key.size() - key.size() : key.size() - candidate.key.size();
    if (closest == nullptr || prefix > best_prefix || (prefix == best_prefix && gap < best_gap)) {
      closest = &candidate;
      best_prefix = prefix;
      best_gap = gap;
    }
  }
  return {nullptr, message + "; closest recording: line " + std::to_string(closest->line) + " (" +
                       describe_request(closest->request) + "): " + describe_difference(closest->request, req)};
}

namespace {

engine_error replayed_error(const interaction& it) {
  if (it.cancelled) return engine_error::cancellation(it.error_message);
  return engine_error(it.error_message, it.status, it.retryable);
}

/// Replays one recording to a receiver, from the calling thread.
void deliver(const interaction& it, bool stream, reply_receiver& receiver, const std::stop_token& stop) {
  if (stream) {
    auto piece = [&](const chunk& c) {
      if (stop.stop_requested()) return false;
      if (c.tool) receiver.on_tool_text(*c.tool, c.name, c.text);
      else receiver.on_text(c.text);
      return true;
    };
    if (it.streamed) {
      for (const auto& c : it.chunks)
        if (!piece(c)) return receiver.on_error(engine_error::cancellation());
    } else if (!it.failed) {
      // A whole recording: each tool call's arguments as one piece, then the text as one.
      for (std::size_t k = 0; k < it.response.tool_calls.size(); ++k) {
        const tool_call& call = it.response.tool_calls[k];
        if (!piece(chunk{call.arguments, std::nullopt, k, call.name}))
          return receiver.on_error(engine_error::cancellation());
      }
      if (!it.response.text.empty() && !piece(chunk{it.response.text, std::nullopt}))
        return receiver.on_error(engine_error::cancellation());
    }
  }
  if (stop.stop_requested()) return receiver.on_error(engine_error::cancellation());
  if (it.failed) return receiver.on_error(replayed_error(it));
  receiver.on_reply(it.response);
}

/// Forwards an inner engine's reply to the caller's receiver and records it. A stop request
/// records the call at once, as the caller left it (a cancellation with the text it kept), before
/// the caller goes on: the lines of a conversation come in its order, whenever the inner engine
/// acknowledges the stop.
class recording_receiver final : public reply_receiver, public std::enable_shared_from_this<recording_receiver> {
 public:
  recording_receiver(std::shared_ptr<cassette_engine::state> st, std::shared_ptr<reply_receiver> down,
                     normal_request request, std::string key, bool stream, std::stop_token stop)
      : state_(std::move(st)), down_(std::move(down)), stop_(std::move(stop)), start_(clock_type::now()) {
    it_.request = std::move(request);
    it_.key = std::move(key);
    it_.streamed = stream;
  }

  /// Watches the call's stop token (after construction: the callback holds a weak reference).
  void watch() {
    std::weak_ptr<recording_receiver> self = weak_from_this();
    on_stop_.emplace(stop_, [self] {
      if (auto r = self.lock()) r->stopped();
    });
  }

  void on_text(std::string_view delta) noexcept override {
    keep_chunk(chunk{std::string(), std::nullopt}, delta);
    down_->on_text(delta);
  }

  void on_tool_text(std::size_t index, std::string_view name, std::string_view delta) noexcept override {
    keep_chunk(chunk{std::string(), std::nullopt, index, std::string(name)}, delta);
    down_->on_tool_text(index, name, delta);
  }

  void on_reply(chat_response response) noexcept override {
    {
      std::lock_guard lock(mutex_);
      if (!recorded_) {
        try {
          it_.response = response;
          if (state_->options.record_timing) it_.ms = ms_since(start_);
          finish();
        } catch (const std::exception& e) {
          return down_->on_error(failure(e.what()));
        }
      }
    }
    down_->on_reply(std::move(response));
  }

  void on_error(const engine_error& error) noexcept override {
    // A cancellation nobody asked for (the inner engine was destroyed) is no part of the
    // conversation; one the caller asked for was recorded when it asked (stopped()).
    if (!error.cancelled()) {
      std::lock_guard lock(mutex_);
      if (!recorded_) {
        try {
          it_.failed = true;
          it_.error_message = error.what();
          it_.status = error.status();
          it_.retryable = error.retryable();
          if (state_->options.record_timing) it_.ms = ms_since(start_);
          finish();
        } catch (const std::exception& e) {
          log_failure(e.what());
        }
      }
    }
    down_->on_error(error);
  }

 private:
  void keep_chunk(chunk c, std::string_view delta) noexcept {
    if (!it_.streamed) return;
    std::lock_guard lock(mutex_);
    if (recorded_) return;
    try {
      c.text = std::string(delta);
      if (state_->options.record_timing) c.ms = ms_since(start_);
      it_.chunks.push_back(std::move(c));
    } catch (...) {
      broken_ = true;
    }
  }

  /// The caller stopped the call: recorded now as a cancellation, with the text the caller kept
  /// (an early stop keeps the reply up to the byte that decided it; reply_receiver::text_kept).
  void stopped() noexcept {
    std::lock_guard lock(mutex_);
    if (recorded_) return;
    try {
      keep_text(down_->text_kept());
      it_.failed = true;
      it_.error_message = "cancelled";
      it_.cancelled = true;
      if (state_->options.record_timing) it_.ms = ms_since(start_);
      finish();
    } catch (const std::exception& e) {
      log_failure(e.what());
    }
  }

  /// Only the first `n` bytes of the text are part of the conversation: the text chunks after
  /// them go, the one across the cut is shortened (tool-argument chunks stay).
  void keep_text(std::size_t n) {
    if (n == std::string_view::npos) return;
    std::vector<chunk> kept;
    kept.reserve(it_.chunks.size());
    std::size_t seen = 0;
    for (chunk& c : it_.chunks) {
      if (c.tool) {
        kept.push_back(std::move(c));
        continue;
      }
      if (seen >= n) continue;
      if (c.text.size() > n - seen) c.text.resize(n - seen);
      seen += c.text.size();
      kept.push_back(std::move(c));
    }
    it_.chunks = std::move(kept);
  }

  // (mutex_ held)
  void finish() {
    recorded_ = true;
    if (broken_) throw std::runtime_error("out of memory keeping the streamed text");
    state_->record(std::move(it_));
  }

  engine_error failure(const char* why) const {
    log_failure(why);
    return engine_error("cassette_engine: could not record the interaction in " + state_->options.path + ": " + why);
  }

  void log_failure(const char* why) const {
    detail::log_error("cassette_engine: could not record an interaction in {}: {}", state_->options.path, why);
  }

  std::shared_ptr<cassette_engine::state> state_;
  std::shared_ptr<reply_receiver> down_;
  std::stop_token stop_;
  clock_type::time_point start_;
  std::mutex mutex_;  // the engine's calls and the caller's stop request
  interaction it_;
  bool recorded_ = false;
  bool broken_ = false;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;  // last: it goes first
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// cassette_engine
// ---------------------------------------------------------------------------------------------

cassette_engine::cassette_engine(cassette_options options, engine& inner)
    : cassette_engine(std::move(options), std::shared_ptr<engine>(&inner, [](engine*) {})) {}

cassette_engine::cassette_engine(cassette_options options) : cassette_engine(std::move(options), nullptr) {}

cassette_engine::cassette_engine(cassette_options options, std::shared_ptr<engine> inner)
    : state_(std::make_shared<state>()), owned_(std::move(inner)), inner_(owned_.get()) {
  if (inner_ == this) throw std::invalid_argument("cassette_engine: the inner engine cannot be the cassette itself");
  if (options.path.empty()) throw std::invalid_argument("cassette_engine: cassette_options::path is empty");
  if (options.mode != cassette_mode::replay && inner_ == nullptr)
    throw std::invalid_argument("cassette_engine: " + options.path + ": mode " + std::string(to_string(options.mode)) +
                                " needs an inner engine to call (only replay works without one)");
  state_->secrets = prepare_secrets(options.redact);
  state_->options = std::move(options);
  state& st = *state_;
  switch (st.options.mode) {
    case cassette_mode::replay: {
      bool newline = true;
      st.load(true, newline);
      break;
    }
    case cassette_mode::record:
      st.open_for_writing("wb");
      st.write_header();
      break;
    case cassette_mode::new_episodes: {
      bool newline = true;
      if (st.load(false, newline)) {
        st.open_for_writing("ab");
        if (!newline && std::fputc('\n', st.out) == EOF)
          st.fail_open("cannot write to the cassette: " + std::string(std::strerror(errno)));
      } else {
        st.open_for_writing("wb");
        st.write_header();
      }
      break;
    }
  }
}

cassette_engine::~cassette_engine() { close(); }

chat_response cassette_engine::complete(const chat_request& request) {
  state& st = *state_;
  normal_request req = normalize(request, st.secrets);
  std::string key = key_of(req);
  if (st.options.mode != cassette_mode::record) {
    auto found = st.find(req, key);
    if (found.hit != nullptr) {
      if (found.hit->failed) throw replayed_error(*found.hit);
      return found.hit->response;
    }
    if (st.options.mode == cassette_mode::replay) throw engine_error(found.error);
  }
  interaction it;
  it.request = std::move(req);
  it.key = std::move(key);
  const auto start = clock_type::now();
  try {
    it.response = inner_->complete(request);
  } catch (const engine_error& e) {
    if (e.cancelled()) throw;  // the inner engine was stopped or destroyed: not part of the conversation
    it.failed = true;
    it.error_message = e.what();
    it.status = e.status();
    it.retryable = e.retryable();
    if (st.options.record_timing) it.ms = ms_since(start);
    try {
      st.record(std::move(it));
    } catch (const std::exception& w) {
      throw engine_error("cassette_engine: could not record the interaction in " + st.options.path + ": " + w.what());
    }
    throw;
  }
  if (st.options.record_timing) it.ms = ms_since(start);
  chat_response reply = it.response;
  try {
    st.record(std::move(it));
  } catch (const std::exception& w) {
    throw engine_error("cassette_engine: could not record the interaction in " + st.options.path + ": " + w.what());
  }
  return reply;
}

void cassette_engine::start(const chat_request& request, std::shared_ptr<reply_receiver> receiver, std::stop_token stop) {
  if (stop.stop_requested()) return receiver->on_error(engine_error::cancellation());
  state& st = *state_;
  std::shared_ptr<reply_receiver> recorder;
  try {
    normal_request req = normalize(request, st.secrets);
    std::string key = key_of(req);
    if (st.options.mode != cassette_mode::record) {
      auto found = st.find(req, key);
      if (found.hit != nullptr) return deliver(*found.hit, request.stream, *receiver, stop);
      if (st.options.mode == cassette_mode::replay) return receiver->on_error(engine_error(found.error));
    }
    auto r = std::make_shared<recording_receiver>(state_, receiver, std::move(req), std::move(key), request.stream, stop);
    r->watch();
    recorder = std::move(r);
  } catch (const std::exception& e) {
    return receiver->on_error(engine_error(std::string("cassette_engine: ") + e.what()));
  }
  inner_->start(request, std::move(recorder), std::move(stop));
}

engine_capabilities cassette_engine::capabilities() const noexcept {
  if (state_->options.mode == cassette_mode::replay || inner_ == nullptr) return {true, true};
  return inner_->capabilities();
}

std::size_t cassette_engine::interactions() const {
  std::lock_guard lock(state_->mutex);
  return state_->items.size();
}

std::size_t cassette_engine::used() const {
  std::lock_guard lock(state_->mutex);
  return static_cast<std::size_t>(
      std::count_if(state_->items.begin(), state_->items.end(), [](const interaction& it) { return it.used; }));
}

std::vector<std::string> cassette_engine::unused() const {
  std::lock_guard lock(state_->mutex);
  std::vector<std::string> out;
  for (const auto& it : state_->items)
    if (!it.used) out.push_back(describe_interaction(it));
  return out;
}

const std::string& cassette_engine::path() const noexcept { return state_->options.path; }

cassette_mode cassette_engine::mode() const noexcept { return state_->options.mode; }

std::string cassette_engine::normalized(const chat_request& request, const std::vector<std::string>& redact) {
  return request_key(request, prepare_secrets(redact));
}

}  // namespace covenant
