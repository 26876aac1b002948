// covenant run --schema FILE [--type TYPE] --prompt TEXT|@FILE [options] [INPUT.jsonl]
//
// A dynamic contract per record of a JSON Lines file, run as a batch (covenant/contract/batch.hpp) against
// an OpenAI-compatible server, one JSON line out per record, written and flushed as records
// finish; --resume skips what an earlier run already wrote. --metrics-file, --metrics-port and
// --audit-log attach covenant::metrics and covenant::audit_log to the contract.
//
// run_run below is the run's steps in order; run_config.cpp reads the command line,
// run_telemetry.cpp the metrics and the audit log, run_records.cpp the records and their lines.
#include <covenant/engine/logging.hpp>
#include <covenant/engine/prices.hpp>
#include <covenant/engine/response_cache.hpp>
#include <covenant/telemetry/otel.hpp>

#include <unistd.h>

#include <array>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <stop_token>
#include <string_view>
#include <thread>

#include "run_command.hpp"

namespace covenant::cli {

namespace {

namespace json = boost::json;

std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) { interrupted.store(true); }

// ---- before the first record: prices, the task, the engine -------------------------------------

// Prices go stale without a word: say so when the file's figures are more than 90 days old.
void warn_if_stale(const std::string& file, const std::string& taken) {
  int y = 0;
  unsigned m = 0;
  unsigned d = 0;
  if (std::sscanf(taken.c_str(), "%d-%u-%u", &y, &m, &d) != 3) return;  // (a date: the file was read)
  const std::chrono::sys_days then{std::chrono::year{y} / std::chrono::month{m} / std::chrono::day{d}};
  const auto today = std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now());
  const auto age = (today - then).count();
  if (age > 90)
    std::cerr << "covenant run: " << file << ": the prices were taken on " << taken << ", " << age
              << " days ago: check them against the providers' price pages\n";
}

/// The token prices (--prices FILE or COVENANT_PRICES) into `options`; false, after printing the
/// file's problems, when they cannot be read.
bool load_prices(const run_config& config, contract_options& options) {
  if (!config.prices_file) return true;
  covenant::price_table_result prices = covenant::price_table::try_load(*config.prices_file);
  if (!prices.ok()) {
    std::cerr << "covenant run: " << *config.prices_file << ": the prices cannot be read:\n";
    for (const covenant::issue& i : prices.issues) std::cerr << "  " << i.to_string() << "\n";
    return false;
  }
  options.prices = std::make_shared<const covenant::price_table>(std::move(prices.table));
  if (!config.quiet) warn_if_stale(*config.prices_file, options.prices->taken());
  return true;
}

/// What each record's call is given besides the record: the task and the types.
struct run_task {
  std::string prompt;
  schema::model output;
  std::optional<schema::model> input;  // --input-type
};

/// The prompt (inline or from a file) and the schema's output and input types; nullopt, after
/// printing the schema's problems, when the schema does not load.
std::optional<run_task> load_task(const run_config& config) {
  std::string prompt = config.prompt;
  if (prompt.front() == '@') prompt = read_input(prompt.substr(1), 1u << 20);
  const loaded_schema s = load_schema_arg(config.schema_file);
  if (!s.ok()) {
    print_diagnostics(std::cerr, s.issues);
    return std::nullopt;
  }
  run_task task{std::move(prompt), select_model(s, config.type), std::nullopt};
  if (config.input_type) task.input = select_model(s, config.input_type);
  return task;
}

/// The model the contract calls: the server, behind the response cache with --cache DIR.
struct run_engine {
  std::unique_ptr<http_engine> server;
  std::unique_ptr<covenant::cached_engine> cache;

  [[nodiscard]] covenant::engine& model() const {
    return cache ? static_cast<covenant::engine&>(*cache) : *server;
  }
};

void apply_flags(const engine_flags& flags, http_engine_options& eo) {
  if (flags.provider) eo.provider = *flags.provider;
  if (flags.base_url) eo.base_url = *flags.base_url;
  if (flags.model) eo.model = *flags.model;
  if (flags.request_timeout) eo.request_timeout = *flags.request_timeout;
  if (flags.retries) eo.retry.tries = *flags.retries;
  if (flags.retry_delay) eo.retry.delay = *flags.retry_delay;
  eo.cache_system_prompt = flags.cache_system_prompt;
  if (flags.reasoning_effort) eo.reasoning_effort = *flags.reasoning_effort;
  eo.thinking_budget = flags.thinking_budget;
  if (flags.retry_max_delay) eo.retry.max_delay = *flags.retry_max_delay;
}

/// The response cache in DIR/responses.sqlite, its entries kept apart by endpoint, model and
/// reasoning settings.
std::unique_ptr<covenant::cached_engine> response_cache(const response_cache_flags& flags,
                                                        const http_engine_options& eo, http_engine& server) {
  covenant::response_cache_options co;
  co.path = std::filesystem::path(flags.dir) / "responses.sqlite";
  co.scope = std::string(eo.provider == covenant::provider::anthropic ? "anthropic " : "openai ") + server.endpoint() +
             " " + eo.model + " effort=" + eo.reasoning_effort + " thinking=" + std::to_string(eo.thinking_budget);
  co.max_age = flags.max_age;
  co.max_bytes = flags.max_bytes;
  return std::make_unique<covenant::cached_engine>(std::move(co), server);
}

/// The engine: the environment (http_engine::options_from_env), then the flags; throws
/// fatal_error when the settings cannot work.
run_engine build_engine(const run_config& config) {
  run_engine engine;
  http_engine_options eo;
  if (config.engine.base_url) eo.base_url = *config.engine.base_url;
  try {
    eo = http_engine::options_from_env(eo);
    apply_flags(config.engine, eo);
    engine.server = std::make_unique<http_engine>(eo);
  } catch (const std::invalid_argument& e) {
    // The library names itself in its messages; the tool's user wants the setting and the flag.
    std::string what = e.what();
    constexpr std::string_view prefix = "covenant::http_engine::from_env: ";
    if (what.starts_with(prefix)) what.erase(0, prefix.size());
    if (what.starts_with("COVENANT_BASE_URL is not set")) what += "; or pass --base-url URL";
    throw fatal_error(what);
  }
  if (config.cache) engine.cache = response_cache(*config.cache, eo, *engine.server);
  return engine;
}

/// Each record's result (issues included) is its output line, and the progress line counts
/// retries: the library's own log would repeat them between progress updates. COVENANT_LOG_LEVEL
/// brings it back.
void quiet_library_log() {
  if (std::getenv("COVENANT_LOG_LEVEL") == nullptr) set_log_level(log_level::off);  // NOLINT(concurrency-mt-unsafe)
}

// ---- the records -------------------------------------------------------------------------------

/// While it lives, SIGINT and SIGTERM stop the run: no record starts after them, those in flight
/// end cancelled (a run with --resume does them again).
class interrupt_watch {
 public:
  interrupt_watch() {
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
    watcher_ = std::thread([this] {
      while (!stop_.stop_requested()) {
        if (interrupted.load()) {
          stop_.request_stop();
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  interrupt_watch(const interrupt_watch&) = delete;
  interrupt_watch& operator=(const interrupt_watch&) = delete;
  ~interrupt_watch() {
    stop_.request_stop();
    watcher_.join();
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }

  /// Stopped once a signal came (or the watch ended).
  [[nodiscard]] std::stop_token token() const noexcept { return stop_.get_token(); }

 private:
  std::stop_source stop_;
  std::thread watcher_;
};

/// The progress line on standard error: rewritten in place on a terminal, else a line every
/// five seconds.
void show_progress(covenant::batch_options& batch, bool terminal) {
  batch.progress_every = terminal ? std::chrono::milliseconds(200) : std::chrono::seconds(5);
  batch.on_progress = [terminal](const batch_progress& p) {
    if (terminal) std::cerr << "\r\x1b[2K" << p.line() << std::flush;
    else if (p.in_flight > 0 || p.done < p.started) std::cerr << "covenant run: " << p.line() << "\n";  // the summary says the rest
  };
}

/// What the run did, for its summary and exit status.
struct run_totals {
  covenant::batch_progress summary;
  std::size_t failed = 0;  // records whose line says "ok": false
};

/// --stream: one record at a time, each changed partial value written as it comes.
run_totals run_streaming(const dynamic_contract& contract, record_reader& records, result_writer& out,
                         const covenant::batch_options& batch, run_telemetry& telemetry) {
  run_totals totals;
  covenant::batch_progress& summary = totals.summary;
  const auto started = std::chrono::steady_clock::now();
  while (auto input = records.next()) {
    const std::size_t index = records.last_index();
    pending_record& record = *records.pending(index);
    otel_span span = telemetry.record_span(record);
    call_options this_call;
    this_call.query_id = record.query_id;
    this_call.trace = telemetry.record_parent(span);
    auto f = contract.stream(
        std::move(*input),
        [&out](const stream_update<json::value>& u) {
          if (u.what == stream_update<json::value>::kind::partial) out.partial(u);
        },
        std::move(this_call));
    outcome<json::value> o = f.get().outcome;
    out.result(record, o);
    run_telemetry::end_record_span(span, o);
    records.forget(index);
    ++summary.started;
    summary.count(o);
    if (interrupted.load()) break;
    if (summary.over_budget(batch.max_tokens, batch.max_cost_usd)) {
      summary.stopped = summary.budget_reached = true;
      break;
    }
  }
  summary.elapsed = std::chrono::steady_clock::now() - started;
  totals.failed = summary.failed;
  return totals;
}

/// The records as a batch, `batch.concurrency` in flight, each result line written as its record
/// finishes.
run_totals run_batched(const dynamic_contract& contract, record_reader& records, result_writer& out,
                       covenant::batch_options batch, run_telemetry& telemetry) {
  run_totals totals;
  // Each record's calls carry its query id: its result line and its audit lines join on it.
  batch.query_id = [&records](std::size_t index) -> call_id {
    const pending_record* record = records.pending(index);
    return record == nullptr ? call_id() : call_id(record->query_id);
  };
  // A traced run: each record's span, the parent of its call's spans.
  batch.trace = [&records, &telemetry](std::size_t index) -> trace_context {
    pending_record* record = records.pending(index);
    if (record == nullptr) return {};
    record->span = std::make_shared<otel_span>(telemetry.record_span(*record));
    return telemetry.record_parent(*record->span);
  };
  totals.summary = run_batch(
      contract, [&records] { return records.next(); },
      [&](std::size_t index, dynamic_contract::call_result&& r) {
        const outcome<json::value>& o = r.outcome;
        pending_record* record = records.pending(index);
        if (record == nullptr) return;
        if (o.failed_stage == stage::cancelled && interrupted.load()) {
          records.forget(index);  // not finished: a run with --resume does it again
          return;
        }
        if (!o.success) ++totals.failed;
        out.result(*record, o);
        if (record->span) run_telemetry::end_record_span(*record->span, o);
        records.forget(index);
      },
      batch);
  return totals;
}

// ---- after the last record ---------------------------------------------------------------------

/// "; cost $0.12" and the models without a price.
void print_cost(const covenant::batch_progress& summary, const result_writer& out, const std::string& prices_file) {
  const std::string dollars = covenant::format_usd(summary.cost_usd);
  if (summary.unpriced == 0) std::cerr << "; cost " << dollars;
  else if (summary.priced > 0) std::cerr << "; cost " << dollars << " for " << summary.priced << " records, "
                                        << summary.unpriced << " unknown";
  else std::cerr << "; cost unknown";
  if (!out.unpriced_models().empty()) {
    std::cerr << " (no price for";
    const char* sep = " ";
    for (const std::string& model : out.unpriced_models()) {
      std::cerr << sep << "'" << model << "'";
      sep = ", ";
    }
    std::cerr << " in " << prices_file << ")";
  }
}

/// The summary line on standard error: records, time, tokens, cost, why the run stopped early.
void print_summary(const run_config& config, const run_totals& totals, const record_reader& records,
                   const result_writer& out, const run_engine& engine, bool priced, bool terminal) {
  const covenant::batch_progress& summary = totals.summary;
  if (terminal) std::cerr << "\r\x1b[2K";
  std::cerr << "covenant run: " << summary.done << " records (" << summary.succeeded << " ok, " << summary.failed
            << " failed)";
  if (records.skipped() > 0) std::cerr << ", " << records.skipped() << " already done";
  if (records.bad_lines() > 0) std::cerr << ", " << records.bad_lines() << " bad input lines";
  std::array<char, 32> secs{};
  std::snprintf(secs.data(), secs.size(), "%.2f", std::chrono::duration<double>(summary.elapsed).count());
  std::cerr << " in " << secs.data() << " s; tokens " << summary.tokens_in << " in";
  if (summary.cached_tokens_in > 0 && summary.tokens_in > 0)
    std::cerr << " (" << std::llround(100.0 * static_cast<double>(summary.cached_tokens_in) / static_cast<double>(summary.tokens_in))
              << "% from the prompt cache)";
  std::cerr << " / " << summary.tokens_out << " out";
  if (engine.cache) std::cerr << "; " << summary.cache_hits << " model calls answered from the response cache";
  if (priced) print_cost(summary, out, *config.prices_file);
  const covenant::batch_options& batch = config.batch;
  if (summary.budget_reached && !interrupted.load())
    std::cerr << "; stopped: the budget was reached"
              << (batch.max_cost_usd > 0 ? " (--max-cost " + covenant::format_usd(batch.max_cost_usd) + ")" : "")
              << (batch.max_tokens > 0 ? " (--max-tokens " + std::to_string(batch.max_tokens) + ")" : "")
              << " (run again with --resume and a new budget)";
  else if (summary.stopped || interrupted.load())
    std::cerr << "; stopped early (run again with --resume)";
  std::cerr << "\n";
}

/// The response cache's failures (the library's log is off: said here, --quiet or not).
void warn_cache_errors(const run_engine& engine) {
  if (engine.cache && engine.cache->stats().errors > 0)
    std::cerr << "covenant run: warning: the response cache " << engine.cache->options().path.string()
              << " could not be used " << engine.cache->stats().errors
              << (engine.cache->stats().errors == 1 ? " time" : " times")
              << "; those calls went to the server (COVENANT_LOG_LEVEL=warn says why)\n";
}

/// 2 when a result line or the metrics file could not be written or input lines were bad, 1 when
/// interrupted or a record failed, 3 when the budget ended the run, else 0.
int exit_status(const run_totals& totals, const record_reader& records, const result_writer& out,
                bool metrics_written) {
  if (out.failed()) {
    std::cerr << "covenant run: cannot write the results\n";
    return exit_error;
  }
  if (!metrics_written) return exit_error;
  if (records.bad_lines() > 0) return exit_error;
  if (interrupted.load()) return exit_invalid;
  if (totals.summary.budget_reached) return exit_budget;
  return totals.failed > 0 ? exit_invalid : exit_ok;
}

}  // namespace

int run_run(const std::vector<std::string>& args) {
  const run_config config = parse_run_config(args);
  if (config.help) {
    std::cout << help_text("run");
    return exit_ok;
  }

  // Before any model call: prices, task, telemetry, engine, the output and the input.
  contract_options options = config.contract;
  if (!load_prices(config, options)) return exit_error;
  const std::optional<run_task> task = load_task(config);
  if (!task) return exit_error;
  run_telemetry telemetry(config, options);
  const run_engine engine = build_engine(config);
  quiet_library_log();
  const dynamic_contract contract{engine.model(),
                                  {.name = task->output.title(),
                                   .prompt = task->prompt,
                                   .output = task->output,
                                   .input = task->input,
                                   .media_root = config.media_root},
                                  options};
  std::unordered_set<std::string> done_ids;  // the records an earlier run finished
  if (config.resume) done_ids = finished_ids(*config.output_file);
  result_writer out(config, options.prices != nullptr);
  record_reader records(config, std::move(done_ids), interrupted);
  covenant::batch_options batch = config.batch;
  if (!config.quiet && config.input_file != "-") batch.total = count_lines(config.input_file);

  // The records.
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  if (!config.quiet) show_progress(batch, terminal);
  telemetry.start();
  run_totals totals;
  {
    const interrupt_watch watch;
    batch.stop = watch.token();
    totals = config.stream ? run_streaming(contract, records, out, batch, telemetry)
                           : run_batched(contract, records, out, std::move(batch), telemetry);
  }
  out.close();
  const bool metrics_written = telemetry.finish();

  // The summary and the exit status.
  if (!config.quiet) print_summary(config, totals, records, out, engine, options.prices != nullptr, terminal);
  warn_cache_errors(engine);
  return exit_status(totals, records, out, metrics_written);
}

}  // namespace covenant::cli
