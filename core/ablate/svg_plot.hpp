// The ablation plot, hand-written SVG: two panels side by side, decode tok/s and hit rate
// against the pager budget, one series (colour + marker line) per pager plugin (and policy); points are the
// mean with a ±sd bar. Arms without a numeric budget (resident, `auto`) are drawn as a dashed
// horizontal reference line across the panel, since they have no x position of their own.
#pragma once
#include <string>
#include <vector>

#include "ablate/table.hpp"

namespace moepage::ablate {

std::string ablation_svg(const std::vector<ArmRow>& rows, const std::string& title);

// Round tick values from at or below lo to at or above hi (about `target` steps of 1, 2 or 5 x 10^k).
std::vector<double> nice_ticks(double lo, double hi, int target);

}  // namespace moepage::ablate
