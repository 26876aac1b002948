// expect: this limit is fixed when the library is built
// A default compiled into the library cannot be redefined by a program: its headers and the
// library would disagree (covenant/types/config.hpp; the CMake option COVENANT_SCHEMA_MAX_DEPTH sets it).
#define COVENANT_SCHEMA_MAX_DEPTH 8
#include <covenant/runtime/schema_file.hpp>

int main() { return 0; }
