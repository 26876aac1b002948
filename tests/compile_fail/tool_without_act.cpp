// expect: a tool needs one non-overloaded, non-template member
// A tool must have act(), the code that runs it.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>

#include <string>

struct Args {
  std::string city;
};
struct NoAct {
  static constexpr std::string_view name = "no_act";
  static constexpr std::string_view description = "d";
  void pre(const Args&) const {}
};
struct In {
  std::string q;
};
struct Out {
  std::string a;
};
struct Agent {
  static constexpr std::string_view prompt = "p";
  covenant::toolset<NoAct> tools;
  Out forward(const In&, const covenant::outcome<Out>& o) const { return o.result.value_or(Out{}); }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Agent> c{e};
  return 0;
}
