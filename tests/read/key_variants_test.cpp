// Coerce level: a key written in another spelling (camelCase, PascalCase, kebab-case, spaces,
// SCREAMING_SNAKE) read as the one declared key it matches; nothing guessed when two declared
// keys could match or the declared key is written too.
#include <covenant/read/decode.hpp>
#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/schema_file.hpp>

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "reading.hpp"

namespace key_variants_test {

struct Usage {
  std::string model_used;
  int total_tokens = 0;
};

struct Clash {
  std::optional<int> model_used;
  std::optional<int> modelused;
};

}  // namespace key_variants_test

namespace {

using covenant_test::reading::rendered;

using namespace key_variants_test;

covenant::decode_options coerce(bool reject_unknown = false) {
  covenant::decode_options o;
  o.coerce = true;
  o.reject_unknown_fields = reject_unknown;
  return o;
}

const covenant::schema::model& usage_model() {
  static const covenant::schema::model m = covenant::schema_set::parse(R"(
    class Usage {
      model_used string
      total_tokens int
    }
  )").model("Usage");
  return m;
}

TEST(KeyVariants, EverySpellingOfADeclaredKey) {
  for (const auto& [model, tokens] : std::vector<std::pair<const char*, const char*>>{
           {"modelUsed", "totalTokens"},
           {"ModelUsed", "TotalTokens"},
           {"model-used", "total-tokens"},
           {"model used", "Total Tokens"},
           {"MODEL_USED", "TOTAL_TOKENS"},
       }) {
    const std::string reply =
        std::string("{\"") + model + "\": \"gpt-4o\", \"" + tokens + "\": 12}";
    const auto r = covenant::try_decode<Usage>(reply, coerce(true));
    ASSERT_TRUE(r.ok()) << reply << "\n" << rendered(r.issues);
    EXPECT_EQ(r.value->model_used, "gpt-4o");
    EXPECT_EQ(r.value->total_tokens, 12);
    ASSERT_EQ(r.notes.size(), 2u) << reply;
    EXPECT_EQ(r.notes[0].path.to_string(), "model_used");
    EXPECT_EQ(r.notes[0].detail, std::string("key \"") + model + "\" read as \"model_used\"");

    const auto d = covenant::try_read_dynamic(reply, usage_model());
    ASSERT_TRUE(d.ok()) << reply << "\n" << rendered(d.issues);
    EXPECT_EQ(d.value.at("model_used").as_string(), "gpt-4o");
    EXPECT_EQ(d.value.at("total_tokens").as_int64(), 12);
  }
}

TEST(KeyVariants, TheDeclaredKeyWrittenTooWinsWhereverItIs) {
  for (const char* reply : {
           R"({"modelUsed": "guess", "model_used": "gpt-4o", "total_tokens": 1})",  // variant first
           R"({"model_used": "gpt-4o", "modelUsed": "guess", "total_tokens": 1})",  // variant after
       }) {
    const auto r = covenant::try_decode<Usage>(reply, coerce());
    ASSERT_TRUE(r.ok()) << reply << "\n" << rendered(r.issues);
    EXPECT_EQ(r.value->model_used, "gpt-4o") << reply;
    EXPECT_TRUE(r.notes.empty()) << reply;
    // the variant stays an unknown key
    const auto strict_keys = covenant::try_decode<Usage>(reply, coerce(true));
    ASSERT_EQ(strict_keys.issues.size(), 1u) << reply << "\n" << rendered(strict_keys.issues);
    EXPECT_EQ(strict_keys.issues[0].code, covenant::issue_code::unknown_field);
    EXPECT_EQ(strict_keys.issues[0].path.to_string(), "modelUsed");

    const auto d = covenant::try_read_dynamic(reply, usage_model());
    ASSERT_TRUE(d.ok()) << reply << "\n" << rendered(d.issues);
    EXPECT_EQ(d.value.at("model_used").as_string(), "gpt-4o") << reply;
  }
}

TEST(KeyVariants, ManySpellingsBeforeTheDeclaredKeyAreAllLeftUnknown) {
  // Each spelling of model_used finds the declared key written later; none is read as it.
  std::string reply = "{";
  for (int i = 0; i < 2000; ++i) reply += std::string(i % 2 == 0 ? "\"modelUsed\"" : "\"Model-Used\"") + ": \"guess\", ";
  reply += R"("total_tokens": 3, "model_used": "gpt-4o"})";
  const auto r = covenant::try_decode<Usage>(reply, coerce(true));
  EXPECT_EQ(r.issues.size(), 2000u);  // the spellings, unknown keys
  for (const auto& i : r.issues) ASSERT_EQ(i.code, covenant::issue_code::unknown_field);
  const auto lax = covenant::try_decode<Usage>(reply, coerce());
  ASSERT_TRUE(lax.ok()) << rendered(lax.issues);
  EXPECT_EQ(lax.value->model_used, "gpt-4o");
  EXPECT_TRUE(lax.notes.empty());

  const auto d = covenant::try_read_dynamic(reply, usage_model());
  ASSERT_TRUE(d.ok()) << rendered(d.issues);
  EXPECT_EQ(d.value.at("model_used").as_string(), "gpt-4o");
}

TEST(KeyVariants, TwoDeclaredKeysThatCouldMatchMeanNoGuess) {
  const auto r = covenant::try_decode<Clash>(R"({"ModelUsed": 1})", coerce());
  ASSERT_TRUE(r.ok()) << rendered(r.issues);
  EXPECT_FALSE(r.value->model_used.has_value());
  EXPECT_FALSE(r.value->modelused.has_value());
  EXPECT_TRUE(r.notes.empty());
  const auto unknown = covenant::try_decode<Clash>(R"({"ModelUsed": 1})", coerce(true));
  ASSERT_EQ(unknown.issues.size(), 1u);
  EXPECT_EQ(unknown.issues[0].code, covenant::issue_code::unknown_field);
}

TEST(KeyVariants, StrictDecodingReadsOnlyDeclaredKeys) {
  const auto r = covenant::try_decode<Usage>(R"({"modelUsed": "gpt-4o", "totalTokens": 12})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.issues.size(), 2u) << rendered(r.issues);  // both fields missing
}

TEST(KeyVariants, ALookaheadOverASyntaxErrorLeavesItToTheReader) {
  // The look for the declared key reaches the broken text; the decoder still reports it once,
  // where it is.
  const auto r = covenant::try_decode<Usage>(R"({"modelUsed": "x", "total_tokens": 1,, })", coerce());
  ASSERT_EQ(r.issues.size(), 1u) << rendered(r.issues);
  EXPECT_EQ(r.issues[0].code, covenant::issue_code::parse_error);
}

}  // namespace
