// otel_span: a span the application starts and ends itself (its own work around contract calls);
// ended, it goes on the tracer's queue with the calls' spans.
#include "otel_state.hpp"

namespace covenant {

using namespace otel_detail;


otel_span::otel_span() noexcept = default;
otel_span::otel_span(std::unique_ptr<state> s) noexcept : s_(std::move(s)) {}
otel_span::~otel_span() {
  try {
    end();
  } catch (...) {
  }
}
otel_span::otel_span(otel_span&&) noexcept = default;
otel_span& otel_span::operator=(otel_span&& other) noexcept {
  if (this != &other) {
    try {
      end();
    } catch (...) {
    }
    s_ = std::move(other.s_);
  }
  return *this;
}

const trace_context& otel_span::context() const noexcept {
  static const trace_context none;
  return s_ ? s_->context : none;
}
bool otel_span::recording() const noexcept { return s_ && s_->recording && !s_->ended; }

namespace {
otlp::attribute& keyed(otlp::span& s, std::string_view key) {
  for (otlp::attribute& a : s.attributes.list)
    if (a.name() == key) return a;
  otlp::attribute& a = s.attributes.list.emplace_back();
  a.own_key = std::string(key);
  return a;
}
}  // namespace

void otel_span::set(std::string_view key, std::string_view value) {
  if (!recording()) return;
  otlp::attribute& a = keyed(s_->span, key);
  a.v = otlp::value{};
  a.v.s = std::string(value);
}
void otel_span::set(std::string_view key, std::int64_t value) {
  if (!recording()) return;
  otlp::attribute& a = keyed(s_->span, key);
  a.v = otlp::value{};
  a.v.t = otlp::value::type::integer;
  a.v.i = value;
}
void otel_span::set(std::string_view key, double value) {
  if (!recording()) return;
  otlp::attribute& a = keyed(s_->span, key);
  a.v = otlp::value{};
  a.v.t = otlp::value::type::floating;
  a.v.d = value;
}
void otel_span::set(std::string_view key, bool value) {
  if (!recording()) return;
  otlp::attribute& a = keyed(s_->span, key);
  a.v = otlp::value{};
  a.v.t = otlp::value::type::boolean;
  a.v.b = value;
}
void otel_span::fail(std::string_view message, std::string_view error_type) {
  if (!recording()) return;
  s_->span.status = otlp::status_code::error;
  s_->span.status_message = std::string(message);
  if (!error_type.empty()) set("error.type", error_type);
}
void otel_span::end() {
  if (!s_ || s_->ended) return;
  s_->ended = true;
  if (!s_->recording) return;
  s_->span.end = unix_now();
  if (auto t = s_->tracer.lock()) {
    std::vector<otlp::span> one;
    one.push_back(std::move(s_->span));
    t->push(std::move(one));
  }
}

}  // namespace covenant
