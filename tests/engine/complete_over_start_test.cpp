// engine::complete() over start(): an engine that only starts calls serves blocking ones, and what
// it reports from its own thread comes back from complete() whole: the message, the HTTP status,
// whether it was retryable or a cancellation, the time queued and the transport retries.
#include <covenant/engine/engine.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>

namespace {

using namespace std::chrono_literals;

/// Reports `error` from a thread of its own for every call.
struct failing_engine final : covenant::engine {
  explicit failing_engine(covenant::engine_error e) : error(std::move(e)) {}
  ~failing_engine() override {
    if (worker.joinable()) worker.join();
    close();
  }
  void start(const covenant::chat_request&, std::shared_ptr<covenant::reply_receiver> receiver,
             std::stop_token) override {
    if (worker.joinable()) worker.join();
    worker = std::thread([receiver, e = error] { receiver->on_error(e); });
  }
  covenant::engine_error error;
  std::thread worker;
};

covenant::engine_error caught(covenant::engine& model) {
  try {
    (void)model.complete(covenant::chat_request{});
  } catch (const covenant::engine_error& e) {
    return e;
  }
  ADD_FAILURE() << "complete() returned";
  return covenant::engine_error("no error");
}

TEST(CompleteOverStart, AnEngineErrorComesBackWithEverythingItSaid) {
  covenant::engine_error sent("http_engine: POST /chat/completions failed (HTTP 503: busy)", 503, true);
  sent.set_queued(7ms);
  covenant::transport_retry r;
  r.retry = 1;
  r.tries = 2;
  r.wait = 250ms;
  r.status = 503;
  r.reason = "HTTP 503: busy";
  sent.set_retries({r});
  failing_engine model{sent};
  for (int k = 0; k < 3; ++k) {  // each call gets its own copy: the first caught does not change the next
    const covenant::engine_error got = caught(model);
    EXPECT_STREQ(got.what(), sent.what());
    EXPECT_EQ(got.status(), 503);
    EXPECT_TRUE(got.retryable());
    EXPECT_FALSE(got.cancelled());
    EXPECT_EQ(got.queued(), 7ms);
    ASSERT_EQ(got.retries().size(), 1u);
    EXPECT_EQ(got.retries()[0].status, 503);
    EXPECT_EQ(got.retries()[0].wait, 250ms);
    EXPECT_EQ(got.retries()[0].reason, "HTTP 503: busy");
  }
}

TEST(CompleteOverStart, ACancellationComesBackAsACancellation) {
  failing_engine model{covenant::engine_error::cancellation("stopped by the caller")};
  const covenant::engine_error got = caught(model);
  EXPECT_TRUE(got.cancelled());
  EXPECT_FALSE(got.retryable());
  EXPECT_STREQ(got.what(), "stopped by the caller");
}

}  // namespace
