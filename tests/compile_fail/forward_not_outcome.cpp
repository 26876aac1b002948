// expect: forward's second parameter must be `const covenant::outcome<Output>&`
// forward() gets the call's outcome, not a bare output.
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
  Out forward(const In&, const Out& o) const { return o; }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Bad> c{e};
  return 0;
}
