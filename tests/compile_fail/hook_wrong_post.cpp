// expect: post must take `const Output&` first
// post() must check the output type that forward's outcome holds.
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
  void post(const In&) const {}
  Out forward(const In&, const covenant::outcome<Out>& o) const { return o.result.value_or(Out{}); }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Bad> c{e};
  return 0;
}
