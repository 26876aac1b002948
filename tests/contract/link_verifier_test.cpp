// covenant::link_verifier against the loopback server on 127.0.0.1 (no other network): HEAD, the
// GET after a refused HEAD, redirects, timeouts, refused inputs, and check_all's window.
#include <covenant/contract/link_verifier.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "loopback_server.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;
using covenant::link_check;
using covenant::link_verifier;
using covenant::link_verifier_options;
using covenant_test::loopback_server;
using covenant_test::received_request;
using covenant_test::response_plan;
using ::testing::HasSubstr;

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

/// The site every test asks, by path:
///   /ok...        200 (empty body)
///   /missing...   404
///   /head405...   HEAD: 405; GET: 200 with a body
///   /redirect...  302 to /ok
///   /loop-a, /loop-b  302 to each other
///   /ftp          302 to an ftp:// URL
///   /stream       HEAD: 405; GET: 200 with a slow chunked body (10 pieces, 300 ms apart)
///   /hang         never answers
/// Every answer waits `delay` first (except /hang, which never answers).
response_plan site(const received_request& r, std::chrono::milliseconds delay = 0ms) {
  response_plan p;
  p.content_type = "text/plain";
  p.delay = delay;
  const std::string& t = r.target;
  const bool head = r.method == "HEAD";
  if (starts_with(t, "/ok")) {
    p.status = 200;
  } else if (starts_with(t, "/missing")) {
    p.status = 404;
  } else if (starts_with(t, "/head405")) {
    p.status = head ? 405 : 200;
    if (!head) p.body = "hello, this is the page";
  } else if (starts_with(t, "/redirect")) {
    p.status = 302;
    p.headers = {{"Location", "/ok/after-redirect"}};
  } else if (starts_with(t, "/loop-a")) {
    p.status = 302;
    p.headers = {{"Location", "/loop-b"}};
  } else if (starts_with(t, "/loop-b")) {
    p.status = 302;
    p.headers = {{"Location", "/loop-a"}};
  } else if (starts_with(t, "/ftp")) {
    p.status = 302;
    p.headers = {{"Location", "ftp://127.0.0.1/file"}};
  } else if (starts_with(t, "/stream")) {
    p.status = head ? 405 : 200;
    if (!head) {
      p.chunks.assign(10, std::string(100, 'x'));
      p.chunk_delay = 300ms;
    }
  } else if (starts_with(t, "/hang")) {
    p.hang = true;
  } else {
    p.status = 500;
  }
  return p;
}

std::string url(const loopback_server& s, std::string_view path) {
  return "http://127.0.0.1:" + std::to_string(s.port()) + std::string(path);
}

TEST(LinkVerifier, AServedUrlIsOkWithHead) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  const link_verifier verify;
  const link_check c = verify.check(url(server, "/ok/page"));
  EXPECT_TRUE(c.ok) << c.error;
  EXPECT_EQ(c.status, 200);
  EXPECT_EQ(c.method, "HEAD");
  EXPECT_EQ(c.error, "");
  EXPECT_EQ(c.url, url(server, "/ok/page"));
  ASSERT_EQ(server.requests(), 1u);
  EXPECT_EQ(server.request(0).method, "HEAD");
  EXPECT_EQ(server.request(0).target, "/ok/page");
  EXPECT_EQ(server.request(0).headers.at("user-agent"), "covenant-link-verifier");
}

TEST(LinkVerifier, IsUsableAsAPredicate) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  std::vector<std::string> links{url(server, "/ok/1"), url(server, "/missing/1"), "not a url", url(server, "/ok/2")};
  std::erase_if(links, [v = link_verifier{}](const std::string& u) { return !v(u); });
  EXPECT_THAT(links, ::testing::ElementsAre(url(server, "/ok/1"), url(server, "/ok/2")));
}

TEST(LinkVerifier, A404IsNotOk) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  const link_check c = link_verifier{}.check(url(server, "/missing/page"));
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.status, 404);
  EXPECT_THAT(c.error, HasSubstr("404"));
  EXPECT_EQ(c.method, "HEAD");
  EXPECT_EQ(server.requests(), 1u);  // a 404 on HEAD is not asked again with GET
}

TEST(LinkVerifier, HeadRefusedThenGetDecides) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  const link_check c = link_verifier{}.check(url(server, "/head405"));
  EXPECT_TRUE(c.ok) << c.error;
  EXPECT_EQ(c.status, 200);
  EXPECT_EQ(c.method, "GET");
  ASSERT_EQ(server.requests(), 2u);
  EXPECT_EQ(server.request(0).method, "HEAD");
  EXPECT_EQ(server.request(1).method, "GET");
  EXPECT_EQ(server.request(1).target, "/head405");
}

TEST(LinkVerifier, TheGetStopsAfterTheHeaders) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  const link_check c = link_verifier{}.check(url(server, "/stream"));
  EXPECT_TRUE(c.ok) << c.error;
  EXPECT_EQ(c.method, "GET");
  ASSERT_EQ(server.requests(), 2u);
  // The client closes the connection long before the 10 slow pieces of the body are sent.
  for (int i = 0; i < 100 && !server.client_left_early(1); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(server.client_left_early(1));
  EXPECT_LT(server.chunks_sent(1), 10u);
}

TEST(LinkVerifier, ARedirectToAServedUrlIsOk) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  const link_check c = link_verifier{}.check(url(server, "/redirect"));
  EXPECT_TRUE(c.ok) << c.error;
  EXPECT_EQ(c.status, 200);
  ASSERT_EQ(server.requests(), 2u);
  EXPECT_EQ(server.request(1).target, "/ok/after-redirect");
}

TEST(LinkVerifier, ARedirectLoopIsTooManyRedirects) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  link_verifier_options o;
  o.max_redirects = 3;
  const link_check c = link_verifier{o}.check(url(server, "/loop-a"));
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.error, "too many redirects");
  EXPECT_EQ(c.status, 302);
  EXPECT_EQ(server.requests(), 4u);  // the first request and 3 redirects followed
}

TEST(LinkVerifier, NoRedirectIsFollowedWithMaxRedirectsZero) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  link_verifier_options o;
  o.max_redirects = 0;
  const link_check c = link_verifier{o}.check(url(server, "/redirect"));
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.error, "too many redirects");
  EXPECT_EQ(server.requests(), 1u);
}

TEST(LinkVerifier, ARedirectToAnotherSchemeIsRefused) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  const link_check c = link_verifier{}.check(url(server, "/ftp"));
  EXPECT_FALSE(c.ok);
  EXPECT_THAT(c.error, HasSubstr("non-http(s)"));
  EXPECT_EQ(server.requests(), 1u);
}

TEST(LinkVerifier, AHangingUrlTimesOut) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  link_verifier_options o;
  o.timeout = 300ms;
  const auto start = std::chrono::steady_clock::now();
  const link_check c = link_verifier{o}.check(url(server, "/hang"));
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.status, 0);
  EXPECT_THAT(c.error, HasSubstr("timed out"));
  EXPECT_THAT(c.error, HasSubstr("300 ms"));
  EXPECT_LT(took, 4s);
  EXPECT_EQ(server.requests(), 1u);
}

TEST(LinkVerifier, InvalidInputsNeverReachTheNetwork) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  const std::string port = std::to_string(server.port());
  const std::vector<std::string> bad{"",
                                     "not a url",
                                     "ftp://127.0.0.1:" + port + "/ok",
                                     "file:///etc/passwd",
                                     "mailto:someone@example.com",
                                     "javascript:alert(1)",
                                     "127.0.0.1:" + port + "/ok",
                                     "//127.0.0.1:" + port + "/ok",
                                     "http://",
                                     "http:///ok",
                                     "http://127.0.0.1:" + port + "/ok page",
                                     std::string("http://127.0.0.1:") + port + "/ok\n",
                                     std::string("http://127.0.0.1:") + port + std::string("/ok\0x", 5)};
  const link_verifier verify;
  for (const std::string& u : bad) {
    const link_check c = verify.check(u);
    EXPECT_FALSE(c.ok) << u;
    EXPECT_FALSE(c.error.empty()) << u;
    EXPECT_EQ(c.status, 0) << u;
    EXPECT_EQ(c.method, "") << u;
    EXPECT_EQ(c.url, u);
  }
  EXPECT_EQ(verify.check("").error, "empty URL");
  EXPECT_EQ(verify.check("not a url").error, "not an http(s) URL");
  EXPECT_EQ(verify.check("ftp://x").error, "not an http(s) URL");
  const std::vector<link_check> all = verify.check_all(bad);
  ASSERT_EQ(all.size(), bad.size());
  for (std::size_t i = 0; i < bad.size(); ++i) {
    EXPECT_FALSE(all[i].ok);
    EXPECT_EQ(all[i].url, bad[i]);
  }
  EXPECT_TRUE(verify.check_all({}).empty());
  // A good URL last: the server sees exactly its one request and connection (a stray request of
  // the checks above would have reached it first, on its own connection).
  EXPECT_TRUE(verify.check(url(server, "/ok")).ok);
  EXPECT_EQ(server.requests(), 1u);
  EXPECT_EQ(server.connections(), 1u);
  EXPECT_EQ(server.request(0).target, "/ok");
}

TEST(LinkVerifier, TheSchemeIsCaseInsensitive) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  const link_check c = link_verifier{}.check("HTTP://127.0.0.1:" + std::to_string(server.port()) + "/ok");
  EXPECT_TRUE(c.ok) << c.error;
}

TEST(LinkVerifier, LoopbackCanBeRefused) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r); });
  link_verifier_options o;
  o.allow_loopback = false;
  const link_verifier verify{o};
  const std::string port = std::to_string(server.port());
  for (const std::string& u : {url(server, "/ok"), "http://localhost:" + port + "/ok", "http://[::1]:" + port + "/ok",
                               "http://0.0.0.0:" + port + "/ok", "http://[::ffff:127.0.0.1]:" + port + "/ok"}) {
    const link_check c = verify.check(u);
    EXPECT_FALSE(c.ok) << u;
    EXPECT_THAT(c.error, HasSubstr("loopback")) << u;
  }
  // The same server reached by a verifier that allows loopback: exactly its one request (a stray
  // connection of the refused checks would have reached it first).
  EXPECT_TRUE(link_verifier{}.check(url(server, "/ok")).ok);
  EXPECT_EQ(server.connections(), 1u);
  EXPECT_EQ(server.requests(), 1u);
}

TEST(LinkVerifier, CheckAllKeepsTheOrderAndTheWindow) {
  constexpr auto delay = 100ms;
  loopback_server server([&](const received_request& r, std::size_t) { return site(r, delay); });
  const std::string port = std::to_string(server.port());
  struct expected {
    std::string url;
    bool ok;
    long status;
    std::string method;
    std::string error;  // a part of it
  };
  const std::vector<expected> cases{
      {url(server, "/ok/0"), true, 200, "HEAD", ""},
      {url(server, "/missing/0"), false, 404, "HEAD", "404"},
      {"not a url", false, 0, "", "http(s)"},
      {url(server, "/head405/0"), true, 200, "GET", ""},
      {url(server, "/redirect/0"), true, 200, "HEAD", ""},
      {url(server, "/ok/1"), true, 200, "HEAD", ""},
      {url(server, "/hang"), false, 0, "HEAD", "timed out"},
      {"", false, 0, "", "empty"},
      {url(server, "/loop-a"), false, 302, "HEAD", "too many redirects"},
      {url(server, "/ok/2"), true, 200, "HEAD", ""},
      {url(server, "/missing/1"), false, 404, "HEAD", "404"},
      {"ftp://127.0.0.1:" + port + "/ok", false, 0, "", "http(s)"},
      {url(server, "/ok/3"), true, 200, "HEAD", ""},
      {url(server, "/head405/1"), true, 200, "GET", ""},
      {url(server, "/ok/4"), true, 200, "HEAD", ""},
      {"mailto:x@example.com", false, 0, "", "http(s)"},
      {url(server, "/redirect/1"), true, 200, "HEAD", ""},
      {url(server, "/missing/2"), false, 404, "HEAD", "404"},
      {"http://", false, 0, "", "URL"},
      {url(server, "/ok/5"), true, 200, "HEAD", ""},
  };
  std::vector<std::string> urls;
  for (const auto& c : cases) urls.push_back(c.url);

  link_verifier_options o;
  o.max_in_flight = 4;
  o.max_redirects = 3;
  o.timeout = 2000ms;
  const std::vector<link_check> got = link_verifier{o}.check_all(urls);

  ASSERT_EQ(got.size(), cases.size());
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].url);
    EXPECT_EQ(got[i].url, cases[i].url);
    EXPECT_EQ(got[i].ok, cases[i].ok) << got[i].error;
    EXPECT_EQ(got[i].status, cases[i].status);
    EXPECT_EQ(got[i].method, cases[i].method);
    if (cases[i].ok) EXPECT_EQ(got[i].error, "");
    else EXPECT_THAT(got[i].error, HasSubstr(cases[i].error));
  }

  // Requests the server saw: 15 URLs asked, +2 GETs after a refused HEAD, +2 redirects followed,
  // +3 redirects of the loop.
  const std::size_t n = server.requests();
  EXPECT_EQ(n, 15u + 2u + 2u + 3u);
  // Every answer waits `delay` after its request arrived, so a request that arrived less than
  // `delay` after another one was sent while that one was still unanswered: the requests that
  // arrived within any `delay`-long window were all in flight together.
  std::vector<std::chrono::steady_clock::time_point> at;
  for (std::size_t i = 0; i < n; ++i) at.push_back(server.request(i).at);
  std::size_t most = 0;
  for (const auto t : at) {
    const auto together = std::count_if(at.begin(), at.end(), [&](auto u) { return u > t - delay && u <= t; });
    most = std::max(most, static_cast<std::size_t>(together));
  }
  EXPECT_LE(most, 4u);
  EXPECT_GE(most, 2u);  // and several URLs were really asked at once
}

TEST(LinkVerifier, OneVerifierServesSeveralThreads) {
  loopback_server server([](const received_request& r, std::size_t) { return site(r, 20ms); });
  link_verifier_options o;
  o.max_in_flight = 3;
  const link_verifier verify{o};
  const std::vector<std::string> urls{url(server, "/ok/a"), url(server, "/missing/a"), url(server, "/head405/a"),
                                      url(server, "/redirect/a"), "nope"};
  constexpr int threads = 4;
  std::vector<std::vector<link_check>> results(threads);
  std::vector<link_check> singles(threads);
  {
    std::vector<std::jthread> pool;
    for (int i = 0; i < threads; ++i)
      pool.emplace_back([&, i] {
        results[i] = verify.check_all(urls);
        singles[i] = verify.check(urls[static_cast<std::size_t>(i) % urls.size()]);
      });
  }
  for (int i = 0; i < threads; ++i) {
    ASSERT_EQ(results[i].size(), urls.size());
    EXPECT_TRUE(results[i][0].ok);
    EXPECT_EQ(results[i][1].status, 404);
    EXPECT_TRUE(results[i][2].ok);
    EXPECT_EQ(results[i][2].method, "GET");
    EXPECT_TRUE(results[i][3].ok);
    EXPECT_FALSE(results[i][4].ok);
    EXPECT_EQ(singles[i].ok, i % 5 == 0 || i % 5 == 2 || i % 5 == 3);
  }
}

}  // namespace
