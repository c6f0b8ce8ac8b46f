#include "ablate/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "units/byte_size.hpp"

namespace moepage::ablate {
namespace {

constexpr double kPanelW = 420, kPanelH = 300, kLeft = 70, kTop = 50, kGap = 90, kBottom = 60;
const char* const kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"};

std::string fmt(double v, int decimals = 1) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

struct Panel {
  double x0;  // left edge of the plotting area
  std::string y_label;
  std::function<Summary(const ArmRow&)> metric;
  double scale;  // display multiplier (100 for percent)
};

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1.0;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  // From the last round value at or below lo to the first at or above hi, so the axis covers
  // every point (and its error bar).
  std::vector<double> ticks;
  const long first = long(std::floor(lo / step + 1e-9)), last = long(std::ceil(hi / step - 1e-9));
  for (long i = first; i <= last; ++i) ticks.push_back(double(i) * step);
  return ticks;
}

namespace {

// The x axis: the distinct numeric budgets, log2-spaced when they span more than 4x.
struct BudgetAxis {
  std::set<uint64_t> budgets;
  double bmin = 1.0, bmax = 2.0;
  bool log_x = false;

  explicit BudgetAxis(const std::vector<ArmRow>& rows) {
    for (const ArmRow& r : rows) {
      if (r.info.budget && *r.info.budget > 0) budgets.insert(*r.info.budget);
    }
    if (!budgets.empty()) {
      bmin = double(*budgets.begin());
      bmax = double(*budgets.rbegin());
    }
    log_x = bmax / bmin > 4.0;
  }
  double pos(double b) const {
    const double lo = log_x ? std::log2(bmin) : bmin, hi = log_x ? std::log2(bmax) : bmax;
    const double v = log_x ? std::log2(b) : b;
    const double t = hi > lo ? (v - lo) / (hi - lo) : 0.5;
    return 20.0 + t * (kPanelW - 40.0);  // inset so end points are not on the frame
  }
};

// A panel's y axis: 0 to the first round value above every point and its error bar (100 for %).
struct ValueAxis {
  std::vector<double> ticks;
  double top = 1.0;
  bool any = false;  // some arm measured this metric

  ValueAxis(const Panel& p, const std::vector<ArmRow>& rows) {
    double ymax = 0.0;
    for (const ArmRow& r : rows) {
      const Summary s = p.metric(r);
      if (s.n == 0) continue;
      any = true;
      ymax = std::max(ymax, (s.mean + s.sd) * p.scale);
    }
    if (p.scale == 100.0) ymax = 100.0;
    if (ymax <= 0.0) ymax = 1.0;
    ticks = nice_ticks(0.0, ymax, 5);
    top = ticks.back();
  }
  double pos(double v) const { return kTop + kPanelH - (v / top) * kPanelH; }
};

// Frame, grid, ticks and axis labels of one panel.
void write_axes(std::ostringstream& svg, const Panel& p, const BudgetAxis& x_axis, const ValueAxis& y_axis) {
  svg << "<rect x=\"0\" y=\"" << fmt(kTop, 0) << "\" width=\"" << fmt(kPanelW, 0) << "\" height=\"" << fmt(kPanelH, 0)
      << "\" fill=\"none\" stroke=\"black\"/>\n";
  for (double t : y_axis.ticks) {
    const double y = y_axis.pos(t);
    svg << "<line x1=\"0\" y1=\"" << fmt(y) << "\" x2=\"" << fmt(kPanelW, 0) << "\" y2=\"" << fmt(y)
        << "\" stroke=\"#dddddd\"/>\n"
        << "<line x1=\"-5\" y1=\"" << fmt(y) << "\" x2=\"0\" y2=\"" << fmt(y) << "\" stroke=\"black\"/>\n"
        << "<text x=\"-8\" y=\"" << fmt(y + 4) << "\" text-anchor=\"end\">" << fmt(t, t < 10 && y_axis.top < 10 ? 1 : 0)
        << "</text>\n";
  }
  // x ticks at every budget measured.
  for (uint64_t b : x_axis.budgets) {
    const double x = x_axis.pos(double(b));
    svg << "<line x1=\"" << fmt(x) << "\" y1=\"" << fmt(kTop + kPanelH, 0) << "\" x2=\"" << fmt(x) << "\" y2=\""
        << fmt(kTop + kPanelH + 5, 0) << "\" stroke=\"black\"/>\n"
        << "<text x=\"" << fmt(x) << "\" y=\"" << fmt(kTop + kPanelH + 18, 0) << "\" text-anchor=\"middle\">"
        << units::format_bytes(b) << "</text>\n";
  }
  svg << "<text x=\"" << fmt(kPanelW / 2, 0) << "\" y=\"" << fmt(kTop + kPanelH + 38, 0)
      << "\" text-anchor=\"middle\">pager budget" << (x_axis.log_x ? " (log scale)" : "") << "</text>\n"
      << "<text transform=\"translate(-50," << fmt(kTop + kPanelH / 2, 0) << ") rotate(-90)\" text-anchor=\"middle\">"
      << xml_escape(p.y_label) << "</text>\n";
  if (!y_axis.any) {
    svg << "<text x=\"" << fmt(kPanelW / 2, 0) << "\" y=\"" << fmt(kTop + kPanelH / 2, 0)
        << "\" text-anchor=\"middle\" fill=\"#888888\">not measured</text>\n";
  }
}

// One series: a polyline through its budgets with ±1 sd bars; budget-less arms as dashed lines.
void write_series(std::ostringstream& svg, const Panel& p, const std::vector<ArmRow>& rows, const std::string& series,
                  const char* col, const BudgetAxis& x_axis, const ValueAxis& y_axis) {
  std::vector<std::pair<double, Summary>> points;
  for (const ArmRow& r : rows) {
    if (r.info.series != series) continue;
    const Summary s = p.metric(r);
    if (s.n == 0) continue;
    if (r.info.budget && *r.info.budget > 0) {
      points.emplace_back(double(*r.info.budget), s);
    } else {
      const double y = y_axis.pos(s.mean * p.scale);
      svg << "<line x1=\"0\" y1=\"" << fmt(y) << "\" x2=\"" << fmt(kPanelW, 0) << "\" y2=\"" << fmt(y) << "\" stroke=\""
          << col << "\" stroke-width=\"2\" stroke-dasharray=\"6,4\"/>\n";
    }
  }
  std::sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (points.size() > 1) {
    svg << "<polyline fill=\"none\" stroke=\"" << col << "\" stroke-width=\"2\" points=\"";
    for (const auto& [b, s] : points) svg << fmt(x_axis.pos(b)) << "," << fmt(y_axis.pos(s.mean * p.scale)) << " ";
    svg << "\"/>\n";
  }
  for (const auto& [b, s] : points) {
    const double x = x_axis.pos(b), y = y_axis.pos(s.mean * p.scale);
    if (s.n > 1 && s.sd > 0) {
      const double lo_v = std::max(0.0, (s.mean - s.sd) * p.scale),
                   hi_v = std::min(y_axis.top, (s.mean + s.sd) * p.scale);
      svg << "<line x1=\"" << fmt(x) << "\" y1=\"" << fmt(y_axis.pos(lo_v)) << "\" x2=\"" << fmt(x) << "\" y2=\""
          << fmt(y_axis.pos(hi_v)) << "\" stroke=\"" << col << "\"/>\n";
    }
    svg << "<circle cx=\"" << fmt(x) << "\" cy=\"" << fmt(y) << "\" r=\"4\" fill=\"" << col << "\"/>\n";
  }
}

void write_legend(std::ostringstream& svg, const std::map<std::string, const char*>& colour) {
  double ly = kTop + kPanelH + kBottom;
  for (const auto& [pager, col] : colour) {
    svg << "<line x1=\"" << fmt(kLeft, 0) << "\" y1=\"" << fmt(ly) << "\" x2=\"" << fmt(kLeft + 30, 0) << "\" y2=\""
        << fmt(ly) << "\" stroke=\"" << col << "\" stroke-width=\"2\"/>\n"
        << "<circle cx=\"" << fmt(kLeft + 15, 0) << "\" cy=\"" << fmt(ly) << "\" r=\"4\" fill=\"" << col << "\"/>\n"
        << "<text x=\"" << fmt(kLeft + 40, 0) << "\" y=\"" << fmt(ly + 4) << "\">" << xml_escape(pager) << "</text>\n";
    ly += 22.0;
  }
  svg << "<text x=\"" << fmt(kLeft, 0) << "\" y=\"" << fmt(ly + 4)
      << "\" fill=\"#555555\">dashed: an arm without a numeric budget (resident or auto); bars: ±1 sd</text>\n";
}

}  // namespace

std::string ablation_svg(const std::vector<ArmRow>& rows, const std::string& title) {
  const BudgetAxis x_axis(rows);
  std::map<std::string, const char*> colour;  // series -> colour
  for (const ArmRow& r : rows) {
    if (!colour.count(r.info.series)) colour[r.info.series] = kColours[colour.size() % std::size(kColours)];
  }

  const double width = kLeft + 2 * kPanelW + kGap + 40;
  const double legend_h = 22.0 * double(colour.size() + 1);
  const double height = kTop + kPanelH + kBottom + legend_h;
  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << fmt(width, 0) << "\" height=\"" << fmt(height, 0)
      << "\" viewBox=\"0 0 " << fmt(width, 0) << " " << fmt(height, 0)
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect x=\"0\" y=\"0\" width=\"" << fmt(width, 0) << "\" height=\"" << fmt(height, 0)
      << "\" fill=\"white\"/>\n"
      << "<text x=\"" << fmt(width / 2, 0) << "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">"
      << xml_escape(title) << "</text>\n";

  const Panel panels[] = {
      {kLeft, "decode tok/s", [](const ArmRow& r) { return r.decode_tok_s; }, 1.0},
      {kLeft + kPanelW + kGap, "hit rate (%)", [](const ArmRow& r) { return r.hit_rate; }, 100.0},
  };
  for (const Panel& p : panels) {
    const ValueAxis y_axis(p, rows);
    svg << "<g transform=\"translate(" << fmt(p.x0, 0) << ",0)\">\n";
    write_axes(svg, p, x_axis, y_axis);
    for (const auto& [series, col] : colour) write_series(svg, p, rows, series, col, x_axis, y_axis);
    svg << "</g>\n";
  }
  write_legend(svg, colour);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace moepage::ablate
