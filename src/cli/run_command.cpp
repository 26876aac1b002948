// covenant run --schema FILE [--type TYPE] --prompt TEXT|@FILE [options] [INPUT.jsonl]
//
// A dynamic contract per record of a JSON Lines file, run as a batch (covenant/contract/batch.hpp) against
// an OpenAI-compatible server, one JSON line out per record, written and flushed as records
// finish; --resume skips what an earlier run already wrote. --metrics-file, --metrics-port and
// --audit-log attach covenant::metrics and covenant::audit_log to the contract.
//
// run_run below is the run's steps in order; run_config.cpp reads the command line,
// run_telemetry.cpp the metrics and the audit log.
#include <covenant/engine/logging.hpp>
#include <covenant/engine/prices.hpp>
#include <covenant/engine/response_cache.hpp>
#include <covenant/runtime/dynamic_contract.hpp>
#include <covenant/types/detail/utf8.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <istream>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <stop_token>
#include <string_view>
#include <thread>
#include <unordered_set>

#include "run_command.hpp"

namespace covenant::cli {

// ---- the records and their result lines -------------------------------------------------------

/// A record taken from the input and not finished yet: what its result line says about it.
struct pending_record {
  boost::json::value id;
  std::size_t line = 0;
  std::string query_id;  ///< the record's calls' (the same in every run for the same id)
};

/// The input's records, read one line at a time: blank lines are passed over; lines that are not
/// UTF-8, not a JSON object or lack --input-field are reported on standard error and counted;
/// records of other shards and those an earlier run finished (--resume) are left out.
class record_reader {
 public:
  /// Opens the input (throws fatal_error when it cannot be read). Reading stops once `stop` is set.
  record_reader(const run_config& config, std::unordered_set<std::string> done_ids, const std::atomic<bool>& stop);
  record_reader(const record_reader&) = delete;
  record_reader& operator=(const record_reader&) = delete;

  /// The next record's input (the record, or its --input-field), pending under index
  /// last_index(); nullopt at the end of the input.
  std::optional<boost::json::value> next();
  /// The batch index of the record next() returned last.
  [[nodiscard]] std::size_t last_index() const noexcept { return next_index_ - 1; }
  /// The pending record of a batch index, or nullptr.
  [[nodiscard]] const pending_record* pending(std::size_t index) const;
  /// The record of `index` is done (or will be done again by a run with --resume).
  void forget(std::size_t index) { in_flight_.erase(index); }

  [[nodiscard]] std::size_t bad_lines() const noexcept { return bad_lines_; }
  [[nodiscard]] std::size_t skipped() const noexcept { return skipped_; }

 private:
  const run_config& config_;
  std::unordered_set<std::string> done_ids_;
  const std::atomic<bool>& stop_;
  std::ifstream file_;
  std::istream* in_;
  std::string shown_name_;  // in messages
  std::size_t line_no_ = 0;
  std::size_t bad_lines_ = 0;
  std::size_t skipped_ = 0;
  std::map<std::size_t, pending_record> in_flight_;  // batch index -> the record
  std::size_t next_index_ = 0;
};

/// The lines of the input file (a last line without a newline counts).
std::size_t count_lines(const std::string& file);

/// The ids an earlier run wrote complete lines for in `file`; an unfinished last line is cut off
/// the file (throws fatal_error when it cannot be).
std::unordered_set<std::string> finished_ids(const std::string& file);

/// Where the result lines go (--output FILE, else standard output): one write() per line, so that
/// a crash loses at most the line being written, and a line is either whole in the file or not
/// there.
class result_writer {
 public:
  /// Opens --output FILE (appended to with --resume, else emptied; throws fatal_error when it
  /// cannot be written). With prices, each line has the record's cost.
  result_writer(const run_config& config, bool priced);
  result_writer(const result_writer&) = delete;
  result_writer& operator=(const result_writer&) = delete;

  /// The record's result line.
  void result(const pending_record& record, const outcome<boost::json::value>& o);
  /// --stream: a changed partial value, as a line of its own.
  void partial(const stream_update<boost::json::value>& u);
  /// Closes --output FILE.
  void close();

  /// Whether a line could not be written.
  [[nodiscard]] bool failed() const noexcept { return failed_; }
  /// The models that answered and have no price.
  [[nodiscard]] const std::set<std::string>& unpriced_models() const noexcept { return unpriced_models_; }

 private:
  void write(std::string line);

  int fd_;
  bool priced_;
  bool failed_ = false;
  std::set<std::string> unpriced_models_;
};

namespace {

namespace json = boost::json;

/// FNV-1a: the same shard for the same id on every machine.
std::uint64_t stable_hash(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// The id of a record: its id field when it has one (a string or a number), else its line number.
json::value id_of(const json::value& record, const std::string& field, std::size_t line) {
  if (const json::object* o = record.if_object()) {
    if (const json::value* v = o->if_contains(field)) {
      if (v->is_string() || v->is_int64() || v->is_uint64()) return *v;
    }
  }
  return static_cast<std::uint64_t>(line);
}

/// "0xE9" for the byte e9.
std::string hex_byte(char c) {
  static constexpr std::string_view digits = "0123456789ABCDEF";
  const auto u = static_cast<unsigned char>(c);
  return {'0', 'x', digits[u >> 4U], digits[u & 0xFU]};
}

std::string id_key(const json::value& id) { return id.is_string() ? std::string(id.get_string()) : json_text(id); }

/// The query id of a record's calls (in its result line, the audit log and observers' events),
/// from the record's id (`key`, as id_key gives it): the id itself when it is a plain name (1 to
/// 64 ASCII letters, digits, '.', '_', ':' and '-'), else '#' and the 16 hexadecimal digits of
/// its FNV-1a hash, a form no plain name takes. The same id gives the same query id in every
/// run, so the calls of a record run again with --resume share it.
std::string query_id_of(std::string_view key) {
  const bool plain = !key.empty() && key.size() <= 64 && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == ':' || c == '-';
  });
  if (plain) return std::string(key);
  static constexpr std::string_view digits = "0123456789abcdef";
  std::string out(17, '#');
  std::uint64_t h = stable_hash(key);
  for (std::size_t i = 16; i > 0; --i, h >>= 4U) out[i] = digits[h & 0xFU];
  return out;
}

json::array issues_json(const issue_list& issues) {
  json::array out;
  for (const issue& i : issues) {
    json::object x;
    x["path"] = valid_utf8(i.path.to_string());
    x["code"] = to_string(i.code);
    x["message"] = valid_utf8(i.message);
    if (!i.expected.empty()) x["expected"] = valid_utf8(i.expected);
    if (!i.actual.empty()) x["actual"] = valid_utf8(i.actual);
    out.push_back(std::move(x));
  }
  return out;
}

// The record's tokens; the parts providers price apart only when the server reported them.
json::object usage_json(const usage& u) {
  json::object out{{"input_tokens", u.input_tokens}, {"output_tokens", u.output_tokens}};
  if (u.cached_input_tokens != 0) out["cached_input_tokens"] = u.cached_input_tokens;
  if (u.cache_write_tokens != 0) out["cache_write_tokens"] = u.cache_write_tokens;
  if (u.reasoning_tokens != 0) out["reasoning_tokens"] = u.reasoning_tokens;
  return out;
}

json::array notes_json(const note_list& notes) {
  json::array out;
  for (const note& n : notes) {
    json::object x;
    x["kind"] = to_string(n.kind);
    x["path"] = valid_utf8(n.path.to_string());
    x["detail"] = valid_utf8(n.detail);
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace

// ---- the input ---------------------------------------------------------------------------------

record_reader::record_reader(const run_config& config, std::unordered_set<std::string> done_ids,
                             const std::atomic<bool>& stop)
    : config_(config),
      done_ids_(std::move(done_ids)),
      stop_(stop),
      in_(&std::cin),
      shown_name_(config.input_file == "-" ? std::string("standard input") : config.input_file) {
  const std::string& file = config.input_file;
  if (file == "-") return;
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || S_ISDIR(st.st_mode))
    throw fatal_error("cannot read '" + file + "': " + (S_ISDIR(st.st_mode) ? "a directory" : std::strerror(errno)));
  file_.open(file, std::ios::binary);
  if (!file_) throw fatal_error("cannot read '" + file + "': " + std::strerror(errno));
  in_ = &file_;
}

std::optional<json::value> record_reader::next() {
  std::string line;
  while (!stop_.load() && std::getline(*in_, line)) {
    ++line_no_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    // The JSON parser would only say "syntax error": say what and where.
    if (const std::size_t bad = detail::first_invalid_utf8(line); bad != std::string_view::npos) {
      ++bad_lines_;
      std::cerr << "covenant run: " << shown_name_ << ":" << line_no_ << ": skipped: not UTF-8 (byte "
                << hex_byte(line[bad]) << " at offset " << bad << " of the line)\n";
      continue;
    }
    json::error_code ec;
    json::value record = json::parse(line, ec);
    if (ec || !record.is_object()) {
      ++bad_lines_;
      std::cerr << "covenant run: " << shown_name_ << ":" << line_no_ << ": skipped: "
                << (ec ? "not JSON (" + ec.message() + ")" : std::string("not a JSON object")) << "\n";
      continue;
    }
    json::value id = id_of(record, config_.id_field, line_no_);
    const std::string key = id_key(id);
    if (config_.shard && stable_hash(key) % config_.shard->second != config_.shard->first) continue;
    if (done_ids_.count(key) != 0) {
      ++skipped_;
      continue;
    }
    json::value input = record;
    if (config_.input_field) {
      const json::value* v = record.as_object().if_contains(*config_.input_field);
      if (v == nullptr) {
        ++bad_lines_;
        std::cerr << "covenant run: " << shown_name_ << ":" << line_no_ << ": skipped: no field '"
                  << *config_.input_field << "'\n";
        continue;
      }
      input = *v;
    }
    in_flight_[next_index_++] = pending_record{std::move(id), line_no_, query_id_of(key)};
    return input;
  }
  if (in_->bad()) {
    ++bad_lines_;
    std::cerr << "covenant run: cannot read " << shown_name_ << "\n";
  }
  return std::nullopt;
}

const pending_record* record_reader::pending(std::size_t index) const {
  const auto it = in_flight_.find(index);
  return it == in_flight_.end() ? nullptr : &it->second;
}

std::size_t count_lines(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::size_t n = 0;
  char buffer[1 << 16];
  bool last_newline = true;
  while (in) {
    in.read(buffer, sizeof buffer);
    const std::streamsize got = in.gcount();
    for (std::streamsize i = 0; i < got; ++i) n += buffer[i] == '\n' ? 1 : 0;
    if (got > 0) last_newline = buffer[got - 1] == '\n';
  }
  return n + (last_newline ? 0 : 1);
}

// ---- the output --------------------------------------------------------------------------------

std::unordered_set<std::string> finished_ids(const std::string& file) {
  std::unordered_set<std::string> ids;
  std::ifstream in(file, std::ios::binary);
  if (!in) return ids;
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  std::size_t complete = content.rfind('\n');
  complete = complete == std::string::npos ? 0 : complete + 1;
  if (complete < content.size()) {
    // The line a crash cut: not a finished record; drop it so that the file stays JSON Lines.
    if (::truncate(file.c_str(), static_cast<off_t>(complete)) != 0)
      throw fatal_error("cannot repair '" + file + "' (an unfinished last line): " + std::strerror(errno));
  }
  std::size_t at = 0;
  while (at < complete) {
    const std::size_t end = content.find('\n', at);
    const std::string_view line(content.data() + at, end - at);
    at = end + 1;
    json::error_code ec;
    json::value v = json::parse(line, ec);
    if (ec || !v.is_object()) continue;
    if (const json::value* id = v.as_object().if_contains("id")) ids.insert(id_key(*id));
  }
  return ids;
}

result_writer::result_writer(const run_config& config, bool priced) : fd_(STDOUT_FILENO), priced_(priced) {
  if (!config.output_file) return;
  const std::string& file = *config.output_file;
  fd_ = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (config.resume ? 0 : O_TRUNC), 0644);
  if (fd_ < 0) throw fatal_error("cannot write '" + file + "': " + std::strerror(errno));
}

void result_writer::result(const pending_record& record, const outcome<json::value>& o) {
  json::object line;
  line["id"] = record.id;
  line["line"] = record.line;
  line["query_id"] = record.query_id;
  line["ok"] = o.success;
  line["value"] = o.success && o.result ? *o.result : json::value(nullptr);
  if (!o.success) line["failed_stage"] = to_string(o.failed_stage);
  line["issues"] = issues_json(o.issues);
  line["notes"] = notes_json(o.notes);
  line["attempts"] = o.attempts.size();
  line["usage"] = usage_json(o.usage);
  if (priced_) {
    line["cost_usd"] = o.cost_usd ? json::value(*o.cost_usd) : json::value(nullptr);  // null: unknown, never 0
    for (const attempt& at : o.attempts)
      if (!at.cost_usd && !at.model.empty()) unpriced_models_.insert(at.model);
  }
  // The record's time splits into its queue time (waiting for the rate limiter, a server's
  // Retry-After, transport-retry backoff) and the rest (latency_ms): the two add up to it.
  const std::chrono::nanoseconds queued = std::min(o.queued(), o.elapsed);
  line["latency_ms"] = std::chrono::duration<double, std::milli>(o.elapsed - queued).count();
  line["queue_ms"] = std::chrono::duration<double, std::milli>(queued).count();
  write(json_text(line));
}

void result_writer::partial(const stream_update<json::value>& u) {
  json::object line{{"partial", u.partial->value()}, {"attempt", u.attempt}};
  write(json_text(line));
}

void result_writer::close() {
  if (fd_ != STDOUT_FILENO) ::close(fd_);
}

void result_writer::write(std::string line) {
  line.push_back('\n');
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      failed_ = true;
      return;
    }
    done += static_cast<std::size_t>(n);
  }
}

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
  if (flags.max_retries) eo.max_retries = *flags.max_retries;
  if (flags.initial_backoff) eo.initial_backoff = *flags.initial_backoff;
  eo.cache_system_prompt = flags.cache_system_prompt;
  if (flags.reasoning_effort) eo.reasoning_effort = *flags.reasoning_effort;
  eo.thinking_budget = flags.thinking_budget;
  if (flags.max_backoff) eo.max_backoff = *flags.max_backoff;
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
                         const covenant::batch_options& batch) {
  run_totals totals;
  covenant::batch_progress& summary = totals.summary;
  const auto started = std::chrono::steady_clock::now();
  while (auto input = records.next()) {
    const std::size_t index = records.last_index();
    const pending_record& record = *records.pending(index);
    call_options this_call;
    this_call.query_id = record.query_id;
    auto f = contract.stream(
        std::move(*input),
        [&out](const stream_update<json::value>& u) {
          if (u.what == stream_update<json::value>::kind::partial) out.partial(u);
        },
        std::move(this_call));
    outcome<json::value> o = f.get().outcome;
    out.result(record, o);
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
                       covenant::batch_options batch) {
  run_totals totals;
  // Each record's calls carry its query id: its result line and its audit lines join on it.
  batch.query_id = [&records](std::size_t index) -> call_id {
    const pending_record* record = records.pending(index);
    return record == nullptr ? call_id() : call_id(record->query_id);
  };
  totals.summary = run_batch(
      contract, [&records] { return records.next(); },
      [&](std::size_t index, dynamic_contract::call_result&& r) {
        const outcome<json::value>& o = r.outcome;
        const pending_record* record = records.pending(index);
        if (record == nullptr) return;
        if (o.failed_stage == stage::cancelled && interrupted.load()) {
          records.forget(index);  // not finished: a run with --resume does it again
          return;
        }
        if (!o.success) ++totals.failed;
        out.result(*record, o);
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
    totals = config.stream ? run_streaming(contract, records, out, batch)
                           : run_batched(contract, records, out, std::move(batch));
  }
  out.close();
  const bool metrics_written = telemetry.finish();

  // The summary and the exit status.
  if (!config.quiet) print_summary(config, totals, records, out, engine, options.prices != nullptr, terminal);
  warn_cache_errors(engine);
  return exit_status(totals, records, out, metrics_written);
}

}  // namespace covenant::cli
