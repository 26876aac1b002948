// expect: act must take `const Input&`
// act() must take the type forward takes.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>

#include <string>

struct In {
  std::string q;
};
struct Other {
  int n = 0;
};
struct Out {
  std::string a;
};
struct Bad {
  static constexpr std::string_view prompt = "p";
  Other act(const Other& o) const { return o; }
  Out forward(const In&, const covenant::outcome<Out>& o) const { return o.result.value_or(Out{}); }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Bad> c{e};
  return 0;
}
