// Every schema of the BAML conformance corpus (../shared/conformance/baml/corpus.jsonl) loads with
// the schema-file reader, and every target type expression builds a model that exports to a
// prompt and a JSON Schema.
#include <covenant/types/json_schema.hpp>
#include <covenant/types/prompt_format.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <boost/json/parse.hpp>
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <string>

namespace {

// Cases the reader cannot load, with the reason. Empty: every case loads.
const std::map<std::string, std::string> known_unloadable = {};

TEST(BamlCorpus, EverySchemaLoadsAndEveryTargetParses) {
  std::ifstream in(std::string(COVENANT_SHARED_DIR) + "/conformance/baml/corpus.jsonl");
  if (!in) GTEST_SKIP() << "conformance corpus absent";
  std::string line;
  std::size_t cases = 0;
  std::size_t loaded = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const boost::json::value row = boost::json::parse(line);
    const std::string id(row.at("id").as_string());
    const std::string schema_text(row.at("schema_baml").as_string());
    const std::string target(row.at("target").as_string());
    ++cases;
    auto r = covenant::schema_set::try_parse(schema_text, {.file = id});
    std::string problem;
    if (!r.ok()) {
      problem = covenant::render_diagnostics(r.issues);
    } else {
      auto found = r.set.try_model_for(target);
      const std::optional<covenant::schema::model>& m = found.model;
      if (!found.ok()) {
        problem = "target " + target + ": " + covenant::render_diagnostics(found.issues);
      } else {
        EXPECT_FALSE(covenant::prompt_text(*m).empty()) << id;
        EXPECT_TRUE(covenant::to_json_schema(*m).is_object()) << id;
        EXPECT_TRUE(covenant::check_model(*m).empty()) << id << "\n" << covenant::render_diagnostics(covenant::check_model(*m));
      }
    }
    if (known_unloadable.count(id) != 0) {
      EXPECT_FALSE(problem.empty()) << id << " now loads: remove it from known_unloadable";
      continue;
    }
    EXPECT_TRUE(problem.empty()) << id << "\n" << problem;
    if (problem.empty()) ++loaded;
  }
  EXPECT_EQ(cases, 423u);
  EXPECT_EQ(loaded + known_unloadable.size(), cases);
  std::cout << "BAML corpus: " << loaded << "/" << cases << " schemas and targets load\n";
}

}  // namespace
