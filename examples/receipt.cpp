// Media inputs: a till receipt read from its picture under contract (examples/models/receipt.hpp).
//
// The picture is drawn here (examples/models/receipt_image.hpp, a PNG of a few tens of KB) and
// goes into the input as a covenant::image (covenant::image::bytes(png, "image/png"); a picture on
// disk would be covenant::image::file("receipt.png")): the model sees the input's JSON with "<image 1>" in
// place of the picture, and the picture itself as a part of the same message. Offline (default)
// the example replays a recorded conversation (examples/receipt.cassette.jsonl) whose first reply
// misreads the total, which post() rejects because the items do not add up to it, and whose second
// reply is right; it prints the request's parts, the conversation, the outcome and the receipt.
// The cassette keeps the picture as a digest (media type, size, SHA-256), never its bytes.
//
//     receipt                          replay the cassette (no network)
//     receipt --cassette FILE          replay another cassette
//     receipt --scripted               the hand-written script instead (covenant/testing/testing.hpp)
//     receipt --record FILE            record what the model (scripted, or online) answers into FILE
//     receipt --png FILE               also write the picture to FILE
// With COVENANT_BASE_URL set (and COVENANT_PROVIDER, COVENANT_API_KEY, COVENANT_MODEL: a model that
// reads images) it talks to that server instead; `--record FILE` then records a new cassette from it.
#include <covenant/contract/contract.hpp>
#include <covenant/engine/cassette.hpp>
#include <covenant/engine/http_engine.hpp>
#include <covenant/testing/testing.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "models/receipt.hpp"
#include "models/receipt_image.hpp"
#include "models/transcript.hpp"

// Where the recorded conversation is found: the build passes the source tree; an example compiled
// on its own looks in examples/ under the current directory.
#ifndef COVENANT_SOURCE_DIR
#define COVENANT_SOURCE_DIR "."
#endif

namespace {

// The receipt as printed: 3.80 + 2.90 + 2 x 3.50 = 13.70.
const std::vector<std::string> receipt_lines = {
    "CORNER CAFE",
    "2025-06-14",
    "1 FLAT WHITE    3.80",
    "1 CROISSANT     2.90",
    "2 ORANGE JUICE  7.00",
    "    2 X 3.50",
    "TOTAL EUR      13.70",
};

// What the scripted model answers, in order.
std::vector<covenant::testing::step> script() {
  using covenant::testing::step;
  return {
      // 1. the total misread as 14.70: the items add up to 13.70, so post() rejects it
      step(R"({"merchant": "CORNER CAFE", "date": "2025-06-14", "items": [{"description": "Flat white", "quantity": 1, "unit_price": 3.80, "amount": 3.80}, {"description": "Croissant", "quantity": 1, "unit_price": 2.90, "amount": 2.90}, {"description": "Orange juice", "quantity": 2, "unit_price": 3.50, "amount": 7.00}], "total": 14.70, "currency": "EUR"})",
           {1184, 112}),
      // 2. read again: right
      step(R"({"merchant": "CORNER CAFE", "date": "2025-06-14", "items": [{"description": "Flat white", "quantity": 1, "unit_price": 3.80, "amount": 3.80}, {"description": "Croissant", "quantity": 1, "unit_price": 2.90, "amount": 2.90}, {"description": "Orange juice", "quantity": 2, "unit_price": 3.50, "amount": 7.00}], "total": 13.70, "currency": "EUR"})",
           {1371, 112}),
  };
}

void print_rule(const char* title) { std::cout << "\n=== " << title << " ===\n"; }

// Width and height of a PNG, from its IHDR chunk.
std::string png_size(std::string_view png) {
  auto u32 = [&](std::size_t at) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(png[at + i]);
    return v;
  };
  return png.size() < 24 ? "?" : std::to_string(u32(16)) + "x" + std::to_string(u32(20));
}

// "<image 1>  image/png, 36714 bytes, sha256 9f86d0..."
void print_media(const std::vector<covenant::media>& parts) {
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const covenant::media& m = parts[i];
    std::cout << "  " << covenant::media_reference(m.kind(), i + 1) << "  " << m.media_type() << ", " << m.size()
              << " bytes, sha256 " << m.sha256() << "\n";
  }
}


int usage() {
  std::cerr << "usage: receipt [--scripted | --cassette FILE] [--record FILE] [--png FILE]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  bool scripted_run = false;
  std::string cassette_file = COVENANT_SOURCE_DIR "/examples/receipt.cassette.jsonl";
  std::string record_file;
  std::string png_file;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--scripted") scripted_run = true;
    else if (a == "--cassette" && i + 1 < argc) cassette_file = argv[++i];
    else if (a == "--record" && i + 1 < argc) record_file = argv[++i];
    else if (a == "--png" && i + 1 < argc) png_file = argv[++i];
    else return usage();
  }

  // The picture: the same lines always make the same bytes, so a recorded request matches.
  const std::string png = receipts::receipt_png(receipt_lines);
  if (!png_file.empty() && !(std::ofstream(png_file, std::ios::binary) << png)) {
    std::cerr << "receipt: cannot write " << png_file << "\n";
    return EXIT_FAILURE;
  }

  // With COVENANT_BASE_URL set, talk to that server; otherwise replay the recorded conversation
  // (or run the hand-written script).
  const char* base_url = std::getenv("COVENANT_BASE_URL");
  const bool online = base_url != nullptr && *base_url != '\0';
  covenant::testing::scripted_engine scripted{script()};
  std::unique_ptr<covenant::engine> source;  // the HTTP engine or the replayed cassette
  std::unique_ptr<covenant::engine> recorder;
  try {
    if (online)
      source = std::make_unique<covenant::http_engine>(covenant::http_engine::options_from_env());
    else if (!scripted_run && record_file.empty())
      source = std::make_unique<covenant::cassette_engine>(covenant::cassette_options{.path = cassette_file});
    covenant::engine& answering = source ? *source : scripted;
    if (!record_file.empty()) {
      const char* key = std::getenv("COVENANT_API_KEY");
      recorder = std::make_unique<covenant::cassette_engine>(
          covenant::cassette_options{.path = record_file,
                                     .mode = covenant::cassette_mode::record,
                                     .redact = {key != nullptr ? std::string(key) : std::string()}},
          answering);
    }
  } catch (const std::exception& e) {
    std::cerr << "receipt: " << e.what() << "\n";
    return EXIT_FAILURE;
  }
  examples::transcript model{recorder ? *recorder : source ? *source : scripted};
  const char* where = online ? "online" : !record_file.empty() || scripted_run ? "offline, scripted model"
                                                                               : "offline, recorded conversation";

  covenant::contract_options options;
  options.retry = {.tries = 2, .delay = std::chrono::milliseconds(500)};
  options.graceful = true;
  if (!online) options.sleep = [](std::chrono::nanoseconds) {};  // offline: no waiting between attempts

  const covenant::contract<receipts::ReadReceipt> reader{model, options};

  const receipts::ReceiptScan input{covenant::image::bytes(png, "image/png"), std::nullopt};

  print_rule((std::string("task (") + where + ")").c_str());
  std::cout << "read the receipt in a " << png_size(png) << " PNG of " << png.size() << " bytes:\n";
  for (const auto& line : receipt_lines) std::cout << "  | " << line << "\n";

  auto [receipt, outcome] = reader.run(input);

  print_rule("request");
  if (outcome.attempts.empty()) {
    std::cout << "(none sent: " << outcome.summary() << ")\n";
  } else {
    const auto request = model.request(0);
    std::cout << "[system]\n" << request.messages[0].content << "\n[user]\n" << request.messages[1].content << "\n";
    std::cout << "[user, media parts]\n";
    print_media(request.messages[1].media);
  }

  print_rule("conversation");
  for (std::size_t i = 0; i < outcome.attempts.size(); ++i) {
    const auto& a = outcome.attempts[i];
    std::cout << "--- attempt " << a.number << " (" << a.media.size() << " image" << (a.media.size() == 1 ? "" : "s")
              << " sent) ---\n";
    if (i > 0) std::cout << "[user, corrective]\n" << model.request(i).messages.back().content << "\n";
    std::cout << "[model]\n" << a.text << "\n";
    for (const auto& n : a.notes) std::cout << "  note: " << n.to_string() << "\n";
    if (a.issues.empty()) {
      std::cout << "  accepted\n";
    } else {
      std::cout << "  rejected:\n";
      for (const auto& issue : a.issues)
        std::cout << "    " << issue.to_string() << "   [" << covenant::to_string(issue.code) << "]\n";
    }
  }

  print_rule("outcome");
  std::cout << outcome.summary() << "\n";
  std::cout << "tokens: " << outcome.usage.input_tokens << " in, " << outcome.usage.output_tokens << " out (all "
            << outcome.attempts.size() << " attempts)\n";

  print_rule("receipt (from forward)");
  if (!receipt) {
    std::cout << "(none: no reply passed the checks)\n";
    return EXIT_FAILURE;
  }
  std::cout << receipt->merchant << ", " << receipt->date << "\n";
  for (const auto& item : receipt->items) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-16s %3d x %7.2f = %7.2f\n", item.description.c_str(), item.quantity,
                  item.unit_price, item.amount);
    std::cout << line;
  }
  std::cout << "  total " << receipts::ReadReceipt::money(receipt->total) << " " << receipt->currency << "\n";
  return outcome.success ? EXIT_SUCCESS : EXIT_FAILURE;
}
