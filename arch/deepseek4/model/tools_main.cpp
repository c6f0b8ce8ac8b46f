// ds4-synth-tool: a developer tool to try synthesize() and inspect_report() before the moepage
// CLI wires them up.
//   ds4-synth-tool synth --preset tiny|small|flash [--layers N] [--experts E]
//                        [--expert-dtype fp4|fp8|bf16] [--dense-dtype fp8|bf16] [--seed S]
//                        [--spelling released|save_pretrained] --out DIR
//   ds4-synth-tool inspect DIR [--budget 8GiB]
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "deepseek4/model/inspect.hpp"
#include "deepseek4/model/synth.hpp"
#include "units/byte_size.hpp"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: ds4-synth-tool synth --preset tiny|small|flash [--layers N] [--experts E]\n"
               "                            [--expert-dtype fp4|fp8|bf16] [--dense-dtype fp8|bf16] [--seed S]\n"
               "                            [--spelling released|save_pretrained] --out DIR\n"
               "       ds4-synth-tool inspect DIR [--budget 8GiB]\n");
  return 2;
}

uint64_t number(const char* flag, const char* v) {
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (!*v || *end) throw std::invalid_argument(std::string(flag) + " expects a number, got '" + v + "'");
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace moepage::ds4;
  if (argc < 2) return usage();
  try {
    const std::string cmd = argv[1];
    if (cmd == "synth") {
      SynthOptions o;
      for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        const char* v = argv[++i];
        if (a == "--preset") o.preset = v;
        else if (a == "--layers") o.layers = uint32_t(number("--layers", v));
        else if (a == "--experts") o.experts = uint32_t(number("--experts", v));
        else if (a == "--seed") o.seed = number("--seed", v);
        else if (a == "--out") o.out = v;
        else if (a == "--expert-dtype" || a == "--dense-dtype") {
          const auto f = weight_format_from_name(v);
          if (!f) throw std::invalid_argument(a + " expects fp4, fp8 or bf16, got '" + v + "'");
          (a == "--expert-dtype" ? o.expert_format : o.dense_format) = f;
        } else if (a == "--spelling") {
          if (std::strcmp(v, "released") == 0) o.spelling = Spelling::Released;
          else if (std::strcmp(v, "save_pretrained") == 0) o.spelling = Spelling::SavePretrained;
          else throw std::invalid_argument("--spelling expects released or save_pretrained");
        } else {
          return usage();
        }
      }
      const SynthResult r = synthesize(o);
      std::printf("wrote %s: %u shards, %llu tensors, %s\n", r.dir.c_str(), r.shards,
                  static_cast<unsigned long long>(r.tensors), moepage::units::format_bytes(r.bytes).c_str());
      return 0;
    }
    if (cmd == "inspect" && argc >= 3) {
      std::optional<uint64_t> budget;
      for (int i = 3; i < argc; ++i) {
        if (std::strcmp(argv[i], "--budget") == 0 && i + 1 < argc) {
          budget = moepage::units::parse_size(argv[++i]);
          if (!budget)
            throw std::invalid_argument(std::string("--budget expects a size such as 8GiB, got '") + argv[i] + "'");
        } else {
          return usage();
        }
      }
      std::fputs(inspect_report(argv[2], budget).c_str(), stdout);
      return 0;
    }
    return usage();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
