// expect: an Expression needs a fixed task prompt
// An Expression says what it does with a fixed prompt.
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
  Out forward(const In&, const covenant::outcome<Out>& o) const { return o.result.value_or(Out{}); }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Bad> c{e};
  return 0;
}
