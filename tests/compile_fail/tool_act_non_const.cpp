// expect: a tool's act must be a const member function
// A tool's act() runs side by side with others and in many calls at once: it must be const.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>

#include <string>

struct Args {
  std::string city;
};
struct Result {
  double celsius = 0;
};
struct Mutating {
  static constexpr std::string_view name = "weather";
  static constexpr std::string_view description = "d";
  int calls = 0;
  Result act(const Args&) { return {double(++calls)}; }
};
struct In {
  std::string q;
};
struct Out {
  std::string a;
};
struct Agent {
  static constexpr std::string_view prompt = "p";
  covenant::toolset<Mutating> tools;
  Out forward(const In&, const covenant::outcome<Out>& o) const { return o.result.value_or(Out{}); }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Agent> c{e};
  return 0;
}
