// The resource filter (examples/models/resources.hpp): links checked against a loopback server
// that serves some urls, 404s others, redirects in a loop and hangs.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "../../examples/models/resources.hpp"
#include "loopback_server.hpp"

namespace resource_filter_test {

struct Question {
  std::string text;
};

struct Task {
  static constexpr std::string_view prompt = "Answer with resources.";
  models::ResourcefulAnswer forward(const Question&, const covenant::outcome<models::ResourcefulAnswer>& o) const {
    return o.result.value_or(models::ResourcefulAnswer{});
  }
};

}  // namespace resource_filter_test

namespace {

using namespace resource_filter_test;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;

class ResourceFilter : public ::testing::Test {
 protected:
  ResourceFilter()
      : web_([](const received_request& r, std::size_t) {
          response_plan p;
          p.content_type = "text/html";
          if (r.target == "/ok" || r.target == "/ok2") {
            p.body = "<html>here</html>";
          } else if (r.target == "/head-refused") {
            p.status = r.method == "HEAD" ? 405 : 200;
          } else if (r.target == "/loop") {
            p.status = 302;
            p.headers = {{"Location", "/loop2"}};
          } else if (r.target == "/loop2") {
            p.status = 302;
            p.headers = {{"Location", "/loop"}};
          } else if (r.target == "/hang") {
            p.hang = true;
          } else {
            p.status = 404;
          }
          return p;
        }) {
    models::resource_verifier(covenant::link_verifier_options{.timeout = std::chrono::milliseconds(300), .max_redirects = 3});
  }

  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(web_.port()) + path; }

  std::string reply(const std::vector<std::string>& paths) const {
    std::string list;
    for (std::size_t i = 0; i < paths.size(); ++i) {
      if (i) list += ", ";
      list += R"({"title": "doc )" + std::to_string(i) + R"(", "url": ")" + url(paths[i]) + "\"}";
    }
    return R"({"answer": "a", "resources": [)" + list + "]}";
  }

  loopback_server web_;
};

TEST_F(ResourceFilter, LinksThatDoNotAnswerAreDroppedInOrderWithoutAnotherModelCall) {
  scripted_engine model{reply({"/ok", "/missing", "/loop", "/head-refused", "/hang", "/ok2"})};
  covenant::contract<Task> c{model, instant()};
  auto [answer, outcome] = c.run(Question{"q"});
  ASSERT_TRUE(outcome.success) << outcome.summary();
  EXPECT_EQ(model.calls(), 1u);
  std::vector<std::string> kept;
  for (const auto& r : answer.resources) kept.push_back(r.title);
  EXPECT_EQ(kept, (std::vector<std::string>{"doc 0", "doc 3", "doc 5"}));
  std::vector<std::string> dropped;
  for (const auto& n : outcome.notes)
    if (n.kind == covenant::note_kind::filtered) dropped.push_back(n.path.to_string());
  EXPECT_EQ(dropped, (std::vector<std::string>{"resources[1]", "resources[2]", "resources[4]"}));
}

TEST_F(ResourceFilter, WhenEveryResourceIsDroppedTheCallFailsWithNoValidResources) {
  scripted_engine model{reply({"/missing", "/hang", "/loop"})};
  covenant::contract<Task> c{model, instant()};
  auto r = c.run(Question{"q"});
  EXPECT_FALSE(r.outcome.success);
  EXPECT_EQ(r.outcome.reason, "no_valid_resources");
  EXPECT_EQ(model.calls(), 1u);
}

TEST_F(ResourceFilter, AnAnswerWithoutResourcesStaysASuccess) {
  scripted_engine model{reply({})};
  covenant::contract<Task> c{model, instant()};
  auto r = c.run(Question{"q"});
  EXPECT_TRUE(r.outcome.success);
  EXPECT_TRUE(r.value.resources.empty());
  EXPECT_EQ(web_.requests(), 0u);
}

TEST_F(ResourceFilter, AUrlThatIsNotALinkIsDroppedWithoutARequest) {
  scripted_engine model{R"({"answer": "a", "resources": [{"title": "x", "url": "see the library"}]})"};
  covenant::contract<Task> c{model, instant()};
  auto r = c.run(Question{"q"});
  EXPECT_EQ(r.outcome.reason, "no_valid_resources");
  EXPECT_EQ(web_.requests(), 0u);
}

}  // namespace
