// docs/contracts.md's reference tables list every public member of the types users touch; this
// reads the headers and fails when a member is missing from the tables.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

/// The body of `struct|class [COVENANT_API] name ... {` up to its matching brace.
std::string class_body(const std::string& header, const std::string& name) {
  const std::regex start("(struct|class) (COVENANT_API )?" + name + "\\b[^;{]*\\{");
  std::smatch m;
  if (!std::regex_search(header, m, start)) return {};
  std::size_t i = static_cast<std::size_t>(m.position(0) + m.length(0));
  const std::size_t begin = i;
  int depth = 1;
  for (; i < header.size() && depth > 0; ++i) {
    if (header[i] == '{') ++depth;
    else if (header[i] == '}') --depth;
  }
  return header.substr(begin, i - begin - 1);
}

/// Names of the public data members and member functions declared at the top level of a class
/// body (constructors, operators other than bool, and private/protected parts left out).
std::set<std::string> public_members(const std::string& body, const std::string& class_name, bool starts_public) {
  std::set<std::string> out;
  bool is_public = starts_public;
  int depth = 0;
  std::istringstream lines(body);
  std::string line;
  const std::regex function(R"(([A-Za-z_][A-Za-z0-9_]*)\s*\()");
  const std::regex data(R"(([A-Za-z_][A-Za-z0-9_]*)\s*(=[^=]|;|\{\}))");
  while (std::getline(lines, line)) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos) continue;
    std::string text = line.substr(first);
    const int before = depth;
    for (char c : text) {
      if (c == '{') ++depth;
      else if (c == '}') --depth;
    }
    if (before != 0) continue;
    if (text.rfind("public:", 0) == 0) is_public = true;
    if (text.rfind("private:", 0) == 0 || text.rfind("protected:", 0) == 0) is_public = false;
    if (!is_public || text.rfind("//", 0) == 0 || text.rfind("using ", 0) == 0 || text.rfind("friend ", 0) == 0 ||
        text.rfind("struct ", 0) == 0 || text.rfind("class ", 0) == 0 || text.rfind("template", 0) == 0 ||
        text.rfind("static_assert", 0) == 0)
      continue;
    if (const auto comment = text.find("//"); comment != std::string::npos) text.resize(comment);
    if (text.find("operator bool") != std::string::npos) {
      out.insert("operator bool");
      continue;
    }
    if (text.find("operator") != std::string::npos) continue;
    std::smatch m;
    if (std::regex_search(text, m, function)) {
      const std::string name = m[1];
      if (name != class_name && name != "explicit" && name != "noexcept") out.insert(name);
      continue;
    }
    if (std::regex_search(text, m, data)) out.insert(m[1]);
  }
  return out;
}

struct checked_type {
  std::string header;
  std::string name;
  bool starts_public;
};

TEST(ReferenceDocs, EveryPublicMemberIsInTheTables) {
  const std::string root = COVENANT_SOURCE_DIR;
  const std::string docs = read_file(root + "/docs/contracts.md");
  ASSERT_FALSE(docs.empty());
  const auto at = docs.find("## Reference: what a call gives you");
  ASSERT_NE(at, std::string::npos);
  const std::string tables = docs.substr(at, docs.find("\n## ", at + 5) - at);
  const std::vector<checked_type> types = {
      {"include/covenant/contract/outcome.hpp", "outcome_base", true}, {"include/covenant/contract/outcome.hpp", "outcome", true},
      {"include/covenant/contract/outcome.hpp", "attempt", true},      {"include/covenant/types/issues.hpp", "issue", true},
      {"include/covenant/types/issues.hpp", "note", true},          {"include/covenant/testing/testing.hpp", "scripted_engine", false},
      {"include/covenant/testing/testing.hpp", "step", true},         {"include/covenant/engine/future.hpp", "future", false},
  };
  std::size_t checked = 0;
  for (const checked_type& t : types) {
    const std::string body = class_body(read_file(root + "/" + t.header), t.name);
    ASSERT_FALSE(body.empty()) << t.name;
    for (const std::string& member : public_members(body, t.name, t.starts_public)) {
      ++checked;
      const std::string as_data = "`" + member + "`";
      const std::string as_call = "`" + member + "(";
      EXPECT_TRUE(tables.find(as_data) != std::string::npos || tables.find(as_call) != std::string::npos)
          << t.name << "::" << member << " is not in docs/contracts.md's reference tables";
    }
  }
  EXPECT_GT(checked, 40u);  // the scan found the members (guards against a parser that finds nothing)
}

}  // namespace
