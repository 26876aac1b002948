// The resource filter: a model answers with resources (title, url), every url is checked with a
// link verifier, and the resources whose links do not answer are dropped as likely
// hallucinations, without asking the model again (on-fail action filter on a tool check, see
// examples/models/resources.hpp and docs/policies.md).
//
// Offline: a small HTTP server on 127.0.0.1 plays the web (one document served, one missing, a
// redirect loop, one that never answers) and a scripted engine plays the model. Three questions:
// some links answer (those resources are kept, in order), none answers (the call fails with the
// reason no_valid_resources), and no resources at all (a success with an empty list).
#include <covenant/contract/contract.hpp>
#include <covenant/engine/logging.hpp>
#include <covenant/testing/testing.hpp>
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>

#include "models/resources.hpp"

namespace resource_filter {

struct Question {
  std::string text;
};

// What the application returns: the answer and its resources, or a machine-readable error.
struct Reply {
  std::string code;  // "ok", "no_valid_resources", "failed"
  models::ResourcefulAnswer answer;
};

struct AnswerWithResources {
  static constexpr std::string_view prompt = "Answer the question and list the documents that support the answer.";
  Reply forward(const Question&, const covenant::outcome<models::ResourcefulAnswer>& o) const {
    if (o.success) return Reply{"ok", *o.result};
    return Reply{o.reason.empty() ? "failed" : o.reason, {}};
  }
};

// The "web": /docs/tower is served, /docs/missing is not, /loop redirects forever, /slow never
// answers (until the server stops).
class little_web {
 public:
  little_web() {
    server_.Get("/docs/tower", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("<html>The tower is 330 m tall.</html>", "text/html");
    });
    server_.Get("/loop", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/loop-again"); });
    server_.Get("/loop-again", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/loop"); });
    server_.Get("/slow", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock lock(mutex_);
      stopping_cv_.wait_for(lock, std::chrono::seconds(10), [this] { return stopping_; });
      res.set_content("late", "text/plain");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~little_web() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    stopping_cv_.notify_all();
    server_.stop();
    thread_.join();
  }
  [[nodiscard]] std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable stopping_cv_;
  bool stopping_ = false;
};

std::string reply_listing(const little_web& web, const std::vector<std::pair<std::string, std::string>>& docs) {
  std::string list;
  for (const auto& [title, path] : docs) {
    if (!list.empty()) list += ", ";
    list += R"({"title": ")" + title + R"(", "url": ")" + web.url(path) + "\"}";
  }
  return R"({"answer": "The Eiffel Tower is 330 m tall.", "resources": [)" + list + "]}";
}

}  // namespace resource_filter

int main() {
  using namespace resource_filter;
  covenant::set_log_level(covenant::log_level::warn);  // the dropped links are logged as warnings
  little_web web;
  models::resource_verifier(covenant::link_verifier_options{.timeout = std::chrono::milliseconds(500), .max_redirects = 3});

  covenant::testing::scripted_engine model{
      reply_listing(web, {{"Tower facts", "/docs/tower"}, {"Made-up survey", "/docs/missing"},
                          {"Circular page", "/loop"}, {"Tower facts, again", "/docs/tower"}}),
      reply_listing(web, {{"Made-up survey", "/docs/missing"}, {"Slow archive", "/slow"}}),
      reply_listing(web, {})};
  const covenant::contract<AnswerWithResources> qa{model, covenant::testing::instant()};

  int failures = 0;
  auto expect = [&](bool ok, const std::string& what) {
    std::cout << (ok ? "  ok: " : "  UNEXPECTED: ") << what << "\n";
    failures += ok ? 0 : 1;
  };

  std::cout << "1. Some links answer:\n";
  auto [first, o1] = qa.run(Question{"How tall is the Eiffel Tower?"});
  expect(first.code == "ok" && first.answer.resources.size() == 2, "2 of 4 resources kept, in order");
  for (const auto& r : first.answer.resources) std::cout << "     " << r.title << " <" << r.url << ">\n";
  for (const auto& n : o1.notes) std::cout << "     note: " << n.to_string() << "\n";
  expect(model.calls() == 1, "no model call spent on the dropped ones");

  std::cout << "2. No link answers:\n";
  auto [second, o2] = qa.run(Question{"How tall is the Eiffel Tower?"});
  expect(second.code == "no_valid_resources", "the call fails with reason " + second.code);
  std::cout << "     " << o2.summary() << "\n";

  std::cout << "3. No resources listed:\n";
  auto [third, o3] = qa.run(Question{"How tall is the Eiffel Tower?"});
  expect(third.code == "ok" && third.answer.resources.empty(), "a success with an empty list");

  return failures == 0 ? 0 : 1;
}
