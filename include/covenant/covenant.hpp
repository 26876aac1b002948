// covenant/covenant.hpp - every public header of covenant in one include, layer by layer
// (docs/architecture.md), except the GoogleTest helpers covenant/testing/gtest.hpp and
// covenant/testing/cassette_gtest.hpp, which need GoogleTest (include them in your tests).
// tests/docs/umbrella_header_test.cpp checks that no public header is missing here.
#pragma once

#include "covenant/types/config.hpp"
#include "covenant/types/describe.hpp"
#include "covenant/types/encode.hpp"
#include "covenant/types/formats.hpp"
#include "covenant/types/issues.hpp"
#include "covenant/types/json_equal.hpp"
#include "covenant/types/json_schema.hpp"
#include "covenant/types/media.hpp"
#include "covenant/types/prompt_format.hpp"
#include "covenant/types/reflect.hpp"
#include "covenant/types/schema.hpp"
#include "covenant/types/schema_of.hpp"
#include "covenant/types/validators.hpp"
#include "covenant/types/version.hpp"

#include "covenant/read/decode.hpp"
#include "covenant/read/dynamic.hpp"
#include "covenant/read/lenient.hpp"
#include "covenant/read/partial.hpp"
#include "covenant/read/validate.hpp"

#include "covenant/engine/cassette.hpp"
#include "covenant/engine/engine.hpp"
#include "covenant/engine/future.hpp"
#include "covenant/engine/http_engine.hpp"
#include "covenant/engine/logging.hpp"
#include "covenant/engine/prices.hpp"
#include "covenant/engine/rate_limiter.hpp"
#include "covenant/engine/response_cache.hpp"
#include "covenant/engine/retry.hpp"
#include "covenant/engine/runtime.hpp"
#include "covenant/engine/trace_context.hpp"

#include "covenant/contract/agent.hpp"
#include "covenant/contract/batch.hpp"
#include "covenant/contract/contract.hpp"
#include "covenant/contract/contract_options.hpp"
#include "covenant/contract/link_verifier.hpp"
#include "covenant/contract/observer.hpp"
#include "covenant/contract/outcome.hpp"
#include "covenant/contract/perf_stats.hpp"
#include "covenant/contract/tool_check.hpp"
#include "covenant/contract/violation.hpp"

#include "covenant/runtime/dynamic_contract.hpp"
#include "covenant/runtime/json_schema_import.hpp"
#include "covenant/runtime/registry.hpp"
#include "covenant/runtime/schema_diagnostic.hpp"
#include "covenant/runtime/schema_file.hpp"

#include "covenant/telemetry/audit_log.hpp"
#include "covenant/telemetry/health.hpp"
#include "covenant/telemetry/metrics.hpp"
#include "covenant/telemetry/metrics_text.hpp"
#include "covenant/telemetry/otel.hpp"

#include "covenant/testing/testing.hpp"
