# gopt_cc_test(NAME foo_test SRCS foo_test.cc DEPS lib1 lib2)
#
# Builds one gtest binary and registers each of its tests with ctest through
# gtest_discover_tests. Tests find the real graphs through gopt_test_util
# (GOPT_SHARED_DATA, else the configured GOPT_SHARED_DATA_DEFAULT).
function(gopt_cc_test)
  if(NOT GOPT_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS" ${ARGN})
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gmock GTest::gtest_main)
  set_target_properties(${ARG_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                        ${CMAKE_BINARY_DIR}/tests)
  gtest_discover_tests(${ARG_NAME} DISCOVERY_TIMEOUT 60)
endfunction()
