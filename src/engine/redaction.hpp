// Internal: the strings of cassette_options::redact replaced by "[redacted]" (cassettes, and the
// content the OpenTelemetry tracer captures).
#pragma once

#include <string>
#include <vector>

namespace covenant::cassette_impl {

struct normal_request;  // request_key.hpp
struct interaction;     // cassette_impl.hpp

/// The strings to redact: no empty ones, no duplicates, longest first.
std::vector<std::string> prepare_secrets(const std::vector<std::string>& list);
/// `text` with every run of the secrets' bytes (prepare_secrets) replaced by "[redacted]": the
/// cassettes' rule, also applied to the content the OpenTelemetry tracer captures.
std::string redact_text(const std::string& text, const std::vector<std::string>& secrets);
/// Redacts the normalised request's strings (normalize() does, before the request is compared).
void redact_request(normal_request& r, const std::vector<std::string>& secrets);
/// Redacts everything an interaction will write (the request is redacted when normalised).
void redact_outcome(interaction& it, const std::vector<std::string>& secrets);

}  // namespace covenant::cassette_impl
