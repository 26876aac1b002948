// covenant/engine/prices.hpp - what calls cost: token prices by model, kept by the application.
//
// covenant ships no prices: they change, and a table built into a library goes stale without a
// word. An application keeps its own table, in code or in a JSON file that says when its figures
// were taken (docs/cost.md has the format and an example file):
//
//     const covenant::price_table prices = covenant::price_table::load("prices.json");
//     covenant::contract_options o;
//     o.prices = std::make_shared<const covenant::price_table>(prices);
//     // outcome.cost_usd, attempt::cost_usd: dollars, or nullopt when a model has no price
//
// A model without a price costs nothing known: its cost is nullopt, never 0.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "covenant/engine/engine.hpp"
#include "covenant/types/config.hpp"
#include "covenant/types/describe.hpp"
#include "covenant/types/issues.hpp"

namespace covenant {

/// A model's token prices, in US dollars per million tokens. The prices of the parts of usage
/// that providers price apart default to the price of the whole they belong to.
struct token_price {
  double input = 0;                      ///< input tokens
  double output = 0;                     ///< output tokens
  std::optional<double> cached_input{};  ///< input read from the prompt cache (default: `input`)
  std::optional<double> cache_write{};   ///< input written to the prompt cache (default: `input`)
  std::optional<double> reasoning{};     ///< output spent reasoning (default: `output`)

  friend bool operator==(const token_price&, const token_price&) = default;
};

template <>
struct describe<token_price> {
  static constexpr std::string_view description = "US dollars per million tokens";
  static constexpr auto fields = covenant::fields<token_price>(
      covenant::field<&token_price::input>("input tokens", covenant::non_negative{}),
      covenant::field<&token_price::output>("output tokens", covenant::non_negative{}),
      covenant::field<&token_price::cached_input>("input read from the prompt cache", covenant::non_negative{}),
      covenant::field<&token_price::cache_write>("input written to the prompt cache", covenant::non_negative{}),
      covenant::field<&token_price::reasoning>("output spent reasoning", covenant::non_negative{}));
};

/// The cost of `u` at `p`, in US dollars: input not served from or written to the cache at
/// `input`, cached input at `cached_input`, cache writes at `cache_write`, output not spent
/// reasoning at `output`, reasoning at `reasoning`. A part larger than its whole (a server's
/// inconsistent report) counts as the whole.
COVENANT_API double cost_of(const usage& u, const token_price& p) noexcept;

/// A cost as it is shown to people: "$12.3456" from a dollar up, "$0.000054" below (six
/// decimals: the cost of one small call is visible).
COVENANT_API std::string format_usd(double dollars);

struct price_table_result;

/// Token prices by model name. A name is matched exactly, or by a pattern with `*` standing for
/// any run of characters ("gpt-4o-mini*" prices "gpt-4o-mini-2024-07-18"): an exact name wins,
/// then the pattern with the most characters besides `*`, then the one set first.
class COVENANT_API price_table {
 public:
  /// Sets the price of `model` (a name or a pattern), replacing an earlier one.
  void set(std::string model, token_price price);
  /// The price of `model`, or null when the table has none.
  [[nodiscard]] const token_price* find(std::string_view model) const noexcept;
  /// What `u` cost with `model`, or nullopt when the table has no price for it.
  [[nodiscard]] std::optional<double> cost(std::string_view model, const usage& u) const noexcept;
  /// The date the figures were taken (YYYY-MM-DD; from a file), "" for a table built in code.
  [[nodiscard]] const std::string& taken() const noexcept { return taken_; }
  /// Number of names and patterns.
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

  /// A table from the JSON text of a price file (docs/cost.md); throws price_error listing every
  /// issue. `source` names the text in the message.
  static price_table parse(std::string_view json, std::string_view source = "price file");
  /// parse() without throwing: the table, and the issues that kept it from being read.
  static price_table_result try_parse(std::string_view json);
  /// A table from a price file; throws price_error (also when the file cannot be read).
  static price_table load(const std::filesystem::path& file);
  /// load() without throwing.
  static price_table_result try_load(const std::filesystem::path& file);

 private:
  struct entry {
    std::string model;
    token_price price;
    std::size_t literal = 0;  // characters besides '*'
    bool pattern = false;
  };
  std::vector<entry> entries_;
  std::string taken_;
};

struct price_table_result {
  price_table table;
  issue_list issues;  ///< empty when the table was read
  [[nodiscard]] bool ok() const noexcept { return issues.empty(); }
};

/// A price file that could not be read: every issue, with its path in the file.
class COVENANT_API price_error : public std::runtime_error {
 public:
  price_error(std::string_view source, issue_list issues);
  [[nodiscard]] const issue_list& issues() const noexcept { return issues_; }

 private:
  issue_list issues_;
};

}  // namespace covenant
