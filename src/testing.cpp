#include "covenant/testing.hpp"

#include <spdlog/sinks/ostream_sink.h>

#include <algorithm>
#include <sstream>

#include <memory>
#include <stdexcept>

namespace covenant::testing {

scripted_engine& scripted_engine::then(step s) {
  std::lock_guard lock(mutex_);
  steps_.push_back(std::move(s));
  return *this;
}

chat_response scripted_engine::complete(const chat_request& request) {
  std::size_t index = 0;
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
  if (fn) return fn(request, index);
  if (s.fail) throw engine_error(s.text, s.status, s.status == 429 || s.status >= 500);
  chat_response r;
  r.text = std::move(s.text);
  r.usage = s.usage;
  r.finish_reason = s.finish_reason;
  r.model = "scripted";
  return r;
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

contract_options instant(retry_policy retry, fake_sleeper* sleeper, std::uint64_t seed) {
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
