// Internal to the engine layer: a request's normalised form, recordings' and cached replies' key.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/engine/engine.hpp"

// The normalised request is what a cassette matches a call's recording by (cassette.hpp,
// "Matching") and what the response cache keys a reply by: one rule for both (request_key.cpp).
namespace covenant::cassette_impl {

/// A schema with its object keys sorted, and that as JSON text ("null" for no schema).
struct canonical_schema {
  boost::json::value value;
  std::string text = "null";
};

std::shared_ptr<const canonical_schema> make_canonical(const boost::json::value& v);

/// One tool as a cassette keeps it: {"name", "description", "parameters": <schema> | null}.
boost::json::object tool_json(std::string_view name, std::string_view description, const boost::json::value* parameters);

/// A message as a cassette keeps it: its media as their digest (covenant::media_digest, written
/// compactly; "" when it has none), never their bytes, and its tool fields.
struct normal_message {
  covenant::role role = covenant::role::user;
  std::string content;
  std::string media;
  std::vector<covenant::tool_call> tool_calls{};
  std::string tool_call_id{};
  bool is_error = false;
};

/// Tool calls as compact JSON: [{"id":...,"name":...,"arguments":...}, ...].
void append_tool_calls(std::string& out, const std::vector<tool_call>& calls);
/// Tool calls as a JSON array of {"id", "name", "arguments"}.
boost::json::array tool_calls_json(const std::vector<tool_call>& calls);
/// A media digest (JSON) as a normal_message keeps it.
std::string canonical_media(const boost::json::value& digest);

struct normal_request {
  std::vector<normal_message> messages;
  std::string schema_name;
  std::string mode = std::string(to_string(output_mode::json_schema));
  std::shared_ptr<const canonical_schema> schema;  // null when none
  std::optional<double> temperature;
  std::optional<std::uint64_t> max_tokens;
  std::shared_ptr<const canonical_schema> tools;  // canonical_tools(); null when none
};

/// The request as a cassette's line writes it ("request").
boost::json::object to_json(const normal_request& r);
/// The request as compact JSON: what matching compares.
std::string key_of(const normal_request& r);
/// The request's normalised form, with the strings of `secrets` (prepare_secrets()) redacted.
normal_request normalize(const chat_request& request, const std::vector<std::string>& secrets);
/// key_of(normalize(request, secrets)): cassette_engine::normalized(), the response cache's key.
std::string request_key(const chat_request& request, const std::vector<std::string>& secrets = {});

}  // namespace covenant::cassette_impl
