// An engine that replies with the same text every time, instantly (blocking and asynchronous
// calls alike): what is measured is covenant's own work around the model call.
#pragma once

#include <covenant/engine/engine.hpp>

#include <memory>
#include <stop_token>
#include <string>
#include <utility>

namespace bench {

class instant_engine : public covenant::engine {
 public:
  explicit instant_engine(std::string reply) : reply_(std::move(reply)) {}
  ~instant_engine() override { close(); }
  covenant::chat_response complete(const covenant::chat_request&) override {
    covenant::chat_response r;
    r.text = reply_;
    r.usage = {512, 128};
    return r;
  }
  void start(const covenant::chat_request& request, std::shared_ptr<covenant::reply_receiver> receiver,
             std::stop_token) override {
    receiver->on_reply(complete(request));
  }
  [[nodiscard]] covenant::engine_capabilities capabilities() const noexcept override { return {true, false}; }

 private:
  std::string reply_;
};

}  // namespace bench
