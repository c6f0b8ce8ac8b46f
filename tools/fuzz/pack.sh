#!/usr/bin/env bash
# Packs the libFuzzer targets of build-fuzz for tools/fuzz/campaign.sh on another machine:
# fuzz-carry/bin (the targets), fuzz-carry/seeds/<target> (the committed seeds each starts from)
# and fuzz-carry/lib (the shared libraries they need beyond glibc and libstdc++, which any newer
# Linux has). Build first:
#   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DMOEPAGE_FUZZ=ON
#   cmake --build build-fuzz -j2 --target <every fuzz-* target>
set -euo pipefail
cd "$(dirname "$0")/../.."
out=fuzz-carry
rm -rf "$out"; mkdir -p "$out/bin" "$out/lib" "$out/seeds"
# shellcheck source=tools/fuzz/seeds.sh
source tools/fuzz/seeds.sh
for t in "${!fuzz_seeds[@]}"; do
  [ -x "build-fuzz/bin/fuzz-$t" ] || { echo "pack.sh: build-fuzz/bin/fuzz-$t is missing (build it first)" >&2; exit 1; }
  cp "build-fuzz/bin/fuzz-$t" "$out/bin/"
  # Debug sections halve the pack (the 64 MiB a device call carries); ASan reports keep the
  # function names from the symbol table.
  strip --strip-debug "$out/bin/fuzz-$t"
  mkdir -p "$out/seeds/$t"
  # plugin-elf starts from the fake plugins of a plain build (build/fake-plugins/*/*.so: small ELF
  # files, good and bad); the other targets from their committed seeds.
  find "${fuzz_seeds[$t]}" -maxdepth 2 -type f -size -1024k \( -name '*.so' -o ! -path '*fake-plugins*' \) \
    -exec cp {} "$out/seeds/$t/" \;
  [ -n "$(ls "$out/seeds/$t")" ] || { echo "pack.sh: no seeds for fuzz-$t in ${fuzz_seeds[$t]}" >&2; exit 1; }
done
ldd "$out"/bin/* | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*|libstdc++.so*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
du -sh "$out"; ls "$out/lib"
