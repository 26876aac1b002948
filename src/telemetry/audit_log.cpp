// The audit log: JSON lines through memory-mapped journals (line_journal.hpp) into an spdlog daily
// file sink, with retention in days.
#include "covenant/telemetry/audit_log.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <spdlog/formatter.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/daily_file_sink.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "covenant/types/encode.hpp"
#include "line_journal.hpp"
#include "engine/log.hpp"

namespace covenant {


namespace {

class line_buffer;

constexpr std::string_view file_prefix = "audit_";
constexpr std::string_view file_suffix = ".jsonl";
constexpr std::string_view journal_prefix = ".audit-";
constexpr std::size_t journal_bytes = 256 * 1024;

// The date in a file name `audit_YYYY-MM-DD.jsonl` as days since the epoch; false otherwise.
bool date_of(const std::string& name, long& days) {
  if (name.size() != file_prefix.size() + 10 + file_suffix.size()) return false;
  if (name.compare(0, file_prefix.size(), file_prefix) != 0) return false;
  if (name.compare(name.size() - file_suffix.size(), file_suffix.size(), file_suffix) != 0) return false;
  int y = 0;
  unsigned m = 0;
  unsigned d = 0;
  const std::string date = name.substr(file_prefix.size(), 10);
  if (std::sscanf(date.c_str(), "%4d-%2u-%2u", &y, &m, &d) != 3) return false;
  const std::chrono::year_month_day ymd{std::chrono::year{y}, std::chrono::month{m}, std::chrono::day{d}};
  if (!ymd.ok()) return false;
  days = std::chrono::sys_days(ymd).time_since_epoch().count();
  return true;
}

// Today's local date as days since the epoch (the sink names files by local date).
long local_today() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  const std::chrono::year_month_day ymd{std::chrono::year{tm.tm_year + 1900},
                                        std::chrono::month{static_cast<unsigned>(tm.tm_mon + 1)},
                                        std::chrono::day{static_cast<unsigned>(tm.tm_mday)}};
  return std::chrono::sys_days(ymd).time_since_epoch().count();
}

// The first local midnight after `t` (when the daily file changes).
std::chrono::system_clock::time_point next_local_midnight(std::chrono::system_clock::time_point t) {
  const std::time_t secs = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  localtime_r(&secs, &tm);
  tm.tm_mday += 1;
  tm.tm_hour = 0;
  tm.tm_min = 0;
  tm.tm_sec = 0;
  tm.tm_isdst = -1;
  return std::chrono::system_clock::from_time_t(std::mktime(&tm));
}

// Whether `file` ends with `text` (a journal recovered after a crash during its drain).
bool file_ends_with(const std::filesystem::path& file, std::string_view text) {
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) return false;
  const auto size = static_cast<std::size_t>(in.tellg());
  if (size < text.size()) return false;
  std::string tail(text.size(), '\0');
  in.seekg(static_cast<std::streamoff>(size - text.size()));
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  return in && tail == text;
}

// 2026-11-25T10:30:00.123Z in `out` (24 bytes; the date and time of day are formatted once per
// second per thread).
void write_iso8601_utc(char* out, std::chrono::system_clock::time_point t) {
  thread_local std::time_t cached_second = -1;
  thread_local char cached[80];
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  if (secs != cached_second) {
    std::tm tm{};
    gmtime_r(&secs, &tm);
    std::snprintf(cached, sizeof cached, "%04d-%02d-%02dT%02d:%02d:%02d.", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    cached_second = secs;
  }
  std::memcpy(out, cached, 20);
  const int milli = static_cast<int>(ms % 1000);
  out[20] = static_cast<char>('0' + milli / 100);
  out[21] = static_cast<char>('0' + milli / 10 % 10);
  out[22] = static_cast<char>('0' + milli % 10);
  out[23] = 'Z';
}

template <class N>
void append_number(std::string& out, N v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, static_cast<std::size_t>(r.ptr - buf));
}

}  // namespace

// The message as it is, and a newline (no pattern to interpret per line).
class line_formatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    dest.append(msg.payload.begin(), msg.payload.end());
    dest.push_back('\n');
  }
  [[nodiscard]] std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<line_formatter>(); }
};

struct audit_log::impl {
  audit_log_options options;
  std::shared_ptr<spdlog::sinks::daily_file_sink_mt> sink;
  std::shared_ptr<spdlog::logger> logger;
  std::vector<std::string> redactions;

  // Two journals (none with flush_interval 0): callers copy lines into the current one; a full
  // one (or, every flush_interval, the current one) is handed to the flusher thread, which writes
  // it to the file outside the lock while callers go on with the other. The file is written by
  // one thread at a time: the flusher while `handed_over`, others only while it is not (with
  // `mutex` held).
  struct pending_lines {
    std::unique_ptr<detail::line_journal> journal;
    std::chrono::system_clock::time_point since{};    // the first line's time
    std::chrono::system_clock::time_point day_end{};  // the next local midnight after it
  };
  std::mutex mutex;
  pending_lines journals[2];
  int current = 0;
  bool handed_over = false;  // journals[1 - current] waits for, or is in, the flusher's write
  std::condition_variable_any wake;    // the flusher: a journal was handed over
  std::condition_variable_any written;  // callers: the flusher's write ended
  std::jthread flusher;

  // Writes `lines` (one or more, each ending in a newline) to the day's file of `t`.
  void write(std::string_view lines, std::chrono::system_clock::time_point t) {
    if (!lines.empty() && lines.back() == '\n') lines.remove_suffix(1);
    const spdlog::details::log_msg msg(t, spdlog::source_loc{}, logger->name(), spdlog::level::info,
                                       spdlog::string_view_t(lines.data(), lines.size()));
    sink->log(msg);
  }

  // Waits (with `lock` on `mutex`) until the flusher has no journal.
  void wait_written(std::unique_lock<std::mutex>& lock) {
    written.wait(lock, [&] { return !handed_over; });
  }

  // Hands the current journal to the flusher and makes the other current (with `lock`), unless
  // the flusher took it meanwhile (every flush_interval it takes the current one).
  void hand_over(std::unique_lock<std::mutex>& lock) {
    wait_written(lock);
    if (journals[current].journal->empty()) return;
    current = 1 - current;
    handed_over = true;
    wake.notify_one();
  }

  // Writes every pending line now, in order (with `lock`; the flusher is idle afterwards).
  void drain_all(std::unique_lock<std::mutex>& lock) {
    wait_written(lock);
    pending_lines& p = journals[current];
    if (!p.journal || p.journal->empty()) return;
    write(p.journal->pending(), p.since);
    p.journal->clear();
  }

  // `line` (without its newline) at time `now`: into the current journal, or to the file.
  void add(std::unique_lock<std::mutex>& lock, std::string_view line, std::chrono::system_clock::time_point now) {
    if (!journals[0].journal) {
      write(line, now);
      return;
    }
    for (;;) {
      pending_lines& p = journals[current];
      if (p.journal->empty()) {
        p.journal->begin();
        p.since = now;
        p.day_end = next_local_midnight(now);
        if (p.journal->append(line)) return;
        wait_written(lock);  // longer than a whole journal: after the lines before it
        write(line, now);
        return;
      }
      // A new day starts a new file: the lines of the day before go to theirs first.
      if (now < p.day_end && p.journal->append(line)) return;
      hand_over(lock);  // full, or a new day
    }
  }

  // The flusher thread: writes the journals handed over, and every flush_interval the current one.
  void flush_loop(std::stop_token stop) {
    std::unique_lock lock(mutex);
    for (;;) {
      // A journal handed over is written even when the stop came first (the thread may start
      // late).
      if (!wake.wait_for(lock, stop, options.flush_interval, [&] { return handed_over; })) {
        if (stop.stop_requested()) return;
        if (journals[current].journal->empty()) continue;
        current = 1 - current;  // the other one is empty: nothing is handed over
        handed_over = true;
      }
      pending_lines& p = journals[1 - current];
      lock.unlock();
      std::string failure;
      try {
        write(p.journal->pending(), p.since);
      } catch (const std::exception& e) {
        failure = e.what();
      } catch (...) {
        failure = "unknown error";
      }
      lock.lock();
      if (failure.empty()) {
        p.journal->clear();
      } else {
        // Its lines stay in its file for the next audit_log opened on the directory; a new
        // journal takes its place.
        detail::log_error("audit log: lines could not be written (they stay in {}): {}", p.journal->path().string(),
                          failure);
        p.journal->keep_file();
        try {
          p.journal = std::make_unique<detail::line_journal>(options.directory, journal_prefix, journal_bytes);
        } catch (const std::exception& e) {
          detail::log_error("audit log: {}", e.what());
        }
      }
      handed_over = false;
      written.notify_all();
    }
  }

  std::size_t sweep() const {
    if (options.retention_days == 0) return 0;
    const long oldest = local_today() - static_cast<long>(options.retention_days) + 1;
    std::size_t removed = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(options.directory, ec)) {
      long day = 0;
      if (!entry.is_regular_file(ec) || !date_of(entry.path().filename().string(), day) || day >= oldest) continue;
      if (std::filesystem::remove(entry.path(), ec)) ++removed;
      else detail::log_warn("audit log: could not delete {}: {}", entry.path().string(), ec.message());
    }
    return removed;
  }

  // The line for `e` at time `now`, written in `storage` (a buffer that is reused); with `open`,
  // without its closing brace (the steps are added before it).
  std::string_view write_line(const attempt_event& e, std::string& storage, std::chrono::system_clock::time_point now,
                              bool open = false) const;
  // The parts of a line: issues (`[...]`), token usage (`{...}`), `,"steps":[...]`.
  void append_issues(line_buffer& out, const issue_list& issues) const;
  static void append_usage(line_buffer& out, const usage& u);
  // A model call's `,"usage",["model",]["cost_usd",]"latency_ms","queue_ms"` (attempts and steps).
  static void append_model_call(line_buffer& out, const usage& u, const std::string& model,
                                const std::optional<double>& cost, std::chrono::nanoseconds latency,
                                std::chrono::nanoseconds queued);
  void append_steps(line_buffer& out, std::span<const agent_step> steps) const;
  // A tool call's arguments as read, as JSON, with every redaction applied to its strings.
  [[nodiscard]] std::string redacted_json(const std::string& json) const;
  // The line of an agent call that ended in its tool loop: the attempt that was to answer, failed,
  // with the call's issues and the steps no attempt line carries.
  std::string loop_end_line(const finished_event& e, std::span<const agent_step> steps,
                            std::chrono::system_clock::time_point now) const;

  // `s` with every redaction replaced.
  [[nodiscard]] std::string redacted(std::string_view s) const {
    std::string text(s);
    for (const auto& r : redactions) {
      for (std::size_t at = text.find(r); at != std::string::npos; at = text.find(r, at + 10))
        text.replace(at, r.size(), "[redacted]");
    }
    return text;
  }
};

audit_log::audit_log(audit_log_options options) : impl_(std::make_unique<impl>()) {
  impl_->options = std::move(options);
  const auto& dir = impl_->options.directory;
  if (dir.empty()) throw std::runtime_error("covenant::audit_log: no directory given");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("covenant::audit_log: cannot create " + dir.string() + ": " + ec.message());
  for (const auto& r : impl_->options.redact)
    if (!r.empty()) impl_->redactions.push_back(r);
  if (impl_->options.redact_env_keys) {
    for (const char* name : {"COVENANT_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"}) {
      const char* v = std::getenv(name);
      if (v != nullptr && std::string_view(v).size() >= 8) impl_->redactions.emplace_back(v);
    }
  }
  spdlog::file_event_handlers handlers;
  impl* self = impl_.get();
  // Opened at start and at each daily rotation: the retention applies then.
  handlers.after_open = [self](const spdlog::filename_t&, std::FILE* file) {
    // Unbuffered: each write of the sink is one write to the file, nothing waits in the process.
    if (file != nullptr) std::setvbuf(file, nullptr, _IONBF, 0);
    try {
      self->sweep();
    } catch (...) {
    }
  };
  try {
    impl_->sink = std::make_shared<spdlog::sinks::daily_file_sink_mt>((dir / "audit.jsonl").string(), 0, 0, false,
                                                                       0, handlers);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("covenant::audit_log: ") + e.what());
  }
  impl_->logger = std::make_shared<spdlog::logger>("covenant.audit", impl_->sink);
  impl_->logger->set_formatter(std::make_unique<line_formatter>());
  impl_->logger->set_level(spdlog::level::info);

  // Lines that a process ended without writing (killed, crashed) are in its journal: they go to
  // today's file now (unless that file already ends with them: the process died after writing
  // them and before clearing its journal).
  try {
    detail::line_journal::recover(dir, journal_prefix, [&](std::string_view lines) {
      if (file_ends_with(impl_->sink->filename(), lines)) return;
      impl_->write(lines, std::chrono::system_clock::now());
      detail::log_warn("audit log: {} line(s) left by a process that ended were written to {}",
                       std::count(lines.begin(), lines.end(), '\n'), impl_->sink->filename());
    });
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("covenant::audit_log: recovering a journal: ") + e.what());
  }
  if (impl_->options.flush_interval.count() > 0) {
    try {
      for (auto& p : impl_->journals)
        p.journal = std::make_unique<detail::line_journal>(dir, journal_prefix, journal_bytes);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("covenant::audit_log: journal ") + e.what());
    }
    impl_->flusher = std::jthread([self](std::stop_token stop) { self->flush_loop(std::move(stop)); });
  }
}

audit_log::~audit_log() {
  if (!impl_) return;
  if (impl_->flusher.joinable()) {
    impl_->flusher.request_stop();
    impl_->flusher.join();
  }
  std::unique_lock lock(impl_->mutex);
  try {
    impl_->drain_all(lock);
    impl_->sink->flush();
  } catch (...) {
    // Kept for the next audit_log opened on the directory.
    for (auto& p : impl_->journals)
      if (p.journal) p.journal->keep_file();
    detail::log_error("audit log: lines could not be written; they stay in the journal for the next log opened on {}",
                      impl_->options.directory.string());
  }
}

void audit_log::flush() {
  std::unique_lock lock(impl_->mutex);
  impl_->drain_all(lock);
  impl_->sink->flush();
}

std::filesystem::path audit_log::current_file() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->sink->filename();
}

std::size_t audit_log::apply_retention() const { return impl_->sweep(); }

namespace {

// Appends to a buffer that only grows (no allocation per line once it is big enough), copying
// with memcpy: the audit line is written on the caller's thread for every attempt.
class line_buffer {
 public:
  explicit line_buffer(std::string& storage) : s_(&storage) {
    if (s_->size() < 512) s_->resize(512);
    p_ = s_->data();
  }
  /// Goes on after the first `used` bytes of `storage` (what a buffer on it wrote).
  line_buffer(std::string& storage, std::size_t used) : line_buffer(storage) {
    room(used);
    p_ = s_->data() + used;
  }
  [[nodiscard]] std::string_view view() const noexcept { return {s_->data(), static_cast<std::size_t>(p_ - s_->data())}; }

  void lit(std::string_view v) {
    room(v.size());
    std::memcpy(p_, v.data(), v.size());
    p_ += v.size();
  }
  void ch(char c) {
    room(1);
    *p_++ = c;
  }
  template <class N>
  void number(N v) {
    room(32);
    p_ = std::to_chars(p_, p_ + 32, v).ptr;
  }
  void iso8601_utc(std::chrono::system_clock::time_point t) {
    room(24);
    write_iso8601_utc(p_, t);
    p_ += 24;
  }
  void millis(double v) {
    room(64);
    p_ = std::to_chars(p_, p_ + 64, v, std::chars_format::fixed, 3).ptr;
  }
  /// A JSON string (quotes included).
  void json(std::string_view v) {
    static constexpr char hex[] = "0123456789abcdef";
    room(2 + 6 * v.size());
    *p_++ = '"';
    for (const char c : v) {
      const auto u = static_cast<unsigned char>(c);
      if (u >= 0x20 && c != '"' && c != '\\') {
        *p_++ = c;
        continue;
      }
      *p_++ = '\\';
      switch (c) {
        case '"': *p_++ = '"'; break;
        case '\\': *p_++ = '\\'; break;
        case '\n': *p_++ = 'n'; break;
        case '\r': *p_++ = 'r'; break;
        case '\t': *p_++ = 't'; break;
        default:
          *p_++ = 'u';
          *p_++ = '0';
          *p_++ = '0';
          *p_++ = hex[u >> 4];
          *p_++ = hex[u & 15];
      }
    }
    *p_++ = '"';
  }

 private:
  void room(std::size_t n) {
    const auto used = static_cast<std::size_t>(p_ - s_->data());
    if (used + n <= s_->size()) return;
    s_->resize(std::max(2 * s_->size(), used + n));
    p_ = s_->data() + used;
  }

  std::string* s_;
  char* p_;
};

}  // namespace

std::string audit_log::line(const attempt_event& e) const {
  std::string storage;
  const std::string_view open = impl_->write_line(e, storage, std::chrono::system_clock::now(), true);
  line_buffer out(storage, open.size());
  if (!e.steps.empty()) impl_->append_steps(out, e.steps);
  out.ch('}');
  return std::string(out.view());
}

void audit_log::impl::append_issues(line_buffer& out, const issue_list& issues) const {
  using namespace std::string_view_literals;
  out.ch('[');
  for (std::size_t i = 0; i < issues.size(); ++i) {
    const issue& x = issues[i];
    if (i) out.ch(',');
    out.lit("{\"path\":"sv);
    out.json(x.path.to_string());
    out.lit(",\"code\":\""sv);
    out.lit(to_string(x.code));
    out.lit("\",\"message\":"sv);
    out.json(redacted(x.message));
    if (!x.actual.empty()) {
      out.lit(",\"actual\":"sv);
      out.json(redacted(x.actual));
    }
    if (x.action != fail_action::reask) {
      out.lit(",\"action\":\""sv);
      out.lit(to_string(x.action));
      out.ch('"');
    }
    out.ch('}');
  }
  out.ch(']');
}

void audit_log::impl::append_usage(line_buffer& out, const usage& u) {
  using namespace std::string_view_literals;
  out.lit("{\"input_tokens\":"sv);
  out.number(u.input_tokens);
  out.lit(",\"output_tokens\":"sv);
  out.number(u.output_tokens);
  // the parts providers price apart, when the server reported any
  if (u.cached_input_tokens != 0) {
    out.lit(",\"cached_input_tokens\":"sv);
    out.number(u.cached_input_tokens);
  }
  if (u.cache_write_tokens != 0) {
    out.lit(",\"cache_write_tokens\":"sv);
    out.number(u.cache_write_tokens);
  }
  if (u.reasoning_tokens != 0) {
    out.lit(",\"reasoning_tokens\":"sv);
    out.number(u.reasoning_tokens);
  }
  out.ch('}');
}

namespace {

// Every string of `v` (keys too) with `redact` applied.
template <class Redact>
void redact_strings(boost::json::value& v, const Redact& redact) {
  if (v.is_string()) {
    const boost::json::string& s = v.get_string();
    const std::string text = redact(std::string_view(s.data(), s.size()));
    v.emplace_string().assign(text);
  } else if (v.is_array()) {
    for (boost::json::value& x : v.get_array()) redact_strings(x, redact);
  } else if (v.is_object()) {
    boost::json::object& o = v.get_object();
    boost::json::object copy(o.storage());
    copy.reserve(o.size());
    for (auto& [key, x] : o) {
      redact_strings(x, redact);
      const std::string name = redact(std::string_view(key.data(), key.size()));
      copy.insert_or_assign(name, std::move(x));
    }
    o = std::move(copy);
  }
}

}  // namespace

std::string audit_log::impl::redacted_json(const std::string& json) const {
  if (redactions.empty()) return json;
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(json, ec);
  if (ec) return {};
  redact_strings(v, [this](std::string_view text) { return redacted(text); });
  return boost::json::serialize(v);
}

void audit_log::impl::append_model_call(line_buffer& out, const usage& u, const std::string& model,
                                        const std::optional<double>& cost, std::chrono::nanoseconds latency,
                                        std::chrono::nanoseconds queued) {
  using namespace std::string_view_literals;
  out.lit(",\"usage\":"sv);
  append_usage(out, u);
  if (!model.empty()) {
    out.lit(",\"model\":"sv);
    out.json(model);
  }
  if (cost) {
    out.lit(",\"cost_usd\":"sv);
    out.number(*cost);
  }
  out.lit(",\"latency_ms\":"sv);
  out.millis(std::chrono::duration<double, std::milli>(latency).count());
  out.lit(",\"queue_ms\":"sv);
  out.millis(std::chrono::duration<double, std::milli>(queued).count());
}

void audit_log::impl::append_steps(line_buffer& out, std::span<const agent_step> steps) const {
  using namespace std::string_view_literals;
  out.lit(",\"steps\":["sv);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const agent_step& s = steps[k];
    if (k) out.ch(',');
    out.lit("{\"step\":"sv);
    out.number(s.number);
    append_model_call(out, s.usage, s.model, s.cost_usd, s.latency, s.queued);
    out.lit(",\"tools\":["sv);
    for (std::size_t i = 0; i < s.tools.size(); ++i) {
      const tool_run& r = s.tools[i];
      if (i) out.ch(',');
      out.lit("{\"id\":"sv);
      out.json(r.call.id);
      out.lit(",\"name\":"sv);
      out.json(r.call.name);
      out.lit(",\"status\":\""sv);
      out.lit(to_string(r.status));
      out.lit("\",\"elapsed_ms\":"sv);
      out.millis(std::chrono::duration<double, std::milli>(r.elapsed).count());
      const std::string args = r.arguments.empty() ? std::string() : redacted_json(r.arguments);
      if (!args.empty()) {  // as read: a JSON value
        out.lit(",\"arguments\":"sv);
        out.lit(args);
      } else {  // as the model wrote them: a string
        out.lit(",\"raw_arguments\":"sv);
        out.json(redacted(r.call.arguments));
      }
      out.lit(",\"issues\":"sv);
      append_issues(out, r.issues);
      out.ch('}');
    }
    out.ch(']');
    if (options.include_reply && !s.text.empty()) {
      out.lit(",\"reply\":"sv);
      out.json(redacted(s.text));
    }
    out.ch('}');
  }
  out.ch(']');
}

std::string_view audit_log::impl::write_line(const attempt_event& e, std::string& storage,
                                            std::chrono::system_clock::time_point now, bool open) const {
  using namespace std::string_view_literals;
  const attempt& a = e.a;
  line_buffer out(storage);
  out.lit("{\"ts\":\""sv);
  out.iso8601_utc(now);
  out.lit("\",\"query_id\":"sv);
  out.json(e.call.query_id);
  if (e.call.trace != nullptr) {  // the call's trace context: its span, or the application's
    static constexpr char hex[] = "0123456789abcdef";
    out.lit(",\"trace_id\":\""sv);
    for (std::uint8_t b : e.call.trace->trace_id) {
      out.ch(hex[b >> 4]);
      out.ch(hex[b & 15]);
    }
    out.lit("\",\"span_id\":\""sv);
    for (std::uint8_t b : e.call.trace->span_id) {
      out.ch(hex[b >> 4]);
      out.ch(hex[b & 15]);
    }
    out.ch('"');
  }
  out.lit(",\"contract\":"sv);
  out.json(e.call.contract);
  out.lit(a.kind == attempt_kind::input_repair ? ",\"kind\":\"input_repair\",\"attempt\":"sv
                                               : ",\"kind\":\"output\",\"attempt\":"sv);
  out.number(a.number);
  out.lit(",\"result\":\""sv);
  out.lit(to_string(e.verdict));
  out.lit("\",\"retry_count\":"sv);
  out.number(e.retries);
  out.lit(",\"schema_version\":"sv);
  out.json(e.call.schema_version);
  out.lit(",\"issues\":"sv);
  append_issues(out, a.issues);
  out.lit(",\"notes\":{"sv);
  if (!a.notes.empty()) {
    std::size_t counts[16] = {};
    for (const note& n : a.notes) ++counts[static_cast<std::size_t>(n.kind) & 15];
    bool first = true;
    for (std::size_t k = 0; k < 16; ++k) {
      if (counts[k] == 0) continue;
      if (!first) out.ch(',');
      first = false;
      out.ch('"');
      out.lit(to_string(static_cast<note_kind>(k)));
      out.lit("\":"sv);
      out.number(counts[k]);
    }
  }
  out.ch('}');
  append_model_call(out, a.usage, a.model, a.cost_usd, a.latency, a.queued);
  out.lit(",\"finish_reason\":"sv);
  out.json(a.finish_reason);
  if (!a.media.empty()) {  // what was sent, never the bytes (with include_reply too)
    out.lit(",\"media\":"sv);
    out.lit(media_digest(a.media));
  }
  if (options.include_reply) {
    out.lit(",\"reply\":"sv);
    out.json(redacted(a.text));
    if (!a.reasoning.empty()) {
      out.lit(",\"reasoning\":"sv);
      out.json(redacted(a.reasoning));
    }
  }
  if (!open) out.ch('}');
  return out.view();
}

std::string audit_log::impl::loop_end_line(const finished_event& e, std::span<const agent_step> steps,
                                           std::chrono::system_clock::time_point now) const {
  using namespace std::string_view_literals;
  const outcome_base& o = e.outcome;
  // The attempt that was to answer: no reply, the call's issues.
  attempt a;
  for (const attempt& x : o.attempts) a.number += x.kind == attempt_kind::output ? 1 : 0;
  a.issues = o.issues;
  const attempt_event as_attempt{e.call, a, o.success ? verdict::accepted : verdict::failed, a.number - 1};
  std::string storage;
  const std::size_t open = write_line(as_attempt, storage, now, true).size();
  line_buffer out(storage, open);
  if (!o.reason.empty()) {
    out.lit(",\"reason\":"sv);
    out.json(o.reason);
  }
  append_steps(out, steps);
  out.ch('}');
  return std::string(out.view());
}

void audit_log::on_attempt(const attempt_event& e) {
  thread_local std::string storage;  // reused: no allocation per line once it has grown
  // One clock reading for the line's timestamp and the sink's rotation check; straight to the
  // sink (the logger would only read the clock again and walk its one sink).
  const auto now = std::chrono::system_clock::now();
  std::string_view text;
  if (e.steps.empty()) {
    text = impl_->write_line(e, storage, now);
  } else {  // with the agent steps that led to the attempt
    const std::size_t open = impl_->write_line(e, storage, now, true).size();
    line_buffer out(storage, open);
    impl_->append_steps(out, e.steps);
    out.ch('}');
    text = out.view();
  }
  try {
    std::unique_lock lock(impl_->mutex);
    impl_->add(lock, text, now);
  } catch (const std::exception& ex) {
    detail::log_error("audit log: a line could not be written: {}", ex.what());
  }
}

void audit_log::on_finished(const finished_event& e) {
  const outcome_base& o = e.outcome;
  if (o.steps.empty()) return;
  // Steps that no attempt followed: the loop ended the call (a limit, a tool error, a stop).
  int answers = 0;
  for (const attempt& a : o.attempts) answers += a.kind == attempt_kind::output ? 1 : 0;
  std::size_t from = o.steps.size();
  while (from > 0 && o.steps[from - 1].attempt > answers) --from;
  if (from == o.steps.size()) return;
  try {
    const auto now = std::chrono::system_clock::now();
    const std::string text = impl_->loop_end_line(e, std::span<const agent_step>(o.steps).subspan(from), now);
    std::unique_lock lock(impl_->mutex);
    impl_->add(lock, text, now);
  } catch (const std::exception& ex) {
    detail::log_error("audit log: a line could not be written: {}", ex.what());
  }
}

}  // namespace covenant
