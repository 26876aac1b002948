// The schema registry: named, versioned models behind a reader-writer lock.
#include "covenant/runtime/registry.hpp"

#include <mutex>
#include <utility>

namespace covenant {

std::string_view to_string(registry_error_code code) noexcept {
  switch (code) {
    case registry_error_code::unknown_schema: return "unknown_schema";
    case registry_error_code::unknown_version: return "unknown_version";
    case registry_error_code::duplicate_version: return "duplicate_version";
    case registry_error_code::invalid_schema: return "invalid_schema";
    case registry_error_code::invalid_reference: return "invalid_reference";
  }
  return "unknown";
}

registry_error::registry_error(registry_error_code code, std::string message, schema_diagnostics issues)
    : std::runtime_error(std::move(message)), code_(code), issues_(std::move(issues)) {}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

void check_label(std::string_view what, std::string_view s) {
  if (s.empty() || s.find('@') != std::string_view::npos)
    throw registry_error(registry_error_code::invalid_reference,
                         "invalid schema " + std::string(what) + " '" + std::string(s) + "' (not empty, no '@')");
}

}  // namespace

std::optional<schema_ref> parse_schema_ref(std::string_view text) {
  const std::size_t at = text.rfind('@');
  schema_ref r;
  if (at == std::string_view::npos) {
    r.name = std::string(text);
  } else {
    r.name = std::string(text.substr(0, at));
    r.version = std::string(text.substr(at + 1));
    if (r.version.empty()) return std::nullopt;
  }
  if (r.name.empty() || r.name.find('@') != std::string::npos) return std::nullopt;
  return r;
}

bool version_less(std::string_view a, std::string_view b) noexcept {
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::size_t ie = i;
      std::size_t je = j;
      while (ie < a.size() && is_digit(a[ie])) ++ie;
      while (je < b.size() && is_digit(b[je])) ++je;
      // Compare the digit runs as numbers: skip leading zeros, then length, then digits.
      std::size_t is = i;
      std::size_t js = j;
      while (is + 1 < ie && a[is] == '0') ++is;
      while (js + 1 < je && b[js] == '0') ++js;
      if (ie - is != je - js) return ie - is < je - js;
      const int c = a.substr(is, ie - is).compare(b.substr(js, je - js));
      if (c != 0) return c < 0;
      if (ie - i != je - j) return ie - i < je - j;  // "01" after "1"
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

registered_schema schema_registry::add(std::string_view name, std::string_view version, schema::model m,
                                       std::string_view origin) {
  check_label("name", name);
  check_label("version", version);
  schema_diagnostics problems = check_model(m);
  if (!problems.empty()) {
    std::string message = "schema " + std::string(name) + "@" + std::string(version) + " is invalid: " +
                          problems.front().to_string();
    throw registry_error(registry_error_code::invalid_schema, std::move(message), std::move(problems));
  }
  registered_schema entry;
  entry.name = std::string(name);
  entry.version = std::string(version);
  entry.model = std::make_shared<const schema::model>(std::move(m));
  entry.origin = std::string(origin);
  std::unique_lock lock(mutex_);
  auto& versions = entries_[entry.name];
  if (versions.count(entry.version) != 0)
    throw registry_error(registry_error_code::duplicate_version, "schema " + entry.ref() + " is already registered");
  versions.emplace(entry.version, entry);
  return entry;
}

registered_schema schema_registry::add_schema_file(std::string_view name, std::string_view version,
                                                   std::string_view text, std::string_view type,
                                                   const schema_load_options& options) {
  check_label("name", name);
  check_label("version", version);
  schema_load_result r = schema_set::try_parse(text, options);
  const std::string root(type.empty() ? name : type);
  if (r.ok() && !r.set.contains(root)) {
    schema_diagnostic d;
    d.code = schema_error_code::unknown_type;
    d.file = options.file;
    d.message = "the schema declares no type '" + root + "'";
    r.issues.push_back(std::move(d));
  }
  if (!r.ok()) {
    std::string message = "schema " + std::string(name) + "@" + std::string(version) + " does not load: " +
                          r.issues.front().to_string();
    throw registry_error(registry_error_code::invalid_schema, std::move(message), std::move(r.issues));
  }
  return add(name, version, r.set.model(root), "schema file");
}

registered_schema schema_registry::add_json_schema(std::string_view name, std::string_view version,
                                                   const boost::json::value& document,
                                                   const json_schema_import_options& options) {
  check_label("name", name);
  check_label("version", version);
  json_schema_import_result r = try_import_json_schema(document, options);
  if (!r.ok()) {
    std::string message = "schema " + std::string(name) + "@" + std::string(version) + " does not import: " +
                          r.issues.front().to_string();
    throw registry_error(registry_error_code::invalid_schema, std::move(message), std::move(r.issues));
  }
  return add(name, version, std::move(*r.model), "JSON Schema");
}

registered_schema schema_registry::get_locked(std::string_view name, std::string_view version) const {
  auto it = entries_.find(name);
  if (it == entries_.end() || it->second.empty())
    throw registry_error(registry_error_code::unknown_schema, "unknown schema '" + std::string(name) + "'");
  if (version.empty()) return std::prev(it->second.end())->second;
  auto v = it->second.find(version);
  if (v == it->second.end()) {
    std::string known;
    for (const auto& kv : it->second) known += (known.empty() ? "" : ", ") + kv.first;
    throw registry_error(registry_error_code::unknown_version, "schema '" + std::string(name) + "' has no version '" +
                                                                   std::string(version) + "' (known: " + known + ")");
  }
  return v->second;
}

registered_schema schema_registry::get(std::string_view name, std::string_view version) const {
  if (version.empty())
    throw registry_error(registry_error_code::invalid_reference, "empty version for schema '" + std::string(name) + "'");
  std::shared_lock lock(mutex_);
  return get_locked(name, version);
}

registered_schema schema_registry::get(std::string_view ref) const {
  const std::optional<schema_ref> r = parse_schema_ref(ref);
  if (!r) {
    throw registry_error(registry_error_code::invalid_reference,
                         "invalid schema reference '" + std::string(ref) +
                             (ref.ends_with('@') ? "': nothing after '@'" : "' (expected Name or Name@version)"));
  }
  std::shared_lock lock(mutex_);
  return get_locked(r->name, r->version);
}

std::optional<registered_schema> schema_registry::find(std::string_view name, std::string_view version) const {
  std::shared_lock lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end() || it->second.empty()) return std::nullopt;
  if (version.empty()) return std::prev(it->second.end())->second;
  auto v = it->second.find(version);
  if (v == it->second.end()) return std::nullopt;
  return v->second;
}

registered_schema schema_registry::latest(std::string_view name) const {
  std::shared_lock lock(mutex_);
  return get_locked(name, {});
}

std::vector<std::string> schema_registry::versions(std::string_view name) const {
  std::shared_lock lock(mutex_);
  std::vector<std::string> out;
  auto it = entries_.find(name);
  if (it == entries_.end()) return out;
  for (const auto& kv : it->second) out.push_back(kv.first);
  return out;
}

std::vector<schema_listing> schema_registry::list() const {
  std::shared_lock lock(mutex_);
  std::vector<schema_listing> out;
  for (const auto& [name, versions] : entries_) {
    if (versions.empty()) continue;
    schema_listing l;
    l.name = name;
    for (const auto& kv : versions) l.versions.push_back(kv.first);
    out.push_back(std::move(l));
  }
  return out;
}

bool schema_registry::remove(std::string_view name, std::string_view version) {
  std::unique_lock lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return false;
  auto v = it->second.find(version);
  if (v == it->second.end()) return false;
  it->second.erase(v);
  if (it->second.empty()) entries_.erase(it);
  return true;
}

compat_report schema_registry::check_compatibility(std::string_view name, std::string_view from,
                                                   std::string_view to) const {
  registered_schema a;
  registered_schema b;
  {
    std::shared_lock lock(mutex_);
    a = get_locked(name, from);
    b = get_locked(name, to);
  }
  return covenant::check_compatibility(*a.model, *b.model);
}

}  // namespace covenant
