// The flagship example: a multi-document QA agent under contract (examples/models/multidoc_qa.hpp).
//
// Offline (default) it replays a recorded conversation (examples/demo.cassette.jsonl, a cassette:
// covenant/engine/cassette.hpp) whose first reply is cut off, whose second reply breaks the agent's
// coverage rule, and whose third reply is valid, and prints the conversation, the outcome and the
// per-stage timings.
//
//     demo                          replay the cassette (no network)
//     demo --cassette FILE          replay another cassette
//     demo --scripted               the hand-written script instead (covenant/testing/testing.hpp)
//     demo --record FILE            record what the model (scripted, or online) answers into FILE
// With COVENANT_BASE_URL set (and COVENANT_PROVIDER, COVENANT_API_KEY, COVENANT_MODEL) it talks to
// that server instead; `--record FILE` then records a new cassette from it.
#include <covenant/engine/cassette.hpp>
#include <covenant/contract/contract.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/testing/testing.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "models/multidoc_qa.hpp"
#include "models/transcript.hpp"

// Where the recorded conversation is found: the build passes the source tree; a demo compiled on
// its own (as benchmarks/compile_time.sh does) looks in examples/ under the current directory.
#ifndef COVENANT_SOURCE_DIR
#define COVENANT_SOURCE_DIR "."
#endif

namespace {

std::vector<qa::Document> corpus() {
  return {
      {"A1",
       "Symbolic reasoning systems manipulate explicit rules and facts. They make every step of an inference "
       "inspectable. Modern hybrids pair them with statistical learning."},
      {"B2",
       "A vector database stores embeddings, numeric representations of text. It answers nearest-neighbour "
       "queries over those embeddings in milliseconds. This makes semantic search practical: results match the "
       "meaning of a query, not only its words."},
      {"C3",
       "Hybrid search combines keyword matching with dense vector similarity. The combination improves both "
       "recall and precision on specialised collections."},
  };
}

// What the scripted model answers, in order.
std::vector<covenant::testing::step> script() {
  using covenant::testing::step;
  return {
      // 1. cut off mid-output: not readable as the output type
      step(R"({"answer": "Vector databases keep embeddings of documents, so text whose meaning is close to a query is found quickly.", "evidence": [{"doc_id": "B2", "snippet": "It answers nearest-neighbour queries)",
           {412, 48}, "length"),
      // 2. valid JSON, but the coverage is below the agent's minimum: post() rejects it
      step(R"({"answer": "Vector databases find text by meaning.", "evidence": [{"doc_id": "B2", "snippet": "A vector database stores embeddings, numeric representations of text."}], "coverage_score": 0.45})",
           {530, 41}),
      // 3. valid and well supported
      step(R"({"answer": "A vector database stores embeddings of texts and answers nearest-neighbour queries over them in milliseconds, so a search returns passages whose meaning matches the query even when the words differ.", "evidence": [{"doc_id": "B2", "snippet": "It answers nearest-neighbour queries over those embeddings in milliseconds."}, {"doc_id": "B2", "snippet": "This makes semantic search practical: results match the meaning of a query, not only its words."}], "coverage_score": 0.9})",
           {655, 77}),
  };
}

void print_rule(const char* title) { std::cout << "\n=== " << title << " ===\n"; }


int usage() {
  std::cerr << "usage: demo [--scripted | --cassette FILE] [--record FILE]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool scripted_run = false;
  std::string cassette_file = COVENANT_SOURCE_DIR "/examples/demo.cassette.jsonl";
  std::string record_file;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--scripted") scripted_run = true;
    else if (a == "--cassette" && i + 1 < argc) cassette_file = argv[++i];
    else if (a == "--record" && i + 1 < argc) record_file = argv[++i];
    else return usage();
  }

  // With COVENANT_BASE_URL set, talk to that server; otherwise replay the recorded conversation
  // (or run the hand-written script).
  const char* base_url = std::getenv("COVENANT_BASE_URL");
  const bool online = base_url != nullptr && *base_url != '\0';
  covenant::testing::scripted_engine scripted{script()};
  std::unique_ptr<covenant::engine> source;  // the HTTP engine or the replayed cassette
  std::unique_ptr<covenant::engine> recorder;
  try {
    if (online)
      source = std::make_unique<covenant::http_engine>(covenant::http_engine::options_from_env());
    else if (!scripted_run && record_file.empty())
      source = std::make_unique<covenant::cassette_engine>(covenant::cassette_options{.path = cassette_file});
    covenant::engine& answering = source ? *source : scripted;
    if (!record_file.empty()) {
      const char* key = std::getenv("COVENANT_API_KEY");
      recorder = std::make_unique<covenant::cassette_engine>(
          covenant::cassette_options{.path = record_file,
                                     .mode = covenant::cassette_mode::record,
                                     .redact = {key != nullptr ? std::string(key) : std::string()}},
          answering);
    }
  } catch (const std::exception& e) {
    std::cerr << "demo: " << e.what() << "\n";
    return EXIT_FAILURE;
  }
  examples::transcript model{recorder ? *recorder : source ? *source : scripted};
  const char* where = online ? "online" : !record_file.empty() || scripted_run ? "offline, scripted model"
                                                                               : "offline, recorded conversation";

  covenant::contract_options options;
  options.pre_remedy = true;
  options.post_remedy = true;
  options.accumulate_errors = true;
  options.retry = {.tries = 3,
                   .delay = std::chrono::milliseconds(400),
                   .backoff = 1.8,
                   .max_delay = std::chrono::seconds(4),
                   .jitter = 0.15};
  options.graceful = true;
  covenant::testing::seeded_random jitter{2024};
  if (!online) {
    // Offline: the waits of the retry schedule are recorded on each attempt instead of slept.
    options.sleep = [](std::chrono::nanoseconds) {};
    options.random = [&jitter] { return jitter(); };
  }

  const covenant::contract<qa::MultiDocQA> agent{model, options, qa::MultiDocQA{.min_coverage = 0.6}};

  const qa::MultiDocQAInput input{"Why are vector databases useful for semantic search?", corpus(), 2};

  print_rule((std::string("task (") + where + ")").c_str());
  std::cout << "question: " << input.query << "\ndocuments: A1, B2, C3; at most " << *input.max_snippets
            << " snippets; minimum coverage 0.6\n";

  auto [answer, outcome] = agent.run(input);

  print_rule("conversation");
  for (std::size_t i = 0; i < outcome.attempts.size(); ++i) {
    const auto& a = outcome.attempts[i];
    std::cout << "--- attempt " << a.number;
    if (a.waited.count() > 0)
      std::cout << " (after waiting " << std::chrono::duration<double>(a.waited).count() << " s)";
    std::cout << " ---\n";
    {
      const auto request = model.request(i);
      if (i == 0)
        std::cout << "[system]\n" << request.messages[0].content << "\n[user]\n" << request.messages[1].content << "\n";
      else
        std::cout << "[user, corrective]\n" << request.messages.back().content << "\n";
    }
    std::cout << "[model" << (a.finish_reason == "length" ? ", cut off by its token limit" : "") << "]\n"
              << a.text << "\n";
    for (const auto& n : a.notes) std::cout << "  note: " << n.to_string() << "\n";
    if (a.issues.empty()) {
      std::cout << "  accepted\n";
    } else {
      std::cout << "  rejected:\n";
      for (const auto& issue : a.issues)
        std::cout << "    " << issue.to_string() << "   [" << covenant::to_string(issue.code) << "]\n";
    }
  }

  print_rule("outcome");
  std::cout << outcome.summary() << "\n";
  std::cout << "tokens: " << outcome.usage.input_tokens << " in, " << outcome.usage.output_tokens << " out (all "
            << outcome.attempts.size() << " attempts)\n";
  for (const auto& n : outcome.notes) std::cout << "note: " << n.to_string() << "\n";

  print_rule("answer (from forward)");
  std::cout << answer.answer << "\ncoverage: " << answer.coverage_score << "\n";
  for (const auto& e : answer.evidence) std::cout << "  (Doc " << e.doc_id << ") " << e.snippet << "\n";

  print_rule("per-stage timings");
  agent.stats().print(std::cout);
  return outcome.success ? EXIT_SUCCESS : EXIT_FAILURE;
}
