// covenant/covenant.hpp includes every public header (include/covenant/<layer>/*.hpp) except the GoogleTest
// helpers, which need GoogleTest: this reads the headers and fails when one is missing from it.
#include <covenant/covenant.hpp>  // and all of it compiles in one translation unit

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

bool needs_gtest(const std::string& header_text) {
  return header_text.find("#include <gtest/") != std::string::npos ||
         header_text.find("#include <gmock/") != std::string::npos;
}

TEST(UmbrellaHeader, IncludesEveryPublicHeader) {
  const std::filesystem::path dir = std::filesystem::path(COVENANT_SOURCE_DIR) / "include" / "covenant";
  const std::string umbrella = read_file(dir / "covenant.hpp");
  ASSERT_FALSE(umbrella.empty());
  std::size_t checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".hpp") continue;
    const std::string name = entry.path().lexically_relative(dir).generic_string();
    if (name == "covenant.hpp" || name.find("/detail/") != std::string::npos) continue;
    const bool included = umbrella.find("#include \"covenant/" + name + "\"") != std::string::npos;
    if (needs_gtest(read_file(entry.path()))) {
      EXPECT_FALSE(included) << name << " needs GoogleTest: covenant.hpp must not include it";
      EXPECT_NE(umbrella.find(name), std::string::npos)
          << name << " needs GoogleTest: covenant.hpp's comment should name it";
    } else {
      EXPECT_TRUE(included) << "covenant/covenant.hpp does not include covenant/" << name;
    }
    ++checked;
  }
  EXPECT_GT(checked, 40u);  // the scan found the headers
}

}  // namespace
