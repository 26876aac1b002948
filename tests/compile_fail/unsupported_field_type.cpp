// expect: unsupported field type
// Field types covenant cannot read or write are refused at compile time.
#include <covenant/types/schema_of.hpp>

#include <set>
#include <string>

struct Answer {
  std::set<std::string> tags;
};

int main() { return static_cast<int>(covenant::schema_of<Answer>().defs.size()); }
