// The flagship agent: the multi-document QA agent made agentic (examples/models/research_agent.hpp).
//
// The model gets a question and two tools over a small corpus, `search` and `open`, and goes on
// calling them until it answers with evidence. Offline (default) the example replays a recorded
// conversation (examples/research_agent.cassette.jsonl) in which the model searches twice at once,
// opens a document id that does not exist (open's pre() refuses it and the model is told to search
// first), opens the two documents it needs, answers with a snippet that is not in its document word
// for word (post() rejects it and the model is asked again) and then answers right. It prints every
// step with its tool calls, the answer attempts, the answer with its evidence and the outcome.
//
//     research_agent                   replay the cassette (no network)
//     research_agent --cassette FILE   replay another cassette
//     research_agent --record FILE     with COVENANT_BASE_URL set: record the conversation into FILE
// With COVENANT_BASE_URL set (and COVENANT_PROVIDER, COVENANT_API_KEY, COVENANT_MODEL: a model that
// calls tools) it talks to that server instead.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/cassette.hpp>
#include <covenant/engine/http_engine.hpp>

#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/research_agent.hpp"
#include "models/transcript.hpp"

// Where the recorded conversation is found: the build passes the source tree; an example compiled
// on its own looks in examples/ under the current directory.
#ifndef COVENANT_SOURCE_DIR
#define COVENANT_SOURCE_DIR "."
#endif

namespace {

const research::Question question{
    "Which tram line takes visitors to Carrow Observatory, and in which year did that line open?"};

void print_rule(const char* title) { std::cout << "\n=== " << title << " ===\n"; }

// The text on one line, cut after `width` bytes.
std::string shortened(std::string_view text, std::size_t width = 110) {
  std::string out;
  for (char c : text) out.push_back(c == '\n' ? ' ' : c);
  if (out.size() > width) out = out.substr(0, width) + " ...";
  return out;
}

// What a tool gave the model, in short: the hits of a search, the title and start of an opened
// document, the start of anything else.
void print_result(const covenant::tool_run& run) {
  if (run.call.name == research::Search::name) {
    if (auto hits = covenant::try_decode<research::SearchHits>(run.result)) {
      std::cout << "    ok, " << hits.value->hits.size() << " hit" << (hits.value->hits.size() == 1 ? "" : "s") << "\n";
      for (const auto& hit : hits.value->hits)
        std::cout << "      " << hit.doc_id << std::string(hit.doc_id.size() < 20 ? 20 - hit.doc_id.size() : 1, ' ')
                  << shortened(hit.snippet, 100) << "\n";
      return;
    }
  } else if (run.call.name == research::Open::name) {
    if (auto doc = covenant::try_decode<research::OpenedDocument>(run.result)) {
      std::cout << "    ok, \"" << doc.value->title << "\", " << doc.value->text.size() << " characters: "
                << shortened(doc.value->text, 60) << "\n";
      return;
    }
  }
  std::cout << "    ok: " << shortened(run.result) << "\n";
}

void print_step(const covenant::agent_step& step) {
  std::cout << "--- step " << step.number << ": the model calls " << step.tools.size() << " tool"
            << (step.tools.size() == 1 ? "" : "s") << " ---\n";
  if (!step.text.empty()) std::cout << "[model]\n" << step.text << "\n";
  for (const covenant::tool_run& run : step.tools) {
    std::cout << "  " << run.call.name << " " << (run.arguments.empty() ? run.call.arguments : run.arguments) << "\n";
    if (run.ok()) {
      print_result(run);
    } else {
      std::cout << "    " << covenant::to_string(run.status) << ", sent back as an error:\n";
      for (const auto& issue : run.issues) std::cout << "      " << issue.to_string() << "\n";
    }
  }
}

void print_attempt(const covenant::attempt& a, const covenant::chat_request& request) {
  std::cout << "--- answer attempt " << a.number << " ---\n";
  if (a.number > 1) std::cout << "[user, corrective]\n" << request.messages.back().content << "\n";
  std::cout << "[model]\n" << a.text << "\n";
  for (const auto& n : a.notes) std::cout << "  note: " << n.to_string() << "\n";
  if (a.issues.empty()) {
    std::cout << "  accepted\n";
  } else {
    std::cout << "  rejected:\n";
    for (const auto& issue : a.issues)
      std::cout << "    " << issue.to_string() << "   [" << covenant::to_string(issue.code) << "]\n";
  }
}

int usage() {
  std::cerr << "usage: research_agent [--cassette FILE] [--record FILE]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cassette_file = COVENANT_SOURCE_DIR "/examples/research_agent.cassette.jsonl";
  std::string record_file;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--cassette" && i + 1 < argc) cassette_file = argv[++i];
    else if (a == "--record" && i + 1 < argc) record_file = argv[++i];
    else return usage();
  }

  // With COVENANT_BASE_URL set, talk to that server; otherwise replay the recorded conversation.
  const char* base_url = std::getenv("COVENANT_BASE_URL");
  const bool online = base_url != nullptr && *base_url != '\0';
  if (!online && !record_file.empty()) {
    std::cerr << "research_agent: --record needs a model: set COVENANT_BASE_URL\n";
    return usage();
  }
  std::unique_ptr<covenant::engine> source;  // the HTTP engine or the replayed cassette
  std::unique_ptr<covenant::engine> recorder;
  try {
    if (online)
      source = std::make_unique<covenant::http_engine>(covenant::http_engine::options_from_env());
    else
      source = std::make_unique<covenant::cassette_engine>(covenant::cassette_options{.path = cassette_file});
    if (!record_file.empty()) {
      const char* key = std::getenv("COVENANT_API_KEY");
      recorder = std::make_unique<covenant::cassette_engine>(
          covenant::cassette_options{.path = record_file,
                                     .mode = covenant::cassette_mode::record,
                                     .redact = {key != nullptr ? std::string(key) : std::string()}},
          *source);
    }
  } catch (const std::exception& e) {
    std::cerr << "research_agent: " << e.what() << "\n";
    return EXIT_FAILURE;
  }
  examples::transcript model{recorder ? *recorder : *source};

  covenant::contract_options options;
  options.retry = {.tries = 3, .delay = std::chrono::milliseconds(500)};
  options.graceful = true;
  options.agent.max_steps = 6;
  if (!online) options.sleep = [](std::chrono::nanoseconds) {};  // offline: no waiting between attempts

  const covenant::contract<research::ResearchAgent> agent{model, options};

  print_rule(online ? "task (online)" : "task (offline, recorded conversation)");
  std::cout << "question: " << question.question << "\ncorpus:\n";
  for (const auto& a : research::carrow().articles()) std::cout << "  " << a.id << "  " << a.title << "\n";

  auto [answer, outcome] = agent.run(question);

  print_rule("request");
  if (outcome.calls() == 0) {
    std::cout << "(none sent: " << outcome.summary() << ")\n";
  } else {
    const auto request = model.request(0);
    std::cout << "[system]\n" << request.messages[0].content << "\n[user]\n" << request.messages[1].content << "\n";
    std::cout << "[tools]\n";
    if (request.tools)
      for (const auto& tool : *request.tools) std::cout << "  " << tool.name << ": " << tool.description << "\n";
  }

  // The model calls in the order they were made: a call whose next request ends with tool results
  // was a step, any other an answer attempt.
  print_rule("conversation");
  const std::size_t calls = outcome.calls();
  std::size_t steps = 0;
  std::size_t attempts = 0;
  for (std::size_t i = 0; i < calls; ++i) {
    const bool tools_followed =
        i + 1 < calls ? model.request(i + 1).messages.back().role == covenant::role::tool
                      : attempts == outcome.attempts.size();
    if (steps < outcome.steps.size() && (tools_followed || attempts == outcome.attempts.size()))
      print_step(outcome.steps[steps++]);
    else if (attempts < outcome.attempts.size())
      print_attempt(outcome.attempts[attempts++], model.request(i));
  }

  print_rule("answer (from forward)");
  std::cout << answer.answer << "\ncoverage: " << answer.coverage_score << "\n";
  for (const auto& e : answer.evidence) std::cout << "  (" << e.doc_id << ") " << e.snippet << "\n";

  print_rule("outcome");
  std::cout << outcome.summary() << "\n";
  std::cout << "tokens: " << outcome.usage.input_tokens << " in, " << outcome.usage.output_tokens << " out (all "
            << outcome.calls() << " model calls)\n";
  return outcome.success ? EXIT_SUCCESS : EXIT_FAILURE;
}
