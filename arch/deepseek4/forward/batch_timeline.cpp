#include "deepseek4/forward/batch_timeline.hpp"

#include <cstdio>
#include <stdexcept>

namespace moepage::ds4 {

namespace {

std::string ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

BatchTimeline timeline_from_marks(uint32_t tokens, const std::vector<double>& device_ms, double queued_ms,
                                  double wall_ms) {
  if (device_ms.size() < 2 || device_ms.size() % 2 != 0)
    throw std::invalid_argument("batch timeline: " + std::to_string(device_ms.size()) +
                                " marks, expected start, two per layer and end");
  BatchTimeline t;
  t.tokens = tokens;
  t.wall_ms = wall_ms;
  t.queued_ms = queued_ms;
  t.device_ms = device_ms.back() - device_ms.front();
  const size_t layers = (device_ms.size() - 2) / 2;
  for (size_t l = 0; l < layers; ++l) {
    t.attention_ms.push_back(device_ms[1 + 2 * l] - device_ms[2 * l]);
    t.moe_ms.push_back(device_ms[2 + 2 * l] - device_ms[1 + 2 * l]);
  }
  t.head_ms = device_ms.back() - device_ms[device_ms.size() - 2];
  return t;
}

std::string describe(const BatchTimeline& t) {
  std::string out = "prompt batch of " + std::to_string(t.tokens) + " tokens: " + ms(t.wall_ms) + " ms wall, " +
                    ms(t.device_ms) + " ms on the device (all queued after " + ms(t.queued_ms) + " ms)";
  for (size_t l = 0; l < t.attention_ms.size(); ++l)
    out += "; layer " + std::to_string(l) + " attention " + ms(t.attention_ms[l]) + " + MoE " + ms(t.moe_ms[l]);
  return out + "; head " + ms(t.head_ms) + " ms";
}

}  // namespace moepage::ds4
