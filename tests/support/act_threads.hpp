// Tools of the agent tests that outlive their calls: blocking acts still running when a call timed
// out or was stopped, threads that complete asynchronous acts. The test process waits for them
// before it exits (the acts, and what their results go to, are then released).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace covenant_test {

/// Tool acts still running when a test ends (a call that timed out or was stopped does not wait
/// for its blocking tools): the process waits for them before it exits, so that nothing an act
/// still holds is taken for a leak.
inline std::atomic<int> live_acts{0};
struct live_act {
  live_act() { ++live_acts; }
  ~live_act() { --live_acts; }
  live_act(const live_act&) = delete;
  live_act& operator=(const live_act&) = delete;
};
/// Threads the tests start for asynchronous acts, joined before the process exits.
inline std::mutex act_threads_mutex;
inline std::vector<std::thread> act_threads;
template <class F>
void start_act_thread(F&& f) {
  std::lock_guard lock(act_threads_mutex);
  act_threads.emplace_back(std::forward<F>(f));
}
struct acts_drained : ::testing::Environment {
  void TearDown() override {
    for (int i = 0; i < 5000 && live_acts.load() != 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(act_threads_mutex);
      threads.swap(act_threads);
    }
    for (std::thread& t : threads) t.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the checks after the last act returned
  }
};
inline ::testing::Environment* const drained = ::testing::AddGlobalTestEnvironment(new acts_drained);

}  // namespace covenant_test
