// expect: pre must be one non-overloaded, non-template member function
// A member template pre() could never be called by the contract: refused, not silently skipped.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>

#include <string>

struct In {
  std::string q;
};
struct Out {
  std::string a;
};
struct Templated {
  static constexpr std::string_view prompt = "p";
  template <class T>
  void pre(const T&) const {}
  Out forward(const In&, const covenant::outcome<Out>& o) const { return o.result.value_or(Out{}); }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Templated> c{e};
  return 0;
}
