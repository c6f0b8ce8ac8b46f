# moepage_add_plugin(<target> SOURCES <files...> [LINK <libs...>])
# Builds a moepage plugin: a MODULE library with hidden visibility whose only exported symbol is
# moepage_plugin_query (enforced by a linker version script), written to the plugin folder.
set(_moepage_plugin_cmake_dir "${CMAKE_CURRENT_LIST_DIR}")

function(moepage_add_plugin target)
  cmake_parse_arguments(ARG "" "" "SOURCES;LINK" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "moepage_add_plugin(${target}): SOURCES is required")
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
  if(TARGET moepage::sdk)
    target_link_libraries(${target} PRIVATE moepage::sdk)
  endif()
  target_link_libraries(${target} PRIVATE ${ARG_LINK})
  target_link_options(${target} PRIVATE
    "LINKER:--version-script=${_moepage_plugin_cmake_dir}/moepage-plugin.map"
    "LINKER:--no-undefined")
endfunction()
