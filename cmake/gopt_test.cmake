# gopt_cc_test(NAME foo_test SRCS foo_test.cc DEPS lib1 lib2 [SANITIZE])
#
# Builds one gtest binary and registers each of its tests with ctest through
# gtest_discover_tests. Tests find the real graphs through gopt_test_util
# (GOPT_SHARED_DATA, else the configured GOPT_SHARED_DATA_DEFAULT).
#
# The sanitizer subset: the unit tests of the folders in
# GOPT_SANITIZE_TEST_DIRS, plus any test declared with SANITIZE, carry the
# ctest label "sanitize" and are what the `gopt_sanitize_tests` target
# builds. `make test-asan` builds that target with -DGOPT_SANITIZE=ON
# (AddressSanitizer + UndefinedBehaviorSanitizer) and runs `ctest -L
# sanitize`. None of them may link LibTorch (Debian's is not built with
# ASan, and its translation units are what makes the full build slow):
# gopt_check_sanitize_tests() fails the configure step when one does.
set(GOPT_SANITIZE_TEST_DIRS graph simulator server)

function(gopt_cc_test)
  if(NOT GOPT_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "SANITIZE" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  set_target_properties(${ARG_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                        ${CMAKE_BINARY_DIR}/tests)
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(REGEX REPLACE "/.*" "" top_folder "${folder}")
  # Each test binary writes its ::testing::TempDir() files into its own
  # folder of this build, so that two binaries ctest runs at once (or
  # another build's tests on the same machine) never share a file name.
  set(tmp_dir ${CMAKE_BINARY_DIR}/test-tmp/${ARG_NAME})
  file(MAKE_DIRECTORY ${tmp_dir})
  if(ARG_SANITIZE OR top_folder IN_LIST GOPT_SANITIZE_TEST_DIRS)
    set_property(GLOBAL APPEND PROPERTY GOPT_SANITIZE_TESTS ${ARG_NAME})
    gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60
                         PROPERTIES LABELS sanitize
                                    ENVIRONMENT TEST_TMPDIR=${tmp_dir})
  else()
    gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60
                         PROPERTIES ENVIRONMENT TEST_TMPDIR=${tmp_dir})
  endif()
endfunction()

# Whether `target`'s link closure (LINK_LIBRARIES and, through them,
# INTERFACE_LINK_LIBRARIES, $<LINK_ONLY:...> included) holds LibTorch.
# Sets `out` to the offending item or "".
function(gopt_find_torch_in_link_closure target out)
  set(pending ${target})
  set(seen "")
  set(found "")
  while(pending AND NOT found)
    list(POP_FRONT pending current)
    if(current IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${current})
    if(current MATCHES "(^|/|lib)(torch|torch_cpu|c10)(\\.so|\\.a|$)" OR
       current IN_LIST TORCH_LIBRARIES)
      set(found ${current})
      break()
    endif()
    if(NOT TARGET ${current})
      continue()
    endif()
    get_target_property(aliased ${current} ALIASED_TARGET)
    if(aliased)
      list(APPEND pending ${aliased})
      continue()
    endif()
    get_target_property(type ${current} TYPE)
    set(items "")
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(direct ${current} LINK_LIBRARIES)
      if(direct)
        list(APPEND items ${direct})
      endif()
    endif()
    get_target_property(interface ${current} INTERFACE_LINK_LIBRARIES)
    if(interface)
      list(APPEND items ${interface})
    endif()
    foreach(item IN LISTS items)
      string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" item "${item}")
      if(NOT item MATCHES "^\\$<")
        list(APPEND pending ${item})
      endif()
    endforeach()
  endwhile()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# Call once, after every folder is added: defines `gopt_sanitize_tests`
# (builds the sanitizer subset) and checks that no test in it links
# LibTorch.
function(gopt_check_sanitize_tests)
  if(NOT GOPT_BUILD_TESTS)
    return()
  endif()
  get_property(tests GLOBAL PROPERTY GOPT_SANITIZE_TESTS)
  foreach(test IN LISTS tests)
    gopt_find_torch_in_link_closure(${test} torch)
    if(torch)
      message(FATAL_ERROR "${test} is in the sanitizer subset (label "
              "'sanitize') but links LibTorch (${torch}); move it out of "
              "GOPT_SANITIZE_TEST_DIRS' folders or drop its SANITIZE")
    endif()
  endforeach()
  add_custom_target(gopt_sanitize_tests DEPENDS ${tests})
endfunction()
