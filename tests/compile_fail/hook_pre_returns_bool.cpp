// expect: pre must be .void pre.const Input.. const. and signal violations
// pre() signals violations by throwing covenant::violation, not by returning a value.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>

#include <string>

struct In {
  std::string q;
};
struct Out {
  std::string a;
};
struct Bad {
  static constexpr std::string_view prompt = "p";
  bool pre(const In& in) const { return !in.q.empty(); }
  Out forward(const In&, const covenant::outcome<Out>& o) const { return o.result.value_or(Out{}); }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Bad> c{e};
  return 0;
}
