// Nothing is allocated on the decode path once the model is built: every buffer is sized at
// construction. Counted by replacing the global operator new in this test binary.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "deepseek4/forward/model.hpp"
#include "tiny_model.hpp"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

// GCC pairs its builtin idea of `new` with the free() below and warns; the pair is consistent.
#if defined(__GNUC__) && !defined(__clang__)  // clang knows no such warning: it would warn of the name
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop  // not over the files a unity build puts after this one
#endif

using namespace moepage;
using namespace moepage::ds4;

TEST_CASE("prefill and decode allocate nothing after construction") {
  const Config c = ds4::test::tiny_config();
  ds4::test::TinyModel tm(c, {Dtype::F8_E4M3, Dtype::I8}, 11);
  cpu::ThreadPool pool(2);
  Model m(c, tm.weights(), tm.layout(), &tm.experts(), pool, ModelOptions{64, 16});
  std::vector<int32_t> prompt = {5, 9, 13, 2, 77, 31, 8, 40, 41, 42, 1, 0, 3, 19, 60, 61, 62, 63, 64, 65};
  std::vector<float> logits(prompt.size() * c.vocab_size);
  g_allocations = 0;
  g_counting = true;
  m.forward(prompt.data(), uint32_t(prompt.size()), logits.data(), true);
  for (int i = 0; i < 20; ++i) {
    const int32_t next = (i * 7) % int32_t(c.vocab_size);
    m.forward(&next, 1, logits.data(), false);
  }
  m.reset();
  m.forward(prompt.data(), 3, logits.data(), false);
  g_counting = false;
  CHECK(g_allocations.load() == 0);
  // The counter works: a vector allocates.
  g_counting = true;
  auto* probe = new std::vector<int>(10);
  g_counting = false;
  CHECK(g_allocations.load() >= 1);
  delete probe;
}
