// The bytes the peer benchmarks are measured on (../shared/bench/python/samples): empty when
// the file is missing, and each benchmark then skips with that error.
#pragma once

#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace bench {

inline std::string sample(std::string_view name) {
  std::ifstream f(std::string(COVENANT_SHARED_DIR) + "/bench/python/samples/" + std::string(name), std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace bench
