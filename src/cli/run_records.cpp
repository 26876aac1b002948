// covenant run: the input's records, read one line at a time, and their result lines, written as
// records finish; --resume skips what an earlier run already wrote.
#include <covenant/types/detail/utf8.hpp>

#include <boost/json/parse.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <iterator>
#include <string_view>

#include "run_command.hpp"

namespace covenant::cli {

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

pending_record* record_reader::pending(std::size_t index) {
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
  if (o.trace.valid()) {  // the call's trace context, as in its audit lines: from here to its trace
    line["trace_id"] = o.trace.trace_id_hex();
    line["span_id"] = o.trace.span_id_hex();
  }
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

}  // namespace covenant::cli
