// An agent's loop whose engine answers instantly: the loop's own work per step (reading and
// checking the tool arguments, running quick tools, results back into the conversation, the next
// request), next to one contract call.
#include <benchmark/benchmark.h>
#include <covenant/contract/contract.hpp>
#include <covenant/engine/logging.hpp>

#include <memory>
#include <string>
#include <vector>

#include "../examples/models/final_answer.hpp"
#include "sample.hpp"

namespace agent_bench {

using bench::sample;

struct Question {
  std::string text;
};

struct SearchArgs {
  std::string query;
  int k = 3;
};
struct Hits {
  std::vector<std::string> ids;
};
template <bool Quick>
struct Search {
  static constexpr std::string_view name = "search";
  static constexpr std::string_view description = "Finds the documents that match a query.";
  static constexpr bool quick = Quick;
  void pre(const SearchArgs& a) const {
    if (a.query.empty()) throw covenant::violation("query", "must not be empty");
  }
  Hits act(const SearchArgs& a) const { return {std::vector<std::string>(static_cast<std::size_t>(a.k), "doc-1")}; }
};

struct OpenArgs {
  std::string id;
};
struct Document {
  std::string id;
  std::string text;
};
template <bool Quick>
struct Open {
  static constexpr std::string_view name = "open";
  static constexpr std::string_view description = "Opens a document by its id.";
  static constexpr bool quick = Quick;
  Document act(const OpenArgs& a) const { return {a.id, "The Eiffel Tower is 330 metres tall."}; }
  void post(const OpenArgs& a, const Document& d) const {
    if (d.id != a.id) throw covenant::violation("id", "is not the document asked for");
  }
};

// Quick tools run on the calling thread; the others on the runtime's workers.
template <bool Quick>
struct Research {
  static constexpr std::string_view prompt = "Answer the question with sources; search and open documents first.";
  covenant::toolset<Search<Quick>, Open<Quick>> tools;
  models::FinalAnswer forward(const Question&, const covenant::outcome<models::FinalAnswer>& o) const {
    return o.result ? *o.result : models::FinalAnswer{};
  }
};

// Replies by how far the conversation is: a search, then opening a document, then the answer
// (`steps` = 0: the answer at once).
class loop_engine : public covenant::engine {
 public:
  loop_engine(std::string answer, int steps) : answer_(std::move(answer)), steps_(steps) {}
  ~loop_engine() override { close(); }
  covenant::chat_response complete(const covenant::chat_request& request) override {
    int done = 0;
    for (const covenant::message& m : request.messages) done += m.tool_calls.empty() ? 0 : 1;
    covenant::chat_response r;
    r.usage = {512, 64};
    if (done >= steps_) r.text = answer_;
    else if (done == 0) r.tool_calls = {{"call_1", "search", R"({"query": "eiffel tower height", "k": 2})"}};
    else r.tool_calls = {{"call_2", "open", R"({"id": "doc-1"})"}};
    return r;
  }

 private:
  std::string answer_;
  int steps_;
};

template <bool Quick>
void run(benchmark::State& state, int steps) {
  const std::string reply = sample("valid_final_answer.json");
  if (reply.empty()) {
    state.SkipWithError("sample missing (../shared/bench/python/samples)");
    return;
  }
  covenant::set_log_level(covenant::log_level::warn);
  loop_engine model(reply, steps);
  const covenant::contract<Research<Quick>> c{model};
  const Question q{"How tall is the Eiffel Tower?"};
  for (auto _ : state) {
    auto r = c.run(q);
    if (!r.outcome.success || r.outcome.steps.size() != static_cast<std::size_t>(steps))
      state.SkipWithError("the loop did not run as scripted");
    benchmark::DoNotOptimize(r);
  }
  // Model calls per loop: the steps and the answer.
  state.counters["model_calls"] = steps + 1;
}

// Two tool steps and the answer: three model calls.
void BM_three_steps(benchmark::State& state) { run<true>(state, 2); }
BENCHMARK(BM_three_steps)->Name("agent/three_steps_zero_latency");

// The same with tools that run on the runtime's workers: each step hands its call to a worker
// and waits for it.
void BM_three_steps_workers(benchmark::State& state) { run<false>(state, 2); }
BENCHMARK(BM_three_steps_workers)->Name("agent/three_steps_worker_tools_zero_latency")->UseRealTime();

// The same agent answering at once: one model call, the tools only offered.
void BM_answer_only(benchmark::State& state) { run<true>(state, 0); }
BENCHMARK(BM_answer_only)->Name("agent/answer_at_once_zero_latency");

}  // namespace agent_bench
