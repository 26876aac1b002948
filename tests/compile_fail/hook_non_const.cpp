// expect: forward must be a const member function
// Hooks must be const: a contract may run on many threads at once.
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
  Out forward(const In&, const covenant::outcome<Out>& o) { return o.result.value_or(Out{}); }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Bad> c{e};
  return 0;
}
