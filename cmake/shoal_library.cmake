# shoal_library(): a library of one folder of src/, linked only along the
# arrows of src/dependencies.txt.
#
#   shoal_library(<name> FOLDER <folder of src/> SOURCES <files...>
#                 [USES <Shoal libraries...>]      linked PRIVATE; each must
#                                                  belong to a folder that
#                                                  <folder> may use
#                 [PUBLIC_LIBS <other libraries...>] third-party libraries its
#                                                  headers expose
#                 [PRIVATE_LIBS <other libraries...>])
#
# A USES entry outside the folder's arrows stops the configure step, naming
# both folders: the table is the one place to add an arrow. Shoal libraries
# are linked PRIVATE, so what a library uses does not become its users'
# (a static library still carries them to the final link, as LINK_ONLY);
# tests/build/link_check.cmake links each library alone with only those, so a
# symbol taken across an arrow that is not declared fails the build.

set(SHOAL_DEPENDENCIES_FILE ${CMAKE_SOURCE_DIR}/src/dependencies.txt)
set_property(DIRECTORY ${CMAKE_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${SHOAL_DEPENDENCIES_FILE})
file(STRINGS ${SHOAL_DEPENDENCIES_FILE} _shoal_dependency_lines)
foreach(_line IN LISTS _shoal_dependency_lines)
  string(REGEX REPLACE "#.*" "" _line "${_line}")
  if(_line MATCHES "^[ \t]*([^: \t]+)[ \t]*:(.*)$")
    set(_folder "${CMAKE_MATCH_1}")
    string(STRIP "${CMAKE_MATCH_2}" _uses)
    separate_arguments(_uses)
    set_property(GLOBAL PROPERTY SHOAL_ARROWS_${_folder} "${_uses}")
    set_property(GLOBAL APPEND PROPERTY SHOAL_FOLDERS "${_folder}")
  endif()
endforeach()

function(shoal_library name)
  cmake_parse_arguments(ARG "" "FOLDER" "SOURCES;USES;PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
  get_property(folders GLOBAL PROPERTY SHOAL_FOLDERS)
  if(NOT ARG_FOLDER IN_LIST folders)
    message(FATAL_ERROR "shoal_library(${name}): folder '${ARG_FOLDER}' is not in src/dependencies.txt")
  endif()
  get_property(allowed GLOBAL PROPERTY SHOAL_ARROWS_${ARG_FOLDER})
  foreach(dep IN LISTS ARG_USES)
    get_property(dep_folder GLOBAL PROPERTY SHOAL_LIBRARY_FOLDER_${dep})
    if(NOT dep_folder)
      message(FATAL_ERROR "shoal_library(${name}): '${dep}' is not a Shoal library (declare it first)")
    endif()
    if(NOT dep_folder STREQUAL ARG_FOLDER AND NOT dep_folder IN_LIST allowed)
      message(FATAL_ERROR "shoal_library(${name}): ${ARG_FOLDER} may not use ${dep_folder} (${dep}); "
                          "src/dependencies.txt allows: ${allowed}")
    endif()
  endforeach()
  add_library(${name} STATIC ${ARG_SOURCES})
  target_link_libraries(${name} PUBLIC ${ARG_PUBLIC_LIBS} PRIVATE ${ARG_USES} ${ARG_PRIVATE_LIBS})
  set_property(GLOBAL PROPERTY SHOAL_LIBRARY_FOLDER_${name} ${ARG_FOLDER})
  set_property(GLOBAL APPEND PROPERTY SHOAL_LIBRARIES ${name})
  set_property(TARGET ${name} PROPERTY SHOAL_USES "${ARG_USES}")
endfunction()
