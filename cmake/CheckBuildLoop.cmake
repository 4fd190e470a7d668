# Host test (label `host`, no GPU, a second or two) of the build/test loop:
#
#   cmake -DSRC=<source dir> -DBIN=<a configured build dir> -DWORK=<scratch dir> -DCASE=<case>
#         [-DBUILD_ON_TEST=ON|OFF] -P cmake/CheckBuildLoop.cmake     (registered in cmake/Tools.cmake)
#
#   presets      CMakePresets.json: one configure and build preset per chapter; chNN-solution
#                is a test preset and a workflow on that same build; every chapter folder has
#                its presets; all, all-solutions, ci, debug and profile each have a workflow;
#                scripts/lib/add_presets.py writes a chapter's entries exactly as they are.
#   test_order   BIN's CTestTestfile.cmake includes the build-before-test step before any test
#                program's include file (else the first ctest finds no test), and
#                BIN/LearnerTests.cmake includes the build step and the learner's tests only.
#   root_ctest   in a scratch copy of the root files: `ctest --preset chNN` before configuring
#                says to run `cmake --preset chNN` (twice in a row), plain `ctest` with nothing
#                configured says to configure a chapter, and plain `ctest` runs the tests that
#                build/ctest-root.cmake points to.
# The full loop (configure, then a first ctest that builds and finds every test) runs on a
# scaffolded chapter in scripts/ci-scaffold-check.sh.
cmake_minimum_required(VERSION 3.25)
foreach(_var IN ITEMS SRC CASE)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "usage: cmake -DSRC=... -DBIN=... -DWORK=... -DCASE=presets|test_order|root_ctest -P ${CMAKE_CURRENT_LIST_FILE}")
  endif()
endforeach()

set(_failures 0)
macro(check condition_text)
  if(${ARGN})
    message(STATUS "ok: ${condition_text}")
  else()
    if(DEFINED _out)
      message(SEND_ERROR "FAILED: ${condition_text}\n  exit status ${_rc}; the output was:\n${_out}")
    else()
      message(SEND_ERROR "FAILED: ${condition_text}")
    endif()
    math(EXPR _failures "${_failures} + 1")
  endif()
endmacro()

# --- presets --------------------------------------------------------------------------------------
function(preset_field out json section name field)
  set(${out} "" PARENT_SCOPE)
  string(JSON _n LENGTH "${json}" ${section})
  math(EXPR _last "${_n} - 1")
  foreach(_i RANGE ${_last})
    string(JSON _name GET "${json}" ${section} ${_i} name)
    if(_name STREQUAL name)
      string(JSON _value ERROR_VARIABLE _err GET "${json}" ${section} ${_i} ${field})
      if(_err)
        set(_value "<none>")
      endif()
      set(${out} "${_value}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "<missing>" PARENT_SCOPE)
endfunction()

if(CASE STREQUAL "presets")
  file(READ "${SRC}/CMakePresets.json" _json)
  file(GLOB _dirs RELATIVE "${SRC}/chapters" "${SRC}/chapters/ch[0-9][0-9]_*")
  foreach(_dir IN LISTS _dirs)
    string(SUBSTRING "${_dir}" 0 4 _id)
    preset_field(_v "${_json}" configurePresets ${_id} name)
    check("configure preset ${_id}" _v STREQUAL "${_id}")
    preset_field(_v "${_json}" configurePresets ${_id}-solution name)
    check("no configure preset ${_id}-solution (it would build the chapter a second time)" _v STREQUAL "<missing>")
    preset_field(_v "${_json}" buildPresets ${_id} configurePreset)
    check("build preset ${_id} on configure preset ${_id}" _v STREQUAL "${_id}")
    preset_field(_v "${_json}" testPresets ${_id} configurePreset)
    check("test preset ${_id} on configure preset ${_id}" _v STREQUAL "${_id}")
    preset_field(_v "${_json}" testPresets ${_id}-solution configurePreset)
    check("test preset ${_id}-solution on configure preset ${_id}" _v STREQUAL "${_id}")
    foreach(_wf IN ITEMS ${_id} ${_id}-solution)
      preset_field(_steps "${_json}" workflowPresets ${_wf} steps)
      string(JSON _c ERROR_VARIABLE _e GET "${_steps}" 0 name)
      string(JSON _t ERROR_VARIABLE _e GET "${_steps}" 2 name)
      check("workflow ${_wf}: configure ${_id}, test ${_wf}" "${_c}|${_t}" STREQUAL "${_id}|${_wf}")
    endforeach()
  endforeach()
  foreach(_p IN ITEMS all all-solutions ci debug profile)
    preset_field(_steps "${_json}" workflowPresets ${_p} steps)
    string(JSON _t ERROR_VARIABLE _e GET "${_steps}" 2 name)
    check("workflow ${_p}" _t STREQUAL "${_p}")
  endforeach()

  # add_presets.py, as scripts/new-chapter.sh uses it: take the last chapter's entries out,
  # put them back, and the file must come out byte for byte as it was.
  set(_id "")
  foreach(_dir IN LISTS _dirs)  # the last chapter that has its presets
    string(SUBSTRING "${_dir}" 0 4 _candidate)
    preset_field(_v "${_json}" configurePresets ${_candidate} name)
    if(_v STREQUAL _candidate)
      set(_id ${_candidate})
    endif()
  endforeach()
  preset_field(_display "${_json}" configurePresets ${_id} displayName)
  string(REGEX REPLACE "^[^(]*\\((.*)\\)$" "\\1" _title "${_display}")
  file(MAKE_DIRECTORY "${WORK}")
  find_program(_python NAMES python3 REQUIRED)
  execute_process(COMMAND ${_python} -c [=[
import re, sys
src, dst, cid = sys.argv[1:]
lines, kept, skip = open(src).read().split("\n"), [], False
for line in lines:
    if skip:
        skip = False
        continue
    if re.search(r'"name": "%s(-solution)?"' % cid, line):
        skip = '"inherits"' in line  # configure and test presets take two lines
        continue
    kept.append(line)
open(dst, "w").write("\n".join(kept))
]=] "${SRC}/CMakePresets.json" "${WORK}/CMakePresets.json" ${_id} RESULT_VARIABLE _rc)
  check("${_id}'s presets taken out of a copy of CMakePresets.json" _rc EQUAL 0)
  execute_process(COMMAND ${_python} "${SRC}/scripts/lib/add_presets.py" "${WORK}/CMakePresets.json" ${_id} "${_title}"
                  RESULT_VARIABLE _rc)
  file(READ "${SRC}/CMakePresets.json" _text)
  file(READ "${WORK}/CMakePresets.json" _again)
  check("add_presets.py writes ${_id}'s presets exactly as CMakePresets.json holds them" _rc EQUAL 0 AND _again STREQUAL _text)
endif()

# --- test_order -----------------------------------------------------------------------------------
if(CASE STREQUAL "test_order" AND DEFINED BUILD_ON_TEST AND NOT BUILD_ON_TEST)
  # -DWORKBOOK_BUILD_ON_TEST=OFF (scripts/gpu-suite.sh): no build step anywhere.
  file(READ "${BIN}/CTestTestfile.cmake" _content)
  check("no build step in CTestTestfile.cmake (WORKBOOK_BUILD_ON_TEST=OFF)" NOT _content MATCHES "BuildBeforeTest")
  file(READ "${BIN}/LearnerTests.cmake" _content)
  check("no build step in LearnerTests.cmake (WORKBOOK_BUILD_ON_TEST=OFF)" NOT _content MATCHES "BuildBeforeTest")
elseif(CASE STREQUAL "test_order")
  file(STRINGS "${BIN}/CTestTestfile.cmake" _includes REGEX "^include\\(")
  list(GET _includes 0 _first)
  check("the build step is the first include of CTestTestfile.cmake" _first MATCHES "BuildBeforeTest\\.cmake")
  # LearnerTests.cmake: the build step, then one test per exercise (label chNN-student only).
  file(STRINGS "${BIN}/LearnerTests.cmake" _learner REGEX "^include\\(")
  list(LENGTH _learner _n)
  check("LearnerTests.cmake includes the build step once" _n EQUAL 1)
  list(GET _learner 0 _first)
  check("LearnerTests.cmake builds first" _first MATCHES "BuildBeforeTest\\.cmake")
  file(STRINGS "${BIN}/LearnerTests.cmake" _tests REGEX "^add_test\\(")
  list(LENGTH _tests _t)
  check("LearnerTests.cmake declares the learner's tests" _t GREATER 0)
  file(STRINGS "${BIN}/LearnerTests.cmake" _labels REGEX "LABELS ")
  foreach(_line IN LISTS _labels)
    set(_student FALSE)
    if(_line MATCHES "LABELS ch[0-9][0-9]-student ")
      set(_student TRUE)
    endif()
    check("every test of LearnerTests.cmake is a learner's (label chNN-student)" _student)
  endforeach()
endif()

# --- root_ctest -----------------------------------------------------------------------------------
if(CASE STREQUAL "root_ctest")
  get_filename_component(_cmake_dir "${CMAKE_COMMAND}" DIRECTORY)
  find_program(_ctest NAMES ctest HINTS "${_cmake_dir}" NO_DEFAULT_PATH)  # the ctest of this cmake
  if(NOT _ctest)
    find_program(_ctest NAMES ctest REQUIRED)
  endif()
  set(_root "${WORK}/root")
  file(REMOVE_RECURSE "${_root}")
  file(MAKE_DIRECTORY "${_root}/cmake")
  file(COPY "${SRC}/CMakePresets.json" "${SRC}/CTestTestfile.cmake" DESTINATION "${_root}")
  file(COPY "${SRC}/cmake/RootCTest.cmake" DESTINATION "${_root}/cmake")

  foreach(_try IN ITEMS first second)
    execute_process(COMMAND "${_ctest}" --preset ch01-solution WORKING_DIRECTORY "${_root}"
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
    check("ctest --preset ch01-solution before configuring (${_try} call) says to run cmake --preset ch01"
          NOT _rc EQUAL 0 AND _out MATCHES "cmake --preset ch01\n" AND NOT _out MATCHES "No tests were found")
  endforeach()

  execute_process(COMMAND "${_ctest}" WORKING_DIRECTORY "${_root}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  check("plain ctest with nothing configured says to configure a chapter"
        NOT _rc EQUAL 0 AND _out MATCHES "cmake --preset ch01 && ctest")

  # A stand-in build folder: its LearnerTests.cmake declares one test, as the real one's
  # gtest include files do.
  file(MAKE_DIRECTORY "${_root}/build/ch07")
  file(WRITE "${_root}/build/ch07/LearnerTests.cmake"
       "add_test(stand_in_learner_test \"${CMAKE_COMMAND}\" -E true)\n")
  file(WRITE "${_root}/build/ctest-root.cmake"
       "set(_wb_last_preset \"ch07\")\nset(_wb_last_build \"${_root}/build/ch07\")\n")
  execute_process(COMMAND "${_ctest}" WORKING_DIRECTORY "${_root}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  check("plain ctest runs the tests of the preset configured last, and says which"
        _rc EQUAL 0 AND _out MATCHES "stand_in_learner_test" AND _out MATCHES "preset[ \n]+ch07")
  file(REMOVE_RECURSE "${_root}/build/ch07")
  execute_process(COMMAND "${_ctest}" WORKING_DIRECTORY "${_root}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  check("plain ctest whose build folder is gone says to configure again"
        NOT _rc EQUAL 0 AND _out MATCHES "cmake[ \n]+--preset[ \n]+ch07")
endif()

if(_failures GREATER 0)
  message(FATAL_ERROR "${_failures} check(s) failed")
endif()
