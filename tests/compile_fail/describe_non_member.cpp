// expect: names a member of another type
// Side-car metadata naming a member of another struct does not compile.
#include <covenant/types/describe.hpp>

#include <string>

struct Answer {
  std::string answer;
};
struct Other {
  std::string answer;
};

template <>
struct covenant::describe<Answer> {
  static constexpr auto fields = covenant::fields<Answer>(covenant::field<&Other::answer>("Not ours."));
};

int main() { return 0; }
