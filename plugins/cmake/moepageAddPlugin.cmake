# moepage_add_plugin(<target> SOURCES <files...> [LINK <libs...>] [MIN_ABI_MINOR <n>] [NO_INSTALL])
# Builds a moepage plugin: a MODULE library with hidden visibility whose only exported symbol is
# moepage_plugin_query (enforced by a linker version script).
#
# MIN_ABI_MINOR: the oldest host ABI minor the plugin runs on (MP_PLUGIN_ABI_MINOR, host_api.h),
# defined for every file of the plugin so they all agree. Default: the SDK headers' own minor.
#
# Output: ${MOEPAGE_PLUGIN_OUTPUT_DIR} when set (the moepage tree sets it so the build runs like an
# install), otherwise the usual library output folder of the calling project.
# Install: into ${MOEPAGE_PLUGIN_INSTALL_DIR} (relative to the install prefix; default
# lib/moepage/plugins, where an installed `moepage` looks next to itself). NO_INSTALL skips the
# install rule, for plugins that exist only for tests.
#
# This file is used both inside the moepage tree and from an installed SDK (moepageConfig.cmake
# includes it), so it may rely on nothing but the moepage::sdk target and the map file beside it.
set(_moepage_plugin_cmake_dir "${CMAKE_CURRENT_LIST_DIR}")

function(moepage_add_plugin target)
  cmake_parse_arguments(ARG "NO_INSTALL" "MIN_ABI_MINOR" "SOURCES;LINK" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "moepage_add_plugin(${target}): SOURCES is required")
  endif()
  if(NOT TARGET moepage::sdk)
    message(FATAL_ERROR "moepage_add_plugin(${target}): the moepage::sdk target is missing; "
                        "call find_package(moepage REQUIRED) first")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(DEFINED MOEPAGE_PLUGIN_OUTPUT_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY "${MOEPAGE_PLUGIN_OUTPUT_DIR}")
  endif()
  target_link_libraries(${target} PRIVATE moepage::sdk ${ARG_LINK})
  if(DEFINED ARG_MIN_ABI_MINOR)
    if(NOT ARG_MIN_ABI_MINOR MATCHES "^[0-9]+$")
      message(FATAL_ERROR "moepage_add_plugin(${target}): MIN_ABI_MINOR must be a number, got '${ARG_MIN_ABI_MINOR}'")
    endif()
    target_compile_definitions(${target} PRIVATE MP_PLUGIN_ABI_MINOR=${ARG_MIN_ABI_MINOR})
  endif()
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${_moepage_plugin_cmake_dir}/moepage-plugin.map"
    "LINKER:--no-undefined")
  # Relinking when the export map changes keeps the "one exported symbol" rule true after edits.
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${_moepage_plugin_cmake_dir}/moepage-plugin.map")
  # Inside the moepage tree, plugins under tests/ are never shipped even if NO_INSTALL was forgotten.
  get_property(_test_root GLOBAL PROPERTY MOEPAGE_TEST_PLUGIN_ROOT)
  if(_test_root)
    cmake_path(IS_PREFIX _test_root "${CMAKE_CURRENT_SOURCE_DIR}" NORMALIZE _under_tests)
    if(_under_tests)
      set(ARG_NO_INSTALL TRUE)
    endif()
  endif()
  if(NOT ARG_NO_INSTALL)
    if(DEFINED MOEPAGE_PLUGIN_INSTALL_DIR)
      set(_dest "${MOEPAGE_PLUGIN_INSTALL_DIR}")
    else()
      set(_dest "lib/moepage/plugins")
    endif()
    install(TARGETS ${target} LIBRARY DESTINATION "${_dest}")
    # Lets the moepage tree enumerate its shipped plugins (the conformance tests run each one).
    set_property(GLOBAL APPEND PROPERTY MOEPAGE_INSTALLED_PLUGIN_TARGETS ${target})
  endif()
endfunction()
