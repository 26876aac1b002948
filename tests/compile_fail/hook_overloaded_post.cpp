// expect: post must be one non-overloaded, non-template member function
// An overloaded post() could never be called by the contract: refused, not silently skipped.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>

#include <string>

struct In {
  std::string q;
};
struct Out {
  std::string a;
};
struct Overloaded {
  static constexpr std::string_view prompt = "p";
  void post(const Out&) const {}
  void post(const Out&, int) const {}
  Out forward(const In&, const covenant::outcome<Out>& o) const { return o.result.value_or(Out{}); }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Overloaded> c{e};
  return 0;
}
