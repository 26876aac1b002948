// covenant/testing/cassette_gtest.hpp - GoogleTest helpers for agent tests that replay recorded model calls.
//
//     #include <covenant/testing/cassette_gtest.hpp>
//
//     TEST(Summarize, KeepsTheNumbers) {
//       auto model = covenant::testing::replay_cassette(COVENANT_SOURCE_DIR "/tests/cassettes/summarize.jsonl");
//       covenant::contract<Summarize> summarize{*model};
//       EXPECT_EQ(summarize(report).total, 42);
//       EXPECT_THAT(*model, covenant::testing::AllInteractionsUsed());
//     }
//
// Re-recording against a real server: build the cassette with cassette() (or a cassette_scope), which
// reads COVENANT_CASSETTE_MODE, and pass the real engine (or a function making it: it is only
// called when the mode needs it, so replaying needs no API key):
//
//     covenant::testing::cassette_scope tape{"tests/cassettes/summarize.jsonl",
//                                            [] { return std::make_shared<covenant::http_engine>(
//                                                      covenant::http_engine::from_env()); }};
//     covenant::contract<Summarize> summarize{tape.model()};
//
//     $ COVENANT_CASSETTE_MODE=record ./my_tests --gtest_filter='Summarize.*'   # rewrite the file
//     $ COVENANT_CASSETTE_MODE=new_episodes ./my_tests                         # add missing calls
//     $ ./my_tests                                                             # replay (default)
//
// COVENANT_CASSETTE_DIR, when set, is the directory relative cassette paths are taken from.
// Includes covenant/testing/gtest.hpp (Succeeded(), FailedAt(), ...).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "covenant/engine/cassette.hpp"
#include "covenant/testing/gtest.hpp"

namespace covenant {

inline void PrintTo(const cassette_engine& c, std::ostream* os) {
  *os << "cassette " << c.path() << " (" << to_string(c.mode()) << ", " << c.used() << " of " << c.interactions()
      << " interactions used)";
}

namespace testing {

/// Makes the real engine a cassette records from (called only when the mode needs one).
using engine_factory = std::function<std::shared_ptr<engine>()>;

/// The mode named by COVENANT_CASSETTE_MODE (record, replay, new_episodes), or `fallback` when it is
/// unset or empty. Throws std::invalid_argument for any other value.
inline cassette_mode cassette_mode_from_env(cassette_mode fallback = cassette_mode::replay) {
  const char* v = std::getenv("COVENANT_CASSETTE_MODE");
  if (v == nullptr || *v == '\0') return fallback;
  if (auto m = parse_cassette_mode(v)) return *m;
  throw std::invalid_argument(std::string("COVENANT_CASSETTE_MODE=\"") + v +
                              "\": expected record, replay or new_episodes");
}

/// `path`, or $COVENANT_CASSETTE_DIR/path when `path` is relative and the variable is set.
inline std::string cassette_path(const std::string& path) {
  const char* dir = std::getenv("COVENANT_CASSETTE_DIR");
  if (dir == nullptr || *dir == '\0' || path.empty() || path.front() == '/') return path;
  std::string out = dir;
  if (out.back() != '/') out += '/';
  return out + path;
}

/// A cassette in replay mode (whatever COVENANT_CASSETTE_MODE says): no engine, no network.
/// `redact` must list the strings redacted when it was recorded that may occur in requests.
inline std::unique_ptr<cassette_engine> replay_cassette(const std::string& path, std::vector<std::string> redact = {}) {
  cassette_options o;
  o.path = cassette_path(path);
  o.mode = cassette_mode::replay;
  o.redact = std::move(redact);
  return std::make_unique<cassette_engine>(std::move(o));
}

/// A cassette in the mode COVENANT_CASSETTE_MODE names (default replay) around `inner`, which must
/// outlive it; `options` supplies record_timing and redact (its path and mode are replaced). Throws
/// std::invalid_argument when the mode records and `inner` is null.
inline std::unique_ptr<cassette_engine> cassette(const std::string& path, engine* inner = nullptr,
                                                 cassette_options options = {}) {
  options.path = cassette_path(path);
  options.mode = cassette_mode_from_env();
  if (options.mode == cassette_mode::replay) return std::make_unique<cassette_engine>(std::move(options));
  if (inner == nullptr)
    throw std::invalid_argument("COVENANT_CASSETTE_MODE=" + std::string(to_string(options.mode)) + " for " +
                                options.path + " needs a real engine: pass one to covenant::testing::cassette()");
  return std::make_unique<cassette_engine>(std::move(options), *inner);
}

/// As above, the real engine made by `make_inner` only when the mode records.
inline std::unique_ptr<cassette_engine> cassette(const std::string& path, const engine_factory& make_inner,
                                                 cassette_options options = {}) {
  options.path = cassette_path(path);
  options.mode = cassette_mode_from_env();
  if (options.mode == cassette_mode::replay) return std::make_unique<cassette_engine>(std::move(options));
  std::shared_ptr<engine> inner = make_inner ? make_inner() : nullptr;
  if (!inner)
    throw std::invalid_argument("COVENANT_CASSETTE_MODE=" + std::string(to_string(options.mode)) + " for " +
                                options.path + ": the engine factory made no engine");
  return std::make_unique<cassette_engine>(std::move(options), std::move(inner));
}

namespace detail {
inline const cassette_engine& cassette_ref(const cassette_engine& c) { return c; }
inline const cassette_engine& cassette_ref(const cassette_engine* c) { return *c; }
inline const cassette_engine& cassette_ref(const std::unique_ptr<cassette_engine>& c) { return *c; }
inline const cassette_engine& cassette_ref(const std::shared_ptr<cassette_engine>& c) { return *c; }

inline std::string unused_report(const cassette_engine& c) {
  const std::vector<std::string> unused = c.unused();
  if (unused.empty()) return {};
  std::string out = c.path() + ": " + std::to_string(unused.size()) + " of " + std::to_string(c.interactions()) +
                    " recorded interactions were not used:";
  for (const auto& u : unused) out += "\n  " + u;
  return out;
}
}  // namespace detail

/// Success when every recorded interaction answered a call; otherwise a failure listing the others.
inline ::testing::AssertionResult all_interactions_used(const cassette_engine& c) {
  std::string report = detail::unused_report(c);
  if (report.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << report;
}

/// A non-fatal failure (at the caller's line) listing every recorded interaction no call used.
/// (The caller's file and line come from __builtin_FILE/__builtin_LINE, which g++ and clang++
/// 14 have; clang 14 has no std::source_location.)
inline void expect_all_used(const cassette_engine& c, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  std::string report = detail::unused_report(c);
  if (!report.empty()) ADD_FAILURE_AT(file, line) << report;
}

/// Matches a cassette_engine (or a pointer to one) whose recorded interactions were all used:
///     EXPECT_THAT(*model, AllInteractionsUsed());
MATCHER(AllInteractionsUsed, negation ? "some recorded interaction was not used"
                                      : "every recorded interaction was used") {
  const std::string report = covenant::testing::detail::unused_report(covenant::testing::detail::cassette_ref(arg));
  if (report.empty()) return true;
  *result_listener << report;
  return false;
}

/// A cassette for one test: its mode from COVENANT_CASSETTE_MODE (default replay); when it goes out of
/// scope it reports (non-fatally, at the line that made it) every recorded interaction not used,
/// unless allow_unused() was called.
class cassette_scope {
 public:
  explicit cassette_scope(const std::string& path, engine* inner = nullptr, cassette_options options = {},
                          const char* file = __builtin_FILE(), int line = __builtin_LINE())
      : cassette_(cassette(path, inner, std::move(options))), file_(file), line_(line) {}
  cassette_scope(const std::string& path, const engine_factory& make_inner, cassette_options options = {},
                 const char* file = __builtin_FILE(), int line = __builtin_LINE())
      : cassette_(cassette(path, make_inner, std::move(options))), file_(file), line_(line) {}
  ~cassette_scope() {
    if (check_) expect_all_used(*cassette_, file_, line_);
  }
  cassette_scope(const cassette_scope&) = delete;
  cassette_scope& operator=(const cassette_scope&) = delete;

  /// The engine to give the contract.
  [[nodiscard]] cassette_engine& model() noexcept { return *cassette_; }
  operator cassette_engine&() noexcept { return *cassette_; }  // NOLINT(google-explicit-constructor)
  /// Do not report unused interactions at the end of the scope.
  void allow_unused() noexcept { check_ = false; }

 private:
  std::unique_ptr<cassette_engine> cassette_;
  const char* file_;
  int line_;
  bool check_ = true;
};

}  // namespace testing
}  // namespace covenant
