# GPU builds. MOEPAGE_GPU picks the backend:
#   none        CPU only (default)
#   hip-nvidia  .hip sources compile with nvcc as CUDA (sm_90 unless MOEPAGE_CUDA_ARCHS says
#               otherwise) through plugins/support/gpu/hip_compat.hpp; links the shared CUDA runtime
#   hip-amd     .hip sources compile with Debian's hipcc (ROCm 5.2.3) for MOEPAGE_AMD_ARCHS
#               (gfx1030;gfx90a); links libamdhip64
# moepage_gpu_sources(TARGET t SOURCES a.hip ... [INCLUDES dir ...]) adds kernel sources to a
# target and links the runtime. The include path is the SDK's (plugins/include, plugins/support)
# plus INCLUDES: each caller names its own tier's folder, so a plugin's kernels never see core/. Plain .cpp files of the target stay with the C++ compiler.
set(MOEPAGE_CUDA_ARCHS "90-real" CACHE STRING "CUDA architectures for hip-nvidia builds (90-real: H100/H200 code, no PTX)")
set(MOEPAGE_AMD_ARCHS "gfx1030;gfx90a" CACHE STRING "AMD targets for hip-amd builds")
set(MOEPAGE_ROCM_DEVICE_LIBS "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode" CACHE PATH "ROCm device bitcode (Debian's rocm-device-libs)")

if(MOEPAGE_GPU STREQUAL "hip-nvidia")
  enable_language(CUDA)
  # CMake 3.25 does not know nvcc 13's C++20 flags; teach it, so C++20 targets compile as CUDA20.
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_ARCHITECTURES ${MOEPAGE_CUDA_ARCHS})
  # One CUDA runtime in the process: the core's device service and the plugins' kernels must
  # share it, so never the static one.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  find_package(CUDAToolkit REQUIRED)
  set(MOEPAGE_GPU_DEFINE MOEPAGE_GPU_NVIDIA=1)
elseif(MOEPAGE_GPU STREQUAL "hip-amd")
  find_program(MOEPAGE_HIPCC hipcc REQUIRED)
  find_library(MOEPAGE_AMDHIP64 amdhip64 REQUIRED)
  set(MOEPAGE_GPU_DEFINE MOEPAGE_GPU_AMD=1)
elseif(NOT MOEPAGE_GPU STREQUAL "none")
  message(FATAL_ERROR "MOEPAGE_GPU must be none, hip-nvidia or hip-amd, got '${MOEPAGE_GPU}'")
endif()
if(NOT MOEPAGE_GPU STREQUAL "none")
  add_compile_definitions(MOEPAGE_GPU_ENABLED=1)
endif()

# How hard the GPU compilers optimize kernels. Builds that run them keep -O3; CI's compile-only
# trees (./moepage.sh) pass -O1: the same sources, warnings and errors, in less compile time.
set(MOEPAGE_GPU_OPT "-O3" CACHE STRING "optimization level of the GPU kernels (-O1 for compile-only checks)")

function(moepage_gpu_sources)
  cmake_parse_arguments(ARG "" "TARGET" "SOURCES;INCLUDES" ${ARGN})
  if(MOEPAGE_GPU STREQUAL "none")
    message(FATAL_ERROR "moepage_gpu_sources(${ARG_TARGET}) in a MOEPAGE_GPU=none build")
  endif()
  set(includes ${CMAKE_SOURCE_DIR}/plugins/support ${CMAKE_SOURCE_DIR}/plugins/include ${ARG_INCLUDES})
  target_compile_definitions(${ARG_TARGET} PUBLIC ${MOEPAGE_GPU_DEFINE})
  if(MOEPAGE_GPU STREQUAL "hip-nvidia")
    foreach(src IN LISTS ARG_SOURCES)
      set_source_files_properties(${src} PROPERTIES LANGUAGE CUDA COMPILE_OPTIONS "-x;cu")
    endforeach()
    target_sources(${ARG_TARGET} PRIVATE ${ARG_SOURCES})
    target_include_directories(${ARG_TARGET} PRIVATE ${includes})
    target_compile_options(${ARG_TARGET} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-fPIC -lineinfo ${MOEPAGE_GPU_OPT}
      -Xptxas=${MOEPAGE_GPU_OPT}>)
    if(MOEPAGE_WERROR)
      target_compile_options(${ARG_TARGET} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Werror>)
    endif()
    target_link_libraries(${ARG_TARGET} PUBLIC CUDA::cudart)
  else()
    # CMake 3.25's HIP language wants a ROCm layout Debian does not have: call hipcc directly.
    set(objects)
    set(arch_flags)
    foreach(a IN LISTS MOEPAGE_AMD_ARCHS)
      list(APPEND arch_flags --offload-arch=${a})
    endforeach()
    set(werror)
    if(MOEPAGE_WERROR)
      set(werror -Werror)
    endif()
    set(inc_flags)
    foreach(i IN LISTS includes)
      list(APPEND inc_flags -I${i})
    endforeach()
    foreach(src IN LISTS ARG_SOURCES)
      get_filename_component(abs ${src} ABSOLUTE)
      get_filename_component(name ${src} NAME)
      set(obj ${CMAKE_CURRENT_BINARY_DIR}/${ARG_TARGET}.hipobj/${name}.o)
      add_custom_command(OUTPUT ${obj}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/${ARG_TARGET}.hipobj
        COMMAND ${MOEPAGE_HIPCC} -std=c++20 ${MOEPAGE_GPU_OPT} -fPIC -x hip ${arch_flags} ${werror}
                --rocm-device-lib-path=${MOEPAGE_ROCM_DEVICE_LIBS}
                -D${MOEPAGE_GPU_DEFINE} -DMOEPAGE_GPU_ENABLED=1 ${inc_flags} -c ${abs} -o ${obj} -MD -MF ${obj}.d
        DEPENDS ${abs}
        # hipcc writes the headers the source includes, so a changed header rebuilds it under Ninja
        # too (IMPLICIT_DEPENDS, which scanned them before, serves Makefile generators only).
        DEPFILE ${obj}.d
        COMMENT "hipcc ${name}"
        VERBATIM)
      list(APPEND objects ${obj})
    endforeach()
    target_sources(${ARG_TARGET} PRIVATE ${objects})
    target_include_directories(${ARG_TARGET} PRIVATE ${includes})
    target_link_libraries(${ARG_TARGET} PUBLIC ${MOEPAGE_AMDHIP64})
  endif()
endfunction()
