// An application's agent test built against the installed package's GoogleTest helpers
// (covenant::gtest / pkg-config covenant-gtest), with main from gmock_main.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/gtest.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace {

struct Email {
  std::string body;
};
struct Reply {
  std::string text;
};

struct Answer {
  static constexpr std::string_view prompt = "Draft a reply.";
  static constexpr std::string_view rules[] = {"The reply is never empty."};
  void post(const Reply& r) const {
    if (r.text.empty()) throw covenant::violation("text", "must not be empty");
  }
  Reply forward(const Email&, const covenant::outcome<Reply>& o) const { return o.result.value_or(Reply{"..."}); }
};

TEST(InstalledHelpers, ScriptedEngineAndMatchers) {
  covenant::testing::scripted_engine model{R"({"text": ""})", R"({"text": "Thanks!"})"};
  covenant::contract<Answer> c{model, covenant::testing::instant({.tries = 1})};
  auto r = c.run(Email{"Hello"});
  EXPECT_THAT(r.outcome, covenant::testing::Succeeded());
  EXPECT_EQ(r.value.text, "Thanks!");
  EXPECT_THAT(model.last_message(1), ::testing::HasSubstr("text: must not be empty"));
  EXPECT_THAT(model.request(0).messages.at(0).content, ::testing::HasSubstr("The reply is never empty."));
}

}  // namespace
