// The vtable check every conformance run starts with: the rows of mp::abi's table for the
// component's kind decide what must be there, by the minor the plugin declares. The loader
// refuses by the same rows, so a component `moepage conform` passes here also loads.
#include <string>

#include "conform/conformance.hpp"
#include "moepage/cpp/abi_tables.hpp"

namespace moepage::conform {

bool run_vtable_check(const Component& c, Checklist& list) {
  const std::string name = "the vtable has every callback ABI 1." + std::to_string(c.abi_minor) + " requires";
  return list.run(name, [&] {
    const std::string problem = mp::abi::vtable_problem(*c.descriptor, c.abi_minor);
    expect(problem.empty(), problem);
  });
}

}  // namespace moepage::conform
