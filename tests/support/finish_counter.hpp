// An observer that counts the calls that finished (each call ends exactly once for observers).
#pragma once

#include <covenant/contract/observer.hpp>

#include <atomic>

namespace covenant_test {

struct finish_counter final : covenant::observer {
  std::atomic<int> finished{0};
  void on_finished(const covenant::finished_event&) override { ++finished; }
};

}  // namespace covenant_test
