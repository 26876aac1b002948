// The GoogleTest helpers for cassettes (covenant/testing/cassette_gtest.hpp): unused interactions
// listed by the matchers, the mode of replay_cassette chosen by the environment, and a cassette
// scope that reports unused interactions when it ends.
#include <covenant/engine/cassette.hpp>
#include <covenant/testing/cassette_gtest.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "cassette_fixture.hpp"
#include "scoped_env.hpp"

namespace {

using namespace cassette_test;
using ::testing::ElementsAre;
using ::testing::Not;

using covenant_test::scoped_env;

// ------------------------------------------------------------------------------------------------
// Unused interactions and the GoogleTest helpers
// ------------------------------------------------------------------------------------------------

TEST(Cassette, UnusedInteractionsAreListedByTheHelpers) {
  const std::string path = temp_path();
  {
    scripted_engine model{"Paris", "Berlin", step::failure("HTTP 500: oops", 500)};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(ask("France?"));
    (void)tape.complete(ask("Germany?"));
    EXPECT_THROW((void)tape.complete(ask("Spain?")), engine_error);
  }
  auto model = covenant::testing::replay_cassette(path);
  (void)model->complete(ask("Germany?"));
  EXPECT_THAT(model->unused(),
              ElementsAre("line 2: Answer, 2 messages, last (user) \"France?\" -> reply \"Paris\"",
                          "line 4: Answer, 2 messages, last (user) \"Spain?\" -> error \"HTTP 500: oops\" (status 500)"));
  EXPECT_THAT(*model, Not(covenant::testing::AllInteractionsUsed()));
  EXPECT_THAT(model, Not(covenant::testing::AllInteractionsUsed()));  // the unique_ptr itself
  EXPECT_FALSE(covenant::testing::all_interactions_used(*model));
  EXPECT_NONFATAL_FAILURE(covenant::testing::expect_all_used(*model), "2 of 3 recorded interactions were not used");
  EXPECT_NONFATAL_FAILURE(covenant::testing::expect_all_used(*model), "line 4: Answer, 2 messages");
  (void)model->complete(ask("France?"));
  EXPECT_THROW((void)model->complete(ask("Spain?")), engine_error);
  EXPECT_THAT(*model, covenant::testing::AllInteractionsUsed());
  EXPECT_TRUE(covenant::testing::all_interactions_used(*model));
}

TEST(Cassette, TheEnvironmentChoosesTheModeOfTheTestHelper) {
  const std::string path = temp_path();
  {
    scoped_env mode("COVENANT_CASSETTE_MODE", "record");
    scripted_engine real{"recorded reply"};
    auto tape = covenant::testing::cassette(path, &real);
    EXPECT_EQ(tape->mode(), cassette_mode::record);
    EXPECT_EQ(tape->complete(ask("q")).text, "recorded reply");
    EXPECT_THROW(covenant::testing::cassette(path), std::invalid_argument);  // recording needs a real engine
  }
  {
    scoped_env mode("COVENANT_CASSETTE_MODE", nullptr);  // default: replay; the factory is not called
    bool made = false;
    auto tape = covenant::testing::cassette(path, [&]() -> std::shared_ptr<covenant::engine> {
      made = true;
      return std::make_shared<scripted_engine>();
    });
    EXPECT_EQ(tape->mode(), cassette_mode::replay);
    EXPECT_FALSE(made);
    EXPECT_EQ(tape->complete(ask("q")).text, "recorded reply");
  }
  {
    scoped_env mode("COVENANT_CASSETTE_MODE", "new_episodes");
    auto tape = covenant::testing::cassette(path, []() -> std::shared_ptr<covenant::engine> {
      return std::make_shared<scripted_engine>(std::vector<step>{"fresh"});
    });
    EXPECT_EQ(tape->mode(), cassette_mode::new_episodes);
    EXPECT_EQ(tape->complete(ask("q")).text, "recorded reply");
    EXPECT_EQ(tape->complete(ask("new")).text, "fresh");
  }
  {
    scoped_env mode("COVENANT_CASSETTE_MODE", "fast-forward");
    EXPECT_THROW(covenant::testing::cassette(path), std::invalid_argument);
  }
  {
    scoped_env mode("COVENANT_CASSETTE_MODE", nullptr);
    scoped_env dir("COVENANT_CASSETTE_DIR", std::filesystem::path(path).parent_path().c_str());
    auto tape = covenant::testing::cassette(std::filesystem::path(path).filename().string());
    EXPECT_EQ(tape->path(), path);
    EXPECT_EQ(tape->interactions(), 2u);
  }
}

TEST(Cassette, ACassetteScopeReportsUnusedInteractionsWhenItEnds) {
  const std::string path = temp_path();
  {
    scripted_engine model{"a", "b"};
    cassette_engine tape{record_to(path), model};
    (void)tape.complete(ask("1"));
    (void)tape.complete(ask("2"));
  }
  scoped_env mode("COVENANT_CASSETTE_MODE", nullptr);
  EXPECT_NONFATAL_FAILURE(
      {
        covenant::testing::cassette_scope tape{path};
        (void)tape.model().complete(ask("1"));
      },
      "line 3: Answer, 2 messages, last (user) \"2\" -> reply \"b\"");
  {
    covenant::testing::cassette_scope tape{path};
    covenant::engine& e = tape;
    (void)e.complete(ask("2"));
    tape.allow_unused();
  }
  {
    covenant::testing::cassette_scope tape{path};
    (void)tape.model().complete(ask("1"));
    (void)tape.model().complete(ask("2"));
  }  // all used: no failure
}

}  // namespace
