#!/usr/bin/env bash
# The SDK promise, checked the way a third party meets it: install moepage into a fresh prefix,
# build the example the install ships (share/moepage/examples/odirect-transport, a copy of
# plugins/examples/odirect-transport) as a separate project against that prefix only, and run the
# installed `moepage` on it (discovery, conformance) with no environment variable set.
#
# usage: out_of_tree.sh BUILD_DIR SOURCE_DIR WORK_DIR CMAKE CXX
set -euo pipefail
build=$1 source=$2 work=$3 cmake=$4 cxx=$5
prefix="$work/prefix"
example="$prefix/share/moepage/examples/odirect-transport"
ex_build="$work/odirect-build"

fail() { echo "sdk test: FAIL: $*" >&2; exit 1; }
step() { echo "== $*"; }

rm -rf "$work"
mkdir -p "$work"
unset MOEPAGE_PLUGIN_PATH || true

step "install into a temporary prefix"
"$cmake" --install "$build" --prefix "$prefix" > "$work/install.log"

step "the prefix holds the binary, the plugins and the SDK, and nothing test-only or host-internal"
for f in bin/moepage include/moepage/plugin.h include/moepage/cpp/plugin_adapter.hpp \
         include/moepage/cpp/host_handles.hpp lib/cmake/moepage/moepageConfig.cmake \
         lib/cmake/moepage/moepageConfigVersion.cmake lib/cmake/moepage/moepageTargets.cmake \
         lib/cmake/moepage/moepageAddPlugin.cmake lib/cmake/moepage/moepage-plugin.map \
         lib/pkgconfig/moepage.pc lib/moepage/plugins/libmoepage-transport-pread.so \
         include/moepage/cpp/abi_tables.hpp include/moepage/cpp/structs.hpp \
         share/moepage/examples/odirect-transport/CMakeLists.txt \
         share/moepage/examples/odirect-transport/odirect_transport.cpp; do
  [ -e "$prefix/$f" ] || fail "the install has no $f"
done
for f in include/moepage/support/checkpoint/checkpoint.hpp include/moepage/support/dtype/dtype.hpp \
         include/moepage/support/gpu/hip_compat.hpp include/moepage/pager_core/trace.hpp \
         include/moepage/support/fileio/positional_read.hpp include/moepage/support/units/byte_size.hpp \
         lib/cmake/moepage/moepageSupportTargets.cmake lib/libmoepage-checkpoint.a lib/libmoepage-pager-core.a \
         lib/libmoepage-fileio.a lib/libmoepage-units.a; do
  [ -e "$prefix/$f" ] || fail "the install has no SDK support file $f"
done
# The SDK's support libraries are the only static libraries an install may hold.
leaked=$(find "$prefix" \( -name 'libfake-*' -o -name 'libcli-fake-*' -o \( -name '*.a' ! -name 'libmoepage-dtype.a' \
  ! -name 'libmoepage-checkpoint.a' ! -name 'libmoepage-pager-core.a' ! -name 'libmoepage-fileio.a' \
  ! -name 'libmoepage-units.a' \) \) -print)
[ -z "$leaked" ] || fail "test plugins or static host libraries were installed: $leaked"

step "pkg-config describes the relocated prefix"
cflags=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags moepage | awk '{print $1}')
inc=$(cd "$prefix/include" && pwd -P)
got=$(cd "${cflags#-I}" 2>/dev/null && pwd -P || true)
[ "$got" = "$inc" ] || fail "pkg-config --cflags gave '$cflags', expected -I$prefix/include"

step "one project version: moepage --version, the CMake package and pkg-config agree"
version=$("$prefix/bin/moepage" --version | awk '{print $2}')
[ -n "$version" ] || fail "moepage --version printed no version"
pc_version=$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion moepage)
[ "$pc_version" = "$version" ] || fail "pkg-config says $pc_version, moepage --version says $version"
grep -q "set(PACKAGE_VERSION \"$version\")" "$prefix/lib/cmake/moepage/moepageConfigVersion.cmake" \
  || fail "the CMake package's version is not $version"

step "the installed example is the one in the source tree"
diff -r "$source/plugins/examples/odirect-transport" "$example" > "$work/example.diff" \
  || { cat "$work/example.diff"; fail "the installed example differs from plugins/examples/odirect-transport"; }

step "configure and build the installed example out of tree against the prefix"
"$cmake" -S "$example" -B "$ex_build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_EXPORT_COMPILE_COMMANDS=ON > "$work/configure.log" \
  || { cat "$work/configure.log"; fail "configuring the example failed"; }
"$cmake" --build "$ex_build" -j2 > "$work/build.log" || { cat "$work/build.log"; fail "building the example failed"; }
# Headers must come from the prefix, never from the source tree.
if grep -q -- "-I$source/plugins/include" "$ex_build/compile_commands.json"; then
  fail "the example was compiled with the source tree's headers"
fi
grep -q -- "$prefix/include" "$ex_build/compile_commands.json" || fail "the example did not use the installed headers"
plugin="$ex_build/libmoepage-transport-odirect.so"
[ -f "$plugin" ] || fail "the example did not produce $plugin"
exported=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -v '^$' | sort -u)
[ "$exported" = "moepage_plugin_query" ] || fail "the example exports more than moepage_plugin_query: $exported"

step "the installed moepage finds its own plugins with no environment variable"
"$prefix/bin/moepage" plugins > "$work/plugins-default.txt"
grep -q "^transport pread " "$work/plugins-default.txt" || { cat "$work/plugins-default.txt"; fail "installed moepage did not find pread"; }
grep -q "$prefix/bin/../lib/moepage/plugins\|$prefix/lib/moepage/plugins" "$work/plugins-default.txt" \
  || fail "installed moepage did not search <exe>/../lib/moepage/plugins"

step "moepage plugins --plugin-dir lists the example"
"$prefix/bin/moepage" plugins --plugin-dir "$ex_build" > "$work/plugins.txt"
grep -q "^transport odirect " "$work/plugins.txt" || { cat "$work/plugins.txt"; fail "the example is not listed"; }

step "moepage conform passes on the example (O_DIRECT on the build folder's filesystem)"
"$prefix/bin/moepage" --log-level warn conform "$plugin" --scratch "$work" > "$work/conform.txt" \
  || { cat "$work/conform.txt"; fail "conformance of the example failed"; }
"$prefix/bin/moepage" --log-level warn conform "$plugin" --scratch "$work" --option buffer=8KiB --option threads=2 \
  > "$work/conform-small.txt" || { cat "$work/conform-small.txt"; fail "conformance with 8 KiB bounce buffers failed"; }

step "moepage conform passes on the installed pread transport"
"$prefix/bin/moepage" --log-level warn conform "$prefix/lib/moepage/plugins/libmoepage-transport-pread.so" \
  --scratch "$work" > "$work/conform-pread.txt" || { cat "$work/conform-pread.txt"; fail "conformance of installed pread failed"; }

step "a profile selects the example by name; greedy ids match the resident baseline (neutrality)"
model="$source/models/ds4-debian-tiny"
run_ids() {  # prints the "token ids:" line of one greedy run
  "$prefix/bin/moepage" --log-level warn run --model "$model" --max-tokens 32 --prompt "The package manager" "$@" \
    2> "$work/run.err" | grep '^token ids:' || { cat "$work/run.err" >&2; return 1; }
}
if [ -f "$model/model.safetensors" ]; then
  # The reference: every expert resident, read with pread (configs/default.yaml).
  baseline=$(run_ids --profile "$source/configs/default.yaml") || fail "the resident baseline did not run"
  [ -n "$baseline" ] || fail "the resident baseline printed no token ids"
  printf "   %-30s %s\n" "resident, pread:" "$baseline"
  # 2 MiB holds about 10 of 64 experts per layer; 1300 KiB buys exactly top-k (6) slots per layer,
  # the minimum: every step pages through odirect.
  for budget in 2MiB 1300KiB; do
    paged=$(run_ids --profile "$source/configs/examples/odirect.yaml" --plugin-dir "$ex_build" \
              --set pager.budget=$budget) || fail "the odirect profile did not run with budget $budget"
    printf "   %-30s %s\n" "odirect, lru budget $budget:" "$paged"
    [ "$baseline" = "$paged" ] || fail "greedy ids with the odirect transport (budget $budget) differ from the baseline"
  done
else
  echo "   skipped: $model has no checkpoint"
fi

tail -n 3 "$work/conform.txt"
echo "sdk test: PASS"
