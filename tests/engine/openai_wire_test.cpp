// The OpenAI dialect's request text (src/engine/openai_wire.cpp): body_text() writes the body directly,
// and must be exactly what serializing body()'s document gives, for every output mode, option and
// message content.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// A private header of the library (src/ is on the tests' include path, not on a user's).
#include "engine/wire_dialect.hpp"

namespace {

namespace json = boost::json;
using covenant::chat_request;
using covenant::http_engine_options;
using covenant::message;
using covenant::output_mode;
using covenant::role;

const covenant::detail::wire_dialect& dialect() {
  static const std::unique_ptr<covenant::detail::wire_dialect> d = covenant::detail::openai_dialect();
  return *d;
}

std::shared_ptr<const json::value> schema_of(const char* text) {
  return std::make_shared<const json::value>(json::parse(text));
}

// Contents that the JSON writer must escape: quotes, backslashes, every control character, a
// slash, invalid UTF-8 and a long text.
std::vector<std::string> contents() {
  std::string controls;
  for (int c = 0; c < 0x20; ++c) controls.push_back(static_cast<char>(c));
  return {"",
          "Label the record.",
          "say \"hi\" \\ then </script> and \u00e9\u4e2d\U0001F600",
          controls + "\x7f",
          std::string("bad \xC3 utf-8 \xff"),
          std::string(5000, 'x') + "\n" + std::string(3000, '"')};
}

TEST(OpenAiWire, BodyTextIsTheSerializedBodyForEveryModeAndOption) {
  const std::vector<std::shared_ptr<const json::value>> schemas = {
      nullptr,
      schema_of(R"({"type":"object","title":"Label","properties":{"id":{"type":"integer"},"label":{"type":"string",
        "description":"a \"short\" label\n"}},"required":["id","label"],"additionalProperties":false})"),
      schema_of(R"({"type":"object","properties":{},"additionalProperties":false})"),  // no title
      schema_of(R"({"type":"object","title":42})"),                                      // a title that is no name
      schema_of(R"(["not", "an", "object"])"),
  };
  const std::vector<std::string> names = {"", "Label", "bad name/with spaces", std::string(80, 'n')};
  const std::vector<std::optional<double>> temperatures = {std::nullopt, 0.0, 0.7, 1e-7, 2.0};
  const std::vector<std::optional<std::uint32_t>> limits = {std::nullopt, 0u, 256u, 4294967295u};
  const std::vector<output_mode> modes = {output_mode::json_schema, output_mode::json_object, output_mode::tools,
                                          output_mode::prompt};
  const std::vector<std::string> texts = contents();
  std::size_t compared = 0;
  for (const auto& schema : schemas)
    for (const auto& name : names)
      for (output_mode mode : modes)
        for (bool stream : {false, true})
          for (std::size_t t = 0; t < temperatures.size(); ++t)
            for (const std::string& model : {std::string(), std::string("gpt-4o-mini"), std::string("a\"b")})
              for (bool structured : {true, false}) {
                chat_request r;
                const std::string& text = texts[compared % texts.size()];
                r.messages = {{role::system, text}, {role::user, texts[(compared + 1) % texts.size()]},
                              {role::assistant, "{}"}};
                if (compared % 7 == 0) r.messages.clear();
                r.response_schema = schema;
                r.schema_name = name;
                r.stream = stream;
                r.temperature = temperatures[t];
                r.max_tokens = limits[compared % limits.size()];
                http_engine_options o;
                o.model = model;
                o.structured_outputs = structured;
                if (compared % 3 == 0) o.max_tokens_field = "max_completion_tokens";
                if (compared % 5 == 1) o.reasoning_effort = "low";  // a reasoning model
                const std::string expected = json::serialize(dialect().body(r, mode, o));
                ASSERT_EQ(dialect().body_text(r, mode, o), expected)
                    << "mode " << covenant::to_string(mode) << ", name '" << name << "', stream " << stream;
                ++compared;
              }
  EXPECT_EQ(compared, 5u * 4u * 4u * 2u * 5u * 3u * 2u);
}

TEST(OpenAiWire, BodyTextKeepsTheDocumentsOrderWithExtraFieldsOrAnyTokenLimitField) {
  chat_request r;
  r.messages = {{role::user, "hi"}};
  r.max_tokens = 10;
  r.temperature = 0.5;
  r.response_schema = schema_of(R"({"type":"object","title":"T","properties":{},"additionalProperties":false})");
  http_engine_options o{.model = "m"};  // not o.model = "m": a false -Wrestrict (GCC 12, Release)
  o.extra_body["seed"] = 7;
  o.extra_body["model"] = "replaced";  // the options' model wins, in the extra field's place
  for (output_mode mode : {output_mode::json_schema, output_mode::tools}) {
    const std::string text = dialect().body_text(r, mode, o);
    EXPECT_EQ(text, json::serialize(dialect().body(r, mode, o)));
    EXPECT_EQ(text.rfind(R"({"seed":7,"model":"m",)", 0), 0u) << text;
  }
  // A token-limit field named like one of the body's own keys replaces that key where it stands.
  http_engine_options odd;
  odd.max_tokens_field = "temperature";
  const std::string text = dialect().body_text(r, output_mode::prompt, odd);
  EXPECT_EQ(text, json::serialize(dialect().body(r, output_mode::prompt, odd)));
  EXPECT_EQ(json::parse(text).at("temperature"), json::value(10u)) << text;
}

TEST(OpenAiWire, ToolArgumentsSentAsAnObjectKeepTheirNumbersShort) {
  // Some servers send function.arguments as an object instead of a string: it becomes the reply
  // text with every number as short as it reads back (15.5, not 1.55E1).
  const std::string body =
      R"({"choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",)"
      R"( "function": {"name": "Invoice", "arguments": {"total": 15.5, "n": 2, "whole": 3.0}}}]}, "finish_reason": "tool_calls"}]})";
  const covenant::chat_response r = dialect().parse_reply(body, output_mode::tools);
  EXPECT_EQ(r.text, R"({"total":15.5,"n":2,"whole":3.0})");
}

}  // namespace
