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
  constexpr size_t kPerLayer = 4;  // attention site, attention, MoE site, MoE
  if (device_ms.size() < 2 || (device_ms.size() - 2) % kPerLayer != 0)
    throw std::invalid_argument("batch timeline: " + std::to_string(device_ms.size()) +
                                " marks, expected start, four per layer and end");
  BatchTimeline t;
  t.tokens = tokens;
  t.wall_ms = wall_ms;
  t.queued_ms = queued_ms;
  t.device_ms = device_ms.back() - device_ms.front();
  const size_t layers = (device_ms.size() - 2) / kPerLayer;
  for (size_t l = 0; l < layers; ++l) {
    const double* m = device_ms.data() + kPerLayer * l;  // m[0]: the previous layer's end (or the start)
    t.attention_site_ms.push_back(m[1] - m[0]);
    t.attention_ms.push_back(m[2] - m[1]);
    t.moe_site_ms.push_back(m[3] - m[2]);
    t.moe_ms.push_back(m[4] - m[3]);
  }
  t.head_ms = device_ms.back() - device_ms[device_ms.size() - 2];
  return t;
}

std::string describe(const BatchTimeline& t) {
  std::string out = "prompt batch of " + std::to_string(t.tokens) + " tokens: " + ms(t.wall_ms) + " ms wall, " +
                    ms(t.device_ms) + " ms on the device (all queued after " + ms(t.queued_ms) + " ms)";
  for (size_t l = 0; l < t.attention_ms.size(); ++l)
    out += "; layer " + std::to_string(l) + " mHC " + ms(t.attention_site_ms[l]) + " + attention " +
           ms(t.attention_ms[l]) + " + mHC " + ms(t.moe_site_ms[l]) + " + MoE " + ms(t.moe_ms[l]);
  return out + "; head " + ms(t.head_ms) + " ms";
}

}  // namespace moepage::ds4
