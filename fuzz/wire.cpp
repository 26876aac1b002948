// libFuzzer target for the HTTP engine's wire dialects: arbitrary bytes read as a whole reply and
// as a streamed event by the OpenAI Chat Completions and the Anthropic Messages readers, in every
// output mode, must never crash, hang or leak, and:
//   - a whole reply is either read (with the mode it was asked in) or refused with an
//     engine_error of status 200 that is not retryable;
//   - reading an event never throws;
//   - an error event carries no reply text.
// The first byte picks the event type the data is read under (unnamed, or one of the Messages
// API's); the rest is the body.
#include <covenant/engine/engine.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "engine/wire_dialect.hpp"

namespace {

[[noreturn]] void fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "%s:\n%.*s\n", what, static_cast<int>(detail.size() > 2000 ? 2000 : detail.size()),
               detail.data());
  std::abort();
}

constexpr std::array<std::string_view, 10> event_types{
    "", "message", "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop", "ping", "error"};

constexpr std::array<covenant::output_mode, 4> modes{covenant::output_mode::json_schema, covenant::output_mode::json_object,
                                                     covenant::output_mode::tools, covenant::output_mode::prompt};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::unique_ptr<covenant::detail::wire_dialect> dialects[] = {covenant::detail::openai_dialect(),
                                                                             covenant::detail::anthropic_dialect()};
  if (size == 0) return 0;
  const std::string_view type = event_types[data[0] % event_types.size()];
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  for (const auto& d : dialects) {
    for (covenant::output_mode mode : modes) {
      try {
        const covenant::chat_response r = d->parse_reply(body, mode);
        if (r.mode != mode) fail("a reply read in another mode than asked", body);
      } catch (const covenant::engine_error& e) {
        if (e.status() != 200 || e.retryable()) fail("a refused reply with a status other than 200, or retryable", body);
      } catch (...) {
        fail("a reply refused with something else than engine_error", body);
      }
      try {
        const covenant::detail::wire_event e = d->parse_event(type, body, mode);
        if (e.error && !e.text.empty()) fail("an error event with reply text", body);
      } catch (...) {
        fail("reading an event threw", body);
      }
    }
  }
  return 0;
}
