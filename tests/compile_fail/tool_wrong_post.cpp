// expect: a tool.s post must be
// A tool's post() sees the arguments and the result.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>

#include <string>

struct Args {
  std::string city;
};
struct Result {
  double celsius = 0;
};
struct WrongPost {
  static constexpr std::string_view name = "weather";
  static constexpr std::string_view description = "d";
  Result act(const Args&) const { return {}; }
  void post(const Result&) const {}
};
struct In {
  std::string q;
};
struct Out {
  std::string a;
};
struct Agent {
  static constexpr std::string_view prompt = "p";
  covenant::toolset<WrongPost> tools;
  Out forward(const In&, const covenant::outcome<Out>& o) const { return o.result.value_or(Out{}); }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Agent> c{e};
  return 0;
}
