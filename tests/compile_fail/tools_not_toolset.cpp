// expect: `tools` member must be a covenant::toolset
// An Expression names its tools with covenant::toolset, not a container of its own.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>

#include <string>
#include <vector>

struct In {
  std::string q;
};
struct Out {
  std::string a;
};
struct Agent {
  static constexpr std::string_view prompt = "p";
  std::vector<std::string> tools{"search"};
  Out forward(const In&, const covenant::outcome<Out>& o) const { return o.result.value_or(Out{}); }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Agent> c{e};
  return 0;
}
