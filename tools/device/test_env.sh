# Sourced (from the repository root) by the device scripts that run test binaries outside ctest:
# the paths ctest passes to every suite (tests/support/test_paths.hpp), here for this checkout and
# the build-gpu that tools/device/build.sh made, wherever the checkout was copied to.
#   . tools/device/test_env.sh [BUILD_DIR]
moepage_build=$(cd "${1:-build-gpu}" && pwd)
export MOEPAGE_TEST_SOURCE_DIR="$PWD"
export MOEPAGE_TEST_BUILD_DIR="$moepage_build"
export MOEPAGE_TEST_PLUGIN_DIR="$moepage_build/lib/moepage/plugins"
unset moepage_build

# NCCL for the GPU ranks' tests (tests/gpu-ranks), when the machine has one.
if [ -z "${MOEPAGE_TEST_NCCL_LIBRARY:-}" ]; then
  MOEPAGE_TEST_NCCL_LIBRARY=$(bash "$PWD/tools/device/find_nccl.sh")
  export MOEPAGE_TEST_NCCL_LIBRARY
fi
