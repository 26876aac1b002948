// An application built against the installed package: a contract over a scripted engine, a
// pattern checked by RE2, and the JSON Schema export. Prints the version on success.
#include <covenant/covenant.hpp>
#include <covenant/testing/testing.hpp>

#include <iostream>
#include <string>
#include <vector>

struct Query {
  std::string text;
};
struct Tagged {
  std::string code;
  std::vector<std::string> tags;
};

template <>
struct covenant::describe<Tagged> {
  static constexpr auto fields = covenant::fields<Tagged>(
      covenant::field<&Tagged::code>("An upper-case code.", covenant::pattern{"^[A-Z]{3}$"}),
      covenant::field<&Tagged::tags>("Tags.", covenant::item_count{1, 3}));
};

struct Tag {
  static constexpr std::string_view prompt = "Tag the query.";
  Tagged forward(const Query&, const covenant::outcome<Tagged>& o) const { return o.result.value_or(Tagged{}); }
};

int main() {
  covenant::testing::scripted_engine model{R"({"code": "abc", "tags": ["x"]})",
                                           "```json\n{\"code\": \"ABC\", \"tags\": [\"x\"]}\n```"};
  const covenant::contract<Tag> tag{model, covenant::testing::instant()};
  auto [value, outcome] = tag.run(Query{"hello"});
  if (!outcome.success || value.code != "ABC" || model.calls() != 2) {
    std::cerr << "contract: " << outcome.summary() << '\n';
    return 1;
  }
  const std::string feedback = model.last_message(1);
  if (feedback.find("code: ") == std::string::npos) {
    std::cerr << "no feedback for the pattern: " << feedback << '\n';
    return 1;
  }
  if (covenant::json_schema_of<Tagged>().as_object().at("properties").as_object().size() != 2) {
    std::cerr << "JSON Schema\n";
    return 1;
  }
  std::cout << covenant::version() << '\n';
  return covenant::version().empty() ? 1 : 0;
}
