#include "moepage/pager_core/adapter_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "moepage/pager_core/errors.hpp"
#include "moepage/pager_core/half.hpp"
#include "units/byte_size.hpp"

namespace moepage::pager {

namespace {

[[noreturn]] void fail(std::string_view name, const std::string& what) {
  throw PagerError(ErrorKind::Format, std::string(name) + ": " + what);
}

uint32_t load_u32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

std::string n(uint64_t v) { return std::to_string(v); }

// Reads `count` little-endian f16 values, rejecting non-finite ones.
void load_halves(const uint8_t* p, size_t count, std::vector<uint16_t>& out, std::string_view name, uint32_t entry,
                 uint32_t src_layer, const char* matrix, uint32_t cols) {
  out.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const uint16_t h = uint16_t(p[2 * i] | p[2 * i + 1] << 8);
    if (!half_is_finite(h))
      fail(name, "entry " + n(entry) + " (src_layer " + n(src_layer) + "): " + matrix + "[" + n(i / cols) + "][" +
                     n(i % cols) + "] is not finite");
    out[i] = h;
  }
}

// splitmix64: tiny, seedable and identical on every platform (std distributions are not).
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-scale, scale).
  float symmetric(float scale) { return scale * (float(next() >> 40) / float(1u << 23) - 1.0f); }
};

}  // namespace

Adapter parse_adapter(std::span<const uint8_t> bytes, const AdapterModel& model, std::string_view name) {
  if (model.has_experts.size() != model.n_layers)
    throw PagerError(ErrorKind::InvalidRequest, std::string(name) + ": the model description has " +
                                                    n(model.has_experts.size()) + " has_experts flags for " +
                                                    n(model.n_layers) + " layers");
  if (bytes.size() < kAdapterHeaderBytes)
    fail(name,
         "file is " + n(bytes.size()) + " bytes, shorter than the " + n(kAdapterHeaderBytes) + "-byte HFADPT header");
  if (std::memcmp(bytes.data(), kAdapterMagic, sizeof kAdapterMagic) != 0)
    fail(name, "not an HFADPT adapter file (the first 8 bytes are not \"HFADPT\\0\\0\")");
  const uint8_t* h = bytes.data() + 8;
  const uint32_t version = load_u32(h), n_entries = load_u32(h + 4), d_model = load_u32(h + 8),
                 n_exp = load_u32(h + 12), rank = load_u32(h + 16);
  if (version != 1 && version != 2) fail(name, "HFADPT version " + n(version) + " is not supported (expected 1 or 2)");
  if (d_model != model.d_model)
    fail(name, "d_model " + n(d_model) + " does not match the model's hidden size " + n(model.d_model));
  if (n_exp != model.n_experts)
    fail(name, "n_exp " + n(n_exp) + " does not match the model's " + n(model.n_experts) + " routed experts per layer");
  if (rank == 0 || rank > d_model) fail(name, "rank " + n(rank) + " must be in 1..d_model (" + n(d_model) + ")");
  if (n_entries == 0) fail(name, "has no entries");
  if (n_entries >= model.n_layers)
    fail(name, n(n_entries) + " entries, but a " + n(model.n_layers) + "-layer model has at most " +
                   n(model.n_layers == 0 ? 0 : model.n_layers - 1) + " layers to predict");
  // All factors are < 2^32 and n_entries < n_layers, so 64-bit arithmetic is exact here.
  const uint64_t a_count = uint64_t(rank) * d_model, b_count = uint64_t(n_exp) * rank;
  const uint64_t bias_count = version >= 2 ? n_exp : 0;
  const uint64_t entry_bytes = 4 + 2 * a_count + 2 * b_count + 4 * bias_count;
  const auto body = units::checked_mul(entry_bytes, n_entries);
  if (!body || *body > UINT64_MAX - kAdapterHeaderBytes) fail(name, "header describes an impossibly large file");
  const uint64_t expected = kAdapterHeaderBytes + *body;
  if (bytes.size() != expected)
    fail(name, "file is " + n(bytes.size()) + " bytes but its header (" + n(n_entries) + " entries, rank " + n(rank) +
                   ", d_model " + n(d_model) + ", " + n(n_exp) + " experts) needs exactly " + n(expected) + " bytes");

  Adapter adapter;
  adapter.version = version;
  adapter.d_model = d_model;
  adapter.n_experts = n_exp;
  adapter.rank = rank;
  adapter.entries.resize(n_entries);
  std::vector<int64_t> entry_of_layer(model.n_layers, -1);
  const uint8_t* p = bytes.data() + kAdapterHeaderBytes;
  for (uint32_t i = 0; i < n_entries; ++i) {
    AdapterEntry& e = adapter.entries[i];
    e.src_layer = load_u32(p);
    if (uint64_t(e.src_layer) + 1 >= model.n_layers)
      fail(name, "entry " + n(i) + ": src_layer " + n(e.src_layer) + " predicts layer " + n(uint64_t(e.src_layer) + 1) +
                     ", beyond the model's last layer " + n(model.n_layers - 1));
    if (!model.has_experts[e.src_layer + 1])
      fail(name, "entry " + n(i) + ": src_layer " + n(e.src_layer) + " predicts layer " + n(e.src_layer + 1) +
                     ", which has no routed experts");
    if (entry_of_layer[e.src_layer] >= 0)
      fail(name, "entry " + n(i) + ": src_layer " + n(e.src_layer) + " repeats entry " +
                     n(uint64_t(entry_of_layer[e.src_layer])));
    entry_of_layer[e.src_layer] = i;
    load_halves(p + 4, a_count, e.a, name, i, e.src_layer, "A", d_model);
    load_halves(p + 4 + 2 * a_count, b_count, e.b, name, i, e.src_layer, "B", rank);
    e.bias.resize(bias_count);
    for (uint64_t x = 0; x < bias_count; ++x) {
      const uint32_t bits = load_u32(p + 4 + 2 * a_count + 2 * b_count + 4 * x);
      std::memcpy(&e.bias[x], &bits, 4);
      if (!std::isfinite(e.bias[x]))
        fail(name, "entry " + n(i) + " (src_layer " + n(e.src_layer) + "): bias[" + n(x) + "] is not finite");
    }
    p += entry_bytes;
  }
  return adapter;
}

Adapter read_adapter_file(const std::string& path, const AdapterModel& model) {
  // O_NONBLOCK: a FIFO must not block the open; only a regular file of a possible size is read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, std::string("cannot open the adapter file (") + std::strerror(errno) + ")");
  std::unique_ptr<FILE, int (*)(FILE*)> f(::fdopen(fd, "rb"), &std::fclose);
  if (!f) {
    ::close(fd);
    fail(path, std::string("cannot open the adapter file (") + std::strerror(errno) + ")");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) fail(path, "not a regular file");
  // The largest valid adapter for this model: an entry per predicted layer at rank d_model, with
  // the v2 bias.
  const uint64_t largest =
      kAdapterHeaderBytes +
      uint64_t(model.n_layers) * (4 + 2 * uint64_t(model.d_model) * (uint64_t(model.d_model) + model.n_experts) +
                                  4 * uint64_t(model.n_experts));
  if (uint64_t(st.st_size) > largest)
    fail(path,
         "file is " + n(uint64_t(st.st_size)) + " bytes, more than any adapter for this model (" + n(largest) + ")");
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  std::vector<uint8_t> bytes;
  uint8_t buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f.get())) > 0) bytes.insert(bytes.end(), buf, buf + got);
  if (std::ferror(f.get())) fail(path, std::string("read failed (") + std::strerror(errno) + ")");
  return parse_adapter(bytes, model, path);
}

std::vector<uint8_t> serialize_adapter(const Adapter& adapter) {
  const uint64_t a_count = uint64_t(adapter.rank) * adapter.d_model,
                 b_count = uint64_t(adapter.n_experts) * adapter.rank;
  if (adapter.version != 1 && adapter.version != 2)
    throw PagerError(ErrorKind::InvalidRequest,
                     "serialize_adapter: version " + n(adapter.version) + " (expected 1 or 2)");
  const uint64_t bias_count = adapter.version == 2 ? adapter.n_experts : 0;
  for (size_t i = 0; i < adapter.entries.size(); ++i) {
    const AdapterEntry& e = adapter.entries[i];
    if (e.a.size() != a_count || e.b.size() != b_count || e.bias.size() != bias_count)
      throw PagerError(ErrorKind::InvalidRequest, "serialize_adapter: entry " + n(i) + " holds " + n(e.a.size()) +
                                                      " A, " + n(e.b.size()) + " B and " + n(e.bias.size()) +
                                                      " bias values, expected " + n(a_count) + ", " + n(b_count) +
                                                      " and " + n(bias_count));
  }
  // Sized once and written by index: the layout is fixed, so no appends are needed.
  std::vector<uint8_t> out(kAdapterHeaderBytes +
                           adapter.entries.size() * (4 + 2 * (a_count + b_count) + 4 * bias_count));
  size_t at = 0;
  auto u32 = [&](uint32_t v) {
    for (int i = 0; i < 4; ++i) out[at++] = uint8_t(v >> (8 * i));
  };
  auto halves = [&](const std::vector<uint16_t>& values) {
    for (uint16_t v : values) {
      out[at++] = uint8_t(v);
      out[at++] = uint8_t(v >> 8);
    }
  };
  for (char c : kAdapterMagic) out[at++] = uint8_t(c);
  u32(adapter.version);
  u32(uint32_t(adapter.entries.size()));
  u32(adapter.d_model);
  u32(adapter.n_experts);
  u32(adapter.rank);
  for (const AdapterEntry& e : adapter.entries) {
    u32(e.src_layer);
    halves(e.a);
    halves(e.b);
    for (float v : e.bias) {
      uint32_t bits = 0;
      std::memcpy(&bits, &v, 4);
      u32(bits);
    }
  }
  return out;
}

void write_adapter_file(const std::string& path, const Adapter& adapter) {
  const std::vector<uint8_t> bytes = serialize_adapter(adapter);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) fail(path, std::string("cannot create the adapter file (") + std::strerror(errno) + ")");
  if (std::fwrite(bytes.data(), 1, bytes.size(), f.get()) != bytes.size() || std::fflush(f.get()) != 0)
    fail(path, std::string("write failed (") + std::strerror(errno) + ")");
  if (std::fclose(f.release()) != 0) fail(path, std::string("close failed (") + std::strerror(errno) + ")");
}

Adapter random_adapter(const AdapterModel& model, uint32_t rank, uint64_t seed) {
  if (model.has_experts.size() != model.n_layers)
    throw PagerError(ErrorKind::InvalidRequest, "random_adapter: has_experts needs one flag per layer");
  if (rank == 0 || rank > model.d_model)
    throw PagerError(ErrorKind::InvalidRequest,
                     "random_adapter: rank " + n(rank) + " must be in 1..d_model (" + n(model.d_model) + ")");
  Adapter adapter;
  adapter.d_model = model.d_model;
  adapter.n_experts = model.n_experts;
  adapter.rank = rank;
  SplitMix rng{seed};
  // Scales keep A h and B (A h) near unit size for unit-sized hidden states.
  const float a_scale = 1.0f / std::sqrt(float(model.d_model)), b_scale = 1.0f / std::sqrt(float(rank));
  for (uint32_t l = 0; l + 1 < model.n_layers; ++l) {
    if (!model.has_experts[l + 1]) continue;
    AdapterEntry e;
    e.src_layer = l;
    e.a.resize(size_t(rank) * model.d_model);
    e.b.resize(size_t(model.n_experts) * rank);
    for (auto& v : e.a) v = float_to_half(rng.symmetric(a_scale));
    for (auto& v : e.b) v = float_to_half(rng.symmetric(b_scale));
    adapter.entries.push_back(std::move(e));
  }
  if (adapter.entries.empty())
    throw PagerError(ErrorKind::InvalidRequest, "random_adapter: no layer after the first has routed experts");
  return adapter;
}

}  // namespace moepage::pager
