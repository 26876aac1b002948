// The typed core on the FinalAnswer model: its JSON Schema, the prompt text a model sees, and
// decoding of a valid and an invalid reply with every issue.
#include <covenant/read/decode.hpp>
#include <covenant/types/encode.hpp>
#include <covenant/types/json_schema.hpp>
#include <covenant/types/prompt_format.hpp>

#include <boost/json/serialize.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "models/final_answer.hpp"

namespace {

// Reads a sample shipped beside the repository, or falls back to an equivalent built-in text.
std::string sample(const char* name, const char* builtin) {
  std::ifstream f(std::string(COVENANT_SHARED_DIR) + "/bench/python/samples/" + name, std::ios::binary);
  if (!f) return builtin;
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const char* builtin_valid =
    R"({"answer": "The Eiffel Tower is 330 m tall including antennas.", "confidence": 0.87, "sources": ["https://en.wikipedia.org/wiki/Eiffel_Tower", "https://www.toureiffel.paris/en/key-figures"], "reasoning": "Both sources agree on 330 m.", "metadata": {"timestamp": "2025-01-15T10:30:00Z", "model_used": "gpt-4o-mini", "token_usage": {"input_tokens": 512, "output_tokens": 128}, "program_version": "1.0.0"}})";
const char* builtin_invalid =
    R"({"confidence": 1.7, "sources": ["https://en.wikipedia.org/wiki/Eiffel_Tower", ""], "reasoning": "Both sources agree on 330 m.", "metadata": {"timestamp": "2025-01-15T10:30:00Z", "model_used": "gpt-4o-mini", "token_usage": {"input_tokens": 512, "output_tokens": 128}, "program_version": "1.0.0"}})";

void show(const char* title, const std::string& text) {
  std::cout << "\n=== decode " << title << " ===\n" << text << "\n";
  auto r = covenant::try_decode<models::FinalAnswer>(text);
  if (r) {
    std::cout << "-> valid: " << covenant::to_json(*r.value) << "\n";
    return;
  }
  std::cout << "-> " << r.issues.size() << (r.issues.size() == 1 ? " issue" : " issues") << ":\n";
  for (const auto& i : r.issues)
    std::cout << "   " << i.to_string() << "   [" << covenant::to_string(i.code) << "; expected " << i.expected
              << "]\n";
}

}  // namespace

int main() {
  std::cout << "=== JSON Schema of FinalAnswer ===\n"
            << boost::json::serialize(covenant::json_schema_of<models::FinalAnswer>()) << "\n";
  std::cout << "\n=== prompt text of FinalAnswer ===\n" << covenant::prompt_of<models::FinalAnswer>() << "\n";
  show("valid_final_answer.json", sample("valid_final_answer.json", builtin_valid));
  show("invalid_final_answer.json", sample("invalid_final_answer.json", builtin_invalid));
  return 0;
}
