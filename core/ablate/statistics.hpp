// Mean, sample standard deviation and count of repeated measurements, skipping runs that did not
// report the quantity (so "n" says how many runs a number rests on).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace moepage::ablate {

struct Summary {
  uint32_t n = 0;
  double mean = 0.0;
  double sd = 0.0;  // sample standard deviation (n - 1); 0 when n < 2
};

Summary summarize(std::span<const double> values);
Summary summarize(std::span<const std::optional<double>> values);

// "12.3 ± 0.4" with `decimals` places; "n/a" when n == 0; no "±" part when n == 1.
std::string format_summary(const Summary& s, int decimals);

}  // namespace moepage::ablate
