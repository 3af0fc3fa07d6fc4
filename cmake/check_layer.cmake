# Fails when a file of a layer includes a project header from a layer it does not
# depend on (docs/architecture.md). Run at build time for every layer, before its
# sources compile. Input: LAYER_FILE, written by shardscope_layer() at configure
# time, sets LAYER (target), DIR (its folder under src/), ALLOWED (folders it may
# include: its own and those of its dependencies, transitively), FILES and STAMP.
cmake_minimum_required(VERSION 3.22)
include(${LAYER_FILE})
set(errors "")
foreach(file IN LISTS FILES)
  if(NOT EXISTS "${file}")
    continue()
  endif()
  file(STRINGS "${file}" lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*$" "\\1" header "${line}")
    if(header MATCHES "^\\.\\.")
      string(APPEND errors "  ${file}: #include \"${header}\" climbs out of its folder\n")
      continue()
    endif()
    if(NOT header MATCHES "/")
      continue()  # a same-folder or generated include (e.g. event_parser_impl.inc)
    endif()
    string(REGEX REPLACE "/[^/]+$" "" folder "${header}")
    if(NOT folder IN_LIST ALLOWED)
      string(APPEND errors "  ${file}: #include \"${header}\" — layer '${DIR}' may include only: ${ALLOWED}\n")
    endif()
  endforeach()
endforeach()
if(errors)
  message(FATAL_ERROR "Wrong-way include(s) (declare the dependency in CMakeLists.txt if it is "
                      "legitimate, or move the code to the right layer):\n${errors}")
endif()
file(TOUCH "${STAMP}")
