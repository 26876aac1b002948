#include "covenant/contract/observer.hpp"

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>

namespace covenant {

std::string make_query_id() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::uint64_t x = gen();
  std::string id(16, '0');
  for (int i = 15; i >= 0; --i, x >>= 4) id[static_cast<std::size_t>(i)] = hex[x & 15];
  return id;
}

}  // namespace covenant
