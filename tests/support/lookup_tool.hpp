// The tool of the research agents of the telemetry tests (the audit log, the metrics): `lookup`,
// whose pre() refuses an empty topic and whose act() finds "about <topic>".
#pragma once

#include <covenant/contract/contract.hpp>

#include <string>
#include <string_view>

namespace covenant_test::lookup {

struct LookupArgs {
  std::string topic;
};
struct Found {
  std::string text;
};
struct Lookup {
  static constexpr std::string_view name = "lookup";
  static constexpr std::string_view description = "Looks a topic up.";
  void pre(const LookupArgs& a) const {
    if (a.topic.empty()) throw covenant::violation("topic", "must name a topic");
  }
  Found act(const LookupArgs& a) const { return {"about " + a.topic}; }
};

}  // namespace covenant_test::lookup
