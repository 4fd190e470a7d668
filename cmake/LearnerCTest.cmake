# The build-before-test step, and plain `ctest` in the repository root. Included at the end
# of the top-level CMakeLists.txt, after every test is declared.
#
#   build/<preset>/BuildBeforeTest.cmake  ctest rebuilds what changed (cmake/BuildBeforeTest.cmake.in).
#                                  It must come before the test programs' own include files in
#                                  CTestTestfile.cmake: gtest_discover_tests (PRE_TEST) lists
#                                  a program's tests only once the program is built, so the
#                                  build goes first and the first `ctest` finds every test.
#   build/<preset>/LearnerTests.cmake  the build step and the learner's tests (label chNN-student)
#                                  alone, without any label filter to type.
#   build/ctest-root.cmake         written by the chapter presets (chNN) and `all`: which of
#                                  them was configured last. The CTestTestfile.cmake of the
#                                  repository root (cmake/RootCTest.cmake) reads it, so that
#                                  `cmake --preset ch05 && ctest` tests chapter 5's learner kernels.

function(workbook_build_before_test)
  if(NOT WORKBOOK_BUILD_ON_TEST)
    return()
  endif()
  set(_file ${CMAKE_BINARY_DIR}/BuildBeforeTest.cmake)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/BuildBeforeTest.cmake.in ${_file} @ONLY)
  # First in the list, wherever the test programs were declared.
  get_property(_files DIRECTORY ${PROJECT_SOURCE_DIR} PROPERTY TEST_INCLUDE_FILES)
  list(REMOVE_ITEM _files ${_file})
  list(PREPEND _files ${_file})
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} PROPERTY TEST_INCLUDE_FILES ${_files})
endfunction()

function(workbook_root_ctest)
  # The learner's tests alone, for the root's ctest.
  get_property(_learner GLOBAL PROPERTY WORKBOOK_LEARNER_TEST_FILES)
  string(CONCAT _text "# Written by cmake: the build step and the learner's tests of this folder, for plain\n"
            "# `ctest` in the repository root (cmake/LearnerCTest.cmake).\n")
  if(WORKBOOK_BUILD_ON_TEST)
    string(APPEND _text "include(\"${CMAKE_BINARY_DIR}/BuildBeforeTest.cmake\")\n")
  endif()
  foreach(_file IN LISTS _learner)
    string(APPEND _text "include(\"${_file}\")\n")
  endforeach()
  get_property(_summary GLOBAL PROPERTY WORKBOOK_LEARNER_SUMMARY_TESTS)
  string(APPEND _text "${_summary}")
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/LearnerTests.cmake CONTENT "${_text}" @ONLY)

  # Only the presets for the learner's own loop move the root's ctest.
  if(NOT WORKBOOK_PRESET MATCHES "^(ch[0-9][0-9]|all)$")
    return()
  endif()
  # Not when Ninja re-runs cmake in the middle of a build (a CMakeLists.txt changed): that is
  # no choice of the learner's, and may happen in any build folder.
  if(EXISTS /proc/self/cmdline)
    file(STRINGS /proc/self/cmdline _args)
    if("--regenerate-during-build" IN_LIST _args)
      return()
    endif()
  endif()
  file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR})
  file(CONFIGURE OUTPUT ${PROJECT_SOURCE_DIR}/build/ctest-root.cmake CONTENT
"# Written by `cmake --preset ${WORKBOOK_PRESET}`: plain `ctest` in the repository root runs
# this preset's tests of the learner's kernels (the chapter preset configured last).
set(_wb_last_preset \"${WORKBOOK_PRESET}\")
set(_wb_last_build \"${CMAKE_BINARY_DIR}\")
" @ONLY)
  message(STATUS "Plain `ctest` in the repository root now runs ${_rel}'s tests of your kernels "
                 "(preset ${WORKBOOK_PRESET}, the chapter preset configured last)")
endfunction()
