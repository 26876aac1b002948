// A schema file or a JSON Schema document, whichever a file holds.
#include <utility>

#include "covenant/types/config.hpp"
#include "covenant/runtime/json_schema_import.hpp"
#include "text_file.hpp"

namespace covenant {

bool is_json_schema_document(std::string_view file, std::string_view text) noexcept {
  if (file.size() >= 5 && file.substr(file.size() - 5) == ".json") return true;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  return start != std::string_view::npos && text[start] == '{';
}

schema_document try_load_schema_document(const std::filesystem::path& path) {
  schema_document out;
  out.file = path.string();
  const detail::file_text f = detail::read_text_file(path, COVENANT_SCHEMA_MAX_BYTES);
  if (!f.error.empty()) {
    schema_diagnostic d;
    d.code = f.too_large ? schema_error_code::limit_exceeded : schema_error_code::io_error;
    d.file = out.file;
    d.message = f.too_large ? "file " + f.error : "cannot read the file: " + f.error;
    out.issues.push_back(std::move(d));
    return out;
  }
  out.json_schema = is_json_schema_document(out.file, f.text);
  if (out.json_schema) {
    json_schema_import_options options;
    options.file = out.file;
    json_schema_import_result r = try_import_json_schema_text(f.text, options);
    if (!r.ok()) {
      out.issues = std::move(r.issues);
      return out;
    }
    try {
      out.set = schema_set::from_model(*r.model);
    } catch (const schema_error& e) {
      out.issues = e.issues();
      return out;
    }
    out.document = std::move(r.model);
    return out;
  }
  schema_load_options options;
  options.file = out.file;
  schema_load_result r = schema_set::try_parse(f.text, options);
  out.issues = std::move(r.issues);
  out.notes = std::move(r.notes);
  out.set = std::move(r.set);
  return out;
}

schema_document load_schema_document(const std::filesystem::path& path) {
  schema_document d = try_load_schema_document(path);
  if (!d.ok()) throw schema_error(std::move(d.issues));
  return d;
}

}  // namespace covenant
