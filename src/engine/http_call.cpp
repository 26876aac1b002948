// One call of the HTTP engine: its exchanges with the server, transport retries and their waits,
// the streamed reply (Server-Sent Events) and the one decision after each exchange
// (exchange_decision.hpp); everything runs on the engine's I/O strand.
#include "http_shared.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <future>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <unordered_map>

#include "sse.hpp"
#include "covenant/types/json_schema.hpp"
#include "covenant/engine/rate_limiter.hpp"
#include "covenant/engine/retry.hpp"
#include "covenant/engine/runtime.hpp"
#include "covenant/types/version.hpp"
#include "curl_handles.hpp"
#include "http_probe.hpp"
#include "exchange_decision.hpp"
#include "http_shared.hpp"
#include "http_transport.hpp"
#include "log.hpp"
#include "retry_check.hpp"
#include "wire_dialect.hpp"
#include "wire_text.hpp"

namespace covenant::detail::http {

namespace json = boost::json;
namespace asio = boost::asio;

using wire::iequals;
using wire::istarts_with;
using wire::one_line;
using wire::parse_number;
using wire::redact;
using wire::trim;

bool retryable_curl_code(CURLcode code) noexcept {
  switch (code) {
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      return true;
    default:
      return false;
  }
}

std::chrono::nanoseconds seconds_to_ns(double seconds) {
  seconds = std::clamp(seconds, 0.0, 1e9);  // ~31 years: far past any cap, far from overflow
  return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(seconds * 1e9)));
}

/// A copy of the engine's header list `base` with the request's trace context added
/// (`traceparent`, and `tracestate` when it has one that is safe to send as a header line).
detail::curl_header_list traced_headers(const curl_slist* base, const trace_context& trace) {
  detail::curl_header_list list;
  for (const curl_slist* l = base; l != nullptr; l = l->next) detail::append_header(list, l->data);
  detail::append_header(list, "traceparent: " + trace.traceparent());
  const std::string& state = trace.tracestate;
  const bool printable = std::all_of(state.begin(), state.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  if (!state.empty() && printable && state.size() <= 512) detail::append_header(list, "tracestate: " + state);
  return list;
}

/// How one HTTP exchange ended.
struct exchange_result {
  CURLcode code = CURLE_OK;
  long status = 0;
  bool too_large = false;
  bool idle_timeout = false;
  std::string body;  // the whole body (not streamed, or an error response)
  std::optional<std::string> retry_after;
  std::optional<std::string> retry_after_ms;
  std::string error;  // curl's error buffer
  std::chrono::nanoseconds elapsed{0};
};

/// One HTTP exchange of a call (a call makes one, plus one per transport retry).
class exchange final : public detail::http_transfer {
 public:
  /// `headers`: the request's own header list (a traced request), else null for the engine's.
  exchange(std::shared_ptr<http_call> call, const http_shared& s, const std::string& body, bool stream,
           const curl_slist* headers = nullptr);

  void on_done(CURLcode code) override;
  /// Aborted: curl no longer runs it (the call was stopped).
  void abandon() noexcept { owner_.reset(); }

  static std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user);
  static std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user);

  exchange_result result;
  std::size_t max_bytes = 0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  bool stream = false;
  bool event_stream = false;  // the reply is text/event-stream
  bool saw_content_type = false;
  std::optional<detail::sse_parser> sse;
  std::unique_ptr<asio::steady_timer> idle;
  char error_buffer[CURL_ERROR_SIZE] = {};

 private:
  std::shared_ptr<http_call> owner_;
};

/// One complete() / start() of the engine: its exchanges, transport retries, streamed text, and
/// the receiver it reports to. Runs on the I/O strand.
class http_call final : public std::enable_shared_from_this<http_call> {
 public:
  /// `automatic`: the request, kept to build its body again in the next mode when the server
  /// refuses `mode` (output_mode::automatic), with the index of `mode` in the engine's modes.
  /// `agent`: the request has tools; `answer_tool`: the answer tool's name in output_mode::tools.
  /// `trace`: the request's trace context, sent as `traceparent` (and `tracestate`) headers of its
  /// own list (the engine's lists are shared by every call).
  http_call(std::shared_ptr<http_shared> s, std::string body, bool stream, std::shared_ptr<reply_receiver> receiver,
            std::shared_ptr<rate_limiter> limiter, output_mode mode, std::optional<chat_request> automatic,
            std::size_t mode_index, std::string answer_tool, bool agent, const trace_context& trace)
      : s_(std::move(s)), body_(std::move(body)), stream_(stream), receiver_(std::move(receiver)),
        limiter_(std::move(limiter)), answer_tool_(std::move(answer_tool)), form_(mode),
        automatic_(std::move(automatic)), mode_index_(mode_index) {
    form_.answer_tool = answer_tool_;
    form_.agent = agent;
    if (trace.valid()) trace_headers_ = traced_headers(stream ? s_->stream_headers.get() : s_->headers.get(), trace);
  }

  /// Every start() ends with exactly one answer to its receiver. A call let go of without one (its
  /// posted work dropped by a stopped I/O loop) still ends, with an error, rather than leave its
  /// caller waiting.
  ~http_call() {
    if (done_ || !receiver_) return;
    receiver_->on_error(engine_error::cancellation("http_engine: the call was dropped before it ended (the I/O loop stopped)"));
  }
  http_call(const http_call&) = delete;
  http_call& operator=(const http_call&) = delete;

  void watch(std::stop_token stop) {
    std::weak_ptr<http_call> self = weak_from_this();
    on_stop_.emplace(std::move(stop), [self] {
      if (auto c = self.lock()) {
        asio::post(c->s_->loop->strand(), [c] { c->abort(engine_error::cancellation()); });
      }
    });
  }

  // On the strand from here on.

  void begin(std::uint64_t id) {
    id_ = id;
    if (s_->closed) return abort(engine_error::cancellation("the engine was destroyed"));
    send();
  }

  void abort(const engine_error& why) {
    if (done_) return;
    if (current_) {
      current_->abandon();
      s_->loop->remove(*current_);
      current_.reset();
    }
    if (retry_timer_) retry_timer_->cancel();
    if (limit_ticket_ != 0 && limiter_) limiter_->cancel(limit_ticket_);
    fail(why);
  }

  // --- streaming (called from curl's write callback, on the strand) ---

  /// One SSE event (its type, "message" when unnamed); returns false to stop reading events.
  bool on_event(std::string_view type, std::string_view data) {
    detail::wire_event e = s_->dialect->parse_event(type == "message" ? std::string_view() : type, data, form_);
    if (e.malformed) {
      ++malformed_;
      return true;  // tolerate a stray event (keep-alive payloads, vendor extras)
    }
    if (e.error) {
      stream_error_ = s_->safe(*e.error);
      return false;
    }
    if (!e.model.empty()) model_ = std::move(e.model);
    if (!e.id.empty()) id_text_ = std::move(e.id);
    e.usage.apply(usage_);
    if (e.finish_reason) finish_reason_ = std::move(*e.finish_reason);
    reasoning_ += e.reasoning;  // (not content: a retry may still start afresh)
    if (!e.text.empty()) {
      content_started_ = true;
      text_ += e.text;
      receiver_->on_text(e.text);
    }
    if (form_.agent)
      for (detail::tool_piece& piece : e.tools) on_tool_piece(piece);
    if (e.done) {
      stream_done_ = true;
      return false;
    }
    return true;
  }

  /// One piece of a streamed tool call (a request with tools). The first call of the answer tool
  /// in output_mode::tools is answer text, like content; every other call is one of the reply's
  /// tool calls, in the order they first appear, reported by on_tool_text (its name with its
  /// first piece).
  void on_tool_piece(detail::tool_piece& piece) {
    content_started_ = true;  // (nothing is retried after it)
    auto at = std::find_if(stream_calls_.begin(), stream_calls_.end(),
                           [&](const stream_call& c) { return c.index == piece.index; });
    const bool first = at == stream_calls_.end();
    if (first) {
      const bool answer = form_.mode == output_mode::tools && !answer_seen_ && !form_.answer_tool.empty() &&
                          piece.name == form_.answer_tool;
      answer_seen_ = answer_seen_ || answer;
      stream_calls_.push_back({piece.index, answer, answer ? 0 : tool_calls_.size()});
      if (!answer) tool_calls_.push_back({std::move(piece.id), piece.name, {}});
      at = stream_calls_.end() - 1;
    }
    if (at->answer) {
      if (!piece.arguments.empty()) {
        text_ += piece.arguments;
        answer_text_ += piece.arguments;
        receiver_->on_text(piece.arguments);
      }
      return;
    }
    tool_call& call = tool_calls_[at->ordinal];
    if (!first) {  // a server that names the call on a later piece
      if (call.id.empty()) call.id = std::move(piece.id);
      if (call.name.empty()) call.name = std::move(piece.name);
    }
    call.arguments += piece.arguments;
    if (first || !piece.arguments.empty())
      receiver_->on_tool_text(at->ordinal, first ? std::string_view(call.name) : std::string_view(), piece.arguments);
  }

  /// What the exchange `x` came to, as the facts decide_exchange() reads; a 2xx body that is not a
  /// stream is read into `whole` (or its reading's failure is a fact).
  detail::exchange_facts facts_of(exchange& x, std::optional<chat_response>& whole) {
    const exchange_result& r = x.result;
    detail::exchange_facts f;
    f.too_large = r.too_large;
    f.body_limit = s_->options.max_response_bytes;
    f.transport_ok = r.code == CURLE_OK;
    if (!f.transport_ok) {
      f.transport_reason = s_->curl_reason(r.code, x.error_buffer);
      f.transport_retryable = retryable_curl_code(r.code);
    }
    f.idle_timeout = r.idle_timeout;
    f.idle_limit = s_->options.stream_idle_timeout;
    f.status = static_cast<int>(r.status);
    f.event_stream = x.stream && x.event_stream;
    f.content_started = content_started_;
    const bool ok_status = f.transport_ok && r.status >= 200 && r.status < 300;
    if (f.event_stream && (ok_status || content_started_)) {
      if (x.sse && !x.sse->stopped()) {
        x.sse->finish();
        // Some servers (llama.cpp) end with "data: [DONE]" and no empty line after it.
        if (x.sse->unfinished_data() == "[DONE]") stream_done_ = true;
      }
      f.stream_finished = stream_done_ || !finish_reason_.empty();
      f.stream_error = stream_error_;
    }
    if (!f.too_large && ok_status && !(f.event_stream && (ok_status || content_started_))) {
      try {
        whole.emplace(s_->dialect->parse_reply(r.body, form_));
      } catch (const engine_error& e) {
        std::string why = s_->safe(e.what());
        if (std::string_view(e.what()).starts_with("the response body is not JSON"))
          why += ": \"" + s_->safe(one_line(r.body, 80)) + "\"";
        f.body_error = std::move(why);
      }
    }
    if (f.transport_ok && !ok_status && !f.too_large) {
      f.server_message = s_->safe(detail::server_error_message(r.body));
      f.mode_refused = automatic_ && detail::is_mode_refusal(f.status, f.server_message) &&
                       mode_index_ + 1 < s_->modes.size();
      const auto& rs = s_->options.retry_statuses;
      f.status_retryable = std::find(rs.begin(), rs.end(), f.status) != rs.end();
    }
    return f;
  }

  void on_exchange_done(exchange& x) {
    if (done_ || current_.get() != &x) return;
    std::shared_ptr<exchange> keep = std::move(current_);
    const exchange_result& r = x.result;
    const std::string where = "http_engine: POST " + s_->shown_url;
    const int attempts = 1 + s_->options.retry.tries;
    const double ms = std::chrono::duration<double, std::milli>(r.elapsed).count();
    try {
      if (r.code == CURLE_OK)
        detail::log().debug("{} -> HTTP {} in {:.1f} ms (attempt {}/{})", where, r.status, ms, attempt_, attempts);
      else
        detail::log().debug("{} -> {} in {:.1f} ms (attempt {}/{})", where, s_->curl_reason(r.code, x.error_buffer), ms,
                            attempt_, attempts);
    } catch (...) {
    }

    // The facts of the exchange, then the one decision (exchange_decision.cpp).
    std::optional<chat_response> whole;  // a 2xx body that is not a stream, read
    detail::exchange_facts f = facts_of(x, whole);
    f.attempt = attempt_;
    f.attempts = attempts;

    const detail::exchange_decision d = detail::decide_exchange(f);
    switch (d.next) {
      case detail::exchange_next::deliver:
        if (!whole) return reply(false);
        if (x.stream) {  // a server that did not stream: the reply as one piece each
          if (!whole->text.empty()) receiver_->on_text(whole->text);
          for (std::size_t i = 0; i < whole->tool_calls.size(); ++i)
            receiver_->on_tool_text(i, whole->tool_calls[i].name, whole->tool_calls[i].arguments);
        }
        return deliver(std::move(*whole));
      case detail::exchange_next::deliver_cut:
        detail::log_warn("{}: the streamed reply was cut off after {} bytes ({}); what arrived is handed over", where,
                         text_.size(), d.reason);
        return reply(true);
      case detail::exchange_next::fail: return fail(engine_error(where + ": " + d.reason, d.status, false));
      case detail::exchange_next::give_up: return fail(engine_error(where + ": " + d.reason, d.status, true));
      case detail::exchange_next::fall_back:
        if (fall_back(where, d.reason)) return;
        return fail(engine_error(where + ": " + d.reason, d.status, false));
      case detail::exchange_next::retry: break;
    }

    // A transient failure: retry after a wait.
    const int status = d.status;
    const std::string& reason = d.reason;
    const std::chrono::nanoseconds wait = s_->wait_before(attempt_, r.retry_after, r.retry_after_ms);
    if (limiter_ && (status == 429 || r.retry_after || r.retry_after_ms)) limiter_->back_off(wait);
    detail::log_warn("{} failed ({}); transport retry {}/{} in {:.3f} s", where, reason, attempt_,
                     s_->options.retry.tries, std::chrono::duration<double>(wait).count());
    reset_stream_state();
    between_since_ = x.started + r.elapsed;  // the exchange's end: the wait counts from there
    transport_retry made{attempt_, s_->options.retry.tries, wait, status, reason, std::chrono::system_clock::now()};
    if (s_->options.on_retry) {
      try {
        s_->options.on_retry(made);
      } catch (...) {
        detail::log_error("{}: on_retry threw (ignored)", where);
      }
    }
    retries_.push_back(std::move(made));
    retry_timer_ = std::make_unique<asio::steady_timer>(s_->loop->io(), wait);
    std::weak_ptr<http_call> self = weak_from_this();
    retry_timer_->async_wait(asio::bind_executor(s_->loop->strand(), [self](const boost::system::error_code& ec) {
      if (ec) return;
      if (auto c = self.lock()) c->turn();
    }));
  }

  [[nodiscard]] bool done() const noexcept { return done_; }

  /// The server refused the request's output mode (output_mode::automatic): send it again at once
  /// in the next mode, and make that the endpoint's first choice from now on. Neither a transport
  /// retry nor a remedy attempt. false when there is no next mode.
  bool fall_back(const std::string& where, const std::string& reason) {
    if (mode_index_ + 1 >= s_->modes.size()) return false;
    const output_mode refused = form_.mode;
    ++mode_index_;
    form_.mode = s_->modes[mode_index_];
    try {
      body_ = s_->dialect->body_text(*automatic_, form_.mode, s_->options);
    } catch (const std::exception& e) {
      fail(engine_error(where + ": cannot build the request: " + e.what()));
      return true;
    }
    std::size_t seen = mode_index_ - 1;
    if (s_->auto_from.compare_exchange_strong(seen, mode_index_))
      detail::log_warn("{}: the server refused output mode {} ({}); using {} for this endpoint from now on", where,
                       to_string(refused), reason, to_string(form_.mode));
    attempt_ = 0;
    reset_stream_state();
    send();
    return true;
  }
  [[nodiscard]] const http_shared& shared() const noexcept { return *s_; }

 private:
  // A retry waits for its turn under the rate limiter first.
  void turn() {
    if (done_) return;
    if (!limiter_) return send();
    std::weak_ptr<http_call> self = weak_from_this();
    detail::io_strand* strand = &s_->loop->strand();
    // The estimate of a retry: the request body's size (its messages and schema) / 4 plus the
    // learned output.
    limit_ticket_ = limiter_->acquire(limiter_->estimate(chat_request{}) + body_.size() / 4, [self, strand] {
      asio::post(*strand, [self] {
        if (auto c = self.lock()) {
          c->limit_ticket_ = 0;
          c->send();
        }
      });
    });
  }

  void send() {
    if (done_) return;
    if (s_->closed) return abort(engine_error::cancellation("the engine was destroyed"));
    ++attempt_;
    try {
      current_ = std::make_shared<exchange>(shared_from_this(), *s_, body_, stream_, trace_headers_.get());
    } catch (const std::exception& e) {
      return fail(engine_error(std::string("http_engine: cannot start a transfer: ") + e.what()));
    }
    if (between_since_) {  // a transport retry: the time since the last exchange ended was waiting
      queued_ += std::max(std::chrono::nanoseconds(0),
                          std::chrono::duration_cast<std::chrono::nanoseconds>(current_->started - *between_since_));
      between_since_.reset();
    }
    if (stream_ && s_->options.stream_idle_timeout.count() > 0) arm_idle(*current_);
    s_->loop->add(current_);
  }

  void arm_idle(exchange& x) {
    if (!x.idle) x.idle = std::make_unique<asio::steady_timer>(s_->loop->io());
    x.idle->expires_after(s_->options.stream_idle_timeout);
    std::weak_ptr<http_call> self = weak_from_this();
    exchange* px = &x;
    x.idle->async_wait(asio::bind_executor(s_->loop->strand(), [self, px](const boost::system::error_code& ec) {
      if (ec) return;
      auto c = self.lock();
      if (!c || c->current_.get() != px) return;
      // Nothing arrived for too long: end the exchange as it stands.
      std::shared_ptr<exchange> x = c->current_;
      c->s_->loop->remove(*x);
      x->result.code = CURLE_OPERATION_TIMEDOUT;
      x->result.idle_timeout = true;
      x->result.elapsed = std::chrono::steady_clock::now() - x->started;
      c->on_exchange_done(*x);
    }));
  }

 public:
  /// Data arrived on the current exchange: restart its idle timer.
  void activity(exchange& x) {
    if (x.idle && current_.get() == &x) arm_idle(x);
  }

 private:
  void reset_stream_state() {
    text_.clear();
    reasoning_.clear();
    content_started_ = false;
    stream_done_ = false;
    finish_reason_.clear();
    stream_error_.clear();
    model_.clear();
    id_text_.clear();
    usage_ = {};
    stream_calls_.clear();
    tool_calls_.clear();
    answer_text_.clear();
    answer_seen_ = false;
  }

  void reply(bool cut_off) {
    chat_response out;
    // With an answer call, the answer is its arguments alone, as in a whole reply (any text the
    // model wrote before it went out as on_text pieces, and is not the answer).
    out.text = answer_seen_ ? std::move(answer_text_) : std::move(text_);
    out.tool_calls = std::move(tool_calls_);
    out.reasoning = std::move(reasoning_);
    out.usage = usage_;
    out.model = std::move(model_);
    out.id = std::move(id_text_);
    out.finish_reason = std::move(finish_reason_);
    out.cut_off = cut_off;
    out.mode = form_.mode;
    deliver(std::move(out));
  }

  void deliver(chat_response r) {
    if (done_) return;
    done_ = true;
    const std::shared_ptr<http_call> keep = shared_from_this();  // the engine's table lets go of it
    finish_bookkeeping();
    r.queued = queued_;
    r.retries = std::move(retries_);
    if (r.model.empty()) r.model = s_->options.model;  // a server that does not say: the model asked for
    receiver_->on_reply(std::move(r));
  }

  void fail(const engine_error& e) {
    if (done_) return;
    done_ = true;
    const std::shared_ptr<http_call> keep = shared_from_this();  // the engine's table lets go of it
    finish_bookkeeping();
    if (queued_.count() == 0 && retries_.empty()) return receiver_->on_error(e);
    engine_error with_wait = e;
    with_wait.set_queued(queued_);
    try {
      with_wait.set_retries(std::move(retries_));
    } catch (...) {  // (out of memory: the error goes without them)
    }
    receiver_->on_error(with_wait);
  }

  void finish_bookkeeping() {
    s_->calls.erase(id_);
    s_->table_changed();
    // The stop callback may not be destroyed from inside itself; it only posts, so leave it to
    // the call's destruction.
  }

  std::shared_ptr<http_shared> s_;
  std::string body_;
  bool stream_;
  std::shared_ptr<reply_receiver> receiver_;
  std::shared_ptr<rate_limiter> limiter_;
  std::string answer_tool_;  // (form_.answer_tool views it)
  /// How replies are read: the mode the request goes out in (the next one after a refusal,
  /// output_mode::automatic), the answer tool's name, whether the request has tools.
  detail::reply_form form_;
  std::optional<chat_request> automatic_;
  std::size_t mode_index_;
  std::optional<std::stop_callback<std::function<void()>>> on_stop_;
  std::uint64_t id_ = 0;
  int attempt_ = 0;
  bool done_ = false;
  std::shared_ptr<exchange> current_;
  std::unique_ptr<asio::steady_timer> retry_timer_;
  std::uint64_t limit_ticket_ = 0;
  /// Waiting before a transport retry since then (the end of the exchange that failed).
  std::optional<std::chrono::steady_clock::time_point> between_since_;
  /// Time spent between exchanges so far (chat_response::queued, engine_error::queued).
  std::chrono::nanoseconds queued_{0};
  // Streamed reply so far.
  std::string text_;
  std::string reasoning_;
  bool content_started_ = false;
  bool stream_done_ = false;
  std::string finish_reason_;
  std::string stream_error_;
  std::string model_;
  std::string id_text_;  // the reply's id, from the stream's events
  usage usage_;
  /// The transport retries made so far (chat_response::retries, engine_error::retries).
  std::vector<transport_retry> retries_;
  /// The request's own header list when it carries a trace context (else the engine's is used).
  detail::curl_header_list trace_headers_;
  /// A streamed tool call: the server's index of it, whether it is the answer tool's call, and
  /// else its place in tool_calls_.
  struct stream_call {
    std::size_t index;
    bool answer;
    std::size_t ordinal;
  };
  std::vector<stream_call> stream_calls_;
  std::vector<tool_call> tool_calls_;
  std::string answer_text_;  // the answer call's arguments (text_ has any text before them too)
  bool answer_seen_ = false;
  std::size_t malformed_ = 0;
};

/// What every transfer of the engine sets alike, its exchanges and its probes: protocols, signals,
/// the environment's proxy, the user agent, no redirects, keep-alive, the HTTP version and the CA
/// file.
void set_connection_options(CURL* h, const http_shared& s) {
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(h, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  // The proxy settings of the environment, read once by the engine (curl would read them again
  // for every transfer; an empty no-proxy list too, or curl looks for no_proxy each time).
  curl_easy_setopt(h, CURLOPT_PROXY, s.proxy.c_str());
  curl_easy_setopt(h, CURLOPT_NOPROXY, s.no_proxy.c_str());
  if (!s.user_agent_header) curl_easy_setopt(h, CURLOPT_USERAGENT, s.user_agent.c_str());
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  // Wait for a connection that may multiplex (HTTP/2) rather than open another one; only where
  // HTTP/2 is possible: on plain http:// curl would wait for a first response before connecting again.
  if ((s.options.http_version == http_version::http2_prior_knowledge && s.h2c_reuse) ||
      (s.options.http_version != http_version::http1_1 && istarts_with(s.endpoint, "https://")))
    curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
  // libcurl before 7.89 fails every request that reuses an HTTP/2 prior-knowledge connection.
  if (s.options.http_version == http_version::http2_prior_knowledge && !s.h2c_reuse) {
    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
  }
  if (!s.options.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, s.options.ca_file.c_str());
  switch (s.options.http_version) {
    case http_version::automatic: break;
    case http_version::http1_1: curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1)); break;
    case http_version::http2:
      curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
      break;
    case http_version::http2_prior_knowledge:
      curl_easy_setopt(h, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE));
      break;
  }
}

exchange::exchange(std::shared_ptr<http_call> call, const http_shared& s, const std::string& body, bool want_stream,
                   const curl_slist* headers)
    : detail::http_transfer(*s.loop), stream(want_stream), owner_(std::move(call)) {
  max_bytes = s.options.max_response_bytes;
  CURL* h = easy();
  // What every exchange of this engine sets alike stays on a pooled handle (http_transport.hpp):
  // set it on a new handle only.
  if (!configured()) {
    if (s.url) curl_easy_setopt(h, CURLOPT_CURLU, s.url.get());
    else curl_easy_setopt(h, CURLOPT_URL, s.endpoint.c_str());
    set_connection_options(h, s);
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(s.options.connect_timeout.count()));
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(s.options.request_timeout.count()));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &exchange::on_body);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &exchange::on_header);
  }
  // What differs per exchange.
  curl_easy_setopt(h, CURLOPT_HTTPHEADER,
                   headers != nullptr ? headers : (want_stream ? s.stream_headers.get() : s.headers.get()));
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  // A whole reply may come compressed; a stream is read as it comes.
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, want_stream ? static_cast<const char*>(nullptr) : "");
  curl_easy_setopt(h, CURLOPT_WRITEDATA, this);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, this);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, error_buffer);
}

void exchange::on_done(CURLcode code) {
  result.code = code;
  result.elapsed = std::chrono::steady_clock::now() - started;
  curl_easy_getinfo(easy(), CURLINFO_RESPONSE_CODE, &result.status);
  if (idle) idle->cancel();
  if (std::shared_ptr<http_call> c = owner_) c->on_exchange_done(*this);
}

std::size_t exchange::on_body(char* data, std::size_t size, std::size_t count, void* user) {
  auto* x = static_cast<exchange*>(user);
  const std::size_t n = size * count;
  try {
    std::shared_ptr<http_call> c = x->owner_;
    if (!c || c->done()) return 0;
    if (!x->saw_content_type) {
      x->saw_content_type = true;
      long status = 0;
      curl_easy_getinfo(x->easy(), CURLINFO_RESPONSE_CODE, &status);
      const char* type = nullptr;
      curl_easy_getinfo(x->easy(), CURLINFO_CONTENT_TYPE, &type);
      x->event_stream = x->stream && status >= 200 && status < 300 && type != nullptr &&
                        istarts_with(trim(type), "text/event-stream");
      if (x->event_stream) {
        http_call* call = c.get();
        x->sse.emplace([call](const detail::sse_event& e) { return call->on_event(e.type, e.data); });
      }
    }
    if (x->result.body.size() + n > x->max_bytes) {
      x->result.too_large = true;
      return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
    }
    c->activity(*x);
    if (x->event_stream) {
      x->result.body.resize(x->result.body.size() + n);  // counted, not kept
      x->sse->feed(std::string_view(data, n));
    } else {
      x->result.body.append(data, n);
    }
  } catch (...) {  // no exception may cross libcurl's C frames
    x->result.too_large = true;
    return 0;
  }
  return n;
}

std::size_t exchange::on_header(char* data, std::size_t size, std::size_t count, void* user) {
  auto* x = static_cast<exchange*>(user);
  const std::size_t n = size * count;
  const std::string_view line(data, n);
  try {
    if (istarts_with(line, "HTTP/")) {  // a new response (after 100 Continue, ...): forget earlier headers
      x->result.retry_after.reset();
      x->result.retry_after_ms.reset();
      return n;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) return n;
    const std::string_view name = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if (iequals(name, "retry-after")) x->result.retry_after = std::string(value);
    else if (iequals(name, "retry-after-ms")) x->result.retry_after_ms = std::string(value);
  } catch (...) {
    return 0;
  }
  return n;
}

/// The mode a request goes out in, and its index in the engine's modes (automatic: the first the
/// endpoint has not refused). Without a schema there is no tool to force: `tools` goes out as
/// `prompt`.
std::pair<output_mode, std::size_t> resolve_mode(const http_shared& s, const chat_request& request) {
  output_mode m = output_mode::prompt;
  if (request.mode == output_mode::automatic)
    m = s.modes[std::min(s.auto_from.load(std::memory_order_relaxed), s.modes.size() - 1)];
  else
    m = s.dialect->nearest(request.mode);
  if (m == output_mode::tools && !(request.response_schema && request.response_schema->is_object()))
    m = s.dialect->nearest(output_mode::prompt);
  const auto at = std::find(s.modes.begin(), s.modes.end(), m);
  return {m, static_cast<std::size_t>(at - s.modes.begin())};
}

void start_call(const std::shared_ptr<http_shared>& s, const chat_request& request,
                std::shared_ptr<reply_receiver> receiver, std::stop_token stop) {
  const auto [mode, index] = resolve_mode(*s, request);
  std::string body;
  std::optional<chat_request> automatic;
  std::string answer_tool;  // how its replies are read (reply_form)
  const bool agent = request.tools && !request.tools->empty();
  try {
    body = s->dialect->body_text(request, mode, s->options);
    if (request.mode == output_mode::automatic) automatic.emplace(request);
    if (agent) answer_tool = s->dialect->answer_tool_name(request.schema_name);
  } catch (const std::exception& e) {
    receiver->on_error(engine_error(std::string("http_engine: cannot build the request: ") + e.what()));
    return;
  }
  std::shared_ptr<http_call> call;
  try {
    call = std::make_shared<http_call>(s, std::move(body), request.stream, receiver, request.limiter, mode,
                                       std::move(automatic), index, std::move(answer_tool), agent, request.trace);
  } catch (const std::exception& e) {
    receiver->on_error(engine_error(std::string("http_engine: cannot start the call: ") + e.what()));
    return;
  }
  call->watch(std::move(stop));
  asio::post(s->loop->strand(), [s, call] {
    // A stop that came first has already ended the call (its abort was posted before this): it
    // never enters the table.
    if (call->done()) return;
    const std::uint64_t id = s->next_call++;
    s->calls[id] = call;
    s->table_changed();
    call->begin(id);
  });
}

void abort_calls(http_shared& s) {
  s.closed = true;
  std::vector<std::shared_ptr<http_call>> calls;
  for (auto& [id, c] : s.calls) calls.push_back(c);
  for (auto& c : calls) c->abort(engine_error::cancellation("the engine was destroyed"));
  s.calls.clear();
  s.table_changed();
}

}  // namespace covenant::detail::http
