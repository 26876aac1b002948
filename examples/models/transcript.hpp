// An engine that passes every call on to another and keeps the requests, so that an example can
// show the conversation it had (examples/demo.cpp, examples/receipt.cpp).
#pragma once

#include <covenant/engine/engine.hpp>

#include <cstddef>
#include <memory>
#include <mutex>
#include <stop_token>
#include <vector>

namespace examples {

class transcript final : public covenant::engine {
 public:
  explicit transcript(covenant::engine& inner) : inner_(&inner) {}
  ~transcript() override { close(); }
  covenant::chat_response complete(const covenant::chat_request& r) override {
    keep(r);
    return inner_->complete(r);
  }
  void start(const covenant::chat_request& r, std::shared_ptr<covenant::reply_receiver> receiver,
             std::stop_token stop) override {
    keep(r);
    inner_->start(r, std::move(receiver), std::move(stop));
  }
  [[nodiscard]] covenant::engine_capabilities capabilities() const noexcept override { return inner_->capabilities(); }
  [[nodiscard]] const covenant::media_limits* accepted_media() const noexcept override {
    return inner_->accepted_media();
  }
  [[nodiscard]] covenant::chat_request request(std::size_t i) const {
    std::lock_guard lock(mutex_);
    return requests_.at(i);
  }

 private:
  void keep(const covenant::chat_request& r) {
    std::lock_guard lock(mutex_);
    requests_.push_back(r);
  }
  covenant::engine* inner_;
  mutable std::mutex mutex_;
  std::vector<covenant::chat_request> requests_;
};

}  // namespace examples
