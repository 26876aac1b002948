// The HTTP engine's asynchronous and streamed calls against an event-driven loopback server on
// 127.0.0.1: the SSE variants real servers send, cut-off streams, retries only before content,
// idle timeouts, cancellation, destruction with transfers in flight, many calls on one loop.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/engine/runtime.hpp>
#include <covenant/testing/testing.hpp>
#include <covenant/types/version.hpp>
#include <curl/curl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dirent.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "loopback_server.hpp"
#include "reply_collector.hpp"

namespace http_stream_test {
struct Q {
  std::string text;
};
struct A {
  std::string answer;
};
struct Ask {
  static constexpr std::string_view prompt = "Answer.";
  A forward(const Q&, const covenant::outcome<A>& o) const { return o.result.value_or(A{}); }
};
}  // namespace http_stream_test

namespace {

using namespace std::chrono_literals;
using covenant_test::loopback_server;
using covenant_test::openai_completion;
using covenant_test::openai_stream;
using covenant_test::received_request;
using covenant_test::response_plan;
using ::testing::HasSubstr;

using collector = covenant_test::reply_collector;

covenant::chat_request streamed_request() {
  covenant::chat_request r;
  r.messages = {{covenant::role::system, "Answer."}, {covenant::role::user, "Hi"}};
  r.stream = true;
  return r;
}

covenant::http_engine_options options_for(const loopback_server& server) {
  covenant::http_engine_options o;
  o.base_url = server.base_url();
  o.model = "loopback";
  o.retry.delay = 1ms;  // short real waits between transport retries
  return o;
}

response_plan sse(std::vector<std::string> chunks, std::chrono::milliseconds delay = 0ms) {
  response_plan p;
  p.content_type = "text/event-stream";
  p.chunks = std::move(chunks);
  p.chunk_delay = delay;
  return p;
}

std::size_t thread_count() {
  std::size_t n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

TEST(HttpStream, DeltasInOrderThenTheWholeReplyWithUsage) {
  loopback_server server([](const received_request&, std::size_t) {
    return sse(openai_stream({"{\"answer\": ", "\"Par", "is\"}"}, "stop", 21, 7));
  });
  covenant::http_engine engine(options_for(server));
  auto c = std::make_shared<collector>();
  engine.start(streamed_request(), c, {});
  ASSERT_TRUE(c->wait());
  ASSERT_TRUE(c->ok()) << c->error().what();
  EXPECT_THAT(c->texts(), ::testing::ElementsAre("{\"answer\": ", "\"Par", "is\"}"));
  const covenant::chat_response r = c->reply();
  EXPECT_EQ(r.text, "{\"answer\": \"Paris\"}");
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.usage, (covenant::usage{21, 7}));
  EXPECT_EQ(r.model, "loopback");
  EXPECT_FALSE(r.cut_off);
  // The request asked for a stream with usage.
  const auto body = boost::json::parse(server.request(0).body);
  EXPECT_EQ(body.at("stream"), true);
  EXPECT_EQ(body.at("stream_options").at("include_usage"), true);
}

/// `text` as a gzip member with one stored (uncompressed) deflate block: what a server sends with
/// Content-Encoding: gzip, written out here so that the test needs no compression library.
std::string gzip_stored(const std::string& text) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const unsigned char byte : text) {
    crc ^= byte;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  crc ^= 0xFFFFFFFFu;
  auto le32 = [](std::string& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFFu));
  };
  const auto n = static_cast<std::uint16_t>(text.size());
  std::string out("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);  // magic, deflate, no flags, unknown OS
  out.push_back('\x01');                                            // the last block, stored
  out.push_back(static_cast<char>(n & 0xFFu));
  out.push_back(static_cast<char>(n >> 8));
  out.push_back(static_cast<char>(~n & 0xFFu));
  out.push_back(static_cast<char>((~n >> 8) & 0xFFu));
  out += text;
  le32(out, crc);
  le32(out, static_cast<std::uint32_t>(text.size()));
  return out;
}

covenant::chat_request whole_request() {
  covenant::chat_request r = streamed_request();
  r.stream = false;
  return r;
}

/// Runs one call of `engine` and returns the request the server saw.
received_request one_request(loopback_server& server, covenant::http_engine& engine, const covenant::chat_request& r) {
  auto c = std::make_shared<collector>();
  const std::size_t before = server.requests();
  engine.start(r, c, {});
  EXPECT_TRUE(c->wait());
  EXPECT_TRUE(c->ok()) << (c->ok() ? "" : c->error().what());
  EXPECT_EQ(server.requests(), before + 1);
  return server.request(before);
}

TEST(HttpStream, TheUserAgentIsSentOnceAndCompressionOfferedForWholeRepliesOnly) {
  const std::string reply = openai_completion(R"({"answer": "Paris"})");
  loopback_server server([&](const received_request& req, std::size_t) {
    if (req.body.find("\"stream\":true") != std::string::npos) return sse(openai_stream({"{}"}));
    response_plan p;
    p.body = reply;
    return p;
  });
  const curl_version_info_data* curl = curl_version_info(CURLVERSION_NOW);
  ASSERT_NE(curl, nullptr);
  const bool zlib = (curl->features & CURL_VERSION_LIBZ) != 0;
  const std::string ours = "covenant/" + std::string(covenant::version());
  {
    covenant::http_engine engine(options_for(server));
    const received_request whole = one_request(server, engine, whole_request());
    EXPECT_EQ(whole.headers.at("user-agent"), ours);
    EXPECT_EQ(whole.headers.at("content-type"), "application/json");
    EXPECT_EQ(whole.headers.at("accept"), "application/json");
    EXPECT_EQ(whole.headers.count("expect"), 0u);
    if (zlib) {
      EXPECT_THAT(whole.headers.at("accept-encoding"), HasSubstr("gzip"));
    }
    const received_request streamed = one_request(server, engine, streamed_request());
    EXPECT_EQ(streamed.headers.at("user-agent"), ours);
    EXPECT_EQ(streamed.headers.at("accept"), "text/event-stream");
    EXPECT_EQ(streamed.headers.count("accept-encoding"), 0u) << "a stream is read as it comes";
  }
  {
    covenant::http_engine_options o = options_for(server);
    o.user_agent = "my-app/2.1";
    covenant::http_engine engine(o);
    EXPECT_EQ(one_request(server, engine, whole_request()).headers.at("user-agent"), "my-app/2.1");
    EXPECT_EQ(one_request(server, engine, streamed_request()).headers.at("user-agent"), "my-app/2.1");
  }
  {
    // Headers of the caller's replace the engine's own, each sent once.
    covenant::http_engine_options o = options_for(server);
    o.headers = {{"User-Agent", "gateway-client/7"}, {"Accept-Encoding", "identity"}};
    covenant::http_engine engine(o);
    const received_request whole = one_request(server, engine, whole_request());
    EXPECT_EQ(whole.headers.at("user-agent"), "gateway-client/7");
    EXPECT_EQ(whole.headers.at("accept-encoding"), "identity");
    const received_request streamed = one_request(server, engine, streamed_request());
    EXPECT_EQ(streamed.headers.at("user-agent"), "gateway-client/7");
    EXPECT_EQ(streamed.headers.at("accept-encoding"), "identity");
  }
  covenant::http_engine_options bad = options_for(server);
  bad.user_agent = "my-app\r\nX-Injected: 1";
  EXPECT_THROW(covenant::http_engine{bad}, std::invalid_argument);
}

TEST(HttpStream, ACompressedWholeReplyIsDecoded) {
  const std::string reply = openai_completion(R"({"answer": "Paris"})", 21, 7);
  loopback_server server([&](const received_request&, std::size_t) {
    response_plan p;
    p.body = gzip_stored(reply);
    p.headers = {{"Content-Encoding", "gzip"}};
    return p;
  });
  const curl_version_info_data* curl = curl_version_info(CURLVERSION_NOW);
  if (curl == nullptr || (curl->features & CURL_VERSION_LIBZ) == 0) GTEST_SKIP() << "this libcurl has no zlib";
  covenant::http_engine engine(options_for(server));
  auto c = std::make_shared<collector>();
  engine.start(whole_request(), c, {});
  ASSERT_TRUE(c->wait());
  ASSERT_TRUE(c->ok()) << c->error().what();
  EXPECT_EQ(c->reply().text, R"({"answer": "Paris"})");
  EXPECT_EQ(c->reply().usage, (covenant::usage{21, 7}));
}

// The framings real servers send, each as one body split at awkward places.
struct variant_case {
  const char* name;
  std::string body;
  std::string text;
  std::string finish;
  covenant::usage usage;
};

std::vector<variant_case> server_variants() {
  const std::string role = R"({"choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]})";
  auto delta = [](const std::string& t) {
    return R"({"choices":[{"index":0,"delta":{"content":")" + t + R"("},"finish_reason":null}]})";
  };
  std::vector<variant_case> out;
  // OpenAI: role delta, content, finish chunk, usage-only chunk with empty choices, [DONE].
  out.push_back({"openai",
                 "data: " + role + "\n\ndata: " + delta("Hel") + "\n\ndata: " + delta("lo") +
                     "\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                     "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
                 "Hello", "stop", {9, 2}});
  // vLLM: "data: " framing, usage in a final chunk, model field on every chunk.
  out.push_back({"vllm",
                 "data: {\"id\":\"x\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n"
                 "data: {\"id\":\"x\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"logprobs\":null,\"finish_reason\":\"length\",\"stop_reason\":null}]}\n\n"
                 "data: {\"id\":\"x\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"total_tokens\":5,\"completion_tokens\":1}}\n\n"
                 "data: [DONE]\n\n",
                 "Hi", "length", {4, 1}});
  // llama.cpp's server: "data: " framing, keep-alive ping comments, timings, usage on the last
  // content chunk, and [DONE] without the empty line after it.
  out.push_back({"llama.cpp",
                 ":\n\ndata: " + role + "\n\ndata: " + delta("O") + "\n\n:\n\ndata: " + delta("k") +
                     "\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2},\"timings\":{\"predicted_ms\":5.1}}\n\n"
                     "data: [DONE]",
                 "Ok", "stop", {3, 2}});
  // Ollama's OpenAI endpoint: CRLF framing here, finish_reason and usage in their own chunks.
  out.push_back({"ollama",
                 "data: " + delta("ab") + "\r\n\r\ndata: " + delta("c") +
                     "\r\n\r\ndata: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"stop\"}]}\r\n\r\n"
                     "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":6,\"completion_tokens\":3,\"total_tokens\":9}}\r\n\r\n"
                     "data: [DONE]\r\n\r\n",
                 "abc", "stop", {6, 3}});
  // "data:" without the space, and no usage at all.
  out.push_back({"no_space_no_usage",
                 "data:" + delta("x") + "\n\ndata:" + delta("y") +
                     "\n\ndata:{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata:[DONE]\n\n",
                 "xy", "stop", {0, 0}});
  return out;
}

TEST(HttpStream, TheSseVariantsOfRealServers) {
  for (const variant_case& v : server_variants()) {
    SCOPED_TRACE(v.name);
    // Split the body into pieces of 5 bytes: events, lines and CRLFs cut everywhere.
    std::vector<std::string> pieces;
    for (std::size_t i = 0; i < v.body.size(); i += 5) pieces.push_back(v.body.substr(i, 5));
    loopback_server server([&](const received_request&, std::size_t) { return sse(pieces); });
    covenant::http_engine engine(options_for(server));
    auto c = std::make_shared<collector>();
    engine.start(streamed_request(), c, {});
    ASSERT_TRUE(c->wait());
    ASSERT_TRUE(c->ok()) << c->error().what();
    const covenant::chat_response r = c->reply();
    EXPECT_EQ(r.text, v.text);
    EXPECT_EQ(c->joined(), v.text);
    EXPECT_EQ(r.finish_reason, v.finish);
    EXPECT_EQ(r.usage, v.usage);
    EXPECT_FALSE(r.cut_off);
  }
}

TEST(HttpStream, AStreamEndingWithoutDoneOrFinishReasonIsCutOff) {
  std::vector<std::string> chunks = openai_stream({"{\"a\": ", "\"b"}, "stop");
  chunks.resize(3);  // role, two content deltas; no finish reason, no [DONE]
  loopback_server server([&](const received_request&, std::size_t) { return sse(chunks); });
  covenant::http_engine engine(options_for(server));
  auto c = std::make_shared<collector>();
  engine.start(streamed_request(), c, {});
  ASSERT_TRUE(c->wait());
  ASSERT_TRUE(c->ok());
  EXPECT_TRUE(c->reply().cut_off);
  EXPECT_EQ(c->reply().text, "{\"a\": \"b");
  EXPECT_EQ(server.requests(), 1u);
}

TEST(HttpStream, ABrokenConnectionAfterContentHandsOverTheTextAndIsNotRetried) {
  loopback_server server([](const received_request&, std::size_t) {
    auto p = sse(openai_stream({"{\"answer\": \"Pa", "ris\"}"}));
    p.chunks.resize(2);  // the role and the first piece
    p.close_mid_stream = true;
    return p;
  });
  covenant::http_engine engine(options_for(server));
  auto c = std::make_shared<collector>();
  engine.start(streamed_request(), c, {});
  ASSERT_TRUE(c->wait());
  ASSERT_TRUE(c->ok()) << c->error().what();
  EXPECT_TRUE(c->reply().cut_off);
  EXPECT_EQ(c->reply().text, "{\"answer\": \"Pa");
  EXPECT_EQ(server.requests(), 1u);
}

TEST(HttpStream, TransportFailuresBeforeTheFirstContentAreRetried) {
  loopback_server server([](const received_request&, std::size_t i) {
    if (i == 0) {
      response_plan p;
      p.close_at_once = true;
      return p;
    }
    if (i == 1) {
      response_plan p;
      p.status = 503;
      p.headers = {{"Retry-After", "0"}};
      p.body = R"({"error": {"message": "overloaded"}})";
      return p;
    }
    if (i == 2) {  // an error object before any content
      return sse({"data: {\"error\": {\"message\": \"server busy\", \"type\": \"server_error\"}}\n\n"});
    }
    return sse(openai_stream({"ok"}));
  });
  auto o = options_for(server);
  o.retry.tries = 4;
  covenant::http_engine engine(o);
  auto c = std::make_shared<collector>();
  engine.start(streamed_request(), c, {});
  ASSERT_TRUE(c->wait());
  ASSERT_TRUE(c->ok()) << c->error().what();
  EXPECT_EQ(c->reply().text, "ok");
  EXPECT_EQ(server.requests(), 4u);
}

TEST(HttpStream, AnErrorObjectAfterContentEndsTheReplyAsCutOff) {
  loopback_server server([](const received_request&, std::size_t) {
    auto chunks = openai_stream({"{\"x\": 1"});
    chunks.resize(2);
    chunks.push_back("data: {\"error\": {\"message\": \"the model crashed\"}}\n\n");
    return sse(chunks);
  });
  covenant::http_engine engine(options_for(server));
  auto c = std::make_shared<collector>();
  engine.start(streamed_request(), c, {});
  ASSERT_TRUE(c->wait());
  ASSERT_TRUE(c->ok());
  EXPECT_TRUE(c->reply().cut_off);
  EXPECT_EQ(c->reply().text, "{\"x\": 1");
  EXPECT_EQ(server.requests(), 1u);
}

TEST(HttpStream, AServerThatIgnoresStreamAnswersWithOneDelta) {
  loopback_server server([](const received_request&, std::size_t) {
    response_plan p;
    p.body = openai_completion("{\"a\": 1}");
    return p;
  });
  covenant::http_engine engine(options_for(server));
  auto c = std::make_shared<collector>();
  engine.start(streamed_request(), c, {});
  ASSERT_TRUE(c->wait());
  ASSERT_TRUE(c->ok());
  EXPECT_THAT(c->texts(), ::testing::ElementsAre("{\"a\": 1}"));
  EXPECT_EQ(c->reply().text, "{\"a\": 1}");
}

TEST(HttpStream, AnIdleStreamIsCutOffAfterTheIdleTimeout) {
  loopback_server server([](const received_request&, std::size_t) {
    const auto events = openai_stream({"{\"partial\": "});
    // The role and the first piece at once, then two seconds of silence before a comment.
    auto p = sse({events[0] + events[1], ": still here?\n\n"});
    p.chunk_delay = 2000ms;
    return p;
  });
  auto o = options_for(server);
  o.stream_idle_timeout = 150ms;
  covenant::http_engine engine(o);
  auto c = std::make_shared<collector>();
  const auto t0 = std::chrono::steady_clock::now();
  engine.start(streamed_request(), c, {});
  ASSERT_TRUE(c->wait());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
  ASSERT_TRUE(c->ok());
  EXPECT_TRUE(c->reply().cut_off);
  EXPECT_EQ(c->reply().text, "{\"partial\": ");
}

TEST(HttpStream, AStopRequestClosesTheConnectionAtOnce) {
  loopback_server server([](const received_request&, std::size_t) {
    std::vector<std::string> pieces(200, "x");
    return sse(openai_stream(pieces), 20ms);
  });
  covenant::http_engine engine(options_for(server));
  auto c = std::make_shared<collector>();
  std::stop_source stop;
  engine.start(streamed_request(), c, stop.get_token());
  while (c->texts().size() < 3) std::this_thread::sleep_for(1ms);
  stop.request_stop();
  ASSERT_TRUE(c->wait(2s));
  EXPECT_FALSE(c->ok());
  EXPECT_TRUE(c->error().cancelled());
  // The server saw the client go before the end of the reply.
  for (int i = 0; i < 200 && !server.client_left_early(0); ++i) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(server.client_left_early(0));
  EXPECT_LT(server.chunks_sent(0), 100u);
}

TEST(HttpStream, DestroyingTheEngineEndsEveryTransferInFlight) {
  loopback_server server([](const received_request&, std::size_t) {
    response_plan p;
    p.hang = true;
    return p;
  });
  std::vector<std::shared_ptr<collector>> calls;
  {
    covenant::http_engine engine(options_for(server));
    for (int i = 0; i < 5; ++i) {
      calls.push_back(std::make_shared<collector>());
      engine.start(streamed_request(), calls.back(), {});
    }
    ASSERT_TRUE(server.wait_for_requests(5, 5s));
  }
  for (auto& c : calls) {
    ASSERT_TRUE(c->wait(1s));
    EXPECT_TRUE(c->error().cancelled());
    EXPECT_THAT(c->error().what(), HasSubstr("the engine was destroyed"));
  }
}

TEST(HttpStream, ManyCallsInFlightOnOneLoopWithoutAThreadEach) {
  loopback_server server([](const received_request&, std::size_t) {
    response_plan p;
    p.delay = 50ms;
    p.body = openai_completion("{\"ok\": true}");
    return p;
  });
  covenant::http_engine engine(options_for(server));
  {  // warm up: the runtime's threads exist
    auto c = std::make_shared<collector>();
    covenant::chat_request r = streamed_request();
    r.stream = false;
    engine.start(r, c, {});
    ASSERT_TRUE(c->wait());
  }
  const std::size_t threads_before = thread_count();
  std::vector<std::shared_ptr<collector>> calls;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 200; ++i) {
    calls.push_back(std::make_shared<collector>());
    covenant::chat_request r = streamed_request();
    r.stream = false;
    engine.start(r, calls.back(), {});
  }
  const std::size_t threads_during = thread_count();
  for (auto& c : calls) {
    ASSERT_TRUE(c->wait());
    EXPECT_TRUE(c->ok());
  }
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(threads_during, threads_before);
  EXPECT_LT(took, 5s);  // all in flight together: about one server delay, not 200
  EXPECT_EQ(server.requests(), 201u);
}

TEST(HttpStream, AContractStreamsOverHttp) {
  using http_stream_test::A;
  using http_stream_test::Ask;
  using http_stream_test::Q;
  loopback_server server([](const received_request&, std::size_t) {
    return sse(openai_stream({"{\"answer\"", ": \"Par", "is\"}"}), 5ms);
  });
  covenant::http_engine engine(options_for(server));
  covenant::contract<Ask> c{engine, covenant::testing::instant()};
  std::vector<std::string> texts;
  auto r = c.stream(Q{"capital of France?"}, [&](const covenant::stream_update<A>& u) {
               if (u.what == covenant::stream_update<A>::kind::partial) texts.emplace_back(u.text);
             }).get();
  EXPECT_TRUE(r.outcome.success) << r.outcome.summary();
  EXPECT_EQ(r.value.answer, "Paris");
  ASSERT_FALSE(texts.empty());
  EXPECT_EQ(texts.back(), "{\"answer\": \"Paris\"}");
  EXPECT_EQ(r.outcome.usage, (covenant::usage{10, 5}));
}

}  // namespace
