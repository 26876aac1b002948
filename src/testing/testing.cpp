#include "covenant/testing/testing.hpp"

#include <spdlog/sinks/ostream_sink.h>

#include "engine/log.hpp"

#include <algorithm>
#include <sstream>

#include <memory>
#include <stdexcept>

namespace covenant::testing {

/// Shared with the streams an engine is delivering: bytes delivered per call, and whether the
/// engine is still there.
struct scripted_engine::stream_state {
  std::mutex mutex;
  std::vector<std::size_t> delivered;  // per call index
  std::vector<char> stopped;           // per call index: the stream saw its stop request
  bool open = true;
};

scripted_engine::scripted_engine() : streams_(std::make_shared<stream_state>()) {}
scripted_engine::scripted_engine(std::initializer_list<step> steps)
    : steps_(steps), streams_(std::make_shared<stream_state>()) {}
scripted_engine::scripted_engine(std::vector<step> steps)
    : steps_(std::move(steps)), streams_(std::make_shared<stream_state>()) {}
scripted_engine::scripted_engine(responder fn)
    : responder_(std::move(fn)), streams_(std::make_shared<stream_state>()) {}

scripted_engine::~scripted_engine() {
  {
    std::lock_guard lock(streams_->mutex);
    streams_->open = false;
  }
  close();
}

scripted_engine& scripted_engine::then(step s) {
  std::lock_guard lock(mutex_);
  steps_.push_back(std::move(s));
  return *this;
}

scripted_engine& scripted_engine::stream_in_chunks(std::size_t bytes, std::chrono::milliseconds delay) {
  std::lock_guard lock(mutex_);
  chunk_bytes_ = bytes;
  chunk_delay_ = delay;
  return *this;
}

scripted_engine& scripted_engine::use_runtime(covenant::runtime& rt) {
  std::lock_guard lock(mutex_);
  runtime_ = &rt;
  return *this;
}

chat_response scripted_engine::complete(const chat_request& request) {
  std::size_t index = 0;
  return next_reply(request, index);
}

chat_response scripted_engine::next_reply(const chat_request& request, std::size_t& index) {
  step s("");
  responder fn;
  {
    std::lock_guard lock(mutex_);
    index = requests_.size();
    requests_.push_back(request);
    if (responder_) {
      fn = responder_;
    } else {
      if (next_ >= steps_.size())
        throw engine_error("scripted_engine: no reply left for call " + std::to_string(index + 1), 0, false);
      s = steps_[next_++];
    }
  }
  {
    std::lock_guard lock(streams_->mutex);
    if (streams_->delivered.size() <= index) streams_->delivered.resize(index + 1, 0);
    if (streams_->stopped.size() <= index) streams_->stopped.resize(index + 1, 0);
  }
  chat_response r;
  if (fn) {
    r = fn(request, index);
  } else {
    if (s.fail) throw engine_error(s.text, s.status, s.status == 429 || s.status >= 500);
    r.text = std::move(s.text);
    r.tool_calls = std::move(s.tool_calls);
    for (std::size_t k = 0; k < r.tool_calls.size(); ++k)
      if (r.tool_calls[k].id.empty()) r.tool_calls[k].id = "call_" + std::to_string(index) + "_" + std::to_string(k);
    r.usage = s.usage;
    r.finish_reason = s.finish_reason;
    r.model = "scripted";
  }
  std::lock_guard lock(streams_->mutex);
  streams_->delivered[index] = r.text.size();
  return r;
}

namespace {

/// One streamed reply being delivered piece by piece: the arguments of its tool calls, call after
/// call, then its text.
struct stream_job : std::enable_shared_from_this<stream_job> {
  std::shared_ptr<scripted_engine::stream_state> streams;
  std::shared_ptr<reply_receiver> receiver;
  std::stop_token stop;
  chat_response reply;
  std::size_t index = 0;
  std::size_t chunk = 0;
  std::chrono::nanoseconds delay{0};
  std::size_t tool = 0;     // the tool call being delivered
  std::size_t tool_at = 0;  // bytes of its arguments delivered
  std::size_t at = 0;       // bytes of the text delivered
  covenant::runtime* rt = nullptr;

  [[nodiscard]] bool done() const noexcept { return tool >= reply.tool_calls.size() && at >= reply.text.size(); }

  /// The next piece of `s` from `from`: `chunk` bytes, or the rest when chunk is 0.
  [[nodiscard]] std::size_t piece(const std::string& s, std::size_t from) const noexcept {
    return chunk == 0 ? s.size() - from : std::min(chunk, s.size() - from);
  }

  /// Delivers the next piece of a tool call's arguments (the call's name with its first piece).
  void next_tool_piece() {
    const tool_call& call = reply.tool_calls[tool];
    const std::size_t n = piece(call.arguments, tool_at);
    receiver->on_tool_text(tool, tool_at == 0 ? std::string_view(call.name) : std::string_view(),
                           std::string_view(call.arguments).substr(tool_at, n));
    tool_at += n;
    if (tool_at >= call.arguments.size()) {
      ++tool;
      tool_at = 0;
    }
  }

  void next() {
    bool open = true;
    {
      std::lock_guard lock(streams->mutex);
      open = streams->open;
    }
    if (!open) return receiver->on_error(engine_error::cancellation("the engine was destroyed"));
    if (stop.stop_requested()) {
      {
        std::lock_guard lock(streams->mutex);
        streams->stopped[index] = 1;
      }
      return receiver->on_error(engine_error::cancellation());
    }
    if (done()) return receiver->on_reply(std::move(reply));
    if (tool < reply.tool_calls.size()) {
      next_tool_piece();
    } else {
      const std::size_t n = piece(reply.text, at);
      receiver->on_text(std::string_view(reply.text).substr(at, n));
      at += n;
      std::lock_guard lock(streams->mutex);
      streams->delivered[index] = at;
    }
    auto self = shared_from_this();
    if (done()) {
      rt->post([self] { self->next(); });
      return;
    }
    rt->schedule(delay, [self] { self->next(); });
  }
};

}  // namespace

void scripted_engine::start(const chat_request& request, std::shared_ptr<reply_receiver> receiver,
                            std::stop_token stop) {
  std::size_t index = 0;
  chat_response reply;
  try {
    reply = next_reply(request, index);
  } catch (const engine_error& e) {
    return receiver->on_error(e);
  } catch (const std::exception& e) {
    return receiver->on_error(engine_error(std::string("scripted_engine: the responder threw: ") + e.what()));
  }
  if (!request.stream) return receiver->on_reply(std::move(reply));
  auto job = std::make_shared<stream_job>();
  job->streams = streams_;
  job->receiver = std::move(receiver);
  job->stop = std::move(stop);
  job->reply = std::move(reply);
  job->index = index;
  {
    std::lock_guard lock(mutex_);
    job->chunk = chunk_bytes_;
    job->delay = chunk_delay_;
    job->rt = runtime_ != nullptr ? runtime_ : &covenant::runtime::shared();
  }
  {
    std::lock_guard lock(streams_->mutex);
    streams_->delivered[index] = 0;
  }
  job->rt->post([job] { job->next(); });
}

std::size_t scripted_engine::streamed_bytes(std::size_t i) const {
  std::lock_guard lock(streams_->mutex);
  return streams_->delivered.at(i);
}

bool scripted_engine::stopped(std::size_t i) const {
  std::lock_guard lock(streams_->mutex);
  return streams_->stopped.at(i) != 0;
}

std::size_t scripted_engine::calls() const {
  std::lock_guard lock(mutex_);
  return requests_.size();
}

chat_request scripted_engine::request(std::size_t i) const {
  std::lock_guard lock(mutex_);
  return requests_.at(i);
}

std::vector<chat_request> scripted_engine::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::string scripted_engine::last_message(std::size_t i) const {
  std::lock_guard lock(mutex_);
  const auto& m = requests_.at(i).messages;
  return m.empty() ? std::string() : m.back().content;
}

void scripted_engine::reset() {
  std::lock_guard lock(mutex_);
  requests_.clear();
  next_ = 0;
  std::lock_guard streams_lock(streams_->mutex);
  streams_->delivered.clear();
  streams_->stopped.clear();
}

void fake_sleeper::operator()(std::chrono::nanoseconds d) {
  std::lock_guard lock(mutex_);
  sleeps_.push_back(d);
}

std::vector<std::chrono::nanoseconds> fake_sleeper::sleeps() const {
  std::lock_guard lock(mutex_);
  return sleeps_;
}

std::chrono::nanoseconds fake_sleeper::total() const {
  std::lock_guard lock(mutex_);
  std::chrono::nanoseconds t{0};
  for (auto d : sleeps_) t += d;
  return t;
}

std::chrono::steady_clock::time_point manual_clock::operator()() {
  std::lock_guard lock(mutex_);
  const auto t = now_;
  now_ += step_;
  return t;
}

void manual_clock::advance(std::chrono::nanoseconds d) {
  std::lock_guard lock(mutex_);
  now_ += d;
}

double seeded_random::operator()() {
  std::lock_guard lock(mutex_);
  return std::uniform_real_distribution<double>(0.0, 1.0)(gen_);
}

contract_options instant(retry_options retry, fake_sleeper* sleeper, std::uint64_t seed) {
  contract_options o;
  o.retry = retry;
  if (sleeper != nullptr) o.sleep = [sleeper](std::chrono::nanoseconds d) { (*sleeper)(d); };
  else o.sleep = [](std::chrono::nanoseconds) {};
  auto rng = std::make_shared<seeded_random>(seed);
  o.random = [rng] { return (*rng)(); };
  return o;
}

struct log_capture::state {
  std::ostringstream out;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  spdlog::level::level_enum old_level = spdlog::level::info;
};

log_capture::log_capture() : state_(std::make_unique<state>()) {
  state_->sink->set_pattern("[%l] %v");
  spdlog::logger& logger = detail::log();
  state_->old_level = logger.level();
  logger.sinks().push_back(state_->sink);
  logger.set_level(spdlog::level::debug);
}

log_capture::~log_capture() {
  spdlog::logger& logger = detail::log();
  auto& sinks = logger.sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), state_->sink), sinks.end());
  logger.set_level(state_->old_level);
}

std::string log_capture::text() const {
  state_->sink->flush();
  return state_->out.str();
}

}  // namespace covenant::testing
