// Counts calls of the global operator new in this test binary (alloc_counter.cpp replaces it).
#pragma once
#include <cstdint>

namespace moepage::test {

uint64_t allocations();

// Allocations made since construction.
class AllocationScope {
 public:
  AllocationScope() : start_(allocations()) {}
  uint64_t count() const { return allocations() - start_; }

 private:
  uint64_t start_;
};

}  // namespace moepage::test
