// Answers with resources whose links are checked: each url must answer over HTTP (HEAD, or GET
// when HEAD is refused; a few redirects; a timeout). A resource whose link does not answer is a
// likely hallucination: it is dropped with a warning log line naming it, the order of the rest
// kept; when every listed resource is dropped the call fails with the reason
// "no_valid_resources"; an answer that lists no resources at all stays a success.
#pragma once

#include <covenant/types/describe.hpp>
#include <covenant/contract/link_verifier.hpp>
#include <covenant/contract/tool_check.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace models {

struct Resource {
  std::string title;
  std::string url;
};

struct ResourcefulAnswer {
  std::string answer;
  std::vector<Resource> resources;
};

/// The verifier the url check uses; `reset` replaces it (at start, before any call).
inline covenant::link_verifier& resource_verifier(std::optional<covenant::link_verifier_options> reset = std::nullopt) {
  static covenant::link_verifier verifier{covenant::link_verifier_options{
      .timeout = std::chrono::seconds(3), .max_redirects = 3, .max_in_flight = 8, .user_agent = "covenant-resource-filter"}};
  if (reset) verifier = covenant::link_verifier(*reset);
  return verifier;
}

/// Whether `url` answers (the tool check's predicate).
inline bool link_answers(const std::string& url) { return resource_verifier().check(url).ok; }

}  // namespace models

template <>
struct covenant::describe<models::Resource> {
  static constexpr std::string_view description = "A document that supports the answer.";
  static constexpr auto fields = covenant::fields<models::Resource>(
      covenant::field<&models::Resource::title>("The document's title.", covenant::non_empty{}),
      covenant::field<&models::Resource::url>(
          "Where the document is (http or https).",
          covenant::on_fail::filter(covenant::url{}, "no_valid_resources"),
          covenant::on_fail::filter(covenant::tool_check{models::link_answers, "must be a link that answers",
                                                         {.max_concurrency = 8, .log_failures_as = "likely hallucination"}},
                                    "no_valid_resources")));
};

template <>
struct covenant::describe<models::ResourcefulAnswer> {
  static constexpr auto fields = covenant::fields<models::ResourcefulAnswer>(
      covenant::field<&models::ResourcefulAnswer::answer>("The answer.", covenant::non_empty{}),
      covenant::field<&models::ResourcefulAnswer::resources>("Documents that support the answer, most useful first."));
};
