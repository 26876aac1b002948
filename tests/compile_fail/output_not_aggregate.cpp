// expect: output type must be a plain aggregate struct
// Input and output types must be plain aggregates (no constructors), so they can be reflected.
#include <covenant/contract/contract.hpp>
#include <covenant/testing/testing.hpp>

#include <string>

struct In {
  std::string q;
};
class Out {
 public:
  explicit Out(std::string a) : a_(std::move(a)) {}

 private:
  std::string a_;
};
struct Bad {
  static constexpr std::string_view prompt = "p";
  Out forward(const In&, const covenant::outcome<Out>&) const { return Out{"x"}; }
};

int main() {
  covenant::testing::scripted_engine e;
  covenant::contract<Bad> c{e};
  return 0;
}
