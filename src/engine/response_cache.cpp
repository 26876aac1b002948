// The response cache (covenant/engine/response_cache.hpp): one SQLite connection per cached_engine,
// in WAL mode so that many processes read and write one file at once. SQLite is Debian's
// libsqlite3-dev; a request's identity is the cassette's normalized request (request_key.hpp: one
// rule for both).
#include "covenant/engine/response_cache.hpp"

#include <sqlite3.h>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <atomic>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

#include "covenant/engine/runtime.hpp"
#include "log.hpp"
#include "request_key.hpp"

namespace covenant {

namespace json = boost::json;

namespace {

std::int64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

/// A stored reply: {"text", "tool_calls" (when it has some: [{"id", "name", "arguments"}]),
/// "reasoning" (when it has some), "model", "finish_reason", "mode"}.
std::string response_json(const chat_response& r) {
  json::object o;
  o["text"] = r.text;
  if (!r.tool_calls.empty()) {
    json::array calls;
    calls.reserve(r.tool_calls.size());
    for (const tool_call& c : r.tool_calls) {
      json::object jc;
      jc["id"] = c.id;
      jc["name"] = c.name;
      jc["arguments"] = c.arguments;
      calls.push_back(std::move(jc));
    }
    o["tool_calls"] = std::move(calls);
  }
  if (!r.reasoning.empty()) o["reasoning"] = r.reasoning;
  o["model"] = r.model;
  o["finish_reason"] = r.finish_reason;
  o["mode"] = to_string(r.mode);
  return json::serialize(o);
}

std::optional<chat_response> response_of(std::string_view text) {
  boost::system::error_code ec;
  const json::value v = json::parse(text, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  if (o == nullptr) return std::nullopt;
  chat_response r;
  auto str = [&](std::string_view key, std::string& out) {
    if (const json::value* x = o->if_contains(key); x != nullptr && x->is_string()) out = x->as_string();
  };
  if (!o->contains("text")) return std::nullopt;
  str("text", r.text);
  // Entries stored before tool calls have none; a malformed list makes the entry unreadable.
  if (const json::value* calls = o->if_contains("tool_calls"); calls != nullptr) {
    if (!calls->is_array()) return std::nullopt;
    for (const json::value& jc : calls->get_array()) {
      const json::object* c = jc.if_object();
      if (c == nullptr) return std::nullopt;
      auto field = [&](std::string_view key, std::string& out) {
        const json::value* x = c->if_contains(key);
        if (x == nullptr || !x->is_string()) return false;
        out = x->get_string();
        return true;
      };
      tool_call call;
      if (!field("id", call.id) || !field("name", call.name) || !field("arguments", call.arguments)) return std::nullopt;
      r.tool_calls.push_back(std::move(call));
    }
  }
  str("reasoning", r.reasoning);
  str("model", r.model);
  str("finish_reason", r.finish_reason);
  std::string mode;
  str("mode", mode);
  if (auto m = parse_output_mode(mode)) r.mode = *m;
  r.from_cache = true;  // and a usage of 0: it cost nothing
  return r;
}

}  // namespace

struct cached_engine::state {
  explicit state(response_cache_options o) : options(std::move(o)) { open(); }
  ~state() { close(); }
  state(const state&) = delete;
  state& operator=(const state&) = delete;

  response_cache_options options;
  std::mutex mutex;  // one connection, one statement at a time
  sqlite3* db = nullptr;
  sqlite3_stmt* get = nullptr;
  sqlite3_stmt* put = nullptr;
  sqlite3_stmt* drop = nullptr;
  std::uint64_t puts = 0;
  std::set<std::string> warned;
  std::atomic<std::uint64_t> hits{0}, misses{0}, stored{0}, errors{0};

  /// A cache failure: counted, and logged once for each kind of problem.
  void failed(std::string_view what, int code) {
    ++errors;
    std::string why = std::string(what) + ": " + (db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code));
    if (warned.size() < 32 && warned.insert(why).second)
      detail::log_warn("response cache {}: {} (the call goes on without the cache)", options.path.string(), why);
  }

  void open() {
    std::error_code ec;
    if (options.path.has_parent_path()) std::filesystem::create_directories(options.path.parent_path(), ec);
    int rc = sqlite3_open_v2(options.path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                             nullptr);
    if (rc == SQLITE_OK) {
      sqlite3_busy_timeout(db, static_cast<int>(options.busy_timeout.count()));
      // Switching to WAL and creating the table take the write lock, and SQLite does not wait for
      // it there (no busy handler while another process does the same): try again until the busy
      // timeout.
      const auto until = std::chrono::steady_clock::now() + options.busy_timeout;
      do {
        rc = sqlite3_exec(db,
                          "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                          "CREATE TABLE IF NOT EXISTS responses(key TEXT PRIMARY KEY, created INTEGER NOT NULL,"
                          " response TEXT NOT NULL) WITHOUT ROWID;"
                          "CREATE INDEX IF NOT EXISTS responses_created ON responses(created);",
                          nullptr, nullptr, nullptr);
        if (rc != SQLITE_BUSY && rc != SQLITE_LOCKED) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      } while (std::chrono::steady_clock::now() < until);
    }
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, "SELECT response, created FROM responses WHERE key = ?1", -1, &get, nullptr);
    if (rc == SQLITE_OK)
      rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO responses(key, created, response) VALUES (?1, ?2, ?3)", -1,
                              &put, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, "DELETE FROM responses WHERE key = ?1", -1, &drop, nullptr);
    if (rc != SQLITE_OK) {
      failed("cannot be opened", rc);
      close();
    }
  }

  void close() {
    sqlite3_finalize(get);
    sqlite3_finalize(put);
    sqlite3_finalize(drop);
    get = put = drop = nullptr;
    if (db != nullptr) sqlite3_close_v2(db);
    db = nullptr;
  }

  std::optional<chat_response> find(const std::string& key) {
    std::lock_guard lock(mutex);
    if (db == nullptr) return std::nullopt;
    sqlite3_reset(get);
    sqlite3_bind_text(get, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
    const int rc = sqlite3_step(get);
    if (rc == SQLITE_DONE) return std::nullopt;
    if (rc != SQLITE_ROW) {
      failed("a lookup failed", rc);
      sqlite3_reset(get);
      return std::nullopt;
    }
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(get, 0));
    const std::string_view stored_text(text != nullptr ? text : "", static_cast<std::size_t>(sqlite3_column_bytes(get, 0)));
    const std::int64_t created = sqlite3_column_int64(get, 1);
    std::optional<chat_response> r = response_of(stored_text);
    sqlite3_reset(get);
    // Entries are stamped in whole seconds: an entry is older than max_age when its age in those
    // seconds is.
    const bool expired =
        options.max_age.count() > 0 && std::chrono::seconds(now_seconds() - created) > options.max_age;
    if (expired || !r) {  // an old entry, or one this version cannot read: a miss, and dropped
      sqlite3_reset(drop);
      sqlite3_bind_text(drop, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
      if (const int d = sqlite3_step(drop); d != SQLITE_DONE) failed("an old entry could not be dropped", d);
      sqlite3_reset(drop);
      return std::nullopt;
    }
    return r;
  }

  void store(const std::string& key, const chat_response& r) {
    const std::string value = response_json(r);
    std::lock_guard lock(mutex);
    if (db == nullptr) return;
    sqlite3_reset(put);
    sqlite3_bind_text(put, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
    sqlite3_bind_int64(put, 2, now_seconds());
    sqlite3_bind_text(put, 3, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
    const int rc = sqlite3_step(put);
    sqlite3_reset(put);
    if (rc != SQLITE_DONE) return failed("a reply could not be stored", rc);
    ++stored;
    if (options.max_bytes != 0 && puts++ % 32 == 0) trim();
  }

  /// Past max_bytes (the pages in use), the oldest tenth of the entries goes, until under it.
  void trim() {
    auto pragma = [&](const char* sql) -> std::int64_t {
      sqlite3_stmt* s = nullptr;
      std::int64_t v = -1;
      if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
        v = sqlite3_column_int64(s, 0);
      sqlite3_finalize(s);
      return v;
    };
    for (int round = 0; round < 10; ++round) {
      const std::int64_t pages = pragma("PRAGMA page_count");
      const std::int64_t free_pages = pragma("PRAGMA freelist_count");
      const std::int64_t page = pragma("PRAGMA page_size");
      if (pages < 0 || free_pages < 0 || page < 0) return failed("its size could not be read", SQLITE_ERROR);
      if (static_cast<std::uint64_t>((pages - free_pages) * page) <= options.max_bytes) return;
      const int rc = sqlite3_exec(db,
                                  "DELETE FROM responses WHERE key IN (SELECT key FROM responses ORDER BY created "
                                  "LIMIT max(1, (SELECT count(*) FROM responses) / 10))",
                                  nullptr, nullptr, nullptr);
      if (rc != SQLITE_OK) return failed("old entries could not be dropped", rc);
    }
  }
};

namespace {

std::string key_of(const cached_engine::state& st, const chat_request& request) {
  return st.options.scope + "\n" + cassette_impl::request_key(request);
}

/// Forwards the inner engine's reply and stores it when it is whole: on a worker of the shared
/// runtime, not on the thread that delivered it (an engine's I/O loop must not wait for another
/// process's lock on the file), and before it is forwarded, so that the next call can hit it.
class storing_receiver final : public reply_receiver {
 public:
  storing_receiver(std::shared_ptr<cached_engine::state> st, std::shared_ptr<reply_receiver> down, std::string key)
      : st_(std::move(st)), down_(std::move(down)), key_(std::move(key)) {}
  void on_text(std::string_view delta) noexcept override { down_->on_text(delta); }
  void on_tool_text(std::size_t index, std::string_view name, std::string_view delta) noexcept override {
    down_->on_tool_text(index, name, delta);
  }
  void on_reply(chat_response response) noexcept override {
    if (response.cut_off) return down_->on_reply(std::move(response));
    auto reply = std::make_shared<chat_response>(std::move(response));
    try {
      runtime::shared().post([st = st_, down = down_, key = key_, reply] {
        try {
          st->store(key, *reply);
        } catch (...) {  // only allocation failures: the reply goes on unstored
        }
        down->on_reply(std::move(*reply));
      });
    } catch (...) {  // the post itself could not be made: forward it unstored
      down_->on_reply(std::move(*reply));
    }
  }
  void on_error(const engine_error& error) noexcept override { down_->on_error(error); }
  [[nodiscard]] std::size_t text_kept() const noexcept override { return down_->text_kept(); }

 private:
  std::shared_ptr<cached_engine::state> st_;
  std::shared_ptr<reply_receiver> down_;
  std::string key_;
};

}  // namespace

namespace {

response_cache_options checked(response_cache_options o) {
  if (o.scope.empty())
    throw std::invalid_argument("covenant::cached_engine: response_cache_options::scope is empty: name the model and "
                                "endpoint, so that one model's replies never answer for another");
  if (o.path.empty()) throw std::invalid_argument("covenant::cached_engine: response_cache_options::path is empty");
  return o;
}

}  // namespace

cached_engine::cached_engine(response_cache_options options, engine& inner)
    : state_(std::make_shared<state>(checked(std::move(options)))), inner_(&inner) {}

cached_engine::~cached_engine() { close(); }  // calls inside complete()/start() end before its state goes

chat_response cached_engine::complete(const chat_request& request) {
  const std::string key = key_of(*state_, request);
  if (std::optional<chat_response> hit = state_->find(key)) {
    ++state_->hits;
    return std::move(*hit);
  }
  ++state_->misses;
  chat_response r = inner_->complete(request);
  if (!r.cut_off) state_->store(key, r);
  return r;
}

void cached_engine::start(const chat_request& request, std::shared_ptr<reply_receiver> receiver, std::stop_token stop) {
  if (stop.stop_requested()) return receiver->on_error(engine_error::cancellation());
  std::string key;
  try {
    key = key_of(*state_, request);
    if (std::optional<chat_response> hit = state_->find(key)) {
      ++state_->hits;
      if (request.stream) {
        for (std::size_t k = 0; k < hit->tool_calls.size(); ++k)
          receiver->on_tool_text(k, hit->tool_calls[k].name, hit->tool_calls[k].arguments);
        if (!hit->text.empty()) receiver->on_text(hit->text);
      }
      return receiver->on_reply(std::move(*hit));
    }
  } catch (const std::exception& e) {  // allocation: the call goes to the engine
    detail::log_warn("response cache {}: {}", state_->options.path.string(), e.what());
  }
  ++state_->misses;
  if (key.empty()) return inner_->start(request, std::move(receiver), std::move(stop));
  inner_->start(request, std::make_shared<storing_receiver>(state_, std::move(receiver), std::move(key)), std::move(stop));
}

engine_capabilities cached_engine::capabilities() const noexcept { return inner_->capabilities(); }

response_cache_stats cached_engine::stats() const noexcept {
  return {state_->hits.load(), state_->misses.load(), state_->stored.load(), state_->errors.load()};
}

const response_cache_options& cached_engine::options() const noexcept { return state_->options; }

}  // namespace covenant
