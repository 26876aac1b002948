// The tests' OTLP collector: every export decoded, from JSON or from protobuf.
#include "otlp_receiver.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <cstring>
#include <stdexcept>
#include <thread>

namespace covenant_test {

namespace json = boost::json;

namespace {

std::uint64_t u64_of(const json::value& v) {
  if (v.is_string()) return std::stoull(std::string(v.as_string()));
  if (v.is_uint64()) return v.as_uint64();
  if (v.is_int64()) return static_cast<std::uint64_t>(v.as_int64());
  return 0;
}

otlp_attributes attributes_of(const json::object& o, const char* field = "attributes") {
  otlp_attributes out;
  const json::value* list = o.if_contains(field);
  if (list == nullptr) return out;
  for (const json::value& kv : list->as_array())
    out.values[std::string(kv.at("key").as_string())] = kv.at("value");
  return out;
}

// ---- a protobuf reader: fields of one message --------------------------------------------------

struct pb_field {
  std::uint32_t number = 0;
  int wire = 0;
  std::uint64_t varint = 0;  // varint, fixed64, fixed32
  std::string bytes;         // length-delimited
};

std::vector<pb_field> pb_fields(const std::string& in) {
  std::vector<pb_field> out;
  std::size_t p = 0;
  auto varint = [&]() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= in.size()) throw std::runtime_error("protobuf: varint past the end");
      const auto b = static_cast<unsigned char>(in[p++]);
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw std::runtime_error("protobuf: varint too long");
  };
  while (p < in.size()) {
    const std::uint64_t key = varint();
    pb_field f;
    f.number = static_cast<std::uint32_t>(key >> 3);
    f.wire = static_cast<int>(key & 7);
    switch (f.wire) {
      case 0: f.varint = varint(); break;
      case 1:
        if (p + 8 > in.size()) throw std::runtime_error("protobuf: fixed64 past the end");
        std::memcpy(&f.varint, in.data() + p, 8);
        p += 8;
        break;
      case 5: {
        if (p + 4 > in.size()) throw std::runtime_error("protobuf: fixed32 past the end");
        std::uint32_t v = 0;
        std::memcpy(&v, in.data() + p, 4);
        f.varint = v;
        p += 4;
        break;
      }
      case 2: {
        const std::uint64_t n = varint();
        if (p + n > in.size()) throw std::runtime_error("protobuf: bytes past the end");
        f.bytes = in.substr(p, n);
        p += n;
        break;
      }
      default: throw std::runtime_error("protobuf: unknown wire type");
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::string hex_of(const std::string& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

double double_of(std::uint64_t bits) {
  double d = 0;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

json::value pb_any(const std::string& bytes) {
  for (const pb_field& f : pb_fields(bytes)) {
    switch (f.number) {
      case 1: return json::object{{"stringValue", f.bytes}};
      case 2: return json::object{{"boolValue", f.varint != 0}};
      case 3: return json::object{{"intValue", std::to_string(static_cast<std::int64_t>(f.varint))}};
      case 4: return json::object{{"doubleValue", double_of(f.varint)}};
      case 5: {
        json::array values;
        for (const pb_field& item : pb_fields(f.bytes))
          if (item.number == 1) values.push_back(pb_any(item.bytes));
        return json::object{{"arrayValue", json::object{{"values", values}}}};
      }
      default: break;
    }
  }
  return json::object{};
}

void pb_attribute(otlp_attributes& a, const std::string& kv) {
  std::string key;
  json::value value;
  for (const pb_field& f : pb_fields(kv)) {
    if (f.number == 1) key = f.bytes;
    if (f.number == 2) value = pb_any(f.bytes);
  }
  a.values[key] = value;
}

}  // namespace

std::string otlp_attributes::str(const std::string& key) const {
  auto it = values.find(key);
  if (it == values.end()) return {};
  const json::value* s = it->second.as_object().if_contains("stringValue");
  return s != nullptr ? std::string(s->as_string()) : std::string();
}

std::optional<std::int64_t> otlp_attributes::integer(const std::string& key) const {
  auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  const json::value* v = it->second.as_object().if_contains("intValue");
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return std::stoll(std::string(v->as_string()));
  return v->to_number<std::int64_t>();
}

std::optional<double> otlp_attributes::number(const std::string& key) const {
  auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  const json::value* v = it->second.as_object().if_contains("doubleValue");
  if (v == nullptr) return std::nullopt;
  return v->to_number<double>();
}

std::optional<bool> otlp_attributes::boolean(const std::string& key) const {
  auto it = values.find(key);
  if (it == values.end()) return std::nullopt;
  const json::value* v = it->second.as_object().if_contains("boolValue");
  if (v == nullptr) return std::nullopt;
  return v->as_bool();
}

std::vector<std::string> otlp_attributes::strings(const std::string& key) const {
  std::vector<std::string> out;
  auto it = values.find(key);
  if (it == values.end()) return out;
  const json::value* a = it->second.as_object().if_contains("arrayValue");
  if (a == nullptr) return out;
  for (const json::value& v : a->at("values").as_array()) out.emplace_back(v.at("stringValue").as_string());
  return out;
}

std::vector<const otlp_event*> otlp_span::events_named(const std::string& n) const {
  std::vector<const otlp_event*> out;
  for (const otlp_event& e : events)
    if (e.name == n) out.push_back(&e);
  return out;
}

bool is_hex(const std::string& s, std::size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::vector<otlp_span> decode_traces_json(const std::string& body) {
  std::vector<otlp_span> out;
  const json::value doc = json::parse(body);
  for (const json::value& rs : doc.at("resourceSpans").as_array()) {
    const otlp_attributes resource = attributes_of(rs.at("resource").as_object());
    for (const json::value& ss : rs.at("scopeSpans").as_array()) {
      const json::object& scope = ss.at("scope").as_object();
      for (const json::value& sv : ss.at("spans").as_array()) {
        const json::object& s = sv.as_object();
        otlp_span x;
        x.trace_id = std::string(s.at("traceId").as_string());
        x.span_id = std::string(s.at("spanId").as_string());
        if (const json::value* p = s.if_contains("parentSpanId")) x.parent_span_id = std::string(p->as_string());
        if (const json::value* t = s.if_contains("traceState")) x.trace_state = std::string(t->as_string());
        if (const json::value* f = s.if_contains("flags")) x.flags = static_cast<std::uint32_t>(u64_of(*f));
        x.name = std::string(s.at("name").as_string());
        x.kind = static_cast<int>(s.at("kind").to_number<std::int64_t>());
        x.start = u64_of(s.at("startTimeUnixNano"));
        x.end = u64_of(s.at("endTimeUnixNano"));
        x.attributes = attributes_of(s);
        if (const json::value* ev = s.if_contains("events")) {
          for (const json::value& e : ev->as_array()) {
            otlp_event y;
            y.name = std::string(e.at("name").as_string());
            y.time = u64_of(e.at("timeUnixNano"));
            y.attributes = attributes_of(e.as_object());
            x.events.push_back(std::move(y));
          }
        }
        if (const json::value* st = s.if_contains("status")) {
          if (const json::value* c = st->as_object().if_contains("code")) x.status_code = static_cast<int>(c->to_number<std::int64_t>());
          if (const json::value* m = st->as_object().if_contains("message")) x.status_message = std::string(m->as_string());
        }
        x.resource = resource;
        x.scope_name = std::string(scope.at("name").as_string());
        if (const json::value* v = scope.if_contains("version")) x.scope_version = std::string(v->as_string());
        out.push_back(std::move(x));
      }
    }
  }
  return out;
}

std::vector<otlp_span> decode_traces_protobuf(const std::string& body) {
  std::vector<otlp_span> out;
  for (const pb_field& rs : pb_fields(body)) {
    if (rs.number != 1) continue;
    otlp_attributes resource;
    std::vector<pb_field> rs_fields = pb_fields(rs.bytes);
    for (const pb_field& f : rs_fields)
      if (f.number == 1)
        for (const pb_field& a : pb_fields(f.bytes))
          if (a.number == 1) pb_attribute(resource, a.bytes);
    for (const pb_field& ss : rs_fields) {
      if (ss.number != 2) continue;
      std::string scope_name;
      std::string scope_version;
      const std::vector<pb_field> ss_fields = pb_fields(ss.bytes);
      for (const pb_field& f : ss_fields)
        if (f.number == 1)
          for (const pb_field& g : pb_fields(f.bytes)) {
            if (g.number == 1) scope_name = g.bytes;
            if (g.number == 2) scope_version = g.bytes;
          }
      for (const pb_field& sp : ss_fields) {
        if (sp.number != 2) continue;
        otlp_span x;
        for (const pb_field& f : pb_fields(sp.bytes)) {
          switch (f.number) {
            case 1: x.trace_id = hex_of(f.bytes); break;
            case 2: x.span_id = hex_of(f.bytes); break;
            case 3: x.trace_state = f.bytes; break;
            case 4: x.parent_span_id = hex_of(f.bytes); break;
            case 5: x.name = f.bytes; break;
            case 6: x.kind = static_cast<int>(f.varint); break;
            case 7: x.start = f.varint; break;
            case 8: x.end = f.varint; break;
            case 9: pb_attribute(x.attributes, f.bytes); break;
            case 11: {
              otlp_event e;
              for (const pb_field& g : pb_fields(f.bytes)) {
                if (g.number == 1) e.time = g.varint;
                if (g.number == 2) e.name = g.bytes;
                if (g.number == 3) pb_attribute(e.attributes, g.bytes);
              }
              x.events.push_back(std::move(e));
              break;
            }
            case 15:
              for (const pb_field& g : pb_fields(f.bytes)) {
                if (g.number == 2) x.status_message = g.bytes;
                if (g.number == 3) x.status_code = static_cast<int>(g.varint);
              }
              break;
            case 16: x.flags = static_cast<std::uint32_t>(f.varint); break;
            default: break;
          }
        }
        x.resource = resource;
        x.scope_name = scope_name;
        x.scope_version = scope_version;
        out.push_back(std::move(x));
      }
    }
  }
  return out;
}

std::vector<otlp_metric> decode_metrics_json(const std::string& body) {
  std::vector<otlp_metric> out;
  const json::value doc = json::parse(body);
  for (const json::value& rm : doc.at("resourceMetrics").as_array()) {
    for (const json::value& sm : rm.at("scopeMetrics").as_array()) {
      for (const json::value& mv : sm.at("metrics").as_array()) {
        const json::object& m = mv.as_object();
        otlp_metric x;
        x.name = std::string(m.at("name").as_string());
        x.unit = std::string(m.at("unit").as_string());
        if (const json::value* h = m.if_contains("histogram")) {
          x.histogram = true;
          x.temporality = static_cast<int>(h->at("aggregationTemporality").to_number<std::int64_t>());
          for (const json::value& pv : h->at("dataPoints").as_array()) {
            const json::object& p = pv.as_object();
            otlp_histogram_point y;
            y.attributes = attributes_of(p);
            y.count = u64_of(p.at("count"));
            y.sum = p.at("sum").to_number<double>();
            for (const json::value& c : p.at("bucketCounts").as_array()) y.bucket_counts.push_back(u64_of(c));
            for (const json::value& b : p.at("explicitBounds").as_array()) y.bounds.push_back(b.to_number<double>());
            x.points.push_back(std::move(y));
          }
        } else if (const json::value* s = m.if_contains("sum")) {
          x.temporality = static_cast<int>(s->at("aggregationTemporality").to_number<std::int64_t>());
          for (const json::value& pv : s->at("dataPoints").as_array())
            x.sums.emplace_back(attributes_of(pv.as_object()), static_cast<std::int64_t>(u64_of(pv.at("asInt"))));
        }
        out.push_back(std::move(x));
      }
    }
  }
  return out;
}

std::vector<otlp_metric> decode_metrics_protobuf(const std::string& body) {
  std::vector<otlp_metric> out;
  for (const pb_field& rm : pb_fields(body)) {
    if (rm.number != 1) continue;
    for (const pb_field& sm : pb_fields(rm.bytes)) {
      if (sm.number != 2) continue;
      for (const pb_field& mf : pb_fields(sm.bytes)) {
        if (mf.number != 2) continue;
        otlp_metric x;
        for (const pb_field& f : pb_fields(mf.bytes)) {
          if (f.number == 1) x.name = f.bytes;
          if (f.number == 3) x.unit = f.bytes;
          if (f.number == 9) {
            x.histogram = true;
            for (const pb_field& h : pb_fields(f.bytes)) {
              if (h.number == 2) x.temporality = static_cast<int>(h.varint);
              if (h.number != 1) continue;
              otlp_histogram_point y;
              for (const pb_field& p : pb_fields(h.bytes)) {
                if (p.number == 4) y.count = p.varint;
                if (p.number == 5) y.sum = double_of(p.varint);
                if (p.number == 6)
                  for (std::size_t k = 0; k + 8 <= p.bytes.size(); k += 8) {
                    std::uint64_t c = 0;
                    std::memcpy(&c, p.bytes.data() + k, 8);
                    y.bucket_counts.push_back(c);
                  }
                if (p.number == 7)
                  for (std::size_t k = 0; k + 8 <= p.bytes.size(); k += 8) {
                    std::uint64_t c = 0;
                    std::memcpy(&c, p.bytes.data() + k, 8);
                    y.bounds.push_back(double_of(c));
                  }
                if (p.number == 9) pb_attribute(y.attributes, p.bytes);
              }
              x.points.push_back(std::move(y));
            }
          }
          if (f.number == 7) {
            for (const pb_field& s : pb_fields(f.bytes)) {
              if (s.number == 2) x.temporality = static_cast<int>(s.varint);
              if (s.number != 1) continue;
              otlp_attributes a;
              std::int64_t v = 0;
              for (const pb_field& p : pb_fields(s.bytes)) {
                if (p.number == 6) v = static_cast<std::int64_t>(p.varint);
                if (p.number == 7) pb_attribute(a, p.bytes);
              }
              x.sums.emplace_back(std::move(a), v);
            }
          }
        }
        out.push_back(std::move(x));
      }
    }
  }
  return out;
}

otlp_receiver::otlp_receiver(loopback_server::handler plan)
    : server_(plan ? std::move(plan) : [](const received_request&, std::size_t) {
        response_plan p;
        p.body = "{}";
        return p;
      }) {}

std::string otlp_receiver::endpoint() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }

std::vector<otlp_span> otlp_receiver::spans() const {
  std::vector<otlp_span> out;
  for (std::size_t i = 0; i < server_.requests(); ++i) {
    const received_request r = server_.request(i);
    if (r.target != "/v1/traces") continue;
    auto it = r.headers.find("content-type");
    const bool proto = it != r.headers.end() && it->second.find("protobuf") != std::string::npos;
    std::vector<otlp_span> some = proto ? decode_traces_protobuf(r.body) : decode_traces_json(r.body);
    for (otlp_span& s : some) out.push_back(std::move(s));
  }
  return out;
}

std::vector<otlp_metric> otlp_receiver::last_metrics() const {
  for (std::size_t i = server_.requests(); i-- > 0;) {
    const received_request r = server_.request(i);
    if (r.target != "/v1/metrics") continue;
    auto it = r.headers.find("content-type");
    const bool proto = it != r.headers.end() && it->second.find("protobuf") != std::string::npos;
    return proto ? decode_metrics_protobuf(r.body) : decode_metrics_json(r.body);
  }
  return {};
}

std::size_t otlp_receiver::requests_to(const std::string& path) const {
  std::size_t n = 0;
  for (std::size_t i = 0; i < server_.requests(); ++i) n += server_.request(i).target == path ? 1 : 0;
  return n;
}

bool otlp_receiver::wait_for_spans(std::size_t n, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (spans().size() >= n) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace covenant_test
