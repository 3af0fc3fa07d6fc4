# shardscope_layer(NAME DIR folder [DEPS layers…] [LIBS targets…] [EXCLUDE files…]
#                  [TEST_DEPS layers…])
#
# One folder under src/ = one static library `shardscope_NAME` from the folder's
# *.cc (not recursive: a subfolder is a layer of its own), linked to the layers
# in DEPS and the external targets in LIBS. Its files may include only headers of
# its own folder and of the folders of its dependencies, transitively; a build-time
# check (cmake/check_layer.cmake) fails the build otherwise. The folder's
# *_test.cc (but *_mpi_test.cc) become one test binary `NAME_test`, which may also
# use the layers in TEST_DEPS. EXCLUDE drops files (by name) from both, and
# headers from the library's include check.

function(shardscope_layer name)
  cmake_parse_arguments(L "" "DIR" "DEPS;LIBS;EXCLUDE;TEST_DEPS" ${ARGN})
  set(dir ${PROJECT_SOURCE_DIR}/src/${L_DIR})
  set_property(GLOBAL PROPERTY SHARDSCOPE_LAYER_DIR_${name} ${L_DIR})

  # Folders this layer may include: its own and its dependencies' (transitively).
  set(allowed ${L_DIR})
  foreach(dep IN LISTS L_DEPS)
    get_property(dep_allowed GLOBAL PROPERTY SHARDSCOPE_LAYER_ALLOWED_${dep})
    if(NOT dep_allowed)
      message(FATAL_ERROR "layer '${name}' depends on '${dep}', which is not declared before it")
    endif()
    list(APPEND allowed ${dep_allowed})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  set_property(GLOBAL PROPERTY SHARDSCOPE_LAYER_ALLOWED_${name} ${allowed})

  file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.cc)
  file(GLOB headers CONFIGURE_DEPENDS ${dir}/*.h ${dir}/*.inc)
  file(GLOB tests CONFIGURE_DEPENDS ${dir}/*_test.cc)
  foreach(ex IN LISTS L_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "/${ex}$")
    list(FILTER tests EXCLUDE REGEX "/${ex}$")
    list(FILTER headers EXCLUDE REGEX "/${ex}$")
  endforeach()
  list(FILTER sources EXCLUDE REGEX "_test\\.cc$")
  list(FILTER tests EXCLUDE REGEX "_mpi_test\\.cc$")

  set(target shardscope_${name})
  if(sources)
    add_library(${target} STATIC ${sources} ${headers})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    set(scope PUBLIC)
    if(SHARDSCOPE_WERROR)
      # The layer's own sources, not its tests (CI: .ci/run).
      target_compile_options(${target} PRIVATE -Werror)
    endif()
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    set(scope INTERFACE)
  endif()
  foreach(dep IN LISTS L_DEPS)
    target_link_libraries(${target} ${scope} shardscope_${dep})
  endforeach()
  if(L_LIBS)
    target_link_libraries(${target} ${scope} ${L_LIBS})
  endif()
  shardscope_check_files(${target} ${name} "${sources};${headers}")

  if(SHARDSCOPE_BUILD_TESTS AND tests)
    add_executable(${name}_test ${tests})
    target_link_libraries(${name}_test PRIVATE ${target} GTest::gtest GTest::gtest_main GTest::gmock)
    gtest_discover_tests(${name}_test WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      DISCOVERY_TIMEOUT 60)
    # TEST_DEPS may name layers declared later: shardscope_finish_layers() links them.
    set_property(GLOBAL APPEND PROPERTY SHARDSCOPE_LAYER_TESTS ${name})
    set_property(GLOBAL PROPERTY SHARDSCOPE_LAYER_TEST_FILES_${name} "${tests}")
    set_property(GLOBAL PROPERTY SHARDSCOPE_LAYER_TEST_DEPS_${name} "${L_TEST_DEPS}")
  endif()
endfunction()

# After every layer is declared: links each test binary to its TEST_DEPS (and
# to the test-only layer `testing`, when declared) and adds its include check
# (its layer's folders plus theirs).
function(shardscope_finish_layers)
  get_property(names GLOBAL PROPERTY SHARDSCOPE_LAYER_TESTS)
  foreach(name IN LISTS names)
    get_property(tests GLOBAL PROPERTY SHARDSCOPE_LAYER_TEST_FILES_${name})
    get_property(deps GLOBAL PROPERTY SHARDSCOPE_LAYER_TEST_DEPS_${name})
    get_property(allowed GLOBAL PROPERTY SHARDSCOPE_LAYER_ALLOWED_${name})
    get_property(dir GLOBAL PROPERTY SHARDSCOPE_LAYER_DIR_${name})
    # Every layer's tests may use the test-only library src/testing (scratch dirs).
    if(TARGET shardscope_testing AND NOT name STREQUAL "testing")
      list(APPEND deps testing)
    endif()
    foreach(dep IN LISTS deps)
      get_property(dep_allowed GLOBAL PROPERTY SHARDSCOPE_LAYER_ALLOWED_${dep})
      if(NOT dep_allowed)
        message(FATAL_ERROR "tests of layer '${name}' use '${dep}', which is not a layer")
      endif()
      list(APPEND allowed ${dep_allowed})
      target_link_libraries(${name}_test PRIVATE shardscope_${dep})
    endforeach()
    list(REMOVE_DUPLICATES allowed)
    set_property(GLOBAL PROPERTY SHARDSCOPE_LAYER_ALLOWED_${name}_test ${allowed})
    set_property(GLOBAL PROPERTY SHARDSCOPE_LAYER_DIR_${name}_test ${dir})
    shardscope_check_files(${name}_test ${name}_test "${tests}")
  endforeach()
endfunction()

# Adds the include check of `files` (against layer `layer`'s allowed folders) as
# a build step that `target` waits for.
function(shardscope_check_files target layer files)
  get_property(allowed GLOBAL PROPERTY SHARDSCOPE_LAYER_ALLOWED_${layer})
  get_property(dir GLOBAL PROPERTY SHARDSCOPE_LAYER_DIR_${layer})
  set(stamp ${CMAKE_BINARY_DIR}/layers/${target}.ok)
  set(config ${CMAKE_BINARY_DIR}/layers/${target}.cmake)
  file(WRITE ${config}.in
    "set(LAYER \"${target}\")\nset(DIR \"${dir}\")\nset(ALLOWED \"${allowed}\")\n"
    "set(FILES \"${files}\")\nset(STAMP \"${stamp}\")\n")
  configure_file(${config}.in ${config} COPYONLY)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${CMAKE_COMMAND} -DLAYER_FILE=${config} -P ${PROJECT_SOURCE_DIR}/cmake/check_layer.cmake
    DEPENDS ${files} ${config} ${PROJECT_SOURCE_DIR}/cmake/check_layer.cmake
    COMMENT "Checking the includes of ${target}" VERBATIM)
  add_custom_target(${target}_includes DEPENDS ${stamp})
  add_dependencies(${target} ${target}_includes)
endfunction()
