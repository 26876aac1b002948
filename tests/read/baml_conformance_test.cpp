// Conformance with BAML's schema-aligned parser: every case of the corpus taken from the test suite
// of BAML's `jsonish` parser (../shared/conformance/baml/corpus.jsonl, read at test time) is read
// with try_read_dynamic (coerce level; partial cases as streams) against its schema and target type,
// and the value is compared with the one BAML's suite expects.
//
// Cases that do not pass are listed, each with its reason, in baml_conformance_expected_failures.txt
// beside this file. The test fails when that list is stale in either direction (a listed case now
// passes, or a case that is not listed fails), naming the ids, and when the pass rates of the
// in-scope cases fall below the targets (97% of final cases, 90% of partial ones).
//
// COVENANT_BAML_REPORT=<file> writes one JSON line per case (id, verdict, value, issues, notes),
// for looking into failures.
#include <covenant/read/dynamic.hpp>
#include <covenant/runtime/schema_file.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

namespace json = boost::json;

// Categories left out, and why (see "Measured against BAML's test suite" in docs/lenient.md).
const std::map<std::string, std::string> out_of_scope = {
    {"test_xml", "XML replies: not a JSON format (BAML 0.226 itself reads them as text)"},
    {"test_toon", "TOON replies: not a JSON format (BAML 0.226 itself reads them as text)"},
};

bool is_number(const json::value& v) { return v.is_int64() || v.is_uint64() || v.is_double(); }

double as_double(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  return v.get_double();
}

// BAML reports a field with @check as {"value": ..., "checks": {...}} and one with
// @stream.with_state as {"value": ..., "state": ...}: compare the value.
const json::value& checked_value(const json::value& v) {
  if (v.is_object()) {
    const auto& o = v.get_object();
    if (o.size() == 2 && o.contains("value") && (o.contains("checks") || o.contains("state"))) return o.at("value");
  }
  return v;
}

// What BAML writes for a member covenant leaves out: null for an absent optional field or a @skip
// field; in partial mode also [] and {} for a list or map not written yet (covenant leaves such a
// field out and notes it as "not written yet").
bool placeholder(const json::value& expected, bool partial) {
  const json::value& v = checked_value(expected);
  if (v.is_null()) return true;
  if (!partial) return false;
  return (v.is_array() && v.get_array().empty()) || (v.is_object() && v.get_object().empty()) ||
         (v.is_object() && std::all_of(v.get_object().begin(), v.get_object().end(),
                                       [&](const auto& kv) { return placeholder(kv.value(), partial); }));
}

// Whether `got` is the value `expected` describes: numbers compared numerically, @check fields on
// their value, and an object member that is a placeholder in `expected` may be absent from `got`.
bool matches(const json::value& expected_in, const json::value& got, bool partial) {
  const json::value& expected = checked_value(expected_in);
  if (is_number(expected) && is_number(got)) {
    const double a = as_double(expected);
    const double b = as_double(got);
    return a == b || std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
  }
  if (expected.kind() != got.kind()) return false;
  if (expected.is_array()) {
    const auto& x = expected.get_array();
    const auto& y = got.get_array();
    if (x.size() != y.size()) return false;
    for (std::size_t i = 0; i < x.size(); ++i)
      if (!matches(x[i], y[i], partial)) return false;
    return true;
  }
  if (expected.is_object()) {
    const auto& x = expected.get_object();
    const auto& y = got.get_object();
    for (const auto& kv : x) {
      const auto* o = y.if_contains(kv.key());
      if (o == nullptr ? !placeholder(kv.value(), partial) : !matches(kv.value(), *o, partial)) return false;
    }
    for (const auto& kv : y)
      if (!x.contains(kv.key())) return false;
    return true;
  }
  return expected == got;
}

// id -> reason, from the expected-failures file.
std::map<std::string, std::string> load_expected_failures(const std::string& file) {
  std::map<std::string, std::string> out;
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    const std::string id = line.substr(0, tab);
    EXPECT_NE(tab, std::string::npos) << file << ": no reason given for " << id;
    EXPECT_EQ(out.count(id), 0u) << file << ": " << id << " is listed twice";
    out[id] = tab == std::string::npos ? std::string() : line.substr(tab + 1);
    EXPECT_FALSE(out[id].empty()) << file << ": no reason given for " << id;
  }
  return out;
}

struct tally {
  std::size_t cases = 0;
  std::size_t passed = 0;
  std::size_t intended = 0;  // listed as an intended difference (or a required one)
  std::size_t required = 0;  // listed as required by covenant's specification: left out of the rate
  [[nodiscard]] double rate() const { return cases == 0 ? 1.0 : static_cast<double>(passed) / cases; }
  // Passed, of the cases whose expectation covenant's specification does not contradict.
  [[nodiscard]] double pass_rate() const {
    return cases == required ? 1.0 : static_cast<double>(passed) / static_cast<double>(cases - required);
  }
  // Passed, or differs on purpose.
  [[nodiscard]] double conforming() const {
    return cases == 0 ? 1.0 : static_cast<double>(passed + intended) / cases;
  }
};

std::string percent(double rate) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", rate * 100);
  return buf;
}

// Targets: 97% of the final cases and 90% of the partial ones pass, out of the cases whose
// expectation covenant's specification does not contradict ("required:" differences).
constexpr double final_target = 0.97;
constexpr double partial_target = 0.90;

TEST(BamlConformance, ReadsTheCorpusAsBamlDoes) {
  std::ifstream in(std::string(COVENANT_SHARED_DIR) + "/conformance/baml/corpus.jsonl");
  if (!in) GTEST_SKIP() << "conformance corpus absent";
  const std::string list_file = std::string(COVENANT_SOURCE_DIR) + "/tests/read/baml_conformance_expected_failures.txt";
  const std::map<std::string, std::string> expected_failures = load_expected_failures(list_file);

  std::ofstream report;
  if (const char* file = std::getenv("COVENANT_BAML_REPORT")) report.open(file);

  std::set<std::string> ids;
  std::vector<std::string> unexpected_failures;
  std::vector<std::string> unexpected_passes;
  std::vector<std::string> listed_out_of_scope;
  tally final_mode;
  tally partial_mode;
  std::size_t excluded = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const json::value row = json::parse(line);
    const std::string id(row.at("id").as_string());
    ids.insert(id);
    if (out_of_scope.count(std::string(row.at("category").as_string())) != 0) {
      ++excluded;
      if (expected_failures.count(id) != 0) listed_out_of_scope.push_back(id);
      continue;
    }
    const bool partial = row.at("mode").as_string() == "partial";
    const bool expect_ok = row.at("expect_ok").as_bool();
    const json::value& expected = row.at("expected");

    auto loaded = covenant::schema_set::try_parse(std::string(row.at("schema_baml").as_string()), {.file = id});
    ASSERT_TRUE(loaded.ok()) << id << "\n" << covenant::render_diagnostics(loaded.issues);
    auto model = loaded.set.try_model_for(std::string(row.at("target").as_string()));
    ASSERT_TRUE(model.ok()) << id << "\n" << covenant::render_diagnostics(model.issues);

    covenant::read_options options;
    options.partial = partial;
    options.keys = covenant::output_keys::declared;
    const covenant::read_result r = covenant::try_read_dynamic(std::string(row.at("input").as_string()), *model.model, options);

    bool pass = false;
    if (!expect_ok) pass = !r.ok();
    else if (expected.is_null()) pass = r.ok();  // cases that check a score, not a value
    else pass = r.ok() && matches(expected, r.value, partial);

    tally& t = partial ? partial_mode : final_mode;
    ++t.cases;
    if (pass) ++t.passed;
    const bool listed = expected_failures.count(id) != 0;
    if (!pass && listed && expected_failures.at(id).rfind("intended:", 0) == 0) ++t.intended;
    if (!pass && listed && expected_failures.at(id).rfind("required:", 0) == 0) {
      ++t.intended;
      ++t.required;
    }
    if (pass && listed) unexpected_passes.push_back(id);
    if (!pass && !listed) unexpected_failures.push_back(id);

    if (report.is_open()) {
      json::object o;
      o["id"] = id;
      o["pass"] = pass;
      o["listed"] = listed;
      o["value"] = r.value;
      json::array issues;
      for (const auto& i : r.issues) issues.push_back(json::string(i.to_string()));
      o["issues"] = std::move(issues);
      json::array notes;
      for (const auto& n : r.notes) notes.push_back(json::string(n.to_string()));
      o["notes"] = std::move(notes);
      o["expected"] = expected;
      report << json::serialize(o) << "\n";
    }
  }

  std::vector<std::string> unknown;
  for (const auto& [id, reason] : expected_failures)
    if (ids.count(id) == 0) unknown.push_back(id);

  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += "\n  " + x;
    return s;
  };
  EXPECT_TRUE(unexpected_failures.empty())
      << unexpected_failures.size() << " cases fail but are not listed in " << list_file << ":"
      << join(unexpected_failures);
  EXPECT_TRUE(unexpected_passes.empty())
      << unexpected_passes.size() << " listed cases now pass: remove them from " << list_file << ":"
      << join(unexpected_passes);
  EXPECT_TRUE(unknown.empty()) << "listed ids that are not in the corpus:" << join(unknown);
  EXPECT_TRUE(listed_out_of_scope.empty()) << "listed ids of categories out of scope:" << join(listed_out_of_scope);

  auto figures = [&](const char* mode, const tally& t) {
    std::cout << "  " << mode << ": " << t.passed << "/" << t.cases << " pass (" << percent(t.rate()) << "), "
              << t.intended << " intended differences, " << (t.cases - t.passed - t.intended)
              << " other failures; conforming " << percent(t.conforming()) << "; " << t.passed << "/"
              << (t.cases - t.required) << " (" << percent(t.pass_rate()) << ") of the cases the specification "
              << "does not contradict (" << t.required << " required differences)\n";
  };
  std::cout << "BAML conformance (" << excluded << " cases out of scope, " << expected_failures.size()
            << " listed):\n";
  figures("final", final_mode);
  figures("partial", partial_mode);
  EXPECT_GE(final_mode.pass_rate(), final_target) << "final: " << percent(final_mode.pass_rate());
  EXPECT_GE(partial_mode.pass_rate(), partial_target) << "partial: " << percent(partial_mode.pass_rate());
}

}  // namespace
