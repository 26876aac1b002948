// covenant::rate_limiter: bursts, refill waits, back-offs, token estimates corrected by usage,
// cancellation, on a manual clock (what is granted is decided by the clock, not by how fast the
// test runs); and each wake-up timer once on the real clock.
#include <covenant/engine/engine.hpp>
#include <covenant/engine/rate_limiter.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using ::testing::UnorderedElementsAre;
using ::testing::UnorderedElementsAreArray;

/// The callbacks of granted requests, which run on the runtime's workers: each records its
/// number, and a test waits until a number of them ran.
class grants {
 public:
  /// The callback for request `n`.
  std::function<void()> go(int n) const {
    return [s = state_, n] {
      std::lock_guard lock(s->mutex);
      s->ran.push_back(n);
      s->changed.notify_all();
    };
  }
  /// The requests whose callback ran, once at least `n` did (or after 5 s, so that a test that
  /// fails does not hang; the callbacks are already granted when a test waits for them).
  std::vector<int> ran(std::size_t n) const {
    std::unique_lock lock(state_->mutex);
    state_->changed.wait_for(lock, 5s, [&] { return state_->ran.size() >= n; });
    return state_->ran;
  }

 private:
  struct state {
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<int> ran;
  };
  std::shared_ptr<state> state_ = std::make_shared<state>();
};

/// Limiters on a manual clock that starts at its epoch and moves only when the test says (or on
/// the real clock, when a test does not ask for the manual one).
class RateLimiter : public ::testing::Test {
 protected:
  covenant::rate_limiter_options on_clock(covenant::rate_limiter_options o) const {
    o.clock = [c = clock_] { return (*c)(); };  // shared: a timer firing late still has its clock
    return o;
  }
  void advance(std::chrono::nanoseconds d) const { clock_->advance(d); }

 private:
  std::shared_ptr<covenant::testing::manual_clock> clock_ = std::make_shared<covenant::testing::manual_clock>();
};

TEST_F(RateLimiter, AFullBucketGrantsABurstAtOnce) {
  covenant::rate_limiter limits{on_clock({.requests_per_minute = 600})};  // 10 per second, a bucket of 10
  const grants g;
  for (int i = 0; i < 10; ++i) limits.acquire(0, g.go(i));
  EXPECT_EQ(limits.stats().granted, 10u);
  EXPECT_EQ(limits.stats().delayed, 0u);
  EXPECT_THAT(g.ran(10), UnorderedElementsAreArray({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  limits.acquire(0, g.go(10));  // the bucket is empty and the clock has not moved
  EXPECT_EQ(limits.stats().granted, 10u);
}

TEST_F(RateLimiter, TheNextRequestWaitsExactlyAsLongAsTheRefillSays) {
  covenant::rate_limiter limits{on_clock({.requests_per_minute = 600})};  // one request per 100 ms
  const grants g;
  for (int i = 0; i < 10; ++i) limits.acquire(0, g.go(i));
  limits.acquire(0, g.go(10));
  advance(100ms - 1ns);
  limits.acquire(0, g.go(11));  // asks again: one nanosecond short of a whole request
  EXPECT_EQ(limits.stats().granted, 10u);
  advance(1ns);
  limits.acquire(0, g.go(12));
  EXPECT_EQ(limits.stats().granted, 11u);  // the 11th, first come first served
  EXPECT_EQ(limits.stats().delayed, 1u);
  EXPECT_EQ(limits.stats().waited, 100ms);
  EXPECT_THAT(g.ran(11), ::testing::Contains(10));
  advance(100ms);
  limits.acquire(0, g.go(13));
  EXPECT_EQ(limits.stats().granted, 12u);
  // The 12th asked 1 ns before the 11th went, and went 100 ms after it.
  EXPECT_EQ(limits.stats().waited, 100ms + (100ms + 1ns));
}

TEST_F(RateLimiter, ARefillCountedInStepsIsDueOnTime) {
  covenant::rate_limiter limits{on_clock({.requests_per_minute = 600})};  // one request per 100 ms
  const grants g;
  for (int i = 0; i < 10; ++i) limits.acquire(0, g.go(i));
  limits.acquire(0, g.go(10));
  // A request every 10 ms: the bucket is refilled at each, in ten pieces that add up to one
  // request give or take the last bit of a double.
  for (int i = 1; i < 10; ++i) {
    advance(10ms);
    limits.acquire(0, g.go(10 + i));
    EXPECT_EQ(limits.stats().granted, 10u) << "after " << i * 10 << " ms";
  }
  advance(10ms);
  limits.acquire(0, g.go(20));
  EXPECT_EQ(limits.stats().granted, 11u);
  EXPECT_EQ(limits.stats().waited, 100ms);
}

TEST_F(RateLimiter, ABackOffHoldsEveryRequestUntilItEnds) {
  covenant::rate_limiter limits{on_clock({})};  // no rates: only the back-off holds requests
  const grants g;
  limits.back_off(300ms);
  limits.acquire(0, g.go(0));
  limits.acquire(0, g.go(1));
  advance(300ms - 1ns);
  limits.acquire(0, g.go(2));
  EXPECT_EQ(limits.stats().granted, 0u);
  advance(1ns);
  limits.acquire(0, g.go(3));
  EXPECT_EQ(limits.stats().granted, 4u);
  EXPECT_THAT(g.ran(4), UnorderedElementsAre(0, 1, 2, 3));
  const covenant::rate_limiter_stats s = limits.stats();
  EXPECT_EQ(s.back_offs, 1u);
  EXPECT_EQ(s.delayed, 3u);                  // the last one came when the back-off was over
  EXPECT_EQ(s.waited, 300ms + 300ms + 1ns);  // two from the start, one from 1 ns before the end
}

TEST_F(RateLimiter, ALaterBackOffExtendsAndAnEarlierEndDoesNotShorten) {
  covenant::rate_limiter limits{on_clock({})};
  const grants g;
  limits.back_off(300ms);  // until 300 ms
  advance(100ms);
  limits.back_off(50ms);  // would end at 150 ms: the pause still ends at 300 ms
  limits.acquire(0, g.go(0));
  advance(100ms);  // 200 ms: after 150 ms, before 300 ms
  limits.acquire(0, g.go(1));
  EXPECT_EQ(limits.stats().granted, 0u);
  limits.back_off(400ms);  // until 600 ms
  advance(100ms);          // 300 ms, when the first back-off ended
  limits.acquire(0, g.go(2));
  EXPECT_EQ(limits.stats().granted, 0u);
  advance(300ms - 1ns);
  limits.acquire(0, g.go(3));
  EXPECT_EQ(limits.stats().granted, 0u);
  advance(1ns);  // 600 ms
  limits.acquire(0, g.go(4));
  EXPECT_EQ(limits.stats().granted, 5u);
  EXPECT_EQ(limits.stats().back_offs, 3u);
  EXPECT_THAT(g.ran(5), UnorderedElementsAre(0, 1, 2, 3, 4));
}

TEST_F(RateLimiter, TokenEstimatesAreCorrectedBySettledUsage) {
  covenant::rate_limiter limits{on_clock({.tokens_per_minute = 6000})};  // 100 per second, a bucket of 100
  covenant::chat_request req;
  req.messages.push_back({covenant::role::user, std::string(200, 'x')});
  EXPECT_EQ(limits.estimate(req), 50u);  // 200 bytes / 4, no output learned yet
  limits.settle(50, 80, 30);             // the reply used 30 more than estimated, 30 of them output
  EXPECT_EQ(limits.estimate(req), 80u);  // the output estimate learned
  EXPECT_EQ(limits.stats().tokens_reported, 80u);
  const grants g;
  limits.acquire(60, g.go(0));  // 100 - 30 owed = 70: goes at once, 10 left
  limits.acquire(60, g.go(1));  // 50 short: half a second
  EXPECT_EQ(limits.stats().granted, 1u);
  advance(500ms - 1ns);
  limits.acquire(60, g.go(2));
  EXPECT_EQ(limits.stats().granted, 1u);
  advance(1ns);
  limits.acquire(60, g.go(3));
  EXPECT_EQ(limits.stats().granted, 2u);
  EXPECT_EQ(limits.stats().waited, 500ms);  // without the 30 owed it would have been 200 ms
  EXPECT_EQ(limits.stats().tokens_estimated, 120u);
  EXPECT_THAT(g.ran(2), UnorderedElementsAre(0, 1));
}

TEST_F(RateLimiter, TokensGivenBackBySettleLetAWaiterGoAtOnce) {
  covenant::rate_limiter limits{on_clock({.tokens_per_minute = 6000})};  // a bucket of 100
  const grants g;
  limits.acquire(100, g.go(0));  // empties the bucket
  limits.acquire(50, g.go(1));   // half a second away
  EXPECT_EQ(limits.stats().granted, 1u);
  limits.settle(100, 40, 10);  // the first used 40: 60 come back, the clock has not moved
  EXPECT_EQ(limits.stats().granted, 2u);
  EXPECT_EQ(limits.stats().waited, 0ns);
  EXPECT_THAT(g.ran(2), UnorderedElementsAre(0, 1));
}

TEST_F(RateLimiter, ARequestLargerThanTheBucketGoesWhenItIsFullAndLeavesADebt) {
  covenant::rate_limiter limits{on_clock({.tokens_per_minute = 6000})};  // 100 per second, a bucket of 100
  const grants g;
  limits.acquire(250, g.go(0));  // a full bucket lets it go; 150 owed
  limits.acquire(10, g.go(1));   // 160 short: 1.6 s
  EXPECT_EQ(limits.stats().granted, 1u);
  advance(1600ms - 1ns);
  limits.acquire(0, g.go(2));
  EXPECT_EQ(limits.stats().granted, 1u);
  advance(1ns);
  limits.acquire(0, g.go(3));
  EXPECT_EQ(limits.stats().granted, 4u);
  EXPECT_EQ(limits.stats().waited, 1600ms + 1ns);
}

TEST_F(RateLimiter, CancelWithdrawsAWaiterAndLetsTheNextGo) {
  covenant::rate_limiter limits{on_clock({.tokens_per_minute = 6000})};  // 100 per second, a bucket of 100
  const grants g;
  limits.acquire(100, g.go(0));                           // empties the bucket
  const std::uint64_t big = limits.acquire(100, g.go(1));  // a whole second away
  const std::uint64_t small = limits.acquire(10, g.go(2));  // would fit sooner, but comes after
  advance(100ms);                                          // 10 tokens back
  limits.acquire(0, g.go(3));
  EXPECT_EQ(limits.stats().granted, 1u);  // first come first served: all wait behind the big one
  EXPECT_TRUE(limits.cancel(big));
  EXPECT_EQ(limits.stats().granted, 3u);  // withdrawn: the two behind it fit at once
  EXPECT_THAT(g.ran(3), UnorderedElementsAre(0, 2, 3));
  EXPECT_FALSE(limits.cancel(big));    // already withdrawn
  EXPECT_FALSE(limits.cancel(small));  // already granted
  advance(10s);
  limits.acquire(0, g.go(4));
  EXPECT_EQ(limits.stats().granted, 4u);
  EXPECT_THAT(g.ran(4), UnorderedElementsAre(0, 2, 3, 4));  // the withdrawn one never ran
}

// ---- the wake-up timers, on the real clock: one waiting request and nothing else -----------------

TEST_F(RateLimiter, OnTheRealClockARequestHeldByABackOffIsGrantedWhenItEnds) {
  covenant::rate_limiter limits;
  const grants g;
  limits.back_off(50ms);
  limits.acquire(0, g.go(0));
  EXPECT_THAT(g.ran(1), UnorderedElementsAre(0));  // no other call: the timer granted it
  EXPECT_EQ(limits.stats().granted, 1u);
  EXPECT_EQ(limits.stats().delayed, 1u);
}

TEST_F(RateLimiter, OnTheRealClockARequestWaitingForTheRefillIsGrantedWhenItComes) {
  // 20 per second with the smallest bucket (one request): the second waits 50 ms.
  covenant::rate_limiter limits{{.requests_per_minute = 1200, .burst = std::chrono::milliseconds(0)}};
  const grants g;
  limits.acquire(0, g.go(0));
  limits.acquire(0, g.go(1));
  EXPECT_THAT(g.ran(2), UnorderedElementsAre(0, 1));  // no other call: the timer granted the second
  EXPECT_EQ(limits.stats().granted, 2u);
  EXPECT_EQ(limits.stats().delayed, 1u);
}

}  // namespace
