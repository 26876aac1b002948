// What the cassette tests share (tests/engine/cassette_*_test.cpp,
// tests/testing/cassette_gtest_test.cpp): a question-answering contract whose answer states its
// confidence first, a temporary directory removed at exit, requests to record and replay, calls
// run to their end, and the requests and replies of a weather agent with tools.
#pragma once

#include <covenant/contract/contract.hpp>
#include <covenant/engine/cassette.hpp>
#include <covenant/testing/testing.hpp>
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stop_token>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "qa_model.hpp"
#include "reply_collector.hpp"

namespace cassette_test {

using covenant_test::confidence_first::Answer;
using covenant_test::confidence_first::Question;

struct QA {
  static constexpr std::string_view prompt = "Answer the question, confidence first.";
  void post(const Answer& a) const {
    if (a.confidence < 0.5) throw covenant::violation("confidence", "must be at least 0.5 for a final answer");
  }
  Answer forward(const Question&, const covenant::outcome<Answer>& o) const {
    return o.success ? *o.result : Answer{0, "I don't know.", ""};
  }
};

using namespace std::chrono_literals;
using covenant::cassette_engine;
using covenant::cassette_mode;
using covenant::cassette_options;
using covenant::chat_request;
using covenant::chat_response;
using covenant::engine_error;
using covenant::role;
using covenant::testing::instant;
using covenant::testing::scripted_engine;
using covenant::testing::step;

namespace json = boost::json;

/// This process's temporary directory, removed at exit.
inline const std::filesystem::path& temp_dir() {
  static const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("covenant_cassette_test_" + std::to_string(::getpid()));
  return dir;
}

struct remove_temp_dir {
inline   remove_temp_dir() { (void)temp_dir(); }  // constructed first, so destroyed after this
  ~remove_temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(temp_dir(), ec);
  }
};
inline const remove_temp_dir at_exit;

/// A fresh path in the temporary directory, named after the running test.
inline std::string temp_path(const std::string& name = "cassette.jsonl") {
  const auto& dir = temp_dir();
  std::filesystem::create_directories(dir);
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const auto p = dir / (std::string(info->test_suite_name()) + "." + info->name() + "." + name);
  std::filesystem::remove(p);
  return p.string();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::vector<json::object> read_lines(const std::string& path) {
  std::vector<json::object> out;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line).as_object());
  return out;
}

inline chat_request ask(const std::string& user, const std::string& system = "Answer briefly.") {
  chat_request r;
  r.messages = {{role::system, system}, {role::user, user}};
  r.schema_name = "Answer";
  return r;
}

inline chat_request user_only(const std::string& user) {
  chat_request r;
  r.messages = {{role::user, user}};
  return r;
}

inline chat_request streamed(chat_request r) {
  r.stream = true;
  return r;
}

inline cassette_options record_to(const std::string& path) { return {.path = path, .mode = cassette_mode::record}; }
inline cassette_options replay_from(const std::string& path) { return {.path = path, .mode = cassette_mode::replay}; }

using collector = covenant_test::reply_collector;
using piece = collector::piece;

/// Runs one asynchronous call to its end.
inline std::shared_ptr<collector> run(covenant::engine& e, const chat_request& r, std::stop_token stop = {}) {
  auto c = std::make_shared<collector>();
  e.start(r, c, std::move(stop));
  EXPECT_TRUE(c->wait());
  return c;
}

inline std::string engine_error_of(cassette_engine& e, const chat_request& r) {
  try {
    (void)e.complete(r);
  } catch (const engine_error& err) {
    return err.what();
  }
  ADD_FAILURE() << "no engine_error";
  return {};
}

// ------------------------------------------------------------------------------------------------
// a weather agent's requests and replies, with tools
// ------------------------------------------------------------------------------------------------

/// The tools of a weather agent: get_weather (described by `description`) and get_time.
inline std::shared_ptr<const std::vector<covenant::tool_spec>> weather_tools(
    const std::string& description = "The weather in a city.") {
  auto city = std::make_shared<const json::value>(
      json::parse(R"({"type": "object", "required": ["city"], "properties": {"city": {"type": "string"}}})"));
  return std::make_shared<const std::vector<covenant::tool_spec>>(std::vector<covenant::tool_spec>{
      {"get_weather", description, city}, {"get_time", "The time in a city.", city}});
}

/// The agent's first request.
inline chat_request agent_request(std::shared_ptr<const std::vector<covenant::tool_spec>> tools = weather_tools()) {
  chat_request r = ask("Weather in Oslo, time in Lima?");
  r.tools = std::move(tools);
  return r;
}

/// The agent's second request: the first, the model's calls, and the tools' results.
inline chat_request agent_results(const std::vector<covenant::tool_call>& calls, const std::string& weather = "rain, 4 C",
                           bool time_failed = true) {
  chat_request r = agent_request();
  r.messages.push_back({.role = role::assistant, .content = "Let me look.", .tool_calls = calls});
  r.messages.push_back({.role = role::tool, .content = weather, .tool_call_id = calls.at(0).id});
  r.messages.push_back(
      {.role = role::tool, .content = "unknown city", .tool_call_id = calls.at(1).id, .is_error = time_failed});
  return r;
}

inline const std::string oslo = R"({"city": "Oslo"})";
inline const std::string lima = R"({"city": "Lima"})";

/// A scripted agent's replies: two tool calls with a few words, then the answer.
inline std::vector<step> weather_agent() {
  step calls = step::calls(
      {{.id = "", .name = "get_weather", .arguments = oslo}, {.id = "", .name = "get_time", .arguments = lima}}, {40, 12});
  calls.text = "Let me look.";
  return {calls, step{R"({"confidence": 0.8, "answer": "Rain in Oslo."})", {90, 9}}};
}

}  // namespace cassette_test
