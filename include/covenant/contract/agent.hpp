// covenant/contract/agent.hpp - tools the model may call, each under its own contract: an agent.
//
// A tool is a plain class like an Expression, over reflected aggregates:
//
//     struct Search {
//       static constexpr std::string_view name = "search";
//       static constexpr std::string_view description = "Finds the documents that match a query.";
//       const Corpus* corpus;                                        // the tool's own state
//       void pre(const SearchArgs& a) const;                         // optional: throw covenant::violation
//       SearchHits act(const SearchArgs& a) const;                   // required; or covenant::future<SearchHits>
//       void post(const SearchArgs& a, const SearchHits& r) const;   // optional: throw covenant::violation
//       static constexpr bool quick = true;                          // optional: see below
//     };
//
// An agent is an Expression with a `tools` member naming the tools the model may call:
//
//     struct Research {
//       static constexpr std::string_view prompt = "Answer the question from the corpus.";
//       covenant::toolset<Search, Open> tools;                       // or tools{Search{&c}, Open{&c}}
//       Answer forward(const Question& q, const covenant::outcome<Answer>& o) const;
//     };
//     covenant::contract<Research> research{engine};
//
// The contract sends the tools' schemas with every output request. When the model calls tools
// instead of answering, each call is read like a reply (the lenient reader, the argument type's
// schema), checked by the tool's pre(), run by act() (the calls of one reply side by side on the
// workers of agent_options::tool_runtime), its result checked against its schema and by post(),
// and the results (or the errors, with paths and messages) go back to the model, which goes on
// until it answers. The answer is read, validated, checked by post() and remedied like any
// contract's; forward always runs. agent_options (contract_options::agent) bounds the loop;
// outcome::steps records it.
//
// A tool that only computes (an in-memory lookup) may say `static constexpr bool quick = true;`:
// its calls run on the thread running the contract call, without a hand-off to a worker, and have
// no timeout.
// docs/agents.md has the exact rules.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>

#include "covenant/contract/contract_options.hpp"
#include "covenant/contract/detail/call.hpp"
#include "covenant/contract/detail/expression.hpp"
#include "covenant/contract/detail/run_hook.hpp"
#include "covenant/contract/outcome.hpp"
#include "covenant/engine/future.hpp"
#include "covenant/read/detail/read_reply.hpp"
#include "covenant/read/validate.hpp"
#include "covenant/types/encode.hpp"
#include "covenant/types/json_schema.hpp"
#include "covenant/types/reflect.hpp"

namespace covenant {

/// The tools an agent's model may call (see the top of this header): one instance of each tool
/// class, made by default or given.
template <class... Tools>
class toolset {
  static_assert(sizeof...(Tools) > 0, "covenant::toolset: name at least one tool class");

 public:
  toolset()
    requires(std::is_default_constructible_v<Tools> && ...)
  = default;
  explicit toolset(Tools... tools) : tools_(std::move(tools)...) {}

  static constexpr std::size_t size = sizeof...(Tools);
  /// The instance of tool class T.
  template <class T>
  [[nodiscard]] const T& get() const noexcept {
    return std::get<T>(tools_);
  }
  [[nodiscard]] const std::tuple<Tools...>& all() const noexcept { return tools_; }

 private:
  std::tuple<Tools...> tools_;
};

namespace detail {

template <class T>
struct is_toolset : std::false_type {};
template <class... T>
struct is_toolset<toolset<T...>> : std::true_type {};

template <class F>
struct future_value {
  static constexpr bool is_future = false;
  using type = F;
};
template <class F>
struct future_value<future<F>> {
  static constexpr bool is_future = true;
  using type = F;
};

/// Compile-time inspection of a tool class.
template <class Tool>
struct tool_traits {
  static_assert(requires { std::string_view(Tool::name); },
                "covenant: a tool needs a name the model calls it by: `static constexpr std::string_view name = \"...\";`");
  static_assert(requires { std::string_view(Tool::description); },
                "covenant: a tool needs a description the model reads: "
                "`static constexpr std::string_view description = \"...\";`");
  static_assert(has_act<Tool>,
                "covenant: a tool needs one non-overloaded, non-template member "
                "`Result act(const Args&) const` (or returning covenant::future<Result>)");
  using act_m = method_traits<decltype(&Tool::act)>;
  static_assert(act_m::is_method && act_m::arity == 1,
                "covenant: a tool's act must be `Result act(const Args&) const`");
  static_assert(act_m::is_const,
                "covenant: a tool's act must be a const member function (tools run side by side and in many calls "
                "at once)");
  static_assert(is_const_ref_v<typename act_m::template arg<0>>, "covenant: a tool's act must take `const Args&`");
  using args = bare_t<typename act_m::template arg<0>>;
  static constexpr bool asynchronous = future_value<bare_t<typename act_m::result>>::is_future;
  using result = typename future_value<bare_t<typename act_m::result>>::type;
  static_assert(reflectable_aggregate<args>, "covenant: a tool's arguments must be a plain aggregate struct");
  static_assert(reflectable_aggregate<result>,
                "covenant: a tool's act must return a plain aggregate struct (or a covenant::future of one)");

  static_assert(has_pre<Tool> || !names_pre<Tool>,
                "covenant: a tool's pre must be one non-overloaded, non-template member function "
                "`void pre(const Args&) const`");
  static_assert(has_post<Tool> || !names_post<Tool>,
                "covenant: a tool's post must be one non-overloaded, non-template member function "
                "`void post(const Args&, const Result&) const`");
  static constexpr bool with_pre = has_pre<Tool>;
  static constexpr bool with_post = has_post<Tool>;
  static constexpr bool quick = [] {
    if constexpr (requires { bool(Tool::quick); }) return bool(Tool::quick);
    else return false;
  }();
  static_assert(!(quick && asynchronous), "covenant: a quick tool's act must return its result, not a future");

  static constexpr bool check() {
    if constexpr (with_pre) {
      using m = method_traits<decltype(&Tool::pre)>;
      constexpr bool shape = m::is_method && m::arity == 1 && std::is_void_v<typename m::result> && m::is_const;
      static_assert(shape, "covenant: a tool's pre must be `void pre(const Args&) const` (the type act takes), "
                           "throwing covenant::violation");
      if constexpr (shape)
        static_assert(std::is_same_v<typename m::template arg<0>, const args&>,
                      "covenant: a tool's pre must be `void pre(const Args&) const` (the type act takes), throwing "
                      "covenant::violation");
    }
    if constexpr (with_post) {
      using m = method_traits<decltype(&Tool::post)>;
      constexpr bool shape = m::is_method && m::arity == 2 && std::is_void_v<typename m::result> && m::is_const;
      static_assert(shape, "covenant: a tool's post must be `void post(const Args&, const Result&) const`, throwing "
                           "covenant::violation");
      if constexpr (shape)
        static_assert(std::is_same_v<typename m::template arg<0>, const args&> &&
                          std::is_same_v<typename m::template arg<1>, const result&>,
                      "covenant: a tool's post must be `void post(const Args&, const Result&) const`, throwing "
                      "covenant::violation");
    }
    return true;
  }
  static constexpr bool valid = check();
};

/// The issue of a tool whose act() threw (the exception in flight).
COVENANT_API issue tool_threw_issue(std::exception_ptr e);

/// Runs calls of one tool class (see tool_runner): reading the arguments, pre(), act(), the
/// result's schema and post().
template <class Tool>
class typed_tool final : public tool_runner {
  using traits = tool_traits<Tool>;
  static_assert(traits::valid);
  using args_type = typename traits::args;
  using result_type = typename traits::result;

 public:
  explicit typed_tool(const Tool& tool)
      : tool_(&tool),
        spec_{std::string(std::string_view(Tool::name)), std::string(std::string_view(Tool::description)),
              strict_schema_or_null(&openai_strict_schema_of<args_type>)} {
    (void)schema_of<args_type>();
    (void)schema_of<result_type>();
  }

  [[nodiscard]] const tool_spec& spec() const noexcept override { return spec_; }
  [[nodiscard]] bool quick() const noexcept override { return traits::quick; }

  std::function<void()> start(tool_run run, const contract_options& options, tool_done done) const override {
    std::chrono::nanoseconds parse_time{0};
    std::chrono::nanoseconds validate_time{0};
    decoded<args_type> read = read_reply<args_type>(run.call.arguments, options.decode, options.strictness, run.notes,
                                                    parse_time, validate_time, options.clock);
    if (!read.ok()) {
      run.status = tool_status::arguments;
      run.issues = std::move(read.issues);
      done(std::move(run));
      return {};
    }
    run.arguments = to_json(*read.value);
    if constexpr (traits::with_pre) {
      run_hook("pre", issue_code::precondition_violation, run.issues, [&] { tool_->pre(*read.value); });
      if (!run.issues.empty()) {
        run.status = tool_status::pre;
        done(std::move(run));
        return {};
      }
    }
    if constexpr (traits::asynchronous) {
      future<result_type> pending;
      try {
        pending = tool_->act(*read.value);
      } catch (...) {
        failed(run, std::current_exception());
        done(std::move(run));
        return {};
      }
      auto state = std::make_shared<std::tuple<args_type, tool_run, tool_done>>(std::move(*read.value), std::move(run),
                                                                               std::move(done));
      std::function<void()> cancel = [pending]() { pending.cancel(); };
      pending.then([tool = tool_, state](future<result_type> f) mutable {
        auto& [args, r, finished] = *state;
        try {
          checked(*tool, args, f.get(), r);
        } catch (...) {
          failed(r, std::current_exception());
        }
        finished(std::move(r));
      });
      return cancel;
    } else {
      try {
        checked(*tool_, *read.value, tool_->act(*read.value), run);
      } catch (...) {
        failed(run, std::current_exception());
      }
      done(std::move(run));
      return {};
    }
  }

 private:
  static void failed(tool_run& run, std::exception_ptr e) {
    run.status = tool_status::failed;
    run.issues = {tool_threw_issue(std::move(e))};
  }

  // The result's schema, then post(); the result's JSON when both accept it.
  static void checked(const Tool& tool, const args_type& args, const result_type& result, tool_run& run) {
    run.issues = covenant::validate(result);
    if constexpr (traits::with_post) {
      if (run.issues.empty())
        run_hook("post", issue_code::postcondition_violation, run.issues, [&] { tool.post(args, result); });
    }
    if (!run.issues.empty()) {
      run.status = tool_status::post;
      return;
    }
    run.status = tool_status::ok;
    run.result = to_json(result);
  }

  const Tool* tool_;
  tool_spec spec_;
};

/// Whether the Expression declares tools (a `tools` member that is a covenant::toolset).
template <class E>
concept has_tools = requires(const E& e) { e.tools; } && is_toolset<bare_t<decltype(std::declval<const E&>().tools)>>::value;

/// The runners of an Expression's tools (empty without a `tools` member), referring to the tool
/// instances in `expr`, which must outlive them.
template <class E>
std::vector<std::shared_ptr<const tool_runner>> tool_runners_of(const E& expr) {
  std::vector<std::shared_ptr<const tool_runner>> out;
  if constexpr (requires(const E& e) { e.tools; })
    static_assert(has_tools<E>, "covenant: an Expression's `tools` member must be a covenant::toolset<Tool...>");
  if constexpr (has_tools<E>) {
    std::apply([&](const auto&... tool) { (out.push_back(std::make_shared<typed_tool<bare_t<decltype(tool)>>>(tool)), ...); },
               expr.tools.all());
  }
  return out;
}

}  // namespace detail

}  // namespace covenant
