#!/usr/bin/env bash
# Installs exactly the Debian 12 packages moepage needs to build and test. Idempotent:
# packages already present are skipped, so a second run makes no network calls.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libboost-dev libboost-program-options-dev   # Boost.DLL (header-only) + Program_options
  libyaml-cpp-dev                             # profiles and ablation specs
  libspdlog-dev libfmt-dev                    # host logging
  doctest-dev                                 # unit tests
  nlohmann-json3-dev                          # safetensors headers, config.json, stats
  clang libclang-rt-14-dev                    # libFuzzer targets for the file parsers
  clang-tidy-14                               # the clang-tidy stage of CI (tools/lint/tidy.sh)
  python3 xz-utils                            # stdlib-only script self-tests; compressed traces
  liblzma-dev                                 # the pager core reads .xz traces (pager.split_trace)
  liburing-dev                                # the io-uring transport (transports/io-uring)
  hipcc libamdhip64-dev rocm-device-libs      # MOEPAGE_GPU=hip-amd builds (CI compiles, no GPU)
  libcpp-httplib-dev prometheus-cpp-dev       # `moepage serve`: HTTP server, Prometheus exposition
  curl python3-prometheus-client nodejs       # serve tests: curl, a /metrics parser, the openai client
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm comes with some nodejs builds (NodeSource's) and is a package of its own in Debian's.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The openai npm package for the serve tests (tests/serve/node, versions pinned by its
# package-lock.json); skipped when already installed, so re-runs need no network.
node_dir="$(cd "$(dirname "$0")/.." && pwd)/tests/serve/node"
if [ ! -f "$node_dir/node_modules/openai/package.json" ]; then
  echo "setup: installing the openai npm package into $node_dir"
  npm ci --prefix "$node_dir" --no-audit --no-fund --loglevel=error
fi
