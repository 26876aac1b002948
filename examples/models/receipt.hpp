// Reading a till receipt from its picture, under contract.
//
//   input    the picture (covenant::image) and, optionally, the currency to assume
//   output   merchant, date, line items (quantity, unit price, amount), total and currency
//   post     every item's amount is its quantity times its unit price, and the amounts add up to
//            the total (to the cent): a misread figure is sent back to the model with the sum it
//            breaks, and the model reads the picture again
//   forward  the receipt, or nothing when no reply passed the checks
#pragma once

#include <covenant/contract/contract.hpp>

#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace receipts {

struct ReceiptScan {
  covenant::image photo;
  std::optional<std::string> currency_hint;
};

struct LineItem {
  std::string description;
  int quantity = 1;
  double unit_price = 0;
  double amount = 0;
};

struct Receipt {
  std::string merchant;
  std::string date;
  std::vector<LineItem> items;
  double total = 0;
  std::string currency;
};

}  // namespace receipts

template <>
struct covenant::describe<receipts::ReceiptScan> {
  static constexpr auto fields = covenant::fields<receipts::ReceiptScan>(
      covenant::field<&receipts::ReceiptScan::photo>("Picture of the receipt."),
      covenant::field<&receipts::ReceiptScan::currency_hint>(
          "Currency to assume when the receipt shows none (ISO 4217 code).", covenant::pattern{"^[A-Z]{3}$"}));
};

template <>
struct covenant::describe<receipts::LineItem> {
  static constexpr std::string_view description = "One line of the receipt.";
  static constexpr auto fields = covenant::fields<receipts::LineItem>(
      covenant::field<&receipts::LineItem::description>("What was bought, as printed.", covenant::non_empty{}),
      covenant::field<&receipts::LineItem::quantity>("How many (1 when the line shows no count).",
                                                     covenant::positive{}),
      covenant::field<&receipts::LineItem::unit_price>("Price of one."),
      covenant::field<&receipts::LineItem::amount>("Price of the line: quantity times unit price."));
};

template <>
struct covenant::describe<receipts::Receipt> {
  static constexpr std::string_view description = "A till receipt, as printed.";
  static constexpr auto fields = covenant::fields<receipts::Receipt>(
      covenant::field<&receipts::Receipt::merchant>("Name of the shop.", covenant::non_empty{}),
      covenant::field<&receipts::Receipt::date>("Date of the purchase.", covenant::date{}),
      covenant::field<&receipts::Receipt::items>("The items bought, in the receipt's order.", covenant::non_empty{}),
      covenant::field<&receipts::Receipt::total>("The total to pay, as printed."),
      covenant::field<&receipts::Receipt::currency>("ISO 4217 code of the currency.", covenant::pattern{"^[A-Z]{3}$"}));
};

namespace receipts {

struct ReadReceipt {
  static constexpr std::string_view prompt =
      "Read the till receipt in the picture: the shop, the date, every item with its quantity, unit price and "
      "amount, the total and the currency. Read the figures as printed, in the receipt's currency, as plain "
      "numbers.";
  static constexpr std::string_view rules[] = {
      "every item's amount is its quantity times its unit price",
      "the items' amounts add up to the total",
  };

  /// How far two amounts may differ and still be the same (half a cent).
  static constexpr double tolerance = 0.005;

  void post(const Receipt& r) const {
    covenant::violation v;
    double sum = 0;
    for (std::size_t i = 0; i < r.items.size(); ++i) {
      const LineItem& item = r.items[i];
      const double expected = item.quantity * item.unit_price;
      if (std::fabs(item.amount - expected) > tolerance)
        v.add("items[" + std::to_string(i) + "].amount",
              "must be quantity x unit price = " + money(expected) + " (got " + money(item.amount) + ")");
      sum += item.amount;
    }
    if (std::fabs(sum - r.total) > tolerance)
      v.add("total", "must be the sum of the items' amounts, " + money(sum) + " (got " + money(r.total) +
                         "); read the total and the amounts again");
    v.raise_if_any();
  }

  std::optional<Receipt> forward(const ReceiptScan&, const covenant::outcome<Receipt>& o) const { return o.result; }

  /// 13.7 -> "13.70"
  static std::string money(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f", v);
    return buf;
  }
};

}  // namespace receipts
