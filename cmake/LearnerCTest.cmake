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
  string(CONCAT _text "# Written by cmake: the build step and the learner's tests of this folder, for plain\n"
            "# `ctest` in the repository root (cmake/LearnerCTest.cmake).\n")
  if(WORKBOOK_BUILD_ON_TEST)
    string(APPEND _text "include(\"${CMAKE_BINARY_DIR}/BuildBeforeTest.cmake\")\n")
  endif()
  get_property(_learner GLOBAL PROPERTY WORKBOOK_LEARNER_TESTS)
  string(APPEND _text "${_learner}")
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/LearnerTests.cmake CONTENT "${_text}" @ONLY)

  # Before every ctest run in this folder, the last run's outcome records are removed; after
  # it, the summary is printed from this run's records: the last thing on the screen, after
  # ctest's own list (CTestCustom.cmake is read by ctest from the folder it tests).
  set(_outcomes ${CMAKE_BINARY_DIR}/Testing/outcomes)
  file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/CTestCustom.cmake CONTENT
"# Written by cmake (cmake/LearnerCTest.cmake): the end-of-run summary of kernel-workbook's tests.
set(CTEST_CUSTOM_PRE_TEST \"\\\"${CMAKE_COMMAND}\\\" -E rm -rf \\\"${_outcomes}\\\"\")
set(CTEST_CUSTOM_POST_TEST \"\\\"${CMAKE_BINARY_DIR}/bin/workbook_summary\\\" --dir \\\"${_outcomes}\\\"\")
" @ONLY)

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

# A chapter preset (chNN) builds, by default, what the learner's run needs: the chapter's
# learner test programs, what they link, and the summary. Everything else (solutions,
# references, self-tests, benchmarks, tools, other test programs) is built on demand from
# the same configure: its own target (`cmake --build --preset ch01 --target ch01_bench`), or
# `workbook_everything`, which `ctest --preset chNN-solution` builds before testing. The
# other presets (all, ci, ...) build everything by default.
function(workbook_learner_default_build)
  set(_targets "")
  set(_dirs ${PROJECT_SOURCE_DIR})
  while(_dirs)
    list(POP_FRONT _dirs _dir)
    get_property(_sub DIRECTORY ${_dir} PROPERTY SUBDIRECTORIES)
    list(APPEND _dirs ${_sub})
    get_property(_here DIRECTORY ${_dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(_t IN LISTS _here)
      get_target_property(_type ${_t} TYPE)
      if(_type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|OBJECT_LIBRARY)$")
        list(APPEND _targets ${_t})
      endif()
    endforeach()
  endwhile()
  add_custom_target(workbook_everything)
  if(_targets)
    add_dependencies(workbook_everything ${_targets})
  endif()
  if(NOT WORKBOOK_PRESET MATCHES "^ch[0-9][0-9]$")
    return()
  endif()
  get_property(_keep GLOBAL PROPERTY WORKBOOK_LEARNER_PROGRAMS)
  list(APPEND _keep workbook_summary)
  foreach(_t IN LISTS _targets)
    if(NOT _t IN_LIST _keep)
      set_target_properties(${_t} PROPERTIES EXCLUDE_FROM_ALL TRUE)
    endif()
  endforeach()
endfunction()
