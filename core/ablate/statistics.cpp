#include "ablate/statistics.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

namespace moepage::ablate {

Summary summarize(std::span<const double> values) {
  Summary s;
  s.n = uint32_t(values.size());
  if (s.n == 0) return s;
  double sum = 0.0;
  for (double v : values) sum += v;
  s.mean = sum / s.n;
  if (s.n > 1) {
    // Two-pass: the sum of squared deviations from the mean does not cancel catastrophically.
    double squares = 0.0;
    for (double v : values) squares += (v - s.mean) * (v - s.mean);
    s.sd = std::sqrt(squares / (s.n - 1));
  }
  return s;
}

Summary summarize(std::span<const std::optional<double>> values) {
  std::vector<double> present;
  for (const auto& v : values) {
    if (v) present.push_back(*v);
  }
  return summarize(std::span<const double>(present));
}

std::string format_summary(const Summary& s, int decimals) {
  if (s.n == 0) return "n/a";
  char buf[96];
  if (s.n == 1) std::snprintf(buf, sizeof buf, "%.*f", decimals, s.mean);
  else std::snprintf(buf, sizeof buf, "%.*f ± %.*f", decimals, s.mean, decimals, s.sd);
  return buf;
}

}  // namespace moepage::ablate
