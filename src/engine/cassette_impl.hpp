// Internal to the cassette (cassette*.cpp, redaction.cpp): interactions, the engine's state.
#pragma once

#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "covenant/engine/cassette.hpp"
#include "redaction.hpp"
#include "request_key.hpp"

namespace covenant::cassette_impl {

/// The version of the file format (its header line: {"covenant_cassette": 1, ...}).
inline constexpr std::int64_t format_version = 1;

/// A streamed piece: of the reply text, or (`tool` set) of the arguments of tool call `tool`, whose
/// name comes with its first piece.
struct chunk {
  std::string text;
  std::optional<std::int64_t> ms;
  std::optional<std::size_t> tool{};
  std::string name{};
};

struct interaction {
  std::size_t line = 0;
  normal_request request;
  std::string key;
  bool failed = false;
  chat_response response;
  std::string error_message;
  int status = 0;
  bool retryable = false;
  bool cancelled = false;
  std::optional<std::int64_t> ms;
  bool streamed = false;
  std::vector<chunk> chunks;
  bool used = false;  // guarded by the state's mutex
};

// ---- an interaction as a line (cassette_write.cpp) ----------------------------------------------

boost::json::object to_json(const interaction& it);

// ---- text for messages (cassette_describe.cpp) --------------------------------------------------

/// "Answer, 2 messages, last (user) \"What is ...\"".
std::string describe_request(const normal_request& r);
/// describe_request() with its line and its reply or error.
std::string describe_interaction(const interaction& it);
/// The length of the common prefix of `a` and `b`.
std::size_t common_prefix(std::string_view a, std::string_view b);
/// Where a recorded request differs from a requested one.
std::string describe_difference(const normal_request& rec, const normal_request& req);

}  // namespace covenant::cassette_impl

namespace covenant {

// The engine's shared state (alive as long as a call being recorded needs it). The file's reading
// is in cassette_read.cpp, its writing in cassette_write.cpp, the rest in cassette.cpp.
struct cassette_engine::state {
  cassette_options options;
  std::vector<std::string> secrets;

  mutable std::mutex mutex;
  std::deque<cassette_impl::interaction> items;  // stable addresses: replayed calls read them outside the lock
  std::unordered_map<std::string, std::vector<std::size_t>> by_key;
  std::unordered_map<std::string, std::size_t> asks;
  std::FILE* out = nullptr;
  std::size_t lines = 0;  // lines in the file so far

  state() = default;
  state(const state&) = delete;
  state& operator=(const state&) = delete;
  ~state() {
    if (out != nullptr) std::fclose(out);
  }

  [[noreturn]] void fail_open(const std::string& what) const {
    throw std::runtime_error("cassette_engine: " + options.path + ": " + what);
  }

  void add(cassette_impl::interaction it);

  /// Reads the whole file (the constructor; no lock needed). Returns false when it does not exist.
  bool load(bool must_exist, bool& ends_with_newline);

  void open_for_writing(const char* how);

  void write_line(const std::string& text);

  void write_header();

  /// Appends a finished interaction (redacting what it will write) and marks it used.
  void record(cassette_impl::interaction it);

  struct lookup {
    const cassette_impl::interaction* hit = nullptr;
    std::string error;  // replay mode: why nothing matched
  };

  /// The first unused recording matching `key`; marks it used.
  lookup find(const cassette_impl::normal_request& req, const std::string& key);
};

}  // namespace covenant
