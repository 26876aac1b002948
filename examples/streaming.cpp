// The flagship question answered while the answer is being written: contract::stream shows the
// typed partial answer as it grows, starts over when an attempt is rejected, and ends in forward.
//
// Offline (default) a scripted model streams its replies in small pieces: the first reply claims
// a coverage above 1, which is stopped as soon as that number is written; the second is valid.
// With COVENANT_BASE_URL (and COVENANT_API_KEY, COVENANT_MODEL) set, it asks that
// OpenAI-compatible endpoint instead.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/engine/logging.hpp>
#include <covenant/testing/testing.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "models/multidoc_qa.hpp"

namespace {

std::vector<qa::Document> corpus() {
  return {
      {"B2",
       "A vector database stores embeddings, numeric representations of text. It answers nearest-neighbour "
       "queries over those embeddings in milliseconds. This makes semantic search practical: results match the "
       "meaning of a query, not only its words."},
      {"C3",
       "Hybrid search combines keyword matching with dense vector similarity. The combination improves both "
       "recall and precision on specialised collections."},
  };
}

std::vector<covenant::testing::step> script() {
  return {
      // Coverage 1.3 is out of range: the stream is stopped right after it.
      R"({"coverage_score": 1.3, "answer": "Vector databases are magic and answer everything.", "evidence": []})",
      R"({"coverage_score": 0.9, "answer": "A vector database stores embeddings of texts and answers nearest-neighbour queries over them in milliseconds, so a search returns passages whose meaning matches the query even when the words differ.", "evidence": [{"doc_id": "B2", "snippet": "It answers nearest-neighbour queries over those embeddings in milliseconds."}, {"doc_id": "B2", "snippet": "This makes semantic search practical: results match the meaning of a query, not only its words."}]})",
  };
}

}  // namespace

int main() {
  const char* base_url = std::getenv("COVENANT_BASE_URL");
  const bool online = base_url != nullptr && *base_url != '\0';
  covenant::testing::scripted_engine scripted{script()};
  scripted.stream_in_chunks(6, std::chrono::milliseconds(4));
  std::unique_ptr<covenant::http_engine> http;
  if (online) {
    try {
      http = std::make_unique<covenant::http_engine>(covenant::http_engine::options_from_env());
    } catch (const std::exception& e) {
      std::cerr << "cannot use COVENANT_BASE_URL: " << e.what() << "\n";
      return EXIT_FAILURE;
    }
  }
  covenant::engine& model = online ? static_cast<covenant::engine&>(*http) : scripted;

  covenant::contract_options options;
  options.retry = {.tries = 2, .delay = std::chrono::milliseconds(200)};
  options.graceful = true;
  if (!online) options.sleep = [](std::chrono::nanoseconds) {};
  covenant::set_log_level(covenant::log_level::warn);
  const covenant::contract<qa::MultiDocQA> agent{model, options, qa::MultiDocQA{.min_coverage = 0.6}};
  const qa::MultiDocQAInput input{"Why are vector databases useful for semantic search?", corpus(), 2};

  std::cout << "question: " << input.query << "\n";
  std::size_t shown = 0;  // characters of the answer printed so far
  auto done = agent.stream(input, [&](const covenant::stream_update<qa::AnswerWithEvidence>& u) {
    using kind = covenant::stream_update<qa::AnswerWithEvidence>::kind;
    if (u.what == kind::attempt_started) {
      if (u.rejected != nullptr) {
        std::cout << "\n[attempt " << u.rejected->number << " stopped: " << u.rejected->issues.front().to_string()
                  << "; asking again]\n";
      }
      std::cout << "answer: " << std::flush;
      shown = 0;
      return;
    }
    const std::string& answer = u.partial->value().answer;
    if (answer.size() > shown) {
      std::cout << answer.substr(shown) << std::flush;
      shown = answer.size();
    }
  });
  auto [answer, outcome] = done.get();
  std::cout << "\n\n" << outcome.summary() << "\n";
  std::cout << "evidence:\n";
  for (const auto& e : answer.evidence) std::cout << "  (Doc " << e.doc_id << ") " << e.snippet << "\n";
  std::cout << "streams stopped early: " << agent.stats().early_stops() << "\n";
  return outcome.success ? EXIT_SUCCESS : EXIT_FAILURE;
}
