// Incremental Server-Sent Events parser (WHATWG HTML, "Parsing an event stream").
#include "sse.hpp"

#include <charconv>

namespace covenant::detail {

namespace {

constexpr std::string_view bom = "\xEF\xBB\xBF";

}  // namespace

void sse_parser::feed(std::string_view bytes) {
  if (stopped_) return;
  if (at_start_) {
    // Hold the first bytes until it is known whether they are a byte-order mark.
    line_.append(bytes);
    if (line_.size() < bom.size() && bom.substr(0, line_.size()) == line_) return;
    at_start_ = false;
    std::string held;
    held.swap(line_);
    std::string_view rest(held);
    if (rest.substr(0, bom.size()) == bom) rest.remove_prefix(bom.size());
    feed(rest);
    return;
  }
  while (!bytes.empty() && !stopped_) {
    if (pending_cr_) {
      pending_cr_ = false;
      if (bytes.front() == '\n') {
        bytes.remove_prefix(1);
        continue;
      }
    }
    const std::size_t end = bytes.find_first_of("\r\n");
    if (end == std::string_view::npos) {
      line_.append(bytes);
      return;
    }
    if (line_.empty()) {
      line(bytes.substr(0, end));
    } else {
      line_.append(bytes.substr(0, end));
      std::string whole;
      whole.swap(line_);
      line(whole);
    }
    if (bytes[end] == '\r') {
      if (end + 1 < bytes.size()) {
        bytes.remove_prefix(end + (bytes[end + 1] == '\n' ? 2 : 1));
      } else {
        pending_cr_ = true;  // an LF may follow in the next chunk
        bytes.remove_prefix(end + 1);
      }
    } else {
      bytes.remove_prefix(end + 1);
    }
  }
}

bool sse_parser::finish() {
  if (at_start_) {
    at_start_ = false;
    std::string held;
    held.swap(line_);
    if (held != bom.substr(0, held.size())) feed(held);
  }
  if (!line_.empty() && !stopped_) {  // an unfinished last line still counts as a line of the event
    std::string last;
    last.swap(line_);
    line(last);
  }
  const bool left = incomplete() || has_data_;
  unfinished_ = has_data_ ? data_ : std::string();
  line_.clear();
  data_.clear();
  type_.clear();
  has_data_ = false;
  saw_field_ = false;
  return left;
}

void sse_parser::line(std::string_view l) {
  if (l.empty()) {
    dispatch();
    return;
  }
  if (l.front() == ':') return;  // comment
  std::string_view field = l;
  std::string_view value;
  if (const std::size_t colon = l.find(':'); colon != std::string_view::npos) {
    field = l.substr(0, colon);
    value = l.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  saw_field_ = true;
  if (field == "data") {
    if (has_data_) data_.push_back('\n');
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    type_.assign(value);
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos) last_id_.assign(value);
  } else if (field == "retry") {
    std::uint64_t ms = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (ec == std::errc() && end == value.data() + value.size() && !value.empty()) retry_ = ms;
  }
}

void sse_parser::dispatch() {
  const bool had = has_data_;
  has_data_ = false;
  saw_field_ = false;
  if (!had) {  // no data: the event is dropped (its type too)
    data_.clear();
    type_.clear();
    return;
  }
  sse_event e;
  e.type = type_.empty() ? std::string_view("message") : std::string_view(type_);
  e.data = data_;
  e.id = last_id_;
  ++dispatched_;
  if (!on_event_(e)) stopped_ = true;
  data_.clear();
  type_.clear();
}

}  // namespace covenant::detail
