// expect: covenant::range applies to numeric fields
// A validator on a field of the wrong type is refused when the schema is built.
#include <covenant/types/schema_of.hpp>

#include <string>

struct Answer {
  std::string answer;
};

template <>
struct covenant::describe<Answer> {
  static constexpr auto fields =
      covenant::fields<Answer>(covenant::field<&Answer::answer>("Text.", covenant::range{0.0, 1.0}));
};

int main() { return static_cast<int>(covenant::schema_of<Answer>().defs.size()); }
