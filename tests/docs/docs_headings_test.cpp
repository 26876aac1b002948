// No documentation page (README.md, docs/*.md) has two headings with the same text at the same
// level: a section pasted twice, or an old copy left beside the new one, fails here (and two such
// headings would share one link anchor). Fenced code blocks are skipped (a `# comment` in a shell
// block is no heading).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct heading {
  int level = 0;
  std::string text;
  int line = 0;
};

/// The ATX headings (`#` to `######`) of a Markdown text outside fenced code blocks (``` or ~~~,
/// indented at most three spaces, closed by a fence of the same character at least as long).
std::vector<heading> headings(const std::string& markdown) {
  std::vector<heading> out;
  std::istringstream lines(markdown);
  std::string line;
  int number = 0;
  char fence = 0;
  std::size_t fence_length = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos || indent > 3) continue;
    const std::string rest = line.substr(indent);
    if (rest[0] == '`' || rest[0] == '~') {
      const std::size_t run = rest.find_first_not_of(rest[0]);
      const std::size_t length = run == std::string::npos ? rest.size() : run;
      if (length >= 3) {
        if (fence == 0) {
          fence = rest[0];
          fence_length = length;
        } else if (rest[0] == fence && length >= fence_length &&
                   rest.find_first_not_of(" \t", length) == std::string::npos) {
          fence = 0;
        }
        continue;
      }
    }
    if (fence != 0 || rest[0] != '#') continue;
    const std::size_t hashes = rest.find_first_not_of('#');
    const std::size_t level = hashes == std::string::npos ? rest.size() : hashes;
    if (level > 6 || (hashes != std::string::npos && rest[hashes] != ' ' && rest[hashes] != '\t')) continue;
    std::string text = hashes == std::string::npos ? std::string() : rest.substr(hashes);
    // Trim, and drop an optional closing sequence of #s.
    auto trim = [](std::string& s) {
      const std::size_t b = s.find_first_not_of(" \t");
      const std::size_t e = s.find_last_not_of(" \t");
      s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    trim(text);
    const std::size_t closing = text.find_last_not_of('#');
    if (closing == std::string::npos) text.clear();
    else if (closing + 1 < text.size() && (text[closing] == ' ' || text[closing] == '\t')) text.resize(closing);
    trim(text);
    out.push_back({static_cast<int>(level), text, number});
  }
  return out;
}

/// "page:line and line: ## text" for each heading text seen more than once at one level.
std::vector<std::string> duplicates(const std::string& page, const std::vector<heading>& hs) {
  std::map<std::pair<int, std::string>, std::vector<int>> seen;
  for (const heading& h : hs) seen[{h.level, h.text}].push_back(h.line);
  std::vector<std::string> out;
  for (const auto& [key, lines] : seen) {
    if (lines.size() < 2) continue;
    std::string where = page + ": " + std::string(static_cast<std::size_t>(key.first), '#') + " " + key.second +
                        " at lines";
    for (int l : lines) {
      where += ' ';
      where += std::to_string(l);
    }
    out.push_back(where);
  }
  return out;
}

TEST(DocsHeadings, TheScannerSkipsFencesAndReadsEveryLevel) {
  const std::string page =
      "# Title\n"
      "## A\n"
      "```sh\n"
      "# not a heading\n"
      "## A\n"
      "```\n"
      "~~~~\n"
      "```\n"
      "## A\n"
      "~~~~\n"
      "### A ##\n"
      "#hashtag\n"
      "   ## B\n"
      "    ## indented code\n"
      "## A\n";
  const std::vector<heading> hs = headings(page);
  ASSERT_EQ(hs.size(), 5u);
  EXPECT_EQ(hs[0].text, "Title");
  EXPECT_EQ(hs[2].level, 3);
  EXPECT_EQ(hs[2].text, "A");
  EXPECT_EQ(hs[3].text, "B");
  const std::vector<std::string> found = duplicates("page.md", hs);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0], "page.md: ## A at lines 2 15");
}

TEST(DocsHeadings, NoPageHasTwoHeadingsWithTheSameTextAtTheSameLevel) {
  const std::filesystem::path root = COVENANT_SOURCE_DIR;
  std::vector<std::filesystem::path> pages = {root / "README.md"};
  for (const auto& entry : std::filesystem::directory_iterator(root / "docs"))
    if (entry.path().extension() == ".md") pages.push_back(entry.path());
  std::sort(pages.begin() + 1, pages.end());
  ASSERT_GT(pages.size(), 5u);
  std::size_t seen = 0;
  for (const auto& page : pages) {
    const std::string text = read_file(page);
    ASSERT_FALSE(text.empty()) << page;
    const std::vector<heading> hs = headings(text);
    seen += hs.size();
    const std::string name = std::filesystem::relative(page, root).string();
    for (const std::string& d : duplicates(name, hs)) ADD_FAILURE() << "two headings with the same text: " << d;
  }
  EXPECT_GT(seen, 50u);  // the scan found the headings (guards against a scanner that finds none)
}

}  // namespace
